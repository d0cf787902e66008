package jdwptest

import (
	"slices"
	"testing"
	"time"
)

// RoundTrips runs roundTrip (one command and its reply, failing the
// benchmark itself on an error) b.N times, timing each, and reports the
// median and 99th percentile round trip in µs, and allocations per round
// trip.
func RoundTrips(b *testing.B, roundTrip func()) {
	samples := make([]time.Duration, 0, 1<<16)
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		roundTrip()
		if len(samples) < cap(samples) {
			samples = append(samples, time.Since(start))
		}
	}
	slices.Sort(samples)
	b.ReportMetric(float64(samples[len(samples)/2].Nanoseconds())/1e3, "p50-µs/rtt")
	b.ReportMetric(float64(samples[len(samples)*99/100].Nanoseconds())/1e3, "p99-µs/rtt")
}
