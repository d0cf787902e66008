// Package stat owns the summary statistics the journal, the benchmark,
// the speculator, split mode and the tests share (one median, one latency
// floor, not one per package).
package stat

import (
	"slices"
	"time"
)

// Median is the median of v (0 when v is empty; the mean of the middle two
// when len(v) is even); v is left as it was.
func Median[T ~int64 | ~float64](v []T) T {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Floor is the smallest of the last samples of a latency: load only
// lengthens a sample, so the smallest recent one is the best estimate of
// the path's own time. Each Add replaces the oldest of the last Window
// samples (MaxWindow when Window is 0 or above it). Not safe for
// concurrent use; the zero Floor is empty.
type Floor struct {
	Window int
	ring   [MaxWindow]time.Duration
	n      int // samples added
}

// MaxWindow is the most samples a Floor keeps.
const MaxWindow = 32

// Add takes sample d; one of 0 or less is no sample.
func (f *Floor) Add(d time.Duration) {
	if d <= 0 {
		return
	}
	f.ring[f.n%f.window()] = d
	f.n++
}

// Count is how many samples were added.
func (f *Floor) Count() int { return f.n }

// Min is the smallest of the last samples, 0 before any.
func (f *Floor) Min() time.Duration {
	var m time.Duration
	for _, d := range f.ring[:min(f.n, f.window())] {
		if m == 0 || d < m {
			m = d
		}
	}
	return m
}

func (f *Floor) window() int {
	if f.Window <= 0 || f.Window > len(f.ring) {
		return len(f.ring)
	}
	return f.Window
}
