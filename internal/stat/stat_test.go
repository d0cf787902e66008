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
