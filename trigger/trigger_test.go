package trigger

import (
	"testing"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

var sizes = jdwp.IDSizes{FieldID: 8, MethodID: 8, ObjectID: 8, ReferenceTypeID: 8, FrameID: 8}

func TestHandlers(t *testing.T) {
	m := New[int]()
	var cmds, replies int
	m.OnCommand(jdwp.CmdThreadReferenceFrames, func(p jdwp.Packet) { cmds++ })
	m.OnReply(jdwp.CmdThreadReferenceFrames, func(c jdwp.Cmd, r jdwp.Packet, d *int) {
		if c != jdwp.CmdThreadReferenceFrames || *d != 42 || r.ID() != 3 {
			t.Errorf("reply handler got %v %d %d", c, *d, r.ID())
		}
		replies++
	})
	m.Command(jdwp.AppendCommand(nil, 3, jdwp.CmdThreadReferenceFrames, nil))
	m.Command(jdwp.AppendCommand(nil, 4, jdwp.CmdThreadReferenceName, nil))
	if cmds != 1 {
		t.Fatalf("cmds %d", cmds)
	}
	d := 42
	m.Reply(jdwp.CmdThreadReferenceFrames, jdwp.AppendReply(nil, 3, 0, nil), &d)
	// Error replies fire too; other commands' handlers do not.
	m.Reply(jdwp.CmdThreadReferenceFrames, jdwp.AppendReply(nil, 3, jdwp.ErrorInvalidThread, nil), &d)
	m.Reply(jdwp.CmdThreadReferenceName, jdwp.AppendReply(nil, 4, 0, nil), &d)
	if replies != 2 {
		t.Fatalf("reply handler ran %d times, want 2", replies)
	}
}

func TestEvents(t *testing.T) {
	m := New[int]()
	var got []jdwp.EventKind
	var pol jdwp.SuspendPolicy
	h := func(p jdwp.SuspendPolicy, e *jdwp.Event) { got = append(got, e.Kind); pol = p }
	m.OnEvent(jdwp.EventBreakpoint, h)
	m.OnEvent(jdwp.EventClassUnload, h)
	c := jdwp.Composite{SuspendPolicy: jdwp.SuspendAll, Events: []jdwp.Event{
		{Kind: jdwp.EventBreakpoint, Thread: 5, Location: jdwp.Location{TypeTag: 1, Class: 2, Method: 3}},
		{Kind: jdwp.EventThreadStart, Thread: 6},
		{Kind: jdwp.EventClassUnload, Signature: []byte("LFoo;")},
	}}
	body := jdwptest.AppendComposite(nil, sizes, &c)
	dc, err := m.Events(body, sizes)
	if err != nil || len(dc.Events) != 3 {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != jdwp.EventBreakpoint || got[1] != jdwp.EventClassUnload || pol != jdwp.SuspendAll {
		t.Fatalf("fired %v policy %v", got, pol)
	}
	if _, err := m.Events(body[:len(body)-1], sizes); err == nil {
		t.Fatal("truncated composite must fail")
	}
}

func FuzzEvents(f *testing.F) {
	c := jdwp.Composite{SuspendPolicy: jdwp.SuspendEventThread, Events: []jdwp.Event{{Kind: jdwp.EventSingleStep, Thread: 1}}}
	f.Add(jdwptest.AppendComposite(nil, sizes, &c))
	f.Add([]byte{2, 0, 0, 0, 1, 9})
	f.Fuzz(func(t *testing.T, body []byte) {
		m := New[int]()
		m.OnEvent(jdwp.EventSingleStep, func(jdwp.SuspendPolicy, *jdwp.Event) {})
		m.Events(body, sizes) //nolint:errcheck // only panics matter
	})
}
