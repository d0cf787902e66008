package speculator

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/bench/link"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/internal/journaltest"
	"github.com/jdwpaccel/jdwpaccel/journal"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/rs/zerolog"
)

// sessionEnded closes its channel when the session ends.
type sessionEnded chan struct{}

func (sessionEnded) Observe(*relay.Session, *relay.Frame) {}
func (sessionEnded) SessionStart(*relay.Session)          {}
func (e sessionEnded) SessionEnd(*relay.Session, error)   { close(e) }

// firstStopOf sums the serial round trips of the steps up to the first
// stop at a breakpoint, and its inspection; bp is that stop's step.
func firstStopOf(steps []journal.Step) (n int, bp journal.Step, ok bool) {
	for _, st := range steps {
		n += st.RoundTrips
		if st.Stop == "BREAKPOINT" {
			return n, st, true
		}
	}
	return n, bp, false
}

// attachOnce runs the IDE-like driver on a new Deep VM (started with
// suspend=y, 5 breakpoints) behind a 2 ms link, through a relay with sp
// and a journal, and returns the serial round trips from the attach to
// the end of the first breakpoint stop, as journal steps counts them, and
// that stop's step.
func attachOnce(t *testing.T, ctx context.Context, b *javavm.Build, sp *Speculator) (int, journal.Step) {
	t.Helper()
	return attachOnceAs(t, ctx, b, sp, javavm.ProfileIdeaLike, 2*time.Millisecond)
}

// attachOnceAs is attachOnce with the driver's profile (workload) and the
// link's RTT given.
func attachOnceAs(t *testing.T, ctx context.Context, b *javavm.Build, sp *Speculator, profile string, rtt time.Duration) (int, journal.Step) {
	t.Helper()
	return attachOnceTo(t, ctx, b, sp, javavm.Deep, profile, rtt)
}

// attachOnceTo is attachOnceAs on a debuggee given.
func attachOnceTo(t *testing.T, ctx context.Context, b *javavm.Build, sp *Speculator, debuggee, profile string, rtt time.Duration) (int, journal.Step) {
	t.Helper()
	vm, err := javavm.Start(ctx, b, debuggee, javavm.VMOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Stop()
	lk, err := link.Listen(ctx, "127.0.0.1:0", vm.Addr(), link.Config{RTT: rtt, Seed: 1}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Close()
	var buf jdwptest.Buffer
	j, err := journaltest.New(t, &buf, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ended := make(sessionEnded)
	pctx, stop := context.WithCancel(ctx)
	defer stop()
	addr, err := serveRelay(pctx, lk.Addr().String(), func(s *relay.Session) relay.Hooks {
		h := sp.Hooks(s)
		h.Observers = append(h.Observers, j, ended)
		return h
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := javavm.RunDriver(ctx, b, javavm.DriverOptions{Addr: addr, Profile: profile,
		Debuggee: debuggee, Steps: 1, Warmup: 1, Breakpoints: javavm.MaxBreakpoints(debuggee)}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
	case <-ctx.Done():
		t.Fatal("the session did not end after the driver exited")
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	recs, err := journal.Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	rep := journal.ComputeSteps(recs)
	if len(rep.Sessions) != 1 {
		t.Fatalf("%d sessions in the journal, want 1", len(rep.Sessions))
	}
	n, bp, ok := firstStopOf(rep.Sessions[0].Steps)
	if !ok {
		t.Fatalf("no breakpoint stop in the journal's steps: %+v", rep.Sessions[0].Steps)
	}
	return n, bp
}

// serveRelay runs a relay with hooks in front of target until ctx ends.
func serveRelay(ctx context.Context, target string, hooks func(*relay.Session) relay.Hooks) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := relay.NewServer(relay.Config{DialVM: relay.DialTCP(target), NewHooks: hooks, Logger: zerolog.Nop()})
	go srv.Serve(ctx, ln) //nolint:errcheck // ends with ctx
	return ln.Addr().String(), nil
}

// TestRealVMSecondAttachCostsFewerRoundTrips attaches a real JDI debugger
// twice, each time to a new JDK 17 VM of the same program, through one
// speculator: the second attach replays what the first learned (by class
// signature and method name: a new VM process hands out new IDs) and must
// reach and show its first breakpoint stop in clearly fewer serial round
// trips, as the journal counts them.
func TestRealVMSecondAttachCostsFewerRoundTrips(t *testing.T) {
	b := jdwptest.JavaBuild(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sp := New(Config{}, zerolog.Nop(), nil)
	sp.noPrior = true // the first attach learns from nothing (the prior's is TestRealVMFirstAttachWithPrior)
	first, firstBP := attachOnce(t, ctx, b, sp)
	second, secondBP := attachOnce(t, ctx, b, sp)
	t.Logf("serial round trips to the first stop: first attach %d, second %d", first, second)
	if second > first*2/3 {
		t.Fatalf("second attach took %d serial round trips to its first stop, the first %d: want at most two thirds", second, first)
	}
	// The object level below the frame's values (the objects' types, the
	// signatures of types the debugger never saw, the fields it reads by
	// the types' shapes) is read ahead at the second attach's first stop:
	// no read the debugger makes there waits on a forwarded command.
	firstReads, secondReads := forwardedReads(firstBP), forwardedReads(secondBP)
	t.Logf("first breakpoint stop: reads forwarded on the critical path at the first attach %v, at the second %v", firstReads, secondReads)
	if len(firstReads) == 0 || len(secondReads) > 0 {
		t.Fatalf("want forwarded reads on the first attach's first stop and none on the second's")
	}
}

// forwardedReads lists the read commands forwarded on st's critical path
// (not the state-setting EventRequest commands).
func forwardedReads(st journal.Step) []string {
	var out []string
	for _, l := range st.Path {
		if l.Served == "forwarded" && !strings.HasPrefix(l.Name, "EventRequest.") {
			out = append(out, l.Name)
		}
	}
	return out
}
