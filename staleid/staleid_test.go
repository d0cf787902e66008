package staleid

import (
	"slices"
	"strings"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
)

var sizes8 = jdwp.IDSizes{FieldID: 8, MethodID: 8, ObjectID: 8, ReferenceTypeID: 8, FrameID: 8}

// TestLayoutsCoverSpec: every command of the specification has a reply
// layout (Event.Composite is the VM's, decoded as an event), and every
// layout is well formed.
func TestLayoutsCoverSpec(t *testing.T) {
	for set := range 256 {
		for c := range 256 {
			cmd := jdwp.Cmd{Set: jdwp.CommandSet(set), Cmd: uint8(c)}
			if _, ok := replyLayouts[cmd]; cmd.Known() && !ok && cmd != jdwp.CmdEventComposite {
				t.Errorf("%v has no reply layout", cmd)
			}
		}
	}
	for cmd, l := range replyLayouts {
		depth := 0
		for i := 0; i < len(l); i++ {
			switch {
			case l[i] == '*':
				if i+1 >= len(l) || l[i+1] != '(' {
					t.Errorf("%v: %q: * without (", cmd, l)
				}
			case l[i] == '(':
				depth++
			case l[i] == ')':
				depth--
			case !strings.ContainsRune("orTvlAmfFbiLs", rune(l[i])):
				t.Errorf("%v: %q: unknown letter %q", cmd, l, l[i])
			}
		}
		if depth != 0 {
			t.Errorf("%v: %q: unbalanced", cmd, l)
		}
	}
}

func reply(cmd jdwp.Cmd, body []byte) *relay.Frame {
	return &relay.Frame{Dir: relay.ToDebugger, Kind: relay.KindReply, Cmd: cmd, Packet: jdwp.AppendReply(nil, 7, jdwp.ErrorNone, body)}
}

func ids(g *Guard) []uint64 {
	var v []uint64
	for id := range g.ids.m {
		v = append(v, id)
	}
	slices.Sort(v)
	return v
}

// TestRecordFindsEveryID: the IDs of replies (nested counts, tagged
// values, locations, array regions) and events are recorded, and nothing
// else.
func TestRecordFindsEveryID(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cmd   jdwp.Cmd
		write func(w *jdwp.BodyWriter)
		want  []uint64
	}{
		{"MonitorInfo", jdwp.CmdObjectReferenceMonitorInfo, func(w *jdwp.BodyWriter) {
			w.ObjectID(3)
			w.Int32(1)
			w.Int32(2)
			w.ObjectID(4)
			w.ObjectID(5)
		}, []uint64{3, 4, 5}},
		{"Frames", jdwp.CmdThreadReferenceFrames, func(w *jdwp.BodyWriter) {
			w.Int32(2)
			for i := range uint64(2) {
				w.FrameID(100 + i)
				w.Location(jdwp.Location{TypeTag: 1, Class: 10 + i, Method: 200, Index: 3})
			}
		}, []uint64{10, 11}},
		{"GetValues", jdwp.CmdStackFrameGetValues, func(w *jdwp.BodyWriter) {
			w.Int32(3)
			w.Value(jdwp.Value{Tag: jdwp.TagInt, Bits: 99})
			w.Value(jdwp.Value{Tag: jdwp.TagString, Bits: 12})
			w.Value(jdwp.Value{Tag: jdwp.TagObject, Bits: 0})
		}, []uint64{12}},
		{"object array", jdwp.CmdArrayReferenceGetValues, func(w *jdwp.BodyWriter) {
			w.Uint8(uint8(jdwp.TagObject))
			w.Int32(2)
			w.Value(jdwp.Value{Tag: jdwp.TagArray, Bits: 20})
			w.Value(jdwp.Value{Tag: jdwp.TagThread, Bits: 21})
		}, []uint64{20, 21}},
		{"long array", jdwp.CmdArrayReferenceGetValues, func(w *jdwp.BodyWriter) {
			w.Uint8(uint8(jdwp.TagLong))
			w.Int32(2)
			w.Int64(30)
			w.Int64(31)
		}, nil},
		{"AllClassesWithGeneric", jdwp.CmdVirtualMachineAllClassesWithGeneric, func(w *jdwp.BodyWriter) {
			w.Int32(1)
			w.Uint8(1)
			w.ReferenceTypeID(40)
			w.String("LA;")
			w.String("")
			w.Int32(7)
		}, []uint64{40}},
		{"Children", jdwp.CmdThreadGroupReferenceChildren, func(w *jdwp.BodyWriter) {
			w.Int32(1)
			w.ObjectID(50)
			w.Int32(1)
			w.ObjectID(51)
		}, []uint64{50, 51}},
		{"no IDs", jdwp.CmdReferenceTypeSignature, func(w *jdwp.BodyWriter) { w.String("LA;") }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := jdwp.BodyWriter{Sizes: sizes8}
			tc.write(&w)
			g := &Guard{}
			g.observe(reply(tc.cmd, w.Buf), sizes8, true)
			if g.off || !slices.Equal(ids(g), tc.want) {
				t.Fatalf("off %v, IDs %v, want %v", g.off, ids(g), tc.want)
			}
		})
	}
}

