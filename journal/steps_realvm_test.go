package journal

import (
	"context"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/bench/link"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/internal/stat"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/speculator"
	"github.com/rs/zerolog"
)

// linkedSession runs the JDI driver against a real JVM behind an emulated
// link of the given RTT, through a relay with the journal (and, when
// spec, the speculator, with write-behind when wb), and returns the
// journal and the driver's result.
func linkedSession(t *testing.T, ctx context.Context, b *javavm.Build, rtt time.Duration, spec, wb bool, opts javavm.DriverOptions) ([]Record, *javavm.DriverResult) {
	t.Helper()
	vm, err := javavm.Start(ctx, b, opts.Debuggee, javavm.VMOptions{})
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
	j, err := New(&buf, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var sp *speculator.Speculator
	if spec {
		sp = speculator.New(speculator.Config{MinRTT: -1, WriteBehind: wb}, zerolog.Nop(), nil)
	}
	ended := make(chan struct{})
	addr, stop := startProxy(t, lk.Addr().String(), func(s *relay.Session) relay.Hooks {
		var h relay.Hooks
		if sp != nil {
			h = sp.Hooks(s)
		}
		h.Observers = append(h.Observers, j, endSignal(ended))
		return h
	})
	opts.Addr = addr
	res, err := javavm.RunDriver(ctx, b, opts)
	if err != nil {
		stop()
		j.Close()
		t.Fatal(err)
	}
	select {
	case <-ended:
	case <-ctx.Done():
		t.Fatal("the session did not end after the driver exited")
	}
	stop()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if p := os.Getenv("JOURNAL_DUMP"); p != "" {
		os.WriteFile(p+"-"+strings.ReplaceAll(t.Name(), "/", "-")+fmt.Sprintf("-%v.jsonl", rtt), buf.Bytes(), 0o600) //nolint:errcheck // debugging aid
	}
	return readAll(t, buf.Bytes()), res
}

// TestStepsMatchMeasuredSteps checks "journal steps" against reality: the
// serial round trips it finds per step, times the link's RTT, plus the
// step's local cost (the same workload's step time at 0 ms RTT, measured in
// the same run), must give the step times the driver measured at 20 ms
// RTT. It does so for a synchronous IDE-like client, the same through the
// speculator (belays and hits), and a pipelined client (several JDI
// threads), where the round trips are far fewer than the commands. And no
// step may be shorter than its round trips × RTT: each costs at least one.
func TestStepsMatchMeasuredSteps(t *testing.T) {
	if testing.Short() {
		t.Skip("starts JVMs")
	}
	b := jdwptest.JavaBuild(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const rtt = 20 * time.Millisecond
	cases := []struct {
		name     string
		spec, wb bool
		threads  int
	}{
		{"serial", false, false, 0},
		{"speculate", true, false, 0},
		{"write-behind", true, true, 0},
		{"pipelined", false, false, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := javavm.DriverOptions{Debuggee: javavm.Shallow, Profile: javavm.ProfileIdeaLike, Steps: 6, Warmup: 2, Threads: tc.threads}
			// The step's local cost, measured before and after the 20 ms
			// session: load only adds time, and a baseline it slowed (CI's
			// other packages at work) would make the measured steps imply
			// too few round trips.
			_, before := linkedSession(t, ctx, b, 0, tc.spec, tc.wb, opts)
			recs, res := linkedSession(t, ctx, b, rtt, tc.spec, tc.wb, opts)
			_, after := linkedSession(t, ctx, b, 0, tc.spec, tc.wb, opts)
			if err := Check(recs).Err(); err != nil {
				t.Fatalf("the journal breaks its invariants: %v", err)
			}
			rep := ComputeSteps(recs)
			if len(rep.Sessions) != 1 {
				t.Fatalf("%d sessions", len(rep.Sessions))
			}
			ss := rep.Sessions[0]
			// The journal's steps to the driver's single steps, in order;
			// the first is a warm-up stop, the last has no next resume.
			var rts []float64
			commands := 0
			seen := 0
			for _, st := range ss.Steps {
				if st.Stop != "SINGLE_STEP" {
					continue
				}
				seen++
				if lo := time.Duration(st.RoundTrips) * rtt; st.Duration < lo {
					t.Errorf("step %d took %v, less than its %d round trips at %v", st.Index, st.Duration, st.RoundTrips, rtt)
				}
				if seen == 1 || !st.Complete {
					continue
				}
				rts = append(rts, float64(st.RoundTrips))
				commands += st.Commands
			}
			if seen != opts.Steps || len(rts) < 3 {
				t.Fatalf("%d single steps in the journal (%d complete after the first), the driver stepped %d times", seen, len(rts), opts.Steps)
			}
			// The fastest steps: a shared machine's noise (a stalled VM, a
			// busy core) only ever adds time, and it hits a few steps.
			local, measured := math.Min(fastestStep(before), fastestStep(after)), fastestStep(res)
			// A round trip costs the link's RTT and the VM's work: the
			// journal's estimate (the median VM round trip) is the r of
			// step time / r; the emulated link adds a little to 20 ms.
			if ss.RTT < rtt || ss.RTT > rtt*3/2 {
				t.Fatalf("RTT estimate %v at a %v link", ss.RTT, rtt)
			}
			implied := (measured - local) / ms(ss.RTT)
			got := stat.Median(rts)
			t.Logf("%s: journal says %.1f serial round trips per step (%.1f commands); the driver's fastest step took %.1f ms at %v (%v measured) and %.1f ms at 0 ms: %.1f round trips",
				tc.name, got, float64(commands)/float64(len(rts)), measured, rtt, ss.RTT, local, implied)
			// Load only ever adds time, so the measured steps can imply more
			// round trips than there were, never fewer: the journal may not
			// claim more than the times allow (tight), nor far fewer (loose:
			// on a busy 2-core machine one round trip has cost 1.3 RTTs).
			if tol := math.Max(1.5, 0.15*got); got > implied+tol || got < implied/1.6-tol {
				t.Errorf("journal steps reports %.1f serial round trips per step, the measured step times imply %.1f (allowed %.1f..%.1f)", got, implied, implied/1.6-tol, implied+tol)
			}
			if wbs := writtenBehindSteps(ss); tc.wb != (wbs > 0) {
				t.Errorf("%d steps with written-behind commands", wbs)
			}
			if tc.threads > 1 && got >= 0.9*float64(commands)/float64(len(rts)) {
				t.Errorf("pipelined client: %.1f round trips for %.1f commands per step; overlapping commands should not count", got, float64(commands)/float64(len(rts)))
			}
		})
	}
}

// fastestStep is the driver's fastest measured step, in ms.
func fastestStep(res *javavm.DriverResult) float64 {
	best := math.Inf(1)
	for _, s := range res.Steady() {
		best = math.Min(best, s.MS)
	}
	return best
}

// writtenBehindSteps counts the steps with written-behind commands.
func writtenBehindSteps(ss SessionSteps) int {
	n := 0
	for _, st := range ss.Steps {
		if st.WrittenBehind > 0 {
			n++
		}
	}
	return n
}
