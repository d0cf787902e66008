package jdwp

import (
	"errors"
	"reflect"
	"testing"
)

// allEvents has one event of every kind a composite may carry, with every
// field its kind uses set to a distinct non-zero value.
func allEvents() []Event {
	loc := Location{TypeTagClass, 0x10, 0x11, 0x12}
	catch := Location{TypeTagInterface, 0x20, 0x21, 0x22}
	th := uint64(0x30)
	obj := Value{TagObject, 0x40}
	return []Event{
		{Kind: EventVMStart, RequestID: 0, Thread: th},
		{Kind: EventSingleStep, RequestID: 1, Thread: th, Location: loc},
		{Kind: EventBreakpoint, RequestID: 2, Thread: th, Location: loc},
		{Kind: EventMethodEntry, RequestID: 3, Thread: th, Location: loc},
		{Kind: EventMethodExit, RequestID: 4, Thread: th, Location: loc},
		{Kind: EventMethodExitWithReturnValue, RequestID: 5, Thread: th, Location: loc, Value: Value{TagInt, 0xffffffff}},
		{Kind: EventMethodExitWithReturnValue, RequestID: 5, Thread: th, Location: loc, Value: Value{TagVoid, 0}},
		{Kind: EventMonitorContendedEnter, RequestID: 6, Thread: th, Object: obj, Location: loc},
		{Kind: EventMonitorContendedEntered, RequestID: 7, Thread: th, Object: obj, Location: loc},
		{Kind: EventMonitorWait, RequestID: 8, Thread: th, Object: obj, Location: loc, Timeout: 5000},
		{Kind: EventMonitorWaited, RequestID: 9, Thread: th, Object: obj, Location: loc, TimedOut: true},
		{Kind: EventException, RequestID: 10, Thread: th, Location: loc, Object: Value{TagObject, 0x41}, CatchLocation: catch},
		{Kind: EventException, RequestID: 10, Thread: th, Location: loc, Object: Value{TagObject, 0x41}}, // uncaught: zero location
		{Kind: EventThreadStart, RequestID: 11, Thread: th},
		{Kind: EventThreadDeath, RequestID: 12, Thread: th},
		{Kind: EventClassPrepare, RequestID: 13, Thread: th, RefTypeTag: TypeTagClass, TypeID: 0x50,
			Signature: []byte("Ljava/lang/String;"), Status: ClassStatusVerified | ClassStatusPrepared},
		{Kind: EventClassUnload, RequestID: 14, Signature: []byte("LFoo;")},
		{Kind: EventFieldAccess, RequestID: 15, Thread: th, Location: loc, RefTypeTag: TypeTagClass, TypeID: 0x51,
			Field: 0x60, Object: Value{TagObject, 0}},
		{Kind: EventFieldModification, RequestID: 16, Thread: th, Location: loc, RefTypeTag: TypeTagClass, TypeID: 0x52,
			Field: 0x61, Object: Value{TagObject, 0x42}, Value: Value{TagString, 0x43}},
		{Kind: EventVMDeath, RequestID: 17},
	}
}

func TestCompositeRoundTripEveryKind(t *testing.T) {
	events := allEvents()
	kinds := map[EventKind]bool{}
	for _, e := range events {
		kinds[e.Kind] = true
	}
	for _, k := range CompositeKinds() {
		if !kinds[k] {
			t.Errorf("no test event of kind %s", k)
		}
	}
	for _, sz := range []IDSizes{sizes8, sizesMixed} {
		// One at a time, then all in one composite.
		for _, e := range events {
			want := Composite{SuspendPolicy: SuspendEventThread, Events: []Event{e}}
			body := AppendComposite(nil, sz, &want)
			var got Composite
			if err := got.Decode(body, sz); err != nil {
				t.Fatalf("%s: %v", e.Kind, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s:\n got %+v\nwant %+v", e.Kind, got.Events[0], e)
			}
			for n := 0; n < len(body); n++ {
				if err := got.Decode(body[:n], sz); !errors.Is(err, ErrShortBody) {
					t.Errorf("%s truncated at %d: %v", e.Kind, n, err)
				}
			}
		}
		want := Composite{SuspendPolicy: SuspendAll, Events: events}
		body := AppendComposite(nil, sz, &want)
		var got Composite
		if err := got.Decode(body, sz); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("all events: %v\n got %+v", err, got)
		}
		for _, e := range got.Events {
			if e.Signature != nil && !aliases(e.Signature, body) {
				t.Errorf("%s signature does not alias the body", e.Kind)
			}
		}
	}
}

