package web

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/prometheus/client_golang/prometheus"
)

// DefaultStepIdle is how long the debugger must stay quiet after a stop
// for SessionTracker to consider the step settled.
const DefaultStepIdle = 250 * time.Millisecond

const (
	stepWindow   = 1000 // steps kept for percentiles
	recentSteps  = 120  // steps charted
	closedToKeep = 20   // ended sessions listed
)

// SessionTracker is a relay observer (add it to every session's
// Hooks.Observers) that lists sessions with their traffic, and times
// debugger steps.
//
// A step is timed from the stop event (an Event.Composite reaching the
// debugger after it resumed the VM or a thread) to the last reply the
// debugger gets before it stays quiet for the idle time: how long the IDE
// needs to show the new stop, which is what speculation shortens.
type SessionTracker struct {
	// VMOf names a session's VM (VM.ID); the VM's address when nil.
	VMOf func(s *relay.Session) string
	// Idle is the quiet time that settles a step (DefaultStepIdle when 0).
	Idle time.Duration

	mu       sync.Mutex       // guards everything below
	now      func() time.Time // the clock (replaced by tests)
	sessions map[*relay.Session]*trackedSession
	closed   []Session // most recent last, at most closedToKeep
	steps    []time.Duration
	stepsPos int // next slot of steps once it is full
	recent   []time.Duration
	count    uint64
}

// trackedSession is one session's figures. Guarded by SessionTracker.mu.
type trackedSession struct {
	info Session
	// step state: resumed after a resume command; stopped once the stop
	// event arrived, with lastReply the latest reply to the debugger and
	// lastCmd the debugger's latest command.
	resumed, stopped           bool
	stopAt, lastReply, lastCmd time.Time
}

// NewSessionTracker returns an empty tracker.
func NewSessionTracker() *SessionTracker {
	return &SessionTracker{now: time.Now, sessions: map[*relay.Session]*trackedSession{}}
}

func (t *SessionTracker) idle() time.Duration {
	if t.Idle > 0 {
		return t.Idle
	}
	return DefaultStepIdle
}

// SessionStart implements relay.SessionObserver.
func (t *SessionTracker) SessionStart(s *relay.Session) {
	vm := ""
	if t.VMOf != nil {
		vm = t.VMOf(s)
	} else if a := s.VMAddr(); a != nil {
		vm = a.String()
	}
	dbg := ""
	if a := s.DebuggerAddr(); a != nil {
		dbg = a.String()
	}
	t.mu.Lock()
	t.sessions[s] = &trackedSession{info: Session{ID: s.ID, Debugger: dbg, VM: vm, Started: t.now()}} // now is guarded by mu
	t.mu.Unlock()
}

// SessionEnd implements relay.SessionObserver.
func (t *SessionTracker) SessionEnd(s *relay.Session, _ error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	ts := t.sessions[s]
	if ts == nil {
		return
	}
	t.settle(ts, now)
	delete(t.sessions, s)
	ts.info.Ended = now
	t.closed = append(t.closed, ts.info)
	if len(t.closed) > closedToKeep {
		t.closed = slices.Delete(t.closed, 0, len(t.closed)-closedToKeep)
	}
}

// Observe implements relay.Observer: a map lookup and a few field updates
// under the tracker's lock, no allocation.
func (t *SessionTracker) Observe(s *relay.Session, f *relay.Frame) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ts := t.sessions[s]
	if ts == nil || f.Origin == relay.Synthetic {
		return
	}
	ts.info.Packets++
	ts.info.Bytes += uint64(len(f.Packet))
	switch {
	case f.Dir == relay.ToVM && f.Kind == relay.KindCommand:
		t.settle(ts, f.Time)
		if f.Cmd == jdwp.CmdVirtualMachineResume || f.Cmd == jdwp.CmdThreadReferenceResume {
			t.finish(ts)
			ts.resumed = true
		}
		ts.lastCmd = f.Time
	case f.Dir == relay.ToDebugger && f.Kind == relay.KindEvent && ts.resumed && !ts.stopped:
		ts.stopped, ts.stopAt, ts.lastReply = true, f.Time, f.Time
	case f.Dir == relay.ToDebugger && f.Kind == relay.KindReply && ts.stopped:
		ts.lastReply = f.Time
	}
}

