package discover

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// DefaultScanPorts are the ports scanned when "scan:" names none: the DDM
// design's 8000-8040 and the common 5005.
const DefaultScanPorts = "8000-8040,5005"

// PortSet is a set of TCP ports.
type PortSet struct {
	ports []uint16 // sorted, unique
}

// ParsePorts parses a comma-separated list of ports and LOW-HIGH ranges.
func ParsePorts(s string) (PortSet, error) {
	var ps PortSet
	if strings.TrimSpace(s) == "" {
		return ps, fmt.Errorf("discover: empty port list")
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := parsePort(lo)
		if err != nil {
			return PortSet{}, err
		}
		b := a
		if isRange {
			if b, err = parsePort(hi); err != nil {
				return PortSet{}, err
			}
			if b < a {
				return PortSet{}, fmt.Errorf("discover: bad port range %q", part)
			}
			if int(b)-int(a) > 4096 {
				return PortSet{}, fmt.Errorf("discover: port range %q is too large (at most 4096 ports)", part)
			}
		}
		for p := int(a); p <= int(b); p++ {
			ps.ports = append(ps.ports, uint16(p))
		}
	}
	slices.Sort(ps.ports)
	ps.ports = slices.Compact(ps.ports)
	return ps, nil
}

func parsePort(s string) (uint16, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n <= 0 || n > 65535 {
		return 0, fmt.Errorf("discover: bad port %q", s)
	}
	return uint16(n), nil
}

// Contains reports whether p is in the set.
func (ps PortSet) Contains(p uint16) bool {
	_, ok := slices.BinarySearch(ps.ports, p)
	return ok
}

// Len is the number of ports in the set.
func (ps PortSet) Len() int { return len(ps.ports) }

// String formats the set as ports and ranges.
func (ps PortSet) String() string {
	var b strings.Builder
	for i := 0; i < len(ps.ports); {
		j := i
		for j+1 < len(ps.ports) && ps.ports[j+1] == ps.ports[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(int(ps.ports[i])))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(int(ps.ports[j])))
		}
		i = j + 1
	}
	return b.String()
}