// version is a VirtualMachine.Version reply naming vm.
func version(vm string) *relay.Frame {
	return reply(jdwp.CmdVirtualMachineVersion, jdwptest.VersionBody("Java Debug Wire Protocol (Reference Implementation) version 17.0", vm))
}

// newHotSpotGuard is a guard that saw a HotSpot VM's Version reply.
func newHotSpotGuard() *Guard {
	g := &Guard{}
	g.observe(version("OpenJDK 64-Bit Server VM"), sizes8, true)
	return g
}

func command(cmd jdwp.Cmd, id uint64) *relay.Frame {
	w := jdwp.BodyWriter{Sizes: sizes8}
	w.ObjectID(id)
	return &relay.Frame{Dir: relay.ToVM, Kind: relay.KindCommand, Cmd: cmd, ID: 9, Packet: jdwp.AppendCommand(nil, 9, cmd, w.Buf)}
}

// TestGuardAnswers: a command naming an ID the debugger was sent, or
// null, goes on; one naming any other gets the VM's error; what the guard
// cannot prove goes on.
func TestGuardAnswers(t *testing.T) {
	w := jdwp.BodyWriter{Sizes: sizes8}
	w.ObjectID(5)
	g := newHotSpotGuard()
	g.observe(reply(jdwp.CmdReferenceTypeClassObject, w.Buf), sizes8, true)
	for _, tc := range []struct {
		f    *relay.Frame
		want jdwp.ErrorCode // ErrorNone: forwarded
	}{
		{command(jdwp.CmdObjectReferenceReferenceType, 5), jdwp.ErrorNone},
		{command(jdwp.CmdObjectReferenceReferenceType, 0), jdwp.ErrorNone},
		{command(jdwp.CmdObjectReferenceReferenceType, 6), jdwp.ErrorInvalidObject},
		{command(jdwp.CmdModuleReferenceName, 6), jdwp.ErrorInvalidModule},
		{command(jdwp.Cmd{Set: 128, Cmd: 1}, 6), jdwp.ErrorNone},         // a vendor command
		{command(jdwp.CmdVirtualMachineCreateString, 6), jdwp.ErrorNone}, // no ID first
		{&relay.Frame{Kind: relay.KindCommand, Cmd: jdwp.CmdThreadReferenceName,
			Packet: jdwp.AppendCommand(nil, 9, jdwp.CmdThreadReferenceName, []byte{0, 0, 1})}, jdwp.ErrorNone}, // short
	} {
		got := jdwp.ErrorNone
		if g.command(tc.f, sizes8, true) == relay.Consume {
			if tc.f.Answer.ID() != tc.f.ID || !tc.f.Answer.IsReply() {
				t.Errorf("%v: answer %v", tc.f.Cmd, tc.f.Answer)
			}
			got = tc.f.Answer.ErrorCode()
		}
		if got != tc.want {
			t.Errorf("%v %x: %v, want %v", tc.f.Cmd, tc.f.Packet.Body(), got, tc.want)
		}
	}
	// An unknown object counts as collected, as the VM says.
	if f := command(jdwp.CmdObjectReferenceIsCollected, 6); g.command(f, sizes8, true) != relay.Consume ||
		f.Answer.ErrorCode() != jdwp.ErrorNone || string(f.Answer.Body()) != "\x01" {
		t.Errorf("IsCollected of an unknown object: %v", f.Answer)
	}
	// Unknown sizes: nothing is answered.
	if g.command(command(jdwp.CmdObjectReferenceReferenceType, 6), jdwp.IDSizes{}, false) != relay.Forward {
		t.Error("answered without ID sizes")
	}
	// A reply the guard cannot decode turns it off.
	g.observe(reply(jdwp.Cmd{Set: 128, Cmd: 1}, nil), sizes8, true)
	if g.command(command(jdwp.CmdObjectReferenceReferenceType, 6), sizes8, true) != relay.Forward {
		t.Error("answered after an undecodable reply")
	}
}

// TestOnlyHotSpot: nothing is answered before a Version reply names a
// HotSpot VM, nor after one names another VM (Android's, OpenJ9), whose
// answers were not established; the proxy's own Version reply counts.
func TestOnlyHotSpot(t *testing.T) {
	for _, tc := range []struct {
		vm     string
		origin relay.Origin
		want   relay.Action
	}{
		{"", relay.Forwarded, relay.Forward}, // no Version seen
		{"OpenJDK 64-Bit Server VM", relay.Forwarded, relay.Consume},
		{"Java HotSpot(TM) 64-Bit Server VM", relay.Synthetic, relay.Consume},
		{"Dalvik", relay.Forwarded, relay.Forward},
		{"Eclipse OpenJ9 VM", relay.Forwarded, relay.Forward},
	} {
		g := &Guard{}
		if tc.vm != "" {
			v := version(tc.vm)
			v.Origin = tc.origin
			g.observe(v, sizes8, true)
		}
		if got := g.command(command(jdwp.CmdObjectReferenceReferenceType, 6), sizes8, true); got != tc.want {
			t.Errorf("%q: %v, want %v", tc.vm, got, tc.want)
		}
	}
}

