package web

// Test support: helpers that only the tests of this package use, kept out of
// the binary.

import "time"

// WithInterval sets how often /api/v1/events pushes a snapshot (default
// DefaultInterval; at least 10ms).
func WithInterval(d time.Duration) Option {
	return func(o *options) { o.interval = max(d, 10*time.Millisecond) }
}

// HeapKindOf maps an HPSG/HPSO state byte (bits 0-2 solidity, 3-5 kind,
// bit 7 partial) to its DDMS bucket: free when the solidity is 0, else
// kind+2.
func HeapKindOf(state uint8) HeapKind {
	if state&7 == 0 {
		return HeapFree
	}
	return HeapKind((state>>3)&7) + HeapObject
}
