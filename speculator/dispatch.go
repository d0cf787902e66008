package speculator

import (
	"slices"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/stat"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/retag"
	"github.com/rs/zerolog"
)

// spec is one speculative command, from decision to reply; it stays
// referenced by its cache entry to account for its use.
type spec struct {
	key       keyable.Key
	info      keyable.Info
	subj      keyable.Subject
	gen       generation
	pos       uint64 // its place on the wire to the VM, once sent (moment.go)
	kind      kind
	tmpl      *template
	lnode     *lnode     // the learned template it replays (learned.go)
	pred      *predFrame // the predicted frame it names, if any (framepredict.go)
	level     uint8      // object nesting of the values it will return
	id        uint32
	serial    uint64 // the stop it was sent at (for the diagnostic tally)
	far       bool   // sent by a far end (for the diagnostic tally)
	sent      bool
	cancelled bool
	used      bool
	done      bool     // accounted as wasted (or superseded)
	reask     bool     // belayed debugger commands asked again (notSuspended)
	again     bool     // a miss's re-ask of this stop's speculation or offers (refetch): not asked a third time
	prep      bool     // sent by the prepare rule (predict_prepare.go): IDs from this connection's event and replies
	moment    bool     // read in a moment (dispatcher.openPending): its pos is the moment's
	deferred  bool     // waiting for the rest of a burst's replies (dispatcher.deferred)
	burst     uint32   // the turn it was sent in (dispatcher.bursts)
	waiters   []uint32 // belayed debugger command IDs
}

// dispatcher owns the speculative commands between decision and reply:
// the in-flight budget, the queue of speculation waiting for room, the
// proxy's packet IDs (retag), the output to the VM, and the round-trip
// estimate taken from the VM's replies (which gates speculation). Guarded by
// session.mu. Every send goes to the outbox of the relay's turn in
// progress, which the relay applies before any later turn, so no later
// debugger command can overtake a speculation (belay relies on that order).
//
// Invariants: inflight holds, per key, the speculation sent or queued for
// it (at most one); nInFlight counts those sent whose reply has not been
// seen, and new ones are sent only while it is below max; queue holds
// unsent speculation in decision order; ids, the VM connection's table
// (relay.Session.IDs, shared with the DDM client), is the only source of
// the proxy's packet IDs towards the VM.
type dispatcher struct {
	max       int                   // Config.MaxInFlight
	ids       *retag.Table          // the connection's packet IDs of the proxy's range
	data      *dataPool             // cmdData kept with each speculation in flight
	facts     *facts                // validity of queued speculation
	inflight  map[keyable.Key]*spec // speculations sent or queued, by key
	queue     []*spec               // speculations waiting for in-flight room
	nInFlight int                   // speculations sent, reply not yet seen
	// holding: speculation submitted now waits in held until the turn's
	// forwarded debugger command is on the wire (flushHeld): it must read
	// the running program after that command did (moment.go).
	holding bool
	held    []*spec
	sendBuf []byte // speculative command packets
	// frozen is the position of the moment open (moment.go: reads of
	// running state between the proxy's own VirtualMachine.Suspend and
	// Resume), 0 if none; out is the session's outbox it was opened in,
	// which closeMoment closes it in (as the turn ends, or once the
	// stop's speculation is done: session.stopMoment).
	frozen   uint64
	frozenAt time.Time // when the moment open began
	out      *relay.Outbox
	// pend are the reads of a moment decided in this turn and not on the
	// wire yet: they go out as the turn ends (openPending), after what
	// else the turn sends, between the moment's Suspend and Resume, so
	// what may not go in a moment goes before it rather than after.
	pend []*spec
	// after are the speculations that may not go in the moment open (a
	// running thread's own state, a suspension count), sent as it closes
	// (so that the moment's reads stay one instant).
	after []*spec
	// turn numbers the session's turns (session.lock); bursts are, oldest
	// first, the turns whose speculation is still in flight and how much
	// of it (the VM answers in order, so a burst's replies come one after
	// another). Through a link (not at either end of split mode) what a
	// reply's turn (chaining) would read in a moment of its own while the
	// rest of that reply's burst is out waits in deferred, and goes in one
	// moment after the burst's last reply (flushDeferred): the reads a
	// burst's replies lead to (one level of a stop's values) then share one
	// position, which the debugger may read in any order (moment.go), at
	// the cost of the VM's time for the rest of the burst. The debugger's
	// own turns and the event's send what they decide at once (chaining is
	// false there, and whenever deferred is sent). With a stop's moment
	// held (session.stopMoment) this acts only past the moment's bound; at
	// 100 ms it measured no worse than without, once better
	// (bench/results/first-attach/bigapp21-100ms-*.txt).
	turn     uint32
	bursts   []burst
	deferred []*spec
	chaining bool
	rtt      rttEstimator
	// onSend is told of each speculation as it is sent (stats, episode
	// accounting, logging).
	onSend func(s *spec)
	log    zerolog.Logger
}

