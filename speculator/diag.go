package speculator

import (
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// Diag tallies, to find where speculation is wasted, each speculative
// command's outcome by command, rule kind and tier, and the misses and
// unused speculation by stop serial (999: wasted at eviction). It serves
// `jdwpaccel bench --diagnose`.
type Diag struct {
	mu     sync.Mutex // guards counts
	counts map[string]int
}

// Diagnose makes d the package's tracer until stop is called. Only
// sessions started after Diagnose are traced, one Diag may be active at a
// time, and stop must be called only once no session runs: it is a
// diagnostic, not for a serving proxy.
func Diagnose() (d *Diag, stop func()) {
	d = &Diag{counts: map[string]int{}}
	specTracer = d
	return d, func() { specTracer = nil }
}

var diagOutcomes = [numOutcomes]string{outcomeSent: "sent", outcomeUsed: "used", outcomeWasted: "wasted", outcomeWithheld: "withheld"}

func (d *Diag) spec(s *spec, o specOutcome, serial uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	name := diagOutcomes[o]
	d.counts[fmt.Sprintf("%-40v k%-2d t%d %s", s.key.Cmd(), s.kind, s.info.Tier, name)]++
	if o != outcomeUsed {
		d.counts[fmt.Sprintf("serial %3d %s", serial, name)]++
	}
}

func (d *Diag) miss(c jdwp.Cmd, serial uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.counts[fmt.Sprintf("miss serial %3d %v", serial, c)]++
}

// WriteTo writes the tallies, one "what: count" line each, sorted.
func (d *Diag) WriteTo(w io.Writer) (int64, error) {
	d.mu.Lock()
	keys := make([]string, 0, len(d.counts))
	for k := range d.counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b []byte
	for _, k := range keys {
		b = fmt.Appendf(b, "%s: %d\n", k, d.counts[k])
	}
	d.mu.Unlock()
	n, err := w.Write(b)
	return int64(n), err
}

// specTracer, when set (by Diagnose or a test, before any session starts), is
// told each speculation's outcome and each miss, with the stop's serial
// (999 for speculation wasted at eviction).
var specTracer interface {
	spec(s *spec, o specOutcome, serial uint64)
	miss(c jdwp.Cmd, serial uint64)
}

func traceSpec(s *spec, o specOutcome, serial uint64) {
	if specTracer != nil {
		specTracer.spec(s, o, serial)
	}
}

func traceMiss(c jdwp.Cmd, serial uint64) {
	if specTracer != nil {
		specTracer.miss(c, serial)
	}
}
