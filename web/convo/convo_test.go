package convo

import (
	"testing"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
)

var sizes8 = jdwp.IDSizes{FieldID: 8, MethodID: 8, ObjectID: 8, ReferenceTypeID: 8, FrameID: 8}

func body(f func(w *jdwp.BodyWriter)) []byte {
	w := &jdwp.BodyWriter{Sizes: sizes8}
	f(w)
	return w.Buf
}

// deepLines is the reply to Method.LineTable for Deep.level: code
// indexes 0 to 20, lines 10 at 0, 11 at 5, 12 at 8 (out of order).
func deepLines(w *jdwp.BodyWriter) {
	w.Int64(0)
	w.Int64(20)
	w.Int32(3)
	w.Int64(8)
	w.Int32(12)
	w.Int64(0)
	w.Int32(10)
	w.Int64(5)
	w.Int32(11)
}

// exchange feeds one command and its reply (the packet ID is the
// conversation's: the relay pairs them, see Watcher.Observe).
func exchange(st *State, _ uint32, c jdwp.Cmd, cmd, reply func(w *jdwp.BodyWriter)) {
	st.Reply(st.Command(c, body(cmd), sizes8), c, body(reply), sizes8)
}

func none(*jdwp.BodyWriter) {}

func stopEvent(kind jdwp.EventKind, policy jdwp.SuspendPolicy, thread uint64, loc jdwp.Location) []byte {
	c := jdwp.Composite{SuspendPolicy: policy, Events: []jdwp.Event{{Kind: kind, RequestID: 3, Thread: thread, Location: loc}}}
	return jdwptest.AppendComposite(nil, sizes8, &c)
}