// pending is the speculation sent or queued for key, if any.
func (d *dispatcher) pending(key *keyable.Key) *spec { return d.inflight[*key] }

// submit records s as the speculation for its key and sends it, or
// queues it while the in-flight budget is spent.
func (d *dispatcher) submit(out *relay.Outbox, s *spec) {
	d.inflight[s.key] = s
	if d.holding {
		d.held = append(d.held, s)
		return
	}
	if d.nInFlight < d.max {
		d.send(out, s)
	} else {
		d.queue = append(d.queue, s)
	}
}

// send sends a speculative command to the VM, through out.
func (d *dispatcher) send(out *relay.Outbox, s *spec) {
	running := d.facts.running(s.info, s.subj)
	pending := false
	switch {
	case running && d.facts.partialStop() && !d.facts.nearEnd && frozenRead(s.key.Cmd(), s.info):
		if d.frozen != 0 {
			s.pos, s.moment = d.frozen, true
			break
		}
		// (Nothing is pending while chaining: a reply's turn defers from its start.)
		if d.chaining && !d.facts.farEnd {
			s.deferred = true
			d.deferred = append(d.deferred, s)
			return
		}
		pending, s.moment, d.out = true, true, out // placed as it goes out (openPending)
	case running || s.key.Cmd() == jdwp.CmdThreadReferenceSuspendCount:
		// A running thread's own state, or a suspension count: read
		// without the moment's suspension, before it opens or once it
		// closed.
		if d.frozen != 0 {
			d.after = append(d.after, s)
			return
		}
		s.pos = d.facts.nextPos()
	default:
		s.pos = d.facts.nextPos()
	}
	s.id = d.ids.NewSynthetic()
	s.sent, s.burst = true, d.turn
	if n := len(d.bursts); n > 0 && d.bursts[n-1].turn == d.turn {
		d.bursts[n-1].left++
	} else {
		d.bursts = append(d.bursts, burst{turn: d.turn, left: 1})
	}
	if running {
		d.facts.sentRunning = true
	}
	d.nInFlight++
	d.onSend(s)
	if pending {
		d.pend = append(d.pend, s)
		return
	}
	d.write(out, s)
}

// write puts speculation s, sent, on the wire through out.
func (d *dispatcher) write(out *relay.Outbox, s *spec) {
	d.sendBuf = s.key.AppendCommand(d.sendBuf[:0], s.id)
	// The relay pairs the reply and hands the data back (relay.Frame.Data).
	out.SendToVMData(d.sendBuf, relay.Synthetic, slot, d.data.get(&cmdData{spec: s}))
}

// openPending opens the moment whose reads this turn decided (pend):
// the VM suspended, then they go out, at the moment's position (moment.go),
// which follows whatever the turn sent before.
func (d *dispatcher) openPending() {
	if len(d.pend) == 0 {
		return
	}
	out := d.out
	d.frozen, d.frozenAt = d.facts.nextPos(), time.Now()
	d.sendBuf = jdwp.AppendCommand(d.sendBuf[:0], d.ids.NewSynthetic(), jdwp.CmdVirtualMachineSuspend, nil)
	out.SendToVMData(d.sendBuf, relay.Synthetic, slot, d.data.get(&cmdData{moment: true}))
	for _, s := range d.pend {
		s.pos = d.frozen
		d.write(out, s)
	}
	clear(d.pend)
	d.pend = d.pend[:0]
}

// closeMoment resumes what the moment suspended, opening it first if
// its reads are still pending (openPending). Called before anything else
// of the turn goes to the VM that is not a read of the moment, and as the
// turn ends unless the moment stays open (session.unlock): nothing but
// the moment's reads runs between the two.
func (d *dispatcher) closeMoment() {
	d.openPending()
	if d.frozen == 0 {
		return
	}
	d.sendBuf = jdwp.AppendCommand(d.sendBuf[:0], d.ids.NewSynthetic(), jdwp.CmdVirtualMachineResume, nil)
	out := d.out
	out.SendToVMData(d.sendBuf, relay.Synthetic, slot, d.data.get(&cmdData{moment: true}))
	d.frozen, d.out = 0, nil
	d.facts.nextPos() // what follows reads later than the moment
	// What waited for the moment goes first, within the in-flight room.
	d.queue = slices.Insert(d.queue, 0, d.after...)
	clear(d.after)
	d.after = d.after[:0]
	d.drain(out)
}

