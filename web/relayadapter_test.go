package web

import (
	"context"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/speculator"
	"github.com/rs/zerolog"
)

// TestSessionTracker runs one relay session: the debugger resumes, the VM
// sends a thread start (which suspends, but is no stop) and then a
// breakpoint, the debugger asks two questions and gets answers. The
// tracker lists the session with its traffic and times one step, from the
// resume to the last answer; a resume followed only by a class prepare is
// no step. It runs in a synctest bubble: the VM takes vmDelay to answer
// each command, so the step's figures are exact, and the quiet time that
// settles the step passes without waiting.
func TestSessionTracker(t *testing.T) {
	synctest.Test(t, testSessionTracker)
}

func testSessionTracker(t *testing.T) {
	const vmDelay = 10 * time.Millisecond
	tr := NewSessionTracker()
	dbgConn, dbgProxy := net.Pipe()
	vmProxy, vmConn := net.Pipe()
	srv := relay.NewServer(relay.Config{
		DialVM:   relay.Plain(func(context.Context) (net.Conn, error) { return vmProxy, nil }),
		Logger:   zerolog.Nop(),
		NewHooks: func(*relay.Session) relay.Hooks { return relay.Hooks{Observers: []relay.Observer{tr}} },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.ServeConnInfo(ctx, dbgProxy, relay.LinkInfo{}) }()

	// The VM: answer every command after vmDelay; after the first resume,
	// send a thread start and a breakpoint, after later ones a class
	// prepare.
	resumes := 0
	vm := jdwptest.NewVM(jdwptest.Script{
		Delay:   vmDelay,
		Default: jdwptest.Body([]byte{1, 2, 3}),
		Replies: map[jdwp.Cmd]jdwptest.ReplyFunc{jdwp.CmdIDSizes: jdwptest.Body(jdwp.AppendIDSizes(nil, sizes8))},
		After: func(c *jdwptest.Conn, cmd jdwp.Packet) error {
			if cmd.Cmd() != jdwp.CmdVirtualMachineResume {
				return nil
			}
			resumes++
			evs := []jdwp.EventKind{jdwp.EventThreadStart, jdwp.EventBreakpoint}
			if resumes > 1 {
				evs = []jdwp.EventKind{jdwp.EventClassPrepare}
			}
			for _, k := range evs {
				comp := jdwp.Composite{SuspendPolicy: jdwp.SuspendAll, Events: []jdwp.Event{{Kind: k, Thread: 1, Signature: []byte("LX;")}}}
				if err := c.Write(jdwp.AppendCommand(nil, 0x20000001, jdwp.CmdComposite, jdwptest.AppendComposite(nil, sizes8, &comp))); err != nil {
					return err
				}
			}
			return nil
		},
	})
	vmDone := make(chan error, 1)
	go func() { vmDone <- vm.Serve(vmConn) }()

	// Before the debugger's handshake no session can have started; after
	// it, one may have at any moment.
	if ss := tr.Sessions(); len(ss) != 0 {
		t.Fatalf("sessions before start: %+v", ss)
	}
	dbg, err := jdwptest.AttachConn(dbgConn)
	if err != nil {
		t.Fatal(err)
	}
	next := func() jdwp.Packet {
		t.Helper()
		p, err := dbg.Next()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	send := func(c jdwp.Cmd) uint32 {
		t.Helper()
		id, err := dbg.Send(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	send(jdwp.CmdIDSizes)
	next()
	resume := send(jdwp.CmdVirtualMachineResume)
	if p := next(); !p.IsReply() || p.ID() != resume {
		t.Fatalf("want the resume reply, got %v", p)
	}
	if p := next(); p.Cmd() != jdwp.CmdComposite {
		t.Fatalf("want the thread start event, got %v", p)
	}
	if p := next(); p.Cmd() != jdwp.CmdComposite {
		t.Fatalf("want the stop event, got %v", p)
	}
	send(jdwp.Cmd{Set: 11, Cmd: 6}) // ThreadReference.Frames
	next()
	send(jdwp.Cmd{Set: 16, Cmd: 1}) // StackFrame.GetValues
	next()

	ss := tr.Sessions()
	if len(ss) != 1 || ss[0].Packets != 10 || !ss[0].Ended.IsZero() || ss[0].VM == "" {
		t.Fatalf("sessions = %+v", ss)
	}
	var a AccelStats
	time.Sleep(DefaultStepIdle - time.Nanosecond)
	tr.AddSteps(&a)
	if a.Steps != 0 {
		t.Fatalf("step counted before the debugger went quiet: %+v", a)
	}
	time.Sleep(time.Nanosecond)
	tr.AddSteps(&a)
	// The resume, the Frames and the GetValues each took the VM vmDelay.
	if a.Steps != 1 || len(a.RecentSteps) != 1 || a.RecentSteps[0] != 3*vmDelay || a.StepLatency.P50 != a.RecentSteps[0] {
		t.Fatalf("steps = %+v", a)
	}
	l := a.LastStep
	if l == nil || l.Event != "BREAKPOINT" || len(l.Commands) != 2 || l.Misses != 2 || l.Hits != 0 || l.Total != a.RecentSteps[0] || l.Run != vmDelay || l.VM != 2*vmDelay {
		t.Fatalf("last step = %+v", l)
	}
	if sum := l.Run + l.VM + l.Belay + l.Cache + l.Debugger; sum != l.Total || l.RoundTrips != 2 {
		t.Fatalf("breakdown %+v sums to %v, not %v", l.StepBreakdown, sum, l.Total)
	}

	// A resume answered only by a class prepare is no step.
	send(jdwp.CmdVirtualMachineResume)
	next()
	next()
	tr.AddSteps(&a)
	if a.Steps != 1 {
		t.Fatalf("a class prepare counted as a step: %+v", a)
	}

	dbgConn.Close()
	if err := <-done; err != nil {
		t.Logf("session ended with %v", err)
	}
	if err := <-vmDone; err != nil {
		t.Fatal(err)
	}
	ss = tr.Sessions()
	if len(ss) != 1 || ss[0].Ended.IsZero() {
		t.Fatalf("after the end: %+v", ss)
	}
}

func TestAccelFromStats(t *testing.T) {
	st := speculator.Stats{Hits: 10, Misses: 3, Belays: 2, SpecSent: 20, SpecWasted: 4, RoundTripsSaved: 12}
	a := AccelFromStats(st)
	if !a.Enabled || a.Hits != 10 || a.Misses != 3 || a.Belays != 2 || a.Wasted != 4 || a.RoundTripsSaved != 12 {
		t.Fatalf("accel = %+v", a)
	}
	// A run's figures: counters since the run started.
	base := speculator.Stats{Hits: 4, Misses: 1, Belays: 1, SpecWasted: 1, RoundTripsSaved: 5}
	if a := AccelFromStats(st.Since(base)); a.Hits != 6 || a.Misses != 2 || a.Belays != 1 || a.Wasted != 3 || a.RoundTripsSaved != 7 {
		t.Fatalf("since base: %+v", a)
	}
}

var sizes8 = jdwp.IDSizes{FieldID: 8, MethodID: 8, ObjectID: 8, ReferenceTypeID: 8, FrameID: 8}

// TestStepBreakdown: a step's time after the stop goes to the costliest
// outstanding command at each moment, and serial round trips count the
// periods with a miss or belay outstanding.
func TestStepBreakdown(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	ts := &trackedSession{
		resumeAt: t0, stopAt: t0.Add(ms(40)), lastReply: t0.Add(ms(200)), stopped: true, stopKind: jdwp.EventSingleStep,
		cmds: []StepCommand{
			{Start: ms(45), End: ms(75), Served: relay.Forwarded}, // 30 ms VM
			{Start: ms(80), End: ms(81), Served: relay.CacheHit},  // 1 ms cache
			{Start: ms(90), End: ms(110), Served: relay.Belay},    // 20 ms belay
			{Start: ms(100), End: ms(130), Served: relay.Forwarded},
			{Start: ms(150), End: ms(0), Served: relay.Forwarded}, // unanswered: counted, not timed
		},
	}
	d := breakdown(ts)
	want := StepBreakdown{At: t0, Total: ms(200), Run: ms(40), VM: ms(30 + 30), Belay: ms(10), Cache: ms(1), Debugger: ms(5 + 5 + 9 + 70),
		RoundTrips: 2, Hits: 1, Misses: 3, Belays: 1, Event: "SINGLE_STEP"}
	if d.StepBreakdown != want {
		t.Fatalf("breakdown\n got %+v\nwant %+v", d.StepBreakdown, want)
	}
}

// TestTrackerObserveAllocs: between steps, and within a step once its
// buffers have grown, observing a packet allocates nothing.
func TestTrackerObserveAllocs(t *testing.T) {
	tr := NewSessionTracker()
	s := &relay.Session{ID: 1}
	tr.sessions[s] = &trackedSession{}
	cmd := jdwp.AppendCommand(nil, 5, jdwp.CmdThreadReferenceFrames, nil)
	reply := jdwp.AppendReply(nil, 5, 0, nil)
	now := time.Now()
	frames := []relay.Frame{
		{Dir: relay.ToVM, Kind: relay.KindCommand, Cmd: jdwp.CmdThreadReferenceFrames, Packet: cmd, ID: 5, Time: now},
		{Dir: relay.ToDebugger, Kind: relay.KindReply, Cmd: jdwp.CmdThreadReferenceFrames, Packet: reply, ID: 5, Time: now},
		{Dir: relay.ToDebugger, Kind: relay.KindDDM, Packet: cmd, Time: now},
	}
	observe := func() {
		for i := range frames {
			tr.Observe(s, &frames[i])
		}
	}
	if n := testing.AllocsPerRun(100, observe); n != 0 {
		t.Fatalf("between steps: %v allocations", n)
	}
	ts := tr.sessions[s]
	ts.resumed, ts.stopped, ts.resumeAt, ts.stopAt, ts.lastReply = true, true, now, now, now
	ts.cmds = make([]StepCommand, 0, 1000)
	if n := testing.AllocsPerRun(100, observe); n != 0 {
		t.Fatalf("within a step: %v allocations", n)
	}
}
