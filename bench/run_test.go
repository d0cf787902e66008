package bench

import (
	"bytes"
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/speculator"
	"github.com/rs/zerolog"
)

// corrupter changes one letter of every thread name the VM reports: a
// proxy that serves a wrong value.
type corrupter struct{}

var cmdThreadName = jdwp.Cmd{Set: jdwp.SetThreadReference, Cmd: 1}

func (corrupter) FromDebugger(*relay.Session, *relay.Frame) relay.Action { return relay.Forward }
func (corrupter) FromVM(_ *relay.Session, f *relay.Frame) relay.Action {
	if f.Kind == relay.KindReply && f.Cmd == cmdThreadName && len(f.Packet) > jdwp.HeaderSize+4 {
		f.Packet[len(f.Packet)-1] ^= 0x20 // flips the case of the name's last letter
	}
	return relay.Forward
}
func (corrupter) Close(*relay.Session) {}

// TestDigestCheck runs a small matrix against real JVMs: the pass-through
// proxy must match the direct run, and a proxy that serves a wrong value
// must make the run fail with ErrDigestMismatch. With 2 warm-up steps, each
// cell measures exactly Steps stops (the breakpoint stop is not one).
func TestDigestCheck(t *testing.T) {
	b := jdwptest.JavaBuild(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	fresh := 0
	cfg := Config{
		RTTs:      []time.Duration{0},
		Workloads: []Workload{{Profile: javavm.ProfileJDBMin, Debuggee: javavm.Shallow}},
		Steps:     2, Warmup: 2, Build: b, Log: zerolog.Nop(),
		Modes: []Mode{
			{Name: "direct", Direct: true},
			{Name: "proxy"},
			{Name: "corrupt", Fresh: func() Mode {
				fresh++
				return Mode{Name: "made fresh", NewHooks: func(*relay.Session) relay.Hooks {
					return relay.Hooks{Interceptors: []relay.Interceptor{corrupter{}}}
				}}
			}},
		},
	}
	rep, err := Run(ctx, cfg)
	if !errors.Is(err, ErrDigestMismatch) {
		t.Fatalf("Run = %v, want ErrDigestMismatch from the corrupting proxy", err)
	}
	if len(rep.Cells) != 3 {
		t.Fatalf("%d cells, want 3", len(rep.Cells))
	}
	for _, c := range rep.Cells {
		want := c.Mode != "corrupt"
		if c.DigestsMatch != want || c.Stops != 2 || len(c.StepMS) != 2 {
			t.Errorf("cell %s: digests match %v over %d stops, want %v over 2", c.Mode, c.DigestsMatch, c.Stops, want)
		}
	}
	if len(rep.Mismatches) != 1 || !strings.Contains(rep.Mismatches[0], "corrupt") {
		t.Errorf("mismatches %q, want exactly the corrupting mode", rep.Mismatches)
	}
	if fresh != 1 || rep.Cells[2].Mode != "corrupt" {
		t.Errorf("the fresh mode was made %d times for its one cell, named %q", fresh, rep.Cells[2].Mode)
	}
	// The first stop's figures: the link's bytes each way, the VM's run,
	// and the first stop minus the VM's start-up (the median run, at 0 ms).
	startup, ok := rep.VMStartupMS[rep.Cells[0].Workload]
	if runs := []float64{rep.Cells[0].VMRunMS, rep.Cells[1].VMRunMS, rep.Cells[2].VMRunMS}; !ok || startup != spreadOf(runs).Median {
		t.Errorf("VM start-up %v (%v), want the median of the cells' runs %v", startup, ok, runs)
	}
	for _, c := range rep.Cells {
		if c.FirstStopUpBytes <= 0 || c.FirstStopDownBytes <= c.FirstStopUpBytes || c.VMRunMS <= 0 || c.VMRunMS >= c.FirstStopMS {
			t.Errorf("cell %s: first stop %.1f ms, VM ran %.1f ms, link bytes %d to the VM and %d back",
				c.Mode, c.FirstStopMS, c.VMRunMS, c.FirstStopUpBytes, c.FirstStopDownBytes)
		}
		if math.Abs(c.FirstStopWaitMS-(c.FirstStopMS-c.VMRunMS)) > 1e-9 || c.Mode != "direct" && c.FirstStopWaitSpeedup <= 0 {
			t.Errorf("cell %s: first stop minus its VM run %.3f ms (speedup %.2f), want %.3f - %.3f", c.Mode, c.FirstStopWaitMS, c.FirstStopWaitSpeedup, c.FirstStopMS, c.VMRunMS)
		}
		if c.FirstStopMS > startup && math.Abs(c.FirstStopNetMS-(c.FirstStopMS-startup)) > 1e-9 {
			t.Errorf("cell %s: first stop minus start-up %.3f ms, want %.3f - %.3f", c.Mode, c.FirstStopNetMS, c.FirstStopMS, startup)
		}
	}
	var table, svg bytes.Buffer
	if err := rep.WriteTable(&table); err != nil || !strings.Contains(table.String(), "MISMATCH") || !strings.Contains(table.String(), "minus start-up ms") {
		t.Errorf("table (%v) does not flag the mismatch:\n%s", err, table.String())
	}
	if err := rep.WriteSVG(&svg); err != nil || !strings.Contains(svg.String(), "<circle") {
		t.Errorf("chart (%v) has no points", err)
	}
}

// TestSlopes: the slope of step time against RTT is the number of serial
// round trips per step.
func TestSlopes(t *testing.T) {
	var cells []Cell
	for _, rtt := range []float64{0, 1, 10, 30, 100} {
		cells = append(cells,
			Cell{Workload: "w", Mode: "direct", RTTMS: rtt, MedianMS: 5 + 80*rtt, FirstStopMS: 400 + 120*rtt, FirstStopWaitMS: 100 + 110*rtt},
			Cell{Workload: "w", Mode: "fast", RTTMS: rtt, MedianMS: 7 + 4*rtt, FirstStopMS: 410 + 30*rtt, FirstStopWaitMS: 90 + 25*rtt})
	}
	got := slopes(cells)
	if len(got) != 2 {
		t.Fatalf("got %d slopes", len(got))
	}
	for i, want := range []struct{ rt, icpt, first, firstIcpt, wait float64 }{{80, 5, 120, 400, 110}, {4, 7, 30, 410, 25}} {
		if math.Abs(got[i].RoundTrips-want.rt) > 1e-9 || math.Abs(got[i].InterceptMS-want.icpt) > 1e-9 ||
			math.Abs(got[i].FirstStopRoundTrips-want.first) > 1e-9 || math.Abs(got[i].FirstStopInterceptMS-want.firstIcpt) > 1e-9 ||
			math.Abs(got[i].FirstStopWaitRoundTrips-want.wait) > 1e-9 {
			t.Errorf("slope %d = %+v, want %v round trips, intercept %v; to the first stop %v, %v; minus the VM's run %v", i, got[i], want.rt, want.icpt, want.first, want.firstIcpt, want.wait)
		}
	}
	// The VM ran 150 ms (the median of the cells at 0 ms) of the first stop.
	rep := &Report{Cells: []Cell{
		{Workload: "w", Mode: "direct", RTTMS: 0, FirstStopMS: 400, VMRunMS: 150},
		{Workload: "w", Mode: "fast", RTTMS: 0, FirstStopMS: 200, VMRunMS: 140},
		{Workload: "w", Mode: "fresh", RTTMS: 0, FirstStopMS: 210, VMRunMS: 160},
		{Workload: "w", Mode: "direct", RTTMS: 30, FirstStopMS: 3750, VMRunMS: 190},
		{Workload: "w", Mode: "fast", RTTMS: 30, FirstStopMS: 350, VMRunMS: 170},
	}}
	rep.subtractStartup()
	if rep.VMStartupMS["w"] != 150 {
		t.Errorf("VM start-up %v, want the median of the cells' at 0 ms", rep.VMStartupMS)
	}
	for i, want := range [][2]float64{{250, 0}, {50, 5}, {60, 250.0 / 60}, {3600, 0}, {200, 18}} {
		if c := rep.Cells[i]; math.Abs(c.FirstStopNetMS-want[0]) > 1e-9 || math.Abs(c.FirstStopNetSpeedup-want[1]) > 1e-9 {
			t.Errorf("cell %d: first stop minus start-up %v ms, speedup %v; want %v, %v", i, c.FirstStopNetMS, c.FirstStopNetSpeedup, want[0], want[1])
		}
	}
	if q := quantile([]float64{5, 1, 4, 2, 3}, 0.5); q != 3 {
		t.Errorf("median = %v, want 3", q)
	}
}

// TestDigestsNewWorkloads: the pooled server (idea-like and the pipelined
// idea-async) and Deep with five breakpoints see the same values through
// the relay as directly, and every cell reports its time to the first stop
// and, for the proxied cells, its speedup.
func TestDigestsNewWorkloads(t *testing.T) {
	b := jdwptest.JavaBuild(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg := Config{
		RTTs: []time.Duration{0},
		Workloads: []Workload{
			{Profile: javavm.ProfileIdeaLike, Debuggee: javavm.Server},
			{Profile: javavm.ProfileIdeaAsync, Debuggee: javavm.Server},
			{Profile: javavm.ProfileIdeaLike, Debuggee: javavm.Deep, Breakpoints: 5},
		},
		Steps: 2, Warmup: 1, Build: b, Log: zerolog.Nop(),
		Modes: []Mode{{Name: "direct", Direct: true}, {Name: "proxy"}},
	}
	rep, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("Run: %v (mismatches %q)", err, rep.Mismatches)
	}
	if len(rep.Cells) != 6 {
		t.Fatalf("%d cells, want 6", len(rep.Cells))
	}
	for _, c := range rep.Cells {
		if !c.DigestsMatch || c.FirstStopMS <= 0 || c.Mode == "proxy" && c.FirstStopSpeedup <= 0 {
			t.Errorf("cell %s %s: digests match %v, first stop %.1f ms (speedup %.2f)", c.Workload, c.Mode, c.DigestsMatch, c.FirstStopMS, c.FirstStopSpeedup)
		}
	}
	if w := rep.Cells[4].Workload; w != "Deep/idea-like 5bp" {
		t.Errorf("workload label %q", w)
	}
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil || !strings.Contains(table.String(), "first stop ms") {
		t.Errorf("table (%v) has no time to first stop:\n%s", err, table.String())
	}
}

// TestSplitDigests: split mode (far end next to the VM, the link between
// it and the near end, both ends speculating) shows the IDE-like driver
// the same values at every stop as the direct run, on a link with a
// round trip and a bandwidth limit.
func TestSplitDigests(t *testing.T) {
	b := jdwptest.JavaBuild(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	far := speculator.New(speculator.Config{}, zerolog.Nop(), nil)
	near := speculator.New(speculator.Config{}, zerolog.Nop(), nil)
	rep, err := Run(ctx, Config{
		RTTs:      []time.Duration{4 * time.Millisecond},
		Workloads: []Workload{{Profile: javavm.ProfileIdeaLike, Debuggee: javavm.Deep}},
		Steps:     2, Warmup: 1, Bandwidth: 4 << 20, Build: b, Log: zerolog.Nop(),
		Modes: []Mode{
			{Name: "direct", Direct: true},
			{Name: "split", Split: true, FarHooks: far.Hooks, NewHooks: near.Hooks, Stats: near.Stats},
		},
	})
	if err != nil {
		t.Fatalf("Run: %v (mismatches %q)", err, rep.Mismatches)
	}
	c := rep.Cells[1]
	if !c.DigestsMatch || c.Stops != 2 {
		t.Errorf("split cell: digests match %v over %d stops", c.DigestsMatch, c.Stops)
	}
	if c.Stats == nil || c.Stats.Hits+c.Stats.Belays == 0 {
		t.Errorf("split cell: the near end's cache served nothing: %+v", c.Stats)
	}
	if far.Stats().Hits+far.Stats().Misses == 0 {
		t.Error("the far end's speculator saw no command")
	}
}

// A java-debug workload without a java-debug build is refused before any
// VM starts, naming the workload.
func TestJavaDebugNeedsPeer(t *testing.T) {
	_, err := Run(context.Background(), Config{
		RTTs:      []time.Duration{0},
		Modes:     []Mode{{Name: "direct", Direct: true}},
		Workloads: []Workload{{Debuggee: javavm.Deep, Profile: "idea-like"}, {Debuggee: javavm.Deep, Profile: "java-debug"}},
		Log:       zerolog.Nop(),
	})
	if !errors.Is(err, ErrNoJavaDebug) || !strings.Contains(err.Error(), "Deep/java-debug") {
		t.Fatalf("err %v, want ErrNoJavaDebug naming Deep/java-debug", err)
	}
}
