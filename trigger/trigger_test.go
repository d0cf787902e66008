package trigger

import (
	"testing"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

var sizes = jdwp.IDSizes{FieldID: 8, MethodID: 8, ObjectID: 8, ReferenceTypeID: 8, FrameID: 8}

func TestEvents(t *testing.T) {
	m := New()
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
		m := New()
		m.OnEvent(jdwp.EventSingleStep, func(jdwp.SuspendPolicy, *jdwp.Event) {})
		m.Events(body, sizes) //nolint:errcheck // only panics matter
	})
}