// TestConversation replays what an IDE asks at a breakpoint and checks the
// thread picture: names, statuses, frames resolved to class, method, file
// and line, and raw IDs where the debugger never asked.
func TestConversation(t *testing.T) {
	st := NewState()
	exchange(st, 1, jdwp.CmdVirtualMachineAllThreads, none, func(w *jdwp.BodyWriter) {
		w.Int32(2)
		w.ObjectID(0x101)
		w.ObjectID(0x102)
	})
	st.Event(stopEvent(jdwp.EventBreakpoint, jdwp.SuspendAll, 0x101, jdwp.Location{TypeTag: 1, Class: 0x500, Method: 0x600, Index: 7}), sizes8)
	exchange(st, 2, jdwp.CmdThreadReferenceName, func(w *jdwp.BodyWriter) { w.ObjectID(0x101) }, func(w *jdwp.BodyWriter) { w.String("main") })
	exchange(st, 3, jdwp.CmdThreadReferenceStatus, func(w *jdwp.BodyWriter) { w.ObjectID(0x101) }, func(w *jdwp.BodyWriter) { w.Int32(1); w.Int32(1) })
	exchange(st, 4, jdwp.CmdThreadReferenceFrames, func(w *jdwp.BodyWriter) { w.ObjectID(0x101); w.Int32(0); w.Int32(-1) }, func(w *jdwp.BodyWriter) {
		w.Int32(2)
		w.FrameID(1)
		w.Location(jdwp.Location{TypeTag: 1, Class: 0x500, Method: 0x600, Index: 7})
		w.FrameID(2)
		w.Location(jdwp.Location{TypeTag: 1, Class: 0x501, Method: 0x601, Index: 3})
	})
	exchange(st, 5, jdwp.CmdReferenceTypeSignature, func(w *jdwp.BodyWriter) { w.ReferenceTypeID(0x500) }, func(w *jdwp.BodyWriter) { w.String("Lcom/example/Deep;") })
	exchange(st, 6, jdwp.CmdReferenceTypeSourceFile, func(w *jdwp.BodyWriter) { w.ReferenceTypeID(0x500) }, func(w *jdwp.BodyWriter) { w.String("Deep.java") })
	exchange(st, 7, jdwp.CmdReferenceTypeMethodsWithGeneric, func(w *jdwp.BodyWriter) { w.ReferenceTypeID(0x500) }, func(w *jdwp.BodyWriter) {
		w.Int32(1)
		w.MethodID(0x600)
		w.String("level")
		w.String("(I)V")
		w.String("")
		w.Int32(1)
	})
	exchange(st, 8, jdwp.CmdMethodLineTable, func(w *jdwp.BodyWriter) { w.ReferenceTypeID(0x500); w.MethodID(0x600) }, deepLines)
	// A reply to a command the State never saw is ignored.
	st.Reply(nil, jdwp.CmdThreadReferenceName, body(func(w *jdwp.BodyWriter) { w.String("ghost") }), sizes8)

	v := st.View()
	if v.Stop != 1 || v.Running || v.StopThread != 0x101 || v.StopEvent != "BREAKPOINT" || len(v.Threads) != 2 {
		t.Fatalf("view %+v", v)
	}
	m := v.Threads[0]
	if m.ID != 0x101 || m.Name != "main" || m.Status != StatusRunning || !m.Suspended || m.StatusStop != 1 || len(m.Frames) != 2 {
		t.Fatalf("main %+v", m)
	}
	if f := m.Frames[0]; f.Class != "com.example.Deep" || f.Method != "level" || f.Source != "Deep.java" || f.Line != 11 {
		t.Fatalf("top frame %+v", f)
	}
	if f := m.Frames[1]; f.Class != "" || f.Method != "" || f.ClassID != 0x501 || f.MethodID != 0x601 || f.Line != -1 {
		t.Fatalf("second frame (raw IDs) %+v", f)
	}
	if o := v.Threads[1]; o.ID != 0x102 || o.Name != "" || o.Status != StatusUnknown {
		t.Fatalf("other thread %+v", o)
	}

	// A resume, then a thread start (not a stop), then a step: stop 2.
	st.Command(jdwp.CmdVirtualMachineResume, nil, sizes8)
	if v := st.View(); !v.Running {
		t.Fatal("not running after the resume")
	}
	st.Event(stopEvent(jdwp.EventThreadStart, jdwp.SuspendAll, 0x103, jdwp.Location{}), sizes8)
	if v := st.View(); v.Stop != 1 || len(v.Threads) != 3 {
		t.Fatalf("a thread start counted as a stop, or the thread is missing: %+v", v)
	}
	st.Event(stopEvent(jdwp.EventSingleStep, jdwp.SuspendEventThread, 0x101, jdwp.Location{TypeTag: 1, Class: 0x500, Method: 0x600, Index: 9}), sizes8)
	v = st.View()
	if v.Stop != 2 || v.Running {
		t.Fatalf("after the step: %+v", v)
	}
	if m := v.Threads[0]; len(m.Frames) != 1 || m.Frames[0].Line != 12 || m.FramesStop != 2 || m.StatusStop != 1 {
		t.Fatalf("main after the step: %+v", m)
	}
	// A thread death removes the thread.
	st.Event(stopEvent(jdwp.EventThreadDeath, jdwp.SuspendNone, 0x102, jdwp.Location{}), sizes8)
	if v := st.View(); len(v.Threads) != 2 {
		t.Fatalf("thread death: %+v", v.Threads)
	}
}

func TestClassName(t *testing.T) {
	for sig, want := range map[string]string{"Lcom/x/Main;": "com.x.Main", "[I": "int[]", "[[Ljava/lang/String;": "java.lang.String[][]", "": ""} {
		if got := ClassName(sig); got != want {
			t.Errorf("ClassName(%q) = %q, want %q", sig, got, want)
		}
	}
}

// TestIgnoredAllocatesNothing: a command the State does not read costs no
// allocation.
func TestIgnoredAllocatesNothing(t *testing.T) {
	st := NewState()
	b := body(func(w *jdwp.BodyWriter) { w.ObjectID(1) })
	if n := testing.AllocsPerRun(100, func() {
		q := st.Command(jdwp.CmdStackFrameGetValues, b, sizes8)
		st.Reply(q, jdwp.CmdStackFrameGetValues, b, sizes8)
	}); n != 0 {
		t.Fatalf("%v allocations per ignored packet", n)
	}
}

