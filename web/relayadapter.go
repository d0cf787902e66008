package web

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/speculator"
)

// DefaultStepIdle is how long the debugger must stay quiet after a stop
// for SessionTracker to consider the step settled (a step also ends at the
// next resume). Long enough for a debugger's pauses on a loaded machine.
const DefaultStepIdle = time.Second

const (
	stepWindow   = 1000 // steps kept for percentiles
	recentSteps  = 120  // steps charted
	closedToKeep = 20   // ended sessions listed
	maxStepCmds  = 400  // debugger commands kept per step for its waterfall
)

// SessionTracker is a relay observer (add it to every session's
// Hooks.Observers) that lists sessions with their traffic, and times
// debugger steps.
//
// A step starts when the debugger resumes the VM or a thread, goes on
// through a stop event (jdwp.Composite.Stop: a suspending breakpoint,
// single step, method entry or exit, exception, watchpoint or monitor
// event; thread starts and class prepares are not stops) and ends with the last answer the debugger
// gets before it resumes again or stays quiet for the idle time. Its time
// is what the user waits for, from the resume to a refreshed view, which
// is what speculation shortens. A suspension that is not a stop (a class
// prepare or thread start the debugger asked to be suspended at) does not
// end the step: the debugger's resume after it belongs to the step. This is
// the journal's definition too (journal.ComputeSteps): both count a step
// per stop reached after a resume.
type SessionTracker struct {
	// VMOf names a session's VM (VM.ID); when nil, the relay's name for it
	// (relay.Config.VM), else the VM's address.
	VMOf func(s *relay.Session) string
	// Idle is the quiet time that settles a step (DefaultStepIdle when 0).
	Idle time.Duration

	mu       sync.Mutex // guards everything below
	sessions map[*relay.Session]*trackedSession
	closed   []Session // most recent last, at most closedToKeep
	steps    []time.Duration
	stepsPos int // next slot of steps once it is full
	recent   []StepBreakdown
	last     *StepDetail
	count    uint64
}

// trackedSession is one session's figures. Guarded by SessionTracker.mu.
type trackedSession struct {
	info Session
	// step state: resumed after a resume command (at resumeAt, answered at
	// resumeDone), stopped once the stop event arrived (at stopAt, of kind
	// stopKind), with lastReply the latest answer to the debugger and
	// lastCmd the debugger's latest command.
	resumed, stopped           bool
	resumeID                   uint32
	resumeAt, resumeDone       time.Time
	stopAt, lastReply, lastCmd time.Time
	stopKind                   jdwp.EventKind
	cmds                       []StepCommand // after the stop, in order; reused
	dropped                    int           // commands beyond maxStepCmds
	// refs holds the reference each command in cmds keeps in the relay's
	// entry for it (stepSlot) until its answer: refs[i] for cmds[i].
	// Reused by the next step unless a reference is still awaited, then
	// replaced, so that a late answer cannot reach the next step's cmds.
	refs *[maxStepCmds]stepRef
	comp jdwp.Composite // reused to decode events
}

// stepRef is what the tracker keeps with a step's command in the relay's
// entry for it (relay.Frame.SetData): the relay pairs each command with
// its answer (a VM reply or the proxy's: cache hit, belay, write-behind),
// so the tracker keeps no table of commands in flight of its own. A
// pointer into the session's refs keeps it free of allocation.
type stepRef struct {
	i       uint16 // index in cmds
	waiting bool   // its answer has not come yet
}

// stepSlot is the tracker's slot in the relay's entries for commands.
var stepSlot = relay.NewSlot()

// StepCommand is one debugger command of a step, for its waterfall.
type StepCommand struct {
	Cmd jdwp.Cmd
	// Start and End are offsets from the step's resume; End is zero while
	// unanswered.
	Start, End time.Duration
	// Served is how it was answered: relay.Forwarded (a VM round trip),
	// relay.CacheHit or relay.Belay.
	Served relay.Origin
}

// StepBreakdown is where one step's time went, on its critical path.
type StepBreakdown struct {
	At time.Time // the resume
	// Total is from the resume to the last answer, less Idle: what the
	// user waited for.
	Total time.Duration
	// Run is from the resume to the stop event (the resume's round trip
	// and the program running to the stop).
	Run time.Duration
	// After the stop: VM is time with a forwarded command (a miss)
	// outstanding, Belay time waiting only on speculation in flight, Cache
	// time answered from the cache, Debugger time with nothing outstanding
	// (the debugger working or the proxy relaying) in gaps shorter than
	// ThinkTime, and Idle the longer gaps: the user's think time (jdb's
	// user typing the next command), which is not part of the step's
	// latency.
	VM, Belay, Cache, Debugger, Idle time.Duration
	// Serial VM round trips after the stop: periods with a miss or belay
	// outstanding.
	RoundTrips           int
	Hits, Misses, Belays int
	Event                string // the stop's event kind
}