// settle finishes ts's step if the debugger has been quiet for the idle
// time by now. Callers hold mu.
func (t *SessionTracker) settle(ts *trackedSession, now time.Time) {
	if ts.stopped && now.Sub(ts.lastReply) >= t.idle() && now.Sub(ts.lastCmd) >= t.idle() {
		t.finish(ts)
	}
}

// finish records ts's step, if it stopped, and resets its step state.
// Callers hold mu.
func (t *SessionTracker) finish(ts *trackedSession) {
	if ts.stopped {
		d := ts.lastReply.Sub(ts.stopAt)
		if len(t.steps) < stepWindow {
			t.steps = append(t.steps, d)
		} else {
			t.steps[t.stepsPos] = d
			t.stepsPos = (t.stepsPos + 1) % stepWindow
		}
		t.recent = append(t.recent, d)
		if len(t.recent) > recentSteps {
			t.recent = slices.Delete(t.recent, 0, len(t.recent)-recentSteps)
		}
		t.count++
	}
	ts.resumed, ts.stopped = false, false
}

// Sessions are the open sessions by ID, then the most recently ended ones.
func (t *SessionTracker) Sessions() []Session {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Session, 0, len(t.sessions)+len(t.closed))
	for _, ts := range t.sessions {
		out = append(out, ts.info)
	}
	slices.SortFunc(out, func(a, b Session) int { return cmp.Compare(a.ID, b.ID) })
	for i := len(t.closed) - 1; i >= 0; i-- {
		out = append(out, t.closed[i])
	}
	return out
}

// AddSteps fills a's step figures (Steps, StepLatency, RecentSteps),
// settling steps that have gone quiet.
func (t *SessionTracker) AddSteps(a *AccelStats) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	for _, ts := range t.sessions {
		t.settle(ts, now)
	}
	a.Steps = t.count
	a.StepLatency = percentiles(t.steps)
	a.RecentSteps = slices.Clone(t.recent)
}

// AccelFromGatherer reads the speculator's counters from a registry:
// hits, misses and belays from jdwpaccel_cache_requests_total, wasted
// speculation from jdwpaccel_speculative_commands_total; round trips saved
// are hits plus belays (the debugger did not wait for a full VM round
// trip). Enabled is whether the speculator registered its metrics.
func AccelFromGatherer(g prometheus.Gatherer) AccelStats {
	var a AccelStats
	mfs, err := g.Gather()
	if err != nil && len(mfs) == 0 {
		return a
	}
	for _, mf := range mfs {
		switch mf.GetName() {
		case "jdwpaccel_cache_requests_total":
			a.Enabled = true
			for _, m := range mf.GetMetric() {
				v := uint64(m.GetCounter().GetValue())
				switch labelValue(m.GetLabel(), "result") {
				case "hit":
					a.Hits += v
				case "miss":
					a.Misses += v
				case "belay":
					a.Belays += v
				}
			}
		case "jdwpaccel_speculative_commands_total":
			for _, m := range mf.GetMetric() {
				if labelValue(m.GetLabel(), "outcome") == "wasted" {
					a.Wasted += uint64(m.GetCounter().GetValue())
				}
			}
		}
	}
	a.RoundTripsSaved = a.Hits + a.Belays
	return a
}

func labelValue[L interface {
	GetName() string
	GetValue() string
}](ls []L, name string) string {
	for _, l := range ls {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// percentiles of ds (which it does not modify).
func percentiles(ds []time.Duration) Percentiles {
	if len(ds) == 0 {
		return Percentiles{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return Percentiles{P50: at(0.5), P90: at(0.9), P99: at(0.99), Max: s[len(s)-1]}
}
