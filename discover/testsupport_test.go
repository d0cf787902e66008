package discover

// Test support: helpers that only the tests of this package use, kept out of
// the binary.

import "slices"

// PortsOf returns the set of the given ports (zero and out-of-range
// values are ignored).
func PortsOf(ports ...int) PortSet {
	var ps PortSet
	for _, p := range ports {
		if p > 0 && p < 65536 {
			ps.ports = append(ps.ports, uint16(p))
		}
	}
	slices.Sort(ps.ports)
	ps.ports = slices.Compact(ps.ports)
	return ps
}
