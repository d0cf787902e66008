package stat

import (
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	v := []float64{3, 1, 2, 10}
	if got := Median(v); got != 2.5 {
		t.Errorf("Median(%v) = %v, want 2.5", v, got)
	}
	if v[0] != 3 {
		t.Error("Median reordered its input")
	}
	if got := Median([]time.Duration{5, 1, 9}); got != 5 {
		t.Errorf("Median of durations = %v, want 5ns", got)
	}
	if got := Median[float64](nil); got != 0 {
		t.Errorf("Median(nil) = %v", got)
	}
}

// TestFloor: the smallest of the last Window samples (MaxWindow by
// default), none before any, and samples of 0 or less ignored.
func TestFloor(t *testing.T) {
	ms := time.Millisecond
	var f Floor
	if f.Min() != 0 || f.Count() != 0 {
		t.Fatalf("empty: %v, %d", f.Min(), f.Count())
	}
	f.Add(0)
	f.Add(-ms)
	if f.Count() != 0 {
		t.Fatalf("samples of 0 or less counted: %d", f.Count())
	}
	f.Add(ms)
	for range MaxWindow - 1 {
		f.Add(5 * ms)
	}
	if f.Min() != ms {
		t.Fatalf("the first of %d samples is gone: %v", MaxWindow, f.Min())
	}
	f.Add(7 * ms)
	if f.Min() != 5*ms || f.Count() != MaxWindow+1 {
		t.Fatalf("after one more: %v of %d, want 5ms of %d", f.Min(), f.Count(), MaxWindow+1)
	}
	g := Floor{Window: 2}
	for i, tc := range []struct{ d, want time.Duration }{{3 * ms, 3 * ms}, {ms, ms}, {4 * ms, ms}, {6 * ms, 4 * ms}} {
		g.Add(tc.d)
		if g.Min() != tc.want {
			t.Fatalf("window 2, sample %d (%v): %v, want %v", i, tc.d, g.Min(), tc.want)
		}
	}
}
