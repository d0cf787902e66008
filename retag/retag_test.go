package retag

import (
	"bytes"
	"testing"

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
	if tb.Reply(r1) != Synthetic {
		t.Fatal("synthetic reply not recognised")
	}
	r2 := jdwp.AppendReply(nil, id, 0, []byte("organic"))
	if tb.Reply(r2) != Remapped || r2.ID() != orig.ID() {
		t.Fatalf("remapped reply carries %#x, want %#x", r2.ID(), orig.ID())
	}
	// A stray reply in range (e.g. duplicated) is never passed on.
	if tb.Reply(jdwp.AppendReply(nil, id, 0, nil)) != Synthetic {
		t.Fatal("unknown in-range reply must be treated as synthetic")
	}
	low := jdwp.AppendCommand(nil, 7, jdwp.CmdVirtualMachineVersion, nil)
	if _, remapped := tb.FromDebugger(low); remapped || low.ID() != 7 {
		t.Fatal("low IDs pass unchanged")
	}
	if tb.Reply(jdwp.AppendReply(nil, 7, 0, nil)) != NotOurs {
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
		owner := tb.Reply(reply)
		if remapped && owner != Remapped || !remapped && owner != NotOurs {
			t.Fatalf("owner %v for remapped=%v", owner, remapped)
		}
		p.SetID(reply.ID())
		if !bytes.Equal(p, orig) {
			t.Fatal("retag then un-retag does not restore the original bytes")
		}
	})
}

func TestPeek(t *testing.T) {
	tb := NewTable()
	syn := tb.NewSynthetic()
	cmd := jdwp.AppendCommand(nil, SyntheticBase+7, jdwp.CmdIDSizes, nil)
	wire, _ := tb.FromDebugger(cmd)
	for _, c := range []struct {
		id   uint32
		want Owner
	}{{5, NotOurs}, {syn, Synthetic}, {wire, Remapped}, {0xFFFFFFFF, Synthetic}} {
		if got := tb.Peek(c.id); got != c.want {
			t.Errorf("Peek(%#x) = %v, want %v", c.id, got, c.want)
		}
	}
	if tb.InFlight() != 2 {
		t.Errorf("InFlight = %d after Peek, want 2: Peek forgets nothing", tb.InFlight())
	}
}
