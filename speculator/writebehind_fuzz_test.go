package speculator

import (
	"testing"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/rs/zerolog"
)

// FuzzWriteBehindCommand feeds arbitrary bodies of the commands
// write-behind reads to a session that has learned a step request: it
// must never panic, and must write behind only a Set that reads whole,
// has a shape that succeeded, and gets the next request ID.
func FuzzWriteBehindCommand(f *testing.F) {
	f.Add(uint8(0), stepSet(thread1, true))
	f.Add(uint8(0), stepSet(thread1, false))
	f.Add(uint8(0), stepSet(0x99, true))
	f.Add(uint8(1), clearBody(jdwp.EventSingleStep, 42))
	f.Add(uint8(2), []byte{})
	f.Add(uint8(3), threadBody(thread1))
	f.Add(uint8(4), body(func(w *jdwp.BodyWriter) { w.Int32(1); w.ObjectID(thread1); w.Int32(1) }))
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
		fa.allSuspended = true
		c := decide(&w, jdwp.AppendCommand(nil, 2, cmds[int(op)%len(cmds)], b), &fa)
		if c == nil || !c.written || c.op != wbSet {
			return
		}
		if _, ok := w.shapes[c.shape]; !ok || c.shape.n == malformed {
			t.Fatalf("wrote behind a Set of a shape never seen: %x", b)
		}
		if c.id != 43 {
			t.Fatalf("answered request ID %d, want 43", c.id)
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
