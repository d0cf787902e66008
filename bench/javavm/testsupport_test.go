package javavm

// Test support: helpers that only the tests of this package use, kept out of
// the binary.

import (
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/stat"
)

// ParseListeningPort finds the port in the first of the JDWP agent's
// "Listening for transport dt_socket at address: N" lines within out.
func ParseListeningPort(out []byte) (int, bool) {
	ports := parseListeningPorts(out)
	if len(ports) == 0 {
		return 0, false
	}
	return ports[0], true
}

// MedianBurst is the median burst time over the steady stops.
func (r *DriverResult) MedianBurst() time.Duration {
	var v []float64
	for _, s := range r.Steady() {
		v = append(v, s.BurstMS)
	}
	return msDuration(stat.Median(v))
}

// MedianStep is the median step wall time over the steady stops.
func (r *DriverResult) MedianStep() time.Duration {
	var v []float64
	for _, s := range r.Steady() {
		v = append(v, s.MS)
	}
	return msDuration(stat.Median(v))
}

func msDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }
