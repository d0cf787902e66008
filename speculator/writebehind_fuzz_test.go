package speculator

import (
	"testing"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/rs/zerolog"
)

// FuzzWriteBehindCommand feeds arbitrary bodies of the commands
// write-behind reads to a session that has learned a step request (and,
// on HotSpot, op's high bit, also set a CLASS_PREPARE request): it must
// never panic, and must write behind only a Set that reads whole, (before
// a stop) of an event kind a forwarded Set of the session had, of a shape
// that succeeded or (HotSpot) is provable, with the next request ID.
func FuzzWriteBehindCommand(f *testing.F) {
	f.Add(uint8(0), stepSet(thread1, true))
	f.Add(uint8(0), stepSet(thread1, false))
	f.Add(uint8(0), stepSet(0x99, true))
	f.Add(uint8(1), clearBody(jdwp.EventSingleStep, 42))
	f.Add(uint8(2), []byte{})
	f.Add(uint8(3), threadBody(thread1))
	f.Add(uint8(4), body(func(w *jdwp.BodyWriter) { w.Int32(1); w.ObjectID(thread1); w.Int32(1) }))
	f.Add(uint8(0x80), setBody(jdwp.EventClassPrepare, jdwp.SuspendAll, classMatch("a.B$*")))
	f.Add(uint8(0x80), setBody(jdwp.EventClassPrepare, 3, classMatch("a.B")))
	f.Add(uint8(0x80), setBody(jdwp.EventClassPrepare, jdwp.SuspendAll, jdwp.Modifier{Kind: jdwp.ModCount, Count: 1},
		jdwp.Modifier{Kind: jdwp.ModClassExclude, Pattern: []byte("java.*")}))
	f.Add(uint8(0x80), setBody(jdwp.EventThreadStart, jdwp.SuspendAll, classMatch("a.B")))
	cmds := [...]jdwp.Cmd{jdwp.CmdEventRequestSet, jdwp.CmdEventRequestClear, jdwp.CmdVirtualMachineResume,
		jdwp.CmdThreadReferenceResume, jdwp.CmdVirtualMachineDisposeObjects, jdwp.CmdVirtualMachineRedefineClasses,
		jdwp.CmdEventRequestClearAllBreakpoints}
	reply := func(id int32) jdwp.Packet {
		return jdwp.AppendReply(nil, 1, 0, body(func(w *jdwp.BodyWriter) { w.Int32(id) }))
	}
	decide := func(w *writeBehind, p jdwp.Packet, fa *facts) *wbCmd {
		x := command{f: &relay.Frame{Packet: p}, sizes: sizes8}
		if p.Cmd() == jdwp.CmdEventRequestSet {
			x.set.read(p.Body(), sizes8) // as the session reads it, once
		}
		return w.decide(&x, fa)
	}
	f.Fuzz(func(t *testing.T, op uint8, b []byte) {
		w := newWriteBehind(&core{}, true)
		fa := newFacts(New(Config{}, zerolog.Nop(), nil))
		set := jdwp.AppendCommand(nil, 1, jdwp.CmdEventRequestSet, stepSet(thread1, true))
		w.forwarded(decide(&w, set, &fa), reply(41))
		w.event(&jdwp.Composite{SuspendPolicy: jdwp.SuspendAll, Events: []jdwp.Event{stepEvent(41)}})
		w.forwarded(decide(&w, set, &fa), reply(42))
		w.event(&jdwp.Composite{SuspendPolicy: jdwp.SuspendAll, Events: []jdwp.Event{stepEvent(42)}})
		next := int32(43)
		if w.hotspot = op&0x80 != 0; w.hotspot {
			prep := jdwp.AppendCommand(nil, 1, jdwp.CmdEventRequestSet, setBody(jdwp.EventClassPrepare, jdwp.SuspendNone))
			w.forwarded(decide(&w, prep, &fa), reply(next))
			next++
		}
		fa.allSuspended = true
		c := decide(&w, jdwp.AppendCommand(nil, 2, cmds[int(op&0x7F)%len(cmds)], b), &fa)
		if c == nil || !c.written || c.op != wbSet {
			return
		}
		_, seen := w.shapes[c.shape]
		if c.shape.n == malformed || !seen && !(w.hotspot && provableShape(c)) {
			t.Fatalf("wrote behind a Set of a shape never seen nor provable: %x", b)
		}
		if !w.stopSeen && c.kind != jdwp.EventSingleStep && !(w.hotspot && c.kind == jdwp.EventClassPrepare) {
			t.Fatalf("wrote behind the first Set of event kind %v at attach: %x", c.kind, b)
		}
		if c.shape.b[1] > 2 && !seen {
			t.Fatalf("wrote behind a Set with suspend policy %d: %x", c.shape.b[1], b)
		}
		if c.id != next {
			t.Fatalf("answered request ID %d, want %d", c.id, next)
		}
		r := jdwp.NewBodyReader(b, sizes8)
		r.Bytes(6)
		for range c.shape.n {
			r.Modifier()
		}
		if r.Err() != nil || r.Remaining() != 0 {
			t.Fatalf("wrote behind a Set that does not read whole: %x", b)
		}
	})
}