// TestEarlyEvent: an event the debugger gets before the ID sizes are
// known (VM_START) counts once they are.
func TestEarlyEvent(t *testing.T) {
	w := jdwp.BodyWriter{Sizes: sizes8}
	w.Uint8(uint8(jdwp.SuspendAll))
	w.Int32(1)
	w.Uint8(uint8(jdwp.EventVMStart))
	w.Int32(0)
	w.ObjectID(1)
	g := newHotSpotGuard()
	g.observe(&relay.Frame{Dir: relay.ToDebugger, Kind: relay.KindEvent, Cmd: jdwp.CmdEventComposite,
		Packet: jdwp.AppendCommand(nil, 1, jdwp.CmdEventComposite, w.Buf)}, jdwp.IDSizes{}, false)
	if g.command(command(jdwp.CmdThreadReferenceName, 1), sizes8, true) != relay.Forward {
		t.Fatal("the VM_START thread was answered")
	}
	if g.command(command(jdwp.CmdThreadReferenceName, 2), sizes8, true) != relay.Consume {
		t.Fatal("an unknown thread was not answered")
	}
	// An early packet that does not decode turns the guard off once the
	// sizes are known.
	g = newHotSpotGuard()
	g.observe(&relay.Frame{Dir: relay.ToDebugger, Kind: relay.KindEvent, Cmd: jdwp.CmdEventComposite,
		Packet: jdwp.AppendCommand(nil, 1, jdwp.CmdEventComposite, w.Buf[:7])}, jdwp.IDSizes{}, false)
	g.observe(&relay.Frame{Dir: relay.ToDebugger, Kind: relay.KindEvent, Cmd: jdwp.CmdEventComposite,
		Packet: jdwp.AppendCommand(nil, 2, jdwp.CmdEventComposite, w.Buf)}, jdwp.IDSizes{}, false)
	if g.command(command(jdwp.CmdThreadReferenceName, 2), sizes8, true) != relay.Forward || !g.off {
		t.Fatal("answered after an early packet that does not decode")
	}
}

// FuzzRecord: no body, of any command, makes the guard panic; a body it
// cannot read turns it off rather than being half-read.
func FuzzRecord(f *testing.F) {
	f.Add(uint8(9), uint8(5), []byte{0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 4})
	f.Add(uint8(13), uint8(2), []byte{'L', 0, 0, 0, 1, 'L', 0, 0, 0, 0, 0, 0, 0, 9})
	f.Add(uint8(64), uint8(100), []byte{2, 0, 0, 0, 1, 90, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, set, cmd uint8, body []byte) {
		c := jdwp.Cmd{Set: jdwp.CommandSet(set), Cmd: cmd}
		fr := reply(c, body)
		if c == jdwp.CmdEventComposite {
			fr = &relay.Frame{Dir: relay.ToDebugger, Kind: relay.KindEvent, Cmd: c, Packet: jdwp.AppendCommand(nil, 1, c, body)}
		}
		g := newHotSpotGuard()
		g.observe(fr, sizes8, true)
		if g.off && len(g.ids.m) != 0 {
			t.Fatal("off but still holding IDs")
		}
		g.command(command(jdwp.CmdObjectReferenceReferenceType, 6), sizes8, true)
	})
}

// TestForwardingAllocatesNothing: checking a command, recording a reply
// and an event, and answering a stale ID allocate nothing once the
// session's IDs are known.
func TestForwardingAllocatesNothing(t *testing.T) {
	w := jdwp.BodyWriter{Sizes: sizes8}
	w.Int32(2)
	w.ObjectID(5)
	w.ObjectID(6)
	threads := reply(jdwp.CmdVirtualMachineAllThreads, w.Buf)
	ev := jdwp.BodyWriter{Sizes: sizes8}
	ev.Uint8(uint8(jdwp.SuspendAll))
	ev.Int32(1)
	ev.Uint8(uint8(jdwp.EventBreakpoint))
	ev.Int32(3)
	ev.ObjectID(5)
	ev.Location(jdwp.Location{TypeTag: 1, Class: 7, Method: 8, Index: 9})
	event := &relay.Frame{Dir: relay.ToDebugger, Kind: relay.KindEvent, Cmd: jdwp.CmdEventComposite,
		Packet: jdwp.AppendCommand(nil, 1, jdwp.CmdEventComposite, ev.Buf)}
	g := newHotSpotGuard()
	known, stale := command(jdwp.CmdThreadReferenceName, 6), command(jdwp.CmdThreadReferenceName, 60)
	run := func() {
		g.observe(threads, sizes8, true)
		g.observe(event, sizes8, true)
		if g.command(known, sizes8, true) != relay.Forward || g.command(stale, sizes8, true) != relay.Consume {
			t.Fatal("wrong decision")
		}
	}
	run()
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Fatalf("%v allocations per run", n)
	}
}
