package main

import (
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/speculator"
	"github.com/rs/zerolog"
)

// TestBenchFreshModes runs the fresh modes (a new speculator, or new
// split-mode ends, for each cell) against a real VM: their digests equal
// the direct run's, their cells count what their own speculator did, and
// a mode made after the run has learned nothing from it.
func TestBenchFreshModes(t *testing.T) {
	b := jdwptest.JavaBuild(t)
	modes, closeAll, err := benchModes("direct,speculate-fresh,split-fresh", "", speculator.Config{}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll()
	if len(modes) != 3 || modes[1].Fresh == nil || modes[2].Fresh == nil || modes[1].NewHooks != nil {
		t.Fatalf("modes %+v: want direct, then two made fresh per cell", modes)
	}
	rep, err := bench.Run(testCtx(t), bench.Config{
		RTTs: []time.Duration{0}, Modes: modes, Workloads: []bench.Workload{{Debuggee: "Shallow", Profile: "idea-like"}},
		Steps: 1, Warmup: 1, Build: b, Log: zerolog.Nop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range rep.Cells[1:] {
		if c.Mode != modes[i+1].Name || c.Stats == nil || c.Stats.Hits+c.Stats.Misses+c.Stats.Belays == 0 {
			t.Errorf("cell %q: accelerator %+v, want the mode's name and its own speculator's counts", c.Mode, c.Stats)
		}
	}
	for _, m := range modes[1:] {
		if st := m.Fresh().Stats(); st.Hits+st.Misses+st.Belays+st.SpecSent != 0 {
			t.Errorf("%s: a mode made after the run starts with %+v, want nothing", m.Name, st)
		}
	}
}
