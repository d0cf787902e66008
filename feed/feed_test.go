package feed

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
)

var sizes8 = jdwp.IDSizes{FieldID: 8, MethodID: 8, ObjectID: 8, ReferenceTypeID: 8, FrameID: 8}

// clock is a settable clock for Config.Now.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newFeed(size int) (*Feed, *clock) {
	c := &clock{t: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
	return New(Config{VMOf: func(*relay.Session) string { return "vm" }, Size: size, Now: c.now}), c
}

// eventFrame is an Event.Composite packet from the VM.
func eventFrame(policy jdwp.SuspendPolicy, evs ...jdwp.Event) *relay.Frame {
	c := jdwp.Composite{SuspendPolicy: policy, Events: evs}
	body := jdwptest.AppendComposite(nil, sizes8, &c)
	return &relay.Frame{Dir: relay.ToDebugger, Kind: relay.KindEvent, Cmd: jdwp.CmdEventComposite,
		Packet: jdwp.AppendCommand(nil, 1, jdwp.CmdEventComposite, body), Time: time.Unix(1_800_000_000, 0)}
}

func readAll(t *testing.T, f *Feed, after uint64) ([]Event, *Reset) {
	t.Helper()
	return f.Read("vm", after, nil, 1<<20)
}

func ids(evs []Event) []uint64 {
	out := make([]uint64, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

// TestHistoryCursor: IDs follow one another from the history's base;
// a cursor reads what follows it; the ring keeps the newest Size events
// and a cursor that fell out of it, or is not of this history, is reset
// to the oldest kept, saying how many were lost.
func TestHistoryCursor(t *testing.T) {
	f, c := newFeed(4)
	base := uint64(c.t.UnixMicro())
	for i := range 3 {
		f.DDMThread("vm", KindDDMThreadStart, uint32(i+1), "t", time.Time{})
	}
	evs, reset := readAll(t, f, 0)
	if reset != nil || len(evs) != 3 || evs[0].ID != base+1 || evs[2].ID != base+3 {
		t.Fatalf("from 0: %v %+v, want 3 events from %d", ids(evs), reset, base+1)
	}
	if evs, reset := readAll(t, f, base+1); reset != nil || len(evs) != 2 || evs[0].ID != base+2 {
		t.Fatalf("after the first: %v %+v", ids(evs), reset)
	}
	if evs, reset := readAll(t, f, base+3); reset != nil || len(evs) != 0 {
		t.Fatalf("after the newest: %v %+v", ids(evs), reset)
	}
	if n := f.Newest("vm"); n != base+3 {
		t.Fatalf("Newest %d, want %d", n, base+3)
	}
	// Three more: the ring holds base+3..base+6; base+1 is gone.
	for i := range 3 {
		f.DDMThread("vm", KindDDMThreadDeath, uint32(i+1), "", time.Time{})
	}
	evs, reset = readAll(t, f, 0)
	if reset != nil || len(evs) != 4 || evs[0].ID != base+3 || evs[3].ID != base+6 {
		t.Fatalf("a full ring from 0: %v %+v", ids(evs), reset)
	}
	if evs, reset := readAll(t, f, base+2); reset != nil || len(evs) != 4 {
		t.Fatalf("the cursor just before the oldest loses nothing: %v %+v", ids(evs), reset)
	}
	evs, reset = readAll(t, f, base)
	if reset == nil || reset.Reason != ReasonLost || reset.Lost != 2 || reset.Oldest != base+3 || len(evs) != 4 || evs[0].ID != base+3 {
		t.Fatalf("a cursor that fell out: %v %+v", ids(evs), reset)
	}
	if _, reset := readAll(t, f, base-5); reset == nil || reset.Reason != ReasonUnknown {
		t.Fatalf("an older history's cursor: %+v", reset)
	}
	if evs, reset := readAll(t, f, base+7); reset == nil || reset.Reason != ReasonAhead || len(evs) != 4 {
		t.Fatalf("a cursor ahead: %v %+v", ids(evs), reset)
	}
	// limit
	if evs, _ := f.Read("vm", 0, nil, 2); len(evs) != 2 || evs[1].ID != base+4 {
		t.Fatalf("limit 2: %v", ids(evs))
	}
	// A later history (a restarted proxy) starts above this one's IDs.
	c.t = c.t.Add(time.Second)
	g := New(Config{Now: c.now})
	g.DDMThread("vm", KindDDMThreadStart, 1, "t", time.Time{})
	if evs, reset := g.Read("vm", base+6, nil, 10); reset == nil || reset.Reason != ReasonUnknown || len(evs) != 1 || evs[0].ID <= base+6 {
		t.Fatalf("the old run's cursor on a new run: %v %+v", ids(evs), reset)
	}
}

// TestObserveEvents: a session's events are recorded in order with the
// session, thread, location (a native method's index as -1) and
// signatures; VM_START, which arrives before the ID sizes are known, is
// recorded once they are; other packets are not recorded.
func TestObserveEvents(t *testing.T) {
	f, _ := newFeed(64)
	s := &relay.Session{ID: 9}
	f.SessionStart(s)
	f.Observe(s, eventFrame(jdwp.SuspendAll, jdwp.Event{Kind: jdwp.EventVMStart, Thread: 0x101}))
	if evs, _ := readAll(t, f, 0); len(evs) != 1 {
		t.Fatalf("before the ID sizes: %d events, want the session start alone", len(evs))
	}
	s.SetIDSizes(sizes8)
	reply := jdwp.AppendCommand(nil, 5, jdwp.CmdVirtualMachineIDSizes, nil)
	f.Observe(s, &relay.Frame{Dir: relay.ToDebugger, Kind: relay.KindReply, Cmd: jdwp.CmdVirtualMachineIDSizes, Packet: reply})
	native := jdwp.Location{TypeTag: jdwp.TypeTagClass, Class: 0x2a, Method: 0x77, Index: ^uint64(0)}
	long := "L" + strings.Repeat("x", MaxSignature) + ";"
	f.Observe(s, eventFrame(jdwp.SuspendNone,
		jdwp.Event{Kind: jdwp.EventThreadStart, RequestID: 2, Thread: 0x102},
		jdwp.Event{Kind: jdwp.EventClassPrepare, RequestID: 3, Thread: 0x101, RefTypeTag: jdwp.TypeTagClass, TypeID: 0x2a, Signature: []byte("LMain;"), Status: 7},
		jdwp.Event{Kind: jdwp.EventClassPrepare, RequestID: 3, Thread: 0x101, RefTypeTag: jdwp.TypeTagClass, TypeID: 0x2b, Signature: []byte(long), Status: 7}))
	f.Observe(s, eventFrame(jdwp.SuspendEventThread, jdwp.Event{Kind: jdwp.EventBreakpoint, RequestID: 4, Thread: 0x101, Location: native}))
	f.Observe(s, eventFrame(jdwp.SuspendNone, jdwp.Event{Kind: jdwp.EventMethodEntry, RequestID: 6, Thread: 0x102, Location: native}))
	f.Observe(s, &relay.Frame{Dir: relay.ToVM, Kind: relay.KindCommand, Cmd: jdwp.CmdVirtualMachineResume, Packet: jdwp.AppendCommand(nil, 6, jdwp.CmdVirtualMachineResume, nil)})
	f.Observe(s, eventFrame(jdwp.SuspendNone, jdwp.Event{Kind: jdwp.EventThreadDeath, RequestID: 2, Thread: 0x102}))
	f.SessionEnd(s, errors.New("debugger gone"))
	evs, _ := readAll(t, f, 0)
	want := []Kind{KindSessionStart, KindVMStart, KindThreadStart, KindClassPrepare, KindClassPrepare, KindStop, KindEvent, KindThreadDeath, KindSessionEnd}
	if len(evs) != len(want) {
		t.Fatalf("%d events, want %d: %+v", len(evs), len(want), evs)
	}
	for i, e := range evs {
		if e.Kind != want[i] || e.Session != 9 || (i > 0 && e.ID != evs[i-1].ID+1) {
			t.Errorf("event %d: %+v, want kind %v of session 9, IDs in sequence", i, e, want[i])
		}
	}
	if e := evs[1]; e.Thread != 0x101 || e.Event != "VM_START" || e.Suspend != "ALL" {
		t.Errorf("VM start: %+v", e)
	}
	if e := evs[3]; e.Signature != "LMain;" || e.TypeID != 0x2a || e.TypeTag != "CLASS" || e.Status != 7 || e.SignatureCut || e.Location != nil {
		t.Errorf("class prepare: %+v", e)
	}
	if e := evs[4]; len(e.Signature) != MaxSignature || !e.SignatureCut || e.Signature != long[:MaxSignature] {
		t.Errorf("a long signature: %d bytes, cut %v", len(e.Signature), e.SignatureCut)
	}
	if e := evs[5]; e.Event != "BREAKPOINT" || e.Suspend != "EVENT_THREAD" || e.Thread != 0x101 || e.RequestID != 4 || e.Location == nil ||
		e.Location.Class != 0x2a || e.Location.Method != 0x77 || e.Location.Index != -1 {
		t.Errorf("stop: %+v %+v", e, e.Location)
	}
	if evs[8].Note != "debugger gone" {
		t.Errorf("session end note %q", evs[8].Note)
	}
	b, err := json.Marshal(evs[5])
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`"kind":"stop"`, `"thread":"0x101"`, `"index":-1`, `"class":"0x2a"`, `"method":"0x77"`, `"event":"BREAKPOINT"`} {
		if !strings.Contains(string(b), w) {
			t.Errorf("JSON %s lacks %s", b, w)
		}
	}
	var back Event
	if err := json.Unmarshal(b, &back); err != nil || back.Thread != 0x101 || back.Location.Index != -1 {
		t.Errorf("JSON round trip: %v %+v", err, back)
	}
}

// TestPendingNeverKnown: events held for ID sizes that never come are
// recorded, with their kind alone, when the session ends.
func TestPendingNeverKnown(t *testing.T) {
	f, _ := newFeed(64)
	s := &relay.Session{ID: 1}
	f.SessionStart(s)
	f.Observe(s, eventFrame(jdwp.SuspendAll, jdwp.Event{Kind: jdwp.EventVMStart, Thread: 0x101}))
	f.SessionEnd(s, nil)
	evs, _ := readAll(t, f, 0)
	if len(evs) != 3 || evs[1].Kind != KindVMStart || evs[1].Thread != 0 || evs[2].Kind != KindSessionEnd {
		t.Fatalf("%+v", evs)
	}
	if f.pending.Load() != 0 {
		t.Fatal("the session still counts as pending")
	}
}

// TestPendingOverflow: beyond maxPending events before the ID sizes, the
// events are recorded in order, with their kinds alone, and the next
// events are held again.
func TestPendingOverflow(t *testing.T) {
	f, _ := newFeed(64)
	s := &relay.Session{ID: 1}
	f.SessionStart(s)
	kinds := []jdwp.EventKind{jdwp.EventVMStart}
	for len(kinds) < maxPending+2 {
		kinds = append(kinds, jdwp.EventThreadStart)
	}
	kinds[maxPending] = jdwp.EventClassPrepare // the first one over
	for _, k := range kinds {
		f.Observe(s, eventFrame(jdwp.SuspendNone, jdwp.Event{Kind: k, Thread: 0x101, Signature: []byte("LA;")}))
	}
	evs, _ := readAll(t, f, 0)
	if len(evs) != 1+maxPending+1 || evs[1].Kind != KindVMStart || evs[maxPending+1].Kind != KindClassPrepare || evs[2].Kind != KindThreadStart {
		t.Fatalf("%d events: %+v", len(evs), evs)
	}
	if evs[2].Thread != 0 {
		t.Fatalf("fields decoded without the sizes: %+v", evs[2])
	}
	// A large event held: its kind alone.
	f.Observe(s, eventFrame(jdwp.SuspendNone, jdwp.Event{Kind: jdwp.EventClassPrepare, Thread: 0x101, Signature: make([]byte, maxPendingBody)}))
	s.SetIDSizes(sizes8)
	f.SessionEnd(s, nil)
	evs, _ = readAll(t, f, 0)
	if big := evs[len(evs)-2]; big.Kind != KindClassPrepare || big.Thread != 0 {
		t.Fatalf("a large event held: %+v", big)
	}
	evs = append(evs[:len(evs)-2], evs[len(evs)-1])
	if last := evs[len(evs)-2]; len(evs) != maxPending+4 || last.Kind != KindThreadStart || last.Thread != 0x101 {
		t.Fatalf("the event held after the overflow: %d events, %+v", len(evs), last)
	}
	if f.pending.Load() != 0 {
		t.Fatal("still pending")
	}
}

// fakeNames names one thread and one location.
type fakeNames struct{}

func (fakeNames) Resolve(_ *relay.Session, thread uint64, loc *jdwp.Location) Resolved {
	var r Resolved
	if thread == 0x101 {
		r.Thread = "main"
	}
	if loc != nil && loc.Class == 0x2a {
		r.Class, r.Method, r.Line = "LMain;", "run", 12
	}
	return r
}

func TestNames(t *testing.T) {
	f := New(Config{VMOf: func(*relay.Session) string { return "vm" }, Names: fakeNames{}})
	s := &relay.Session{ID: 1}
	s.SetIDSizes(sizes8)
	f.SessionStart(s)
	f.Observe(s, eventFrame(jdwp.SuspendAll, jdwp.Event{Kind: jdwp.EventSingleStep, Thread: 0x101, Location: jdwp.Location{TypeTag: jdwp.TypeTagClass, Class: 0x2a, Method: 1, Index: 5}}))
	evs, _ := readAll(t, f, 0)
	if e := evs[1]; e.ThreadName != "main" || e.Location.ClassSignature != "LMain;" || e.Location.MethodName != "run" || e.Location.Line != 12 {
		t.Fatalf("%+v %+v", e, e.Location)
	}
}

// TestWake: a subscriber is woken by an event of its VM, not another's.
func TestWake(t *testing.T) {
	f, _ := newFeed(8)
	sub := f.Subscribe("vm")
	other := f.Subscribe("other")
	defer f.Unsubscribe(sub)
	f.DDMThread("vm", KindDDMThreadStart, 1, "t", time.Time{})
	select {
	case <-sub.Wake():
	default:
		t.Fatal("not woken")
	}
	select {
	case <-other.Wake():
		t.Fatal("another VM's subscriber woken")
	default:
	}
	f.Unsubscribe(other)
	f.Unsubscribe(other) // twice is harmless
	if n := len(f.vms["other"].subs); n != 0 {
		t.Fatalf("%d subscribers left", n)
	}
}

// TestObserveAllocatesNothing: once the ring has wrapped, recording an
// event (a stop, a class prepare) allocates nothing, with no reader; a
// packet that is not an event is not even looked at (a nil session would
// panic).
func TestObserveAllocatesNothing(t *testing.T) {
	f, _ := newFeed(16)
	s := &relay.Session{ID: 1}
	s.SetIDSizes(sizes8)
	f.SessionStart(s)
	stop := eventFrame(jdwp.SuspendAll, jdwp.Event{Kind: jdwp.EventSingleStep, Thread: 0x101, Location: jdwp.Location{TypeTag: jdwp.TypeTagClass, Class: 1, Method: 2, Index: 3}})
	prep := eventFrame(jdwp.SuspendNone, jdwp.Event{Kind: jdwp.EventClassPrepare, Thread: 0x101, RefTypeTag: jdwp.TypeTagClass, TypeID: 9, Signature: []byte("Lcom/example/Main;"), Status: 7})
	for range 32 {
		f.Observe(s, stop)
		f.Observe(s, prep)
	}
	if n := testing.AllocsPerRun(200, func() {
		f.Observe(s, stop)
		f.Observe(s, prep)
	}); n != 0 {
		t.Errorf("recording events: %v allocations", n)
	}
	cmd := &relay.Frame{Kind: relay.KindCommand, Packet: jdwp.AppendCommand(nil, 1, jdwp.CmdStackFrameGetValues, nil)}
	if n := testing.AllocsPerRun(200, func() { f.Observe(nil, cmd) }); n != 0 {
		t.Errorf("a command: %v allocations", n)
	}
}

func TestParseCursor(t *testing.T) {
	for _, c := range []struct {
		header, after string
		want          uint64
		now, err      bool
	}{
		{"", "", 0, false, false},
		{"17", "", 17, false, false},
		{"", "17", 17, false, false},
		{"18", "3", 18, false, false}, // the header is the newer
		{"", "now", 0, true, false},
		{"", "18446744073709551615", 1<<64 - 1, false, false},
		{"", "18446744073709551616", 0, false, true},
		{"", "-1", 0, false, true},
		{"", "0x10", 0, false, true},
		{"+5", "", 0, false, true},
		{"now", "", 0, false, true}, // an EventSource never sends "now"
	} {
		got, now, err := ParseCursor(c.header, c.after)
		if got != c.want || now != c.now || (err != nil) != c.err {
			t.Errorf("ParseCursor(%q, %q) = %d, %v, %v; want %d, %v, error %v", c.header, c.after, got, now, err, c.want, c.now, c.err)
		}
	}
}

// BenchmarkObserve is the feed's cost per packet, with no reader: a
// command (not an event), a stop, a class prepare.
func BenchmarkObserve(b *testing.B) {
	f, _ := newFeed(DefaultHistory)
	s := &relay.Session{ID: 1}
	s.SetIDSizes(sizes8)
	f.SessionStart(s)
	cmd := &relay.Frame{Kind: relay.KindCommand, Packet: jdwp.AppendCommand(nil, 1, jdwp.CmdStackFrameGetValues, nil)}
	stop := eventFrame(jdwp.SuspendAll, jdwp.Event{Kind: jdwp.EventSingleStep, Thread: 0x101, Location: jdwp.Location{TypeTag: jdwp.TypeTagClass, Class: 1, Method: 2, Index: 3}})
	prep := eventFrame(jdwp.SuspendNone, jdwp.Event{Kind: jdwp.EventClassPrepare, Thread: 0x101, RefTypeTag: jdwp.TypeTagClass, TypeID: 9, Signature: []byte("Lcom/example/Main;"), Status: 7})
	for _, c := range []struct {
		name string
		fr   *relay.Frame
	}{{"command", cmd}, {"stop", stop}, {"class_prepare", prep}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				f.Observe(s, c.fr)
			}
		})
	}
}

// TestHistoryMemoryBounded: however many events of whatever signature
// lengths come, a history holds Size records whose signature buffers stay
// within MaxSignature (plus the allocator's rounding).
func TestHistoryMemoryBounded(t *testing.T) {
	f, _ := newFeed(32)
	s := &relay.Session{ID: 1}
	s.SetIDSizes(sizes8)
	f.SessionStart(s)
	for i := range 200 {
		sig := "L" + strings.Repeat("y", (i*37)%(3*MaxSignature)) + ";"
		f.Observe(s, eventFrame(jdwp.SuspendNone, jdwp.Event{Kind: jdwp.EventClassPrepare, Thread: 1, RefTypeTag: jdwp.TypeTagClass, TypeID: uint64(i), Signature: []byte(sig)}))
	}
	h := f.vms["vm"]
	if len(h.recs) != 32 || cap(h.recs) != 32 {
		t.Fatalf("%d records (capacity %d), want 32", len(h.recs), cap(h.recs))
	}
	for i, r := range h.recs {
		if cap(r.sig) > 2*MaxSignature {
			t.Errorf("record %d keeps a %d-byte buffer", i, cap(r.sig))
		}
	}
}
