package main

import (
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/rs/zerolog"
)

// TestBenchADBModes runs the bench's adb modes for one short cell: the
// driver's digests through the adb server, and through the front, must
// equal the direct run's (bench.Run fails on a mismatch).
func TestBenchADBModes(t *testing.T) {
	requireADB(t)
	b := jdwptest.JavaBuild(t)
	all := adbBenchModes(zerolog.Nop())
	modes := []bench.Mode{{Name: "direct", Direct: true}}
	for _, n := range []string{"adb", "adb-front"} {
		m, err := all[n]()
		if err != nil {
			t.Fatal(err)
		}
		modes = append(modes, m)
	}
	rep, err := bench.Run(testCtx(t), bench.Config{
		RTTs: []time.Duration{time.Millisecond}, Modes: modes, Workloads: []bench.Workload{{Debuggee: "Shallow", Profile: "idea-like"}},
		Steps: 2, Warmup: 1, Build: b, Log: zerolog.Nop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Cells) != 3 {
		t.Fatalf("%d cells", len(rep.Cells))
	}
	for _, c := range rep.Cells {
		t.Logf("%s: median step %.1f ms", c.Mode, c.MedianMS)
	}
}