// FuzzState feeds arbitrary wire bytes as a command, its reply and an
// event: the State must not panic and must keep within its bounds.
func FuzzState(f *testing.F) {
	f.Add(uint8(11), uint8(6), body(func(w *jdwp.BodyWriter) { w.ObjectID(1); w.Int32(0); w.Int32(-1) }),
		body(func(w *jdwp.BodyWriter) { w.Int32(1); w.FrameID(1); w.Location(jdwp.Location{Class: 2, Method: 3}) }),
		stopEvent(jdwp.EventBreakpoint, jdwp.SuspendAll, 1, jdwp.Location{Class: 2, Method: 3}), uint8(8))
	f.Add(uint8(1), uint8(4), []byte{}, body(func(w *jdwp.BodyWriter) { w.Int32(1); w.ObjectID(7) }), []byte{}, uint8(4))
	f.Add(uint8(6), uint8(1), body(func(w *jdwp.BodyWriter) { w.ReferenceTypeID(2); w.MethodID(3) }),
		body(func(w *jdwp.BodyWriter) { w.Int64(0); w.Int64(9); w.Int32(1); w.Int64(0); w.Int32(5) }), []byte{2, 0, 0, 0, 0}, uint8(8))
	f.Add(uint8(2), uint8(15), body(func(w *jdwp.BodyWriter) { w.ReferenceTypeID(2) }), []byte{0, 0, 0, 1}, []byte{}, uint8(2))
	f.Fuzz(func(t *testing.T, set, cmd uint8, cmdBody, replyBody, event []byte, size uint8) {
		sz := int(size%8) + 1
		sizes := jdwp.IDSizes{FieldID: sz, MethodID: sz, ObjectID: sz, ReferenceTypeID: sz, FrameID: sz}
		st := NewState()
		c := jdwp.Cmd{Set: jdwp.CommandSet(set), Cmd: cmd}
		for range 3 {
			q := st.Command(c, cmdBody, sizes)
			st.Event(event, sizes)
			st.Reply(q, c, replyBody, sizes)
		}
		v := st.View()
		if len(v.Threads) > maxThreads || len(st.classes) > maxClasses || len(st.methods) > maxMethods || len(st.free) > maxFree {
			t.Fatalf("bounds exceeded: %d threads, %d classes, %d methods", len(v.Threads), len(st.classes), len(st.methods))
		}
		for _, th := range v.Threads {
			if len(th.Frames) > maxFrames {
				t.Fatalf("%d frames", len(th.Frames))
			}
		}
	})
}

// TestObserveIgnoresCheaply: the watcher returns before touching the
// session or its lock for packets of commands it does not read.
func TestObserveIgnoresCheaply(t *testing.T) {
	w := NewWatcher(func(*relay.Session) string { return "vm" })
	p := jdwp.AppendCommand(nil, 1, jdwp.CmdStackFrameGetValues, nil)
	frames := []relay.Frame{
		{Kind: relay.KindCommand, Cmd: jdwp.CmdStackFrameGetValues, Packet: p},
		{Kind: relay.KindReply, Cmd: jdwp.CmdObjectReferenceGetValues, Packet: p},
		{Kind: relay.KindDDM, Packet: p},
	}
	if n := testing.AllocsPerRun(100, func() {
		for i := range frames {
			w.Observe(nil, &frames[i]) // a nil session would panic if touched
		}
	}); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

// TestWatcherKeepsEndedPicture: after its session ends, a VM's picture
// stays (marked ended) until the next session, without its tables.
func TestWatcherKeepsEndedPicture(t *testing.T) {
	w := NewWatcher(func(*relay.Session) string { return "vm" })
	s := &relay.Session{ID: 7}
	w.SessionStart(s)
	st := w.sessions[s]
	exchange(st, 1, jdwp.CmdVirtualMachineAllThreads, none, func(w *jdwp.BodyWriter) { w.Int32(1); w.ObjectID(0x101) })
	exchange(st, 2, jdwp.CmdThreadReferenceName, func(w *jdwp.BodyWriter) { w.ObjectID(0x101) }, func(w *jdwp.BodyWriter) { w.String("main") })
	w.SessionEnd(s, nil)
	v, ok := w.View("vm")
	if !ok || v.Open || v.Session != 7 || len(v.Threads) != 1 || v.Threads[0].Name != "main" {
		t.Fatalf("after the end: %+v", v)
	}
	if st.threads != nil || st.classes != nil || st.free != nil {
		t.Fatal("an ended session keeps its tables")
	}
	w.SessionStart(&relay.Session{ID: 8})
	if v, _ := w.View("vm"); v.Session != 8 || !v.Open || len(v.Threads) != 0 {
		t.Fatalf("a new session: %+v", v)
	}
}
