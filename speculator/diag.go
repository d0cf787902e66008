package speculator

import (
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/jdwpaccel/jdwpaccel/keyable"

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
	end := "near"
	if s.far {
		end = "far"
	}
	d.counts[fmt.Sprintf("%s k%-2d sent at %3d %s", end, s.kind, s.serial, name)]++
	if o != outcomeUsed {
		d.counts[fmt.Sprintf("serial %3d %s", serial, name)]++
	}
}

func (d *Diag) miss(c jdwp.Cmd, serial uint64, why string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.counts[fmt.Sprintf("miss serial %3d %v", serial, c)]++
	d.counts[fmt.Sprintf("miss why %-40v %s", c, why)]++
	d.counts[fmt.Sprintf("miss at serial %3d %-40v %s", serial, c, why)]++
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
	miss(c jdwp.Cmd, serial uint64, why string)
}

func traceSpec(s *spec, o specOutcome, serial uint64) {
	if specTracer != nil {
		specTracer.spec(s, o, serial)
	}
}

func traceMiss(c jdwp.Cmd, serial uint64, why string) {
	if specTracer != nil {
		specTracer.miss(c, serial, why)
	}
}

// missWhy says, for the tally, why the debugger's read of key may not be
// answered here: what the cache or the dispatcher holds of it, and what
// keeps that from answering. Called before the lookup (which drops an
// entry that may not answer), only while a tracer is set.
func (ss *session) missWhy(key *keyable.Key) string {
	if e, ok := ss.cache.lru.Peek(*key); ok {
		switch {
		case !ss.facts.valid(e.info, e.subj, e.gen):
			return "cached, invalidated"
		case !ss.facts.inPlace(e.info, e.subj, e.pos):
			return "cached, out of place"
		case !ss.facts.momentOK(e.info, e.subj, e.pos, e.at):
			return "cached, too old"
		case !ss.facts.answerable(e.info, e.subj):
			return "cached, running state at a far end"
		}
		return "hit"
	}
	if s := ss.disp.pending(key); s != nil {
		switch {
		case !s.sent:
			return "queued"
		case !ss.facts.valid(s.info, s.subj, s.gen):
			return "in flight, invalidated"
		case !ss.facts.inPlace(s.info, s.subj, s.pos):
			return "in flight, out of place"
		}
		return "belay"
	}
	for _, s := range slices.Backward(ss.learn.ep.specs) {
		if s.key == *key {
			switch {
			case s.cancelled || !s.sent:
				return "speculated, not sent"
			case !ss.facts.inPlace(s.info, s.subj, s.pos) && s.again:
				return "asked again, out of place, dropped"
			case !ss.facts.inPlace(s.info, s.subj, s.pos):
				return "speculated, out of place, dropped"
			}
			return "speculated, dropped"
		}
	}
	return "never asked"
}
