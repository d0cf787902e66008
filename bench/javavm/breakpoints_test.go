package javavm

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// TestExtraBreakpoints: Deep has its breakpoint and four others, in a
// method never called and a class never loaded; the main marker is never
// taken for an extra one.
func TestExtraBreakpoints(t *testing.T) {
	extra, err := ExtraBreakpoints(Deep)
	if err != nil || len(extra) != 4 {
		t.Fatalf("ExtraBreakpoints(Deep) = %q, %v; want 4", extra, err)
	}
	main, _ := BreakpointLine(Deep)
	for _, e := range extra {
		if !strings.HasPrefix(e, "Deep:") && !strings.HasPrefix(e, "DeepReport:") || strings.HasSuffix(e, ":"+itoa(main)) {
			t.Errorf("extra breakpoint %q (main line %d)", e, main)
		}
	}
	if n := MaxBreakpoints(Deep); n != 5 {
		t.Errorf("MaxBreakpoints(Deep) = %d, want 5", n)
	}
	if n := MaxBreakpoints(Shallow); n != 1 {
		t.Errorf("MaxBreakpoints(Shallow) = %d, want 1", n)
	}
	if _, err := DriverArgs(&Build{}, DriverOptions{Addr: "127.0.0.1:1", Debuggee: Shallow, Breakpoints: 2}); !errors.Is(err, ErrNoBreakpoint) {
		t.Errorf("2 breakpoints on Shallow: %v, want ErrNoBreakpoint", err)
	}
	args, err := DriverArgs(&Build{}, DriverOptions{Addr: "127.0.0.1:1", Debuggee: Deep, Breakpoints: 3})
	if err != nil || !strings.HasSuffix(strings.Join(args, " "), "--breakpoints 3 --bp-extra "+extra[0]+","+extra[1]) {
		t.Errorf("DriverArgs = %q, %v", args, err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestBreakpointsAndAsync runs Deep/idea-like with one breakpoint, with
// five, and as idea-async: all three see the same stops (the extra
// breakpoints are never hit, and the async reads assemble the same text),
// and each reports a time to the first stop. With five, the VM gets three
// more EventRequest.Set: the two other lines of Deep and a class prepare
// request for DeepReport, which is never loaded.
func TestBreakpointsAndAsync(t *testing.T) {
	b := testBuild(t)
	opts := []DriverOptions{
		{Profile: ProfileIdeaLike, Debuggee: Deep, Steps: 3, Warmup: 1},
		{Profile: ProfileIdeaLike, Debuggee: Deep, Steps: 3, Warmup: 1, Breakpoints: 5},
		{Profile: ProfileIdeaAsync, Debuggee: Deep, Steps: 3, Warmup: 1, Breakpoints: 5},
	}
	res := make([]*DriverResult, len(opts))
	sets := make([]int, len(opts))
	var wg sync.WaitGroup
	for i, o := range opts {
		vm := startVM(t, b, o.Debuggee)
		relay := newCountingRelay(t, vm.Addr())
		o.Addr = relay.Addr()
		wg.Go(func() {
			r, err := RunDriver(testCtx(t), b, o)
			if err != nil {
				t.Errorf("%+v: %v", o, err)
				return
			}
			<-relay.done
			for _, seg := range relay.perStep() {
				for _, c := range seg {
					if c == jdwp.CmdEventRequestSet {
						sets[i]++
					}
				}
			}
			res[i] = r
		})
	}
	wg.Wait()
	if sets[1]-sets[0] != 3 || sets[2] != sets[1] {
		t.Errorf("EventRequest.Set sent %v times, want 3 more with 5 breakpoints", sets)
	}
	for i, r := range res {
		if r == nil {
			t.FailNow()
		}
		if r.Summary.FirstStopMS <= 0 || r.Summary.FirstStopMS < r.Stops[0].MS {
			t.Errorf("run %d: first stop %.1f ms, breakpoint stop %.1f ms", i, r.Summary.FirstStopMS, r.Stops[0].MS)
		}
		for j := range r.Stops {
			if r.Stops[j].Digest != res[0].Stops[j].Digest {
				t.Errorf("run %d (%+v) stop %d: digest differs from one breakpoint, idea-like", i, opts[i], j)
			}
		}
	}
}

// TestServer: the pooled server's threads view lists its 200 parked
// workers, and two runs see the same stops.
func TestServer(t *testing.T) {
	b := testBuild(t)
	opts := DriverOptions{Profile: ProfileIdeaLike, Debuggee: Server, Steps: 3, Warmup: 1, Dump: true}
	var res [2]*DriverResult
	var wg sync.WaitGroup
	for i := range res {
		o := opts
		if i == 1 {
			o.Profile = ProfileIdeaAsync
		}
		wg.Go(func() { res[i] = runFreshNoFatal(t, b, o) })
	}
	wg.Wait()
	if res[0] == nil || res[1] == nil {
		t.FailNow()
	}
	last := res[0].Stops[len(res[0].Stops)-1]
	if n := strings.Count(last.Text, "\nthread server-worker-"); n != 200 || !strings.Contains(last.Text, "thread server-worker-199 WAIT\n") {
		t.Errorf("%d server workers in\n%.2000s", n, last.Text)
	}
	if !strings.HasPrefix(last.Top, "Server.serve:") || !strings.Contains(last.Text, "this.handled = long ") {
		t.Errorf("top %s, text\n%.3000s", last.Top, last.Text)
	}
	for j := range res[0].Stops {
		if res[0].Stops[j].Digest != res[1].Stops[j].Digest {
			t.Errorf("stop %d: idea-async saw\n%s\nidea-like\n%s", j, res[1].Stops[j].Text, res[0].Stops[j].Text)
		}
	}
}
