package ddm

import (
	"errors"
	"fmt"
)

// statePartial is the partial bit of a heap segment's state byte (§4.1:
// bit 7 partial, bits 5..3 kind, bits 2..0 solidity): the element goes on
// in the next run.
const statePartial = 0x80

var errOddRuns = errors.New("odd number of run bytes")

// WalkRuns decodes (state, units-1) pairs into elements (§4.2/§4.3): a
// pair with the partial bit is continued by the next pair, which must have
// the same state ignoring the bit. fn (may be nil) gets each element's
// state (without the partial bit) and its units.
func WalkRuns(runs []byte, fn func(state uint8, units uint64)) (elements int, total uint64, err error) {
	if len(runs)%2 != 0 {
		return 0, 0, errOddRuns
	}
	var cur uint8
	var units uint64
	open := false
	for i := 0; i < len(runs); i += 2 {
		st, n := runs[i], uint64(runs[i+1])+1
		if open && st&^statePartial != cur {
			return elements, total, fmt.Errorf("run at byte %d: state 0x%02x continues a partial run of state 0x%02x", i, st, cur)
		}
		cur = st &^ statePartial
		units += n
		if st&statePartial != 0 {
			open = true
			continue
		}
		open = false
		elements++
		total += units
		if fn != nil {
			fn(cur, units)
		}
		units = 0
	}
	if open {
		return elements, total, errors.New("segment ends inside a partial run")
	}
	return elements, total, nil
}
