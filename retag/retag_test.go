package retag

import (
	"bytes"
	"testing"
	"time"
	"unsafe"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

func TestSyntheticIDsAreUniqueAndInRange(t *testing.T) {
	tb := NewTable()
	seen := map[uint32]bool{}
	for i := 0; i < 1000; i++ {
		id := tb.NewSynthetic()
		if !InRange(id) || seen[id] {
			t.Fatalf("id %#x: in range %v, duplicate %v", id, InRange(id), seen[id])
		}
		seen[id] = true
	}
	if tb.InFlight() != 1000 {
		t.Fatalf("in flight %d", tb.InFlight())
	}
}

func TestWrapSkipsInFlight(t *testing.T) {
	tb := NewTable()
	first := tb.NewSynthetic() // SyntheticBase, still in flight
	tb.next = 0xFFFFFFFF
	if id := tb.NewSynthetic(); id != 0xFFFFFFFF {
		t.Fatalf("got %#x", id)
	}
	if id := tb.NewSynthetic(); id == first || !InRange(id) {
		t.Fatalf("after wrap got %#x (in flight %#x)", id, first)
	}
}

func TestDebuggerIDInRangeIsRemappedAndRestored(t *testing.T) {
	tb := NewTable()
	syn := tb.NewSynthetic()
	cmd := jdwp.AppendCommand(nil, syn, jdwp.CmdVirtualMachineVersion, nil) // debugger uses the same ID
	orig := cmd.Clone()
	id, remapped := tb.FromDebugger(cmd)
	if !remapped || id == syn || cmd.ID() != id || !InRange(id) {
		t.Fatalf("remap: id %#x remapped %v", id, remapped)
	}
	// The VM answers the synthetic command, then the remapped one.
	r1 := jdwp.AppendReply(nil, syn, 0, []byte("synthetic"))
	if _, o := tb.Reply(r1); o != Synthetic {
		t.Fatal("synthetic reply not recognised")
	}
	r2 := jdwp.AppendReply(nil, id, 0, []byte("organic"))
	if _, o := tb.Reply(r2); o != Remapped || r2.ID() != orig.ID() {
		t.Fatalf("remapped reply carries %#x, want %#x", r2.ID(), orig.ID())
	}
	// A stray reply in range (e.g. duplicated) is never passed on.
	if _, o := tb.Reply(jdwp.AppendReply(nil, id, 0, nil)); o != Synthetic {
		t.Fatal("unknown in-range reply must be treated as synthetic")
	}
	low := jdwp.AppendCommand(nil, 7, jdwp.CmdVirtualMachineVersion, nil)
	if _, remapped := tb.FromDebugger(low); remapped || low.ID() != 7 {
		t.Fatal("low IDs pass unchanged")
	}
	if _, o := tb.Reply(jdwp.AppendReply(nil, 7, 0, nil)); o != NotOurs {
		t.Fatal("low reply is not ours")
	}
}

func TestRetag(t *testing.T) {
	r := jdwp.AppendReply(nil, 0xA0000005, 0, []byte{1, 2, 3})
	keep := r.Clone()
	out := Retag(make([]byte, 0, 64), r, 9)
	if out.ID() != 9 || !bytes.Equal(out.Body(), r.Body()) || !bytes.Equal(r, keep) {
		t.Fatal("Retag must copy with the new ID and leave the original alone")
	}
}

func BenchmarkRetag(b *testing.B) {
	r := jdwp.AppendReply(nil, 0xA0000005, 0, make([]byte, 64))
	buf := make([]byte, 0, 128)
	b.ReportAllocs()
	for b.Loop() {
		buf = Retag(buf[:0], r, 9)
	}
}

func BenchmarkRemapRoundTrip(b *testing.B) {
	tb := NewTable()
	cmd := jdwp.AppendCommand(nil, 0xB0000000, jdwp.CmdVirtualMachineVersion, nil)
	reply := jdwp.AppendReply(nil, 0, 0, nil)
	b.ReportAllocs()
	for b.Loop() {
		cmd.SetID(0xB0000000)
		id, _ := tb.FromDebugger(cmd)
		reply.SetID(id)
		tb.Reply(reply)
	}
}

// FuzzRoundTrip: remapping a debugger command and then classifying the VM's
// reply restores the original bytes; no input panics.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte(jdwp.AppendCommand(nil, 0xA0000000, jdwp.CmdVirtualMachineVersion, nil)))
	f.Add([]byte(jdwp.AppendCommand(nil, 5, jdwp.CmdThreadReferenceName, []byte{1, 2, 3, 4})))
	f.Add([]byte(jdwp.AppendReply(nil, 0xFFFFFFFF, 0, nil)))
	f.Add([]byte{0, 0})
	f.Fuzz(func(t *testing.T, pkt []byte) {
		if len(pkt) < jdwp.HeaderSize {
			return
		}
		tb := NewTable()
		tb.NewSynthetic()
		p := jdwp.Packet(append([]byte(nil), pkt...))
		orig := p.Clone()
		wasReply := p.IsReply()
		id, remapped := tb.FromDebugger(p)
		if wasReply {
			if remapped || !bytes.Equal(p, orig) {
				t.Fatal("replies must pass unchanged")
			}
			return
		}
		if remapped != InRange(orig.ID()) || p.ID() != id {
			t.Fatalf("remapped=%v for id %#x", remapped, orig.ID())
		}
		// The VM echoes the ID in a reply; un-retagging restores the ID.
		reply := jdwp.AppendReply(nil, id, 0, p.Body())
		_, owner := tb.Reply(reply)
		if remapped && owner != Remapped || !remapped && owner != NotOurs {
			t.Fatalf("owner %v for remapped=%v", owner, remapped)
		}
		p.SetID(reply.ID())
		if !bytes.Equal(p, orig) {
			t.Fatal("retag then un-retag does not restore the original bytes")
		}
	})
}

