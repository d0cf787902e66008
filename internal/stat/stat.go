// Package stat owns the summary statistics the journal, the benchmark and
// the tests share (one median, not one per package).
package stat

import "slices"

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
