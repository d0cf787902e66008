package bench

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestSpread: min, median and max are the samples', and the median's
// bootstrap interval lies within the range and contains the median.
func TestSpread(t *testing.T) {
	v := []float64{12, 10, 11, 30, 10.5, 11.5, 9}
	sp := spreadOf(v)
	if sp.Min != 9 || sp.Median != 11 || sp.Max != 30 {
		t.Errorf("spread %+v, want min 9 median 11 max 30", sp)
	}
	if sp.CI[0] < sp.Min || sp.CI[1] > sp.Max || sp.CI[0] > sp.Median || sp.CI[1] < sp.Median {
		t.Errorf("CI %v not within [%v, %v] around %v", sp.CI, sp.Min, sp.Max, sp.Median)
	}
	if sp.CI[1] >= 30 {
		t.Errorf("CI %v reaches the one outlier: the median's interval should not", sp.CI)
	}
	if v[0] != 12 || v[3] != 30 {
		t.Error("spreadOf reordered its argument")
	}
	if again := spreadOf(v); again != sp {
		t.Errorf("not repeatable: %+v then %+v", sp, again)
	}
}

// noiseReport builds a one-RTT report the way Run fills it in.
func noiseReport(direct, other []float64) *Report {
	d, o := spreadOf(direct), spreadOf(other)
	cells := []Cell{
		{Workload: "w", Mode: "direct", MedianMS: d.Median, MinMS: d.Min, MaxMS: d.Max, MedianCI: d.CI, StepMS: direct, DigestsMatch: true},
		{Workload: "w", Mode: "proxy", MedianMS: o.Median, MinMS: o.Min, MaxMS: o.Max, MedianCI: o.CI, StepMS: other, DigestsMatch: true,
			Speedup: d.Median / o.Median, SpeedupCI: speedupCI(direct, other), Noise: overlap(d.CI, o.CI)},
	}
	return &Report{Cells: cells}
}

// TestNoiseFlag: a pass-through proxy measured on 5 noisy stops whose
// median happens to be half the direct one (the "2.14x at 0 ms" case) is
// flagged as noise and printed with "~"; a real 10x speedup is not.
func TestNoiseFlag(t *testing.T) {
	for _, tc := range []struct {
		name          string
		direct, other []float64
		noise         bool
	}{
		{"noise", []float64{4, 9, 10, 11, 25}, []float64{3, 4, 4.7, 12, 24}, true},
		{"same", []float64{10, 11, 12, 10.5, 11.5}, []float64{10.2, 11.1, 11.9, 10.4, 11.6}, true},
		{"real", []float64{100, 104, 98, 120, 101}, []float64{10, 11, 9.5, 12, 10.2}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := noiseReport(tc.direct, tc.other)
			c := rep.Cells[1]
			if c.Noise != tc.noise {
				t.Errorf("noise %v, want %v (direct CI %v, proxy CI %v)", c.Noise, tc.noise, rep.Cells[0].MedianCI, c.MedianCI)
			}
			if c.SpeedupCI[0] > c.Speedup || c.SpeedupCI[1] < c.Speedup {
				t.Errorf("speedup %v outside its CI %v", c.Speedup, c.SpeedupCI)
			}
			if !tc.noise && c.SpeedupCI[0] <= 1 {
				t.Errorf("a 10x speedup's CI %v reaches 1", c.SpeedupCI)
			}
			var table bytes.Buffer
			if err := rep.WriteTable(&table); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(table.String(), "~"); got != tc.noise {
				t.Errorf("table marks noise %v, want %v:\n%s", got, tc.noise, table.String())
			}
			var js bytes.Buffer
			if err := rep.WriteJSON(&js); err != nil {
				t.Fatal(err)
			}
			var back struct {
				Cells []map[string]any `json:"cells"`
			}
			if err := json.Unmarshal(js.Bytes(), &back); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"min_step_ms", "max_step_ms", "median_step_ci95_ms", "step_ms", "speedup_ci95"} {
				if _, ok := back.Cells[1][k]; !ok {
					t.Errorf("JSON cell lacks %q: %v", k, back.Cells[1])
				}
			}
			if n, _ := back.Cells[1]["noise"].(bool); n != tc.noise {
				t.Errorf("JSON noise %v, want %v", back.Cells[1]["noise"], tc.noise)
			}
		})
	}
}

func TestPool(t *testing.T) {
	one := &Cell{Mode: "speculate", StepMS: []float64{3}}
	if pool([]*Cell{one}) != one {
		t.Fatal("pool of one round is not that round's cell")
	}
	mk := func(steps []float64, first float64, up int64, hits int64, pushed float64, match bool) *Cell {
		c := &Cell{Mode: "split", FirstStopMS: first, VMRunMS: first / 2, FirstStopWaitMS: first / 2, LinkBytesUp: up,
			Stats: &Accel{Hits: hits, SpecSent: hits}, PushedBytesPerStop: pushed, DigestsMatch: match, LinkDrops: 1, Rounds: 1}
		c.setSteps(steps)
		return c
	}
	rounds := []*Cell{
		mk([]float64{1, 2}, 100, 10, 5, 10, true),
		mk([]float64{30, 40}, 300, 30, 7, 20, true),
		mk([]float64{5, 6, 7, 8}, 200, 20, 11, 40, true),
	}
	p := pool(rounds)
	if p == rounds[0] || rounds[0].Rounds != 1 || len(rounds[0].StepMS) != 2 {
		t.Fatal("pool changed a round's cell")
	}
	if p.Rounds != 3 || p.Stops != 8 || !slices.Equal(p.StepMS, []float64{1, 2, 30, 40, 5, 6, 7, 8}) {
		t.Fatalf("pooled steps: rounds %d, stops %d, %v", p.Rounds, p.Stops, p.StepMS)
	}
	if p.MedianMS != 6 || p.MinMS != 1 || p.MaxMS != 40 {
		t.Fatalf("pooled median %v min %v max %v, want 6, 1, 40", p.MedianMS, p.MinMS, p.MaxMS)
	}
	if p.FirstStopMS != 200 || p.VMRunMS != 100 || p.LinkBytesUp != 20 {
		t.Fatalf("first stop %v, VM run %v, bytes up %d: want the medians 200, 100, 20", p.FirstStopMS, p.VMRunMS, p.LinkBytesUp)
	}
	if p.Stats.Hits != 23 || p.Stats.SpecSent != 23 || p.LinkDrops != 3 {
		t.Fatalf("hits %d, sent %d, drops %d: want the sums 23, 23, 3", p.Stats.Hits, p.Stats.SpecSent, p.LinkDrops)
	}
	if want := (10*2 + 20*2 + 40*4) / 8.0; p.PushedBytesPerStop != want {
		t.Fatalf("pushed per stop %v, want %v", p.PushedBytesPerStop, want)
	}
	if !p.DigestsMatch {
		t.Fatal("rounds that all matched pooled into a mismatch")
	}
	rounds[1].DigestsMatch = false
	if pool(rounds).DigestsMatch {
		t.Fatal("a round's mismatch was lost in the pool")
	}
}