// StepDetail is a step with its commands.
type StepDetail struct {
	StepBreakdown
	// ResumeEnd is when the resume was answered (offset from the resume).
	ResumeEnd time.Duration
	Commands  []StepCommand
	// Dropped counts commands beyond the waterfall's bound.
	Dropped int
}

// NewSessionTracker returns an empty tracker.
func NewSessionTracker() *SessionTracker {
	return &SessionTracker{sessions: map[*relay.Session]*trackedSession{}}
}

func (t *SessionTracker) idle() time.Duration {
	if t.Idle > 0 {
		return t.Idle
	}
	return DefaultStepIdle
}

// VMName names a session's VM: VMOf's answer if set, else the relay's
// name for it (relay.Config.VM), else the VM's address.
func (t *SessionTracker) VMName(s *relay.Session) string {
	if t.VMOf != nil {
		return t.VMOf(s)
	}
	if vm := s.VM(); vm != "" {
		return vm
	}
	if a := s.VMAddr(); a != nil {
		return a.String()
	}
	return ""
}

// SessionStart implements relay.SessionObserver.
func (t *SessionTracker) SessionStart(s *relay.Session) {
	vm := t.VMName(s)
	dbg := ""
	if a := s.DebuggerAddr(); a != nil {
		dbg = a.String()
	}
	t.mu.Lock()
	t.sessions[s] = &trackedSession{info: Session{ID: s.ID, Debugger: dbg, VM: vm, Started: time.Now()}}
	t.mu.Unlock()
}

// SessionEnd implements relay.SessionObserver.
func (t *SessionTracker) SessionEnd(s *relay.Session, _ error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	ts := t.sessions[s]
	if ts == nil {
		return
	}
	t.finish(ts)
	delete(t.sessions, s)
	ts.info.Ended = now
	t.closed = append(t.closed, ts.info)
	if len(t.closed) > closedToKeep {
		t.closed = slices.Delete(t.closed, 0, len(t.closed)-closedToKeep)
	}
}

// Observe implements relay.Observer: a map lookup and a few field updates
// under the tracker's lock; it allocates only when a step's command list
// grows beyond its largest size so far, and for a step's references to its
// commands (stepRef) at the first step and after a step that ended with
// commands unanswered.
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
			if !ts.resumed || ts.stopped {
				t.finish(ts)
				ts.resumed, ts.resumeID, ts.resumeAt = true, f.ID, f.Time
			} // else a resume after a suspension that was no stop: the step goes on
		} else if ts.stopped {
			if len(ts.cmds) < maxStepCmds {
				if ts.refs == nil {
					ts.refs = new([maxStepCmds]stepRef)
				}
				r := &ts.refs[len(ts.cmds)]
				*r = stepRef{i: uint16(len(ts.cmds)), waiting: true}
				f.SetData(stepSlot, r)
				ts.cmds = append(ts.cmds, StepCommand{Cmd: f.Cmd, Start: f.Time.Sub(ts.resumeAt), Served: f.Origin})
			} else {
				ts.dropped++
			}
		}
		ts.lastCmd = f.Time
	case f.Dir == relay.ToDebugger && f.Kind == relay.KindReply:
		if ts.resumed && !ts.stopped && f.ID == ts.resumeID && ts.resumeDone.IsZero() {
			ts.resumeDone = f.Time
		}
		if !ts.stopped {
			return
		}
		ts.lastReply = f.Time
		if r, _ := f.Data(stepSlot).(*stepRef); r != nil && ts.refs != nil && r == &ts.refs[r.i] && r.waiting {
			r.waiting = false
			c := &ts.cmds[r.i]
			c.End, c.Served = f.Time.Sub(ts.resumeAt), f.Origin
		}
	case f.Dir == relay.ToDebugger && f.Kind == relay.KindEvent && ts.resumed && !ts.stopped:
		if k, ok := stopEvent(s, f.Packet.Body(), &ts.comp); ok {
			ts.stopped, ts.stopAt, ts.lastReply, ts.stopKind = true, f.Time, f.Time, k
		}
	}
}

// stopEvent says whether an Event.Composite body is a stop
// (jdwp.Composite.Stop), and of which kind. Without the session's ID sizes
// it reads the suspend policy and the first event's kind alone.
func stopEvent(s *relay.Session, body []byte, c *jdwp.Composite) (jdwp.EventKind, bool) {
	if sz, ok := s.IDSizes(); ok {
		c.Decode(body, sz) //nolint:errcheck // the events decoded before any failure count
		if e, ok := c.Stop(); ok {
			return e.Kind, true
		}
		return 0, false
	}
	policy, first, ok := jdwp.CompositeHead(body)
	if !ok || policy == jdwp.SuspendNone || !first.Locatable() {
		return 0, false
	}
	return first, true
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
		d := breakdown(ts)
		if len(t.steps) < stepWindow {
			t.steps = append(t.steps, d.Total)
		} else {
			t.steps[t.stepsPos] = d.Total
			t.stepsPos = (t.stepsPos + 1) % stepWindow
		}
		t.recent = append(t.recent, d.StepBreakdown)
		if len(t.recent) > recentSteps {
			t.recent = slices.Delete(t.recent, 0, len(t.recent)-recentSteps)
		}
		t.last = d
		t.count++
	}
	ts.resumed, ts.stopped = false, false
	ts.resumeDone = time.Time{}
	if ts.refs != nil {
		for i := range ts.cmds {
			if ts.refs[i].waiting {
				ts.refs = nil // still awaited: the next step gets its own
				break
			}
		}
	}
	ts.cmds, ts.dropped = ts.cmds[:0], 0
}