// TestSentTake: the table pairs each command with its reply, keeping its
// owner and a hook's data recorded before the command was sent.
func TestSentTake(t *testing.T) {
	tb := NewTable()
	syn := tb.NewSynthetic()
	now := time.Now()
	d := Command{Sent: now}
	d.Data[1] = "hook"
	if tb.Sent(syn, d) {
		t.Fatal("first Sent of a fresh synthetic ID reported as a duplicate")
	}
	if !tb.Sent(syn, Command{Cmd: jdwp.CmdIDSizes, Sent: now, Owner: NotOurs}) {
		t.Fatal("second Sent of the same ID not reported as a duplicate")
	}
	cmd := jdwp.AppendCommand(nil, SyntheticBase+7, jdwp.CmdIDSizes, nil)
	wire, _ := tb.FromDebugger(cmd)
	tb.Sent(wire, Command{Cmd: jdwp.CmdIDSizes, Sent: now})
	tb.Sent(5, Command{Cmd: jdwp.CmdVirtualMachineVersion, Sent: now, Debugger: 5})
	if tb.InFlight() != 3 {
		t.Fatalf("InFlight = %d, want 3", tb.InFlight())
	}
	for _, c := range []struct {
		id    uint32
		want  Owner
		found bool
		cmd   jdwp.Cmd
		data  any
	}{
		{5, NotOurs, true, jdwp.CmdVirtualMachineVersion, nil},
		{syn, Synthetic, true, jdwp.CmdIDSizes, "hook"},
		{wire, Remapped, true, jdwp.CmdIDSizes, nil},
		{wire, Synthetic, false, jdwp.Cmd{}, nil}, // answered already
		{6, NotOurs, false, jdwp.Cmd{}, nil},
	} {
		got, owner, ok := tb.Take(c.id)
		if owner != c.want || ok != c.found || got.Cmd != c.cmd || got.Data[1] != c.data {
			t.Errorf("Take(%#x) = %+v, %v, %v; want owner %v, found %v, cmd %v, data %v", c.id, got, owner, ok, c.want, c.found, c.cmd, c.data)
		}
	}
	if tb.InFlight() != 0 {
		t.Errorf("InFlight = %d after every reply, want 0", tb.InFlight())
	}
}

// TestSweep visits only the commands holding data in the slot, and drops
// those it is told to.
func TestSweep(t *testing.T) {
	tb := NewTable()
	a, b := tb.NewSynthetic(), tb.NewSynthetic()
	tb.Sent(a, Command{Data: [NumSlots]any{2: 1}})
	tb.Sent(b, Command{Data: [NumSlots]any{2: 2}})
	tb.Sent(3, Command{})
	var seen []any
	tb.Sweep(2, func(id uint32, c *Command) bool {
		seen = append(seen, c.Data[2])
		return id == a
	})
	if len(seen) != 2 || tb.InFlight() != 2 {
		t.Fatalf("visited %v, %d left in flight; want 2 visited, 2 left", seen, tb.InFlight())
	}
	if _, _, ok := tb.Take(a); ok {
		t.Error("a swept command is still in flight")
	}
}

// TestCommandFitsInPlace: the table's map keeps a Command in place only up
// to 128 bytes; beyond, recording each command allocates (see NumSlots).
func TestCommandFitsInPlace(t *testing.T) {
	if n := unsafe.Sizeof(Command{}); n > 128 {
		t.Fatalf("a Command is %d bytes", n)
	}
}