// TestCompositeSpecBytes decodes a composite built by hand from the
// specification's layout: suspendPolicy, count, then a CLASS_PREPARE and a
// BREAKPOINT, with 8-byte IDs.
func TestCompositeSpecBytes(t *testing.T) {
	raw := []byte{
		2,          // suspendPolicy ALL
		0, 0, 0, 2, // two events
		8,          // CLASS_PREPARE
		0, 0, 0, 3, // requestID
		0, 0, 0, 0, 0, 0, 0, 1, // thread
		1,                      // refTypeTag CLASS
		0, 0, 0, 0, 0, 0, 0, 2, // typeID
		0, 0, 0, 5, 'L', 'A', 'b', 'c', ';', // signature
		0, 0, 0, 7, // status
		2,          // BREAKPOINT
		0, 0, 0, 4, // requestID
		0, 0, 0, 0, 0, 0, 0, 1, // thread
		1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 11, // location
	}
	var c Composite
	if err := c.Decode(raw, sizes8); err != nil {
		t.Fatal(err)
	}
	want := Composite{SuspendAll, []Event{
		{Kind: EventClassPrepare, RequestID: 3, Thread: 1, RefTypeTag: TypeTagClass, TypeID: 2, Signature: []byte("LAbc;"), Status: 7},
		{Kind: EventBreakpoint, RequestID: 4, Thread: 1, Location: Location{TypeTagClass, 2, 9, 11}},
	}}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got %+v", c)
	}
}

func TestCompositeErrors(t *testing.T) {
	for _, k := range []EventKind{EventFramePop, EventUserDefined, EventClassLoad, EventExceptionCatch, EventVMDisconnected, 0, 255} {
		body := []byte{0, 0, 0, 0, 1, byte(k), 0, 0, 0, 1}
		var c Composite
		if err := c.Decode(body, sizes8); !errors.Is(err, ErrUnknownEventKind) {
			t.Errorf("kind %s: %v", k, err)
		}
	}
	// A good event then an unknown one: the good one is kept.
	good := Composite{Events: []Event{{Kind: EventVMDeath, RequestID: 1}}}
	body := AppendComposite(nil, sizes8, &good)
	body[4] = 2                        // two events
	body = append(body, 3, 0, 0, 0, 0) // FRAME_POP
	var c Composite
	if err := c.Decode(body, sizes8); !errors.Is(err, ErrUnknownEventKind) || len(c.Events) != 1 {
		t.Errorf("partial: %v %d events", err, len(c.Events))
	}
	// A count larger than the body can hold is refused before decoding.
	if err := c.Decode([]byte{0, 0x7f, 0xff, 0xff, 0xff, 99}, sizes8); !errors.Is(err, ErrShortBody) {
		t.Errorf("huge count: %v", err)
	}
	if err := c.Decode([]byte{0, 0, 0, 0, 0, 1}, sizes8); !errors.Is(err, ErrTrailingData) {
		t.Errorf("trailing: %v", err)
	}
	if err := c.Decode([]byte{0, 0, 0, 0, 0}, IDSizes{}); !errors.Is(err, ErrBadIDSize) {
		t.Errorf("no sizes: %v", err)
	}
	// A primitive tag where the exception object is.
	bad := Composite{Events: []Event{{Kind: EventException, Object: Value{TagInt, 1}}}}
	if err := c.Decode(AppendComposite(nil, sizes8, &bad), sizes8); !errors.Is(err, ErrBadTag) {
		t.Errorf("primitive exception tag: %v", err)
	}
}

func TestCompositeReuseNoAllocs(t *testing.T) {
	want := Composite{SuspendPolicy: SuspendAll, Events: allEvents()}
	body := AppendComposite(nil, sizes8, &want)
	var c Composite
	if err := c.Decode(body, sizes8); err != nil {
		t.Fatal(err)
	}
	// A smaller composite after a bigger one leaves no stale fields.
	small := Composite{Events: []Event{{Kind: EventVMDeath, RequestID: 9}}}
	if err := c.Decode(AppendComposite(nil, sizes8, &small), sizes8); err != nil || !reflect.DeepEqual(c, small) {
		t.Errorf("reuse: %v %+v", err, c)
	}
	if n := testing.AllocsPerRun(100, func() { _ = c.Decode(body, sizes8) }); n != 0 {
		t.Errorf("Composite.Decode allocates %v per packet", n)
	}
	buf := make([]byte, 0, 4096)
	if n := testing.AllocsPerRun(100, func() { buf = AppendComposite(buf[:0], sizes8, &want) }); n != 0 {
		t.Errorf("AppendComposite allocates %v with room", n)
	}
}

func BenchmarkCompositeDecode(b *testing.B) {
	want := Composite{SuspendPolicy: SuspendAll, Events: allEvents()}
	body := AppendComposite(nil, sizes8, &want)
	var c Composite
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Decode(body, sizes8); err != nil {
			b.Fatal(err)
		}
	}
}