// frozenRead says whether a read of running state c (info) answers the
// same while the VM is suspended as while its threads run: not a
// thread's own state (its status, frames, monitors) but its name; the
// thread list, objects, arrays, strings and statics. (A read that is not
// of running state may go in a moment too, but a suspension count: the
// moment's suspension would show in it.)
func frozenRead(c jdwp.Cmd, info keyable.Info) bool {
	return info.Scope != keyable.ScopeThread || c == jdwp.CmdThreadReferenceName
}

// flushHeld submits the held speculation, in order, behind what waits
// for room already (drain drops what was cancelled or invalidated).
func (d *dispatcher) flushHeld(out *relay.Outbox) {
	d.queue = append(d.queue, d.held...)
	clear(d.held)
	d.held = d.held[:0]
	d.drain(out)
}

// drain sends queued speculation as in-flight room frees up, dropping
// what was cancelled or invalidated while it waited.
func (d *dispatcher) drain(out *relay.Outbox) {
	for len(d.queue) > 0 && d.nInFlight < d.max {
		s := d.queue[0]
		d.queue = d.queue[1:]
		if s.cancelled || !d.facts.valid(s.info, s.subj, s.gen) {
			d.forget(s)
			s.cancelled = true
			continue
		}
		d.send(out, s)
	}
}

// flushDeferred sends what waited for the rest of a burst (deferred),
// ahead of what waits for room, in one moment. Called at the end of the
// burst's last reply (session.drainAfter), or once the debugger asks for
// one of them: never while chaining, so none is deferred again.
func (d *dispatcher) flushDeferred(out *relay.Outbox) {
	if len(d.deferred) == 0 {
		return
	}
	for _, s := range d.deferred {
		s.deferred = false
	}
	d.queue = slices.Insert(d.queue, 0, d.deferred...)
	clear(d.deferred)
	d.deferred = d.deferred[:0]
	d.drain(out)
}

// burst is a turn's speculation still in flight (dispatcher.bursts).
type burst struct {
	turn uint32
	left int
}

// replied accounts the VM's reply to s, and reports whether the rest of
// the speculation sent in the same turn is still in flight.
func (d *dispatcher) replied(s *spec) (burstOut bool) {
	d.forget(s)
	d.nInFlight--
	i := slices.IndexFunc(d.bursts, func(b burst) bool { return b.turn == s.burst })
	if i >= 0 {
		if d.bursts[i].left--; d.bursts[i].left > 0 {
			burstOut = true
		} else {
			d.bursts = slices.Delete(d.bursts, i, i+1)
		}
	}
	if d.nInFlight == 0 {
		d.bursts = d.bursts[:0] // nothing is out: none left over
	}
	return burstOut
}

// forget drops s as its key's speculation (unless superseded).
func (d *dispatcher) forget(s *spec) {
	if d.inflight[s.key] == s {
		delete(d.inflight, s.key)
	}
}

// cancel drops a queued (unsent) speculation that the debugger's own
// command replaces.
func (d *dispatcher) cancel(s *spec) {
	s.cancelled = true
	delete(d.inflight, s.key)
}

// dropQueue forgets the queue (the stop it was for has ended).
func (d *dispatcher) dropQueue() {
	d.queue = d.queue[:0]
	clear(d.deferred)
	d.deferred = d.deferred[:0]
}

// rttEstimator tracks the link round trip (minimum of recent reply
// latencies, which include VM service and queueing) and the VM's service
// time (spacing of back-to-back synthetic replies).
type rttEstimator struct {
	floor     stat.Floor // of the last stat.MaxWindow latencies
	lastSynth time.Time
	service   time.Duration // EWMA
}

func (r *rttEstimator) sample(d time.Duration) { r.floor.Add(d) }

func (r *rttEstimator) sampleSynthetic(d time.Duration, at time.Time, inFlight int) {
	r.sample(d)
	if inFlight > 1 && !r.lastSynth.IsZero() {
		gap := at.Sub(r.lastSynth)
		if gap > 0 && gap < 50*time.Millisecond {
			if r.service == 0 {
				r.service = gap
			} else {
				r.service += (gap - r.service) / 8
			}
		}
	}
	r.lastSynth = at
}

// min is the smallest recent latency, or 0 before enough samples.
func (r *rttEstimator) min() time.Duration {
	if r.floor.Count() < 3 {
		return 0
	}
	return r.soFar()
}

// soFar is the smallest recent latency, from however few samples (0:
// none): at the attach, after its first replies.
func (r *rttEstimator) soFar() time.Duration { return r.floor.Min() }