// breakdown is ts's step, which stopped, on its critical path.
func breakdown(ts *trackedSession) *StepDetail {
	d := &StepDetail{Commands: slices.Clone(ts.cmds)}
	d.At = ts.resumeAt
	d.Total = ts.lastReply.Sub(ts.resumeAt)
	d.Run = ts.stopAt.Sub(ts.resumeAt)
	d.Event = ts.stopKind.String()
	if !ts.resumeDone.IsZero() {
		d.ResumeEnd = ts.resumeDone.Sub(ts.resumeAt)
	}
	d.Dropped = ts.dropped
	// Sweep the answered commands' intervals after the stop: at each
	// moment the outstanding command that costs most (a miss, then a
	// belay, then a hit) names the time.
	type edge struct {
		at    time.Duration
		kind  relay.Origin
		delta int
	}
	var edges []edge
	for _, c := range d.Commands {
		switch c.Served {
		case relay.Forwarded:
			d.Misses++
		case relay.CacheHit:
			d.Hits++
		case relay.Belay:
			d.Belays++
		}
		if c.End == 0 {
			continue
		}
		edges = append(edges, edge{c.Start, c.Served, 1}, edge{c.End, c.Served, -1})
	}
	slices.SortFunc(edges, func(a, b edge) int { return cmp.Compare(a.at, b.at) })
	var open [relay.Synthetic + 1]int
	prev := d.Run
	busy := false
	for _, e := range edges {
		at := max(e.at, d.Run)
		span := at - prev
		switch {
		case open[relay.Forwarded] > 0:
			d.VM += span
		case open[relay.Belay] > 0:
			d.Belay += span
		case open[relay.CacheHit] > 0:
			d.Cache += span
		default:
			d.addGap(span)
		}
		prev = at
		if e.kind <= relay.Synthetic {
			open[e.kind] += e.delta
		}
		now := open[relay.Forwarded] > 0 || open[relay.Belay] > 0
		if now && !busy {
			d.RoundTrips++
		}
		busy = now
	}
	if rest := d.Total - prev; rest > 0 {
		d.addGap(rest)
	}
	d.Total -= d.Idle
	return d
}

// ThinkTime is the longest gap with nothing outstanding that counts as
// the debugger's own work within a step; a longer one is the user's think
// time (see StepBreakdown.Idle). A debugger's work between two commands
// of a step takes milliseconds; a person reading and typing takes longer.
const ThinkTime = 150 * time.Millisecond

// addGap counts a span with nothing outstanding as the debugger's work or
// as idle think time.
func (d *StepDetail) addGap(span time.Duration) {
	if span > ThinkTime {
		d.Idle += span
	} else {
		d.Debugger += span
	}
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

// AddSteps fills a's step figures (Steps, StepLatency, RecentSteps,
// StepBreakdowns, LastStep), settling steps that have gone quiet.
func (t *SessionTracker) AddSteps(a *AccelStats) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	for _, ts := range t.sessions {
		t.settle(ts, now)
	}
	a.Steps = t.count
	a.StepLatency = percentiles(t.steps)
	a.RecentSteps = make([]time.Duration, len(t.recent))
	for i, b := range t.recent {
		a.RecentSteps[i] = b.Total
	}
	a.StepBreakdowns = slices.Clone(t.recent)
	if t.last != nil {
		l := *t.last
		l.Commands = slices.Clone(l.Commands)
		a.LastStep = &l
	}
}

// AccelFromStats is the page's view of the speculator's counters st (see
// speculator.Stats): round trips saved are hits plus belays (the debugger
// did not wait for a full VM round trip). Enabled is set: st comes from a
// running speculator.
func AccelFromStats(st speculator.Stats) AccelStats {
	return AccelStats{
		Enabled:         true,
		Hits:            uint64(max(st.Hits, 0)),
		Misses:          uint64(max(st.Misses, 0)),
		Belays:          uint64(max(st.Belays, 0)),
		RoundTripsSaved: uint64(max(st.RoundTripsSaved, 0)),
		Wasted:          uint64(max(st.SpecWasted, 0)),
	}
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
