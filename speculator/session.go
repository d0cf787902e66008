package speculator

import (
	"runtime/debug"
	"sync"
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/retag"
	"github.com/jdwpaccel/jdwpaccel/trigger"
)

// session is the speculator's interceptor for one relay session: the
// router between the relay's hooks and the session's parts (parts.go, the
// table in the package doc). It owns the path of each packet through
// them: it applies what a packet does to the core's facts, cache, learner
// and dispatcher itself, and hands the packet to each part that reacts to
// it, once, in table order.
type session struct {
	core

	// mu guards the core, the parts and every field below. The relay
	// calls the hooks one at a time, in its turn; the lock keeps the seams
	// of export.go safe for a caller outside a turn, and each entry one
	// step (a reply's effect on facts, cache, learner and parts).
	mu sync.Mutex

	trig *trigger.Manager // event subscriptions (facts, attach, prepare)
	on   parts            // the parts table, by phase

	// The parts, in table order.
	att    attach          // the attach's prefetch, recording and replay; lookups (attach.go, lookup.go)
	wb     writeBehind     // state-setting commands answered at once (writebehind.go)
	prep   prepareRule     // speculation at CLASS_PREPARE stops (predict_prepare.go)
	fp     framePrediction // speculation on predicted frame IDs (framepredict.go)
	stops  stopRules       // a stop's first waves and the frames' reads (predict.go)
	vals   valueRules      // the values found: strings, arrays, objects' types (predict_values.go)
	shapes shapeRules      // the fields read of objects (shapes.go)
	lrn    learnedRules    // templates learned per kind of stop, replayed reply by reply (learned.go)
	live   liveness        // IsCollected of a suspended thread, proven (liveness.go)

	// awaitFirst says the stop's speculation waits for the debugger's
	// first reads to confirm or refute the profile (learnedRules.confirm):
	// at the session's first stop of a kind, near the debugger, while the
	// profile it took may be another debugger's (one JDI attaches alike
	// for all). That debugger reads first as soon as it has the event,
	// long before any reply of the stop could be back: waiting costs it
	// nothing, and a profile its reads refute costs the VM nothing.
	awaitFirst bool

	ord      order               // answers of running state sent in the VM's order (order.go)
	ansBuf   []byte              // cache-hit answers (handed to the relay)
	permOffs []int               // pickValues' value offsets (reused)
	flushFn  func(*relay.Outbox) // flushHeld, bound once (a method value made per call would allocate)

	// The held speculation's flush (dispatcher.held): once the debugger's
	// misses of running state stop coming for heldWait (a burst of reads
	// sent together is one wave: what it asks again must follow the last
	// of them), or heldMax after the first was held. rs is the relay
	// session flushTimer hands the flush to; heldSince is zero when
	// nothing is held.
	rs         *relay.Session
	flushTimer *time.Timer
	heldSince  time.Time

	// The phases' contexts, reused from packet to packet (a context
	// handed to a part through an interface would escape to the heap).
	d   cmdData   // the debugger command being routed (copied into the slot's)
	cmd command   // the command phase's
	rep reply     // the reply phase's
	ch  chained   // the chain phase's
	fr  frameSeen // the frame phase's
}

func newSession(sp *Speculator, rs *relay.Session) *session {
	ss := &session{trig: trigger.New()}
	c := &ss.core
	*c = core{sp: sp, log: rs.Logger().With().Str(relay.LogComponent, "speculator").Logger(),
		learn: newLearner(), canSend: rs.IDs() != nil, began: time.Now()}
	c.facts = newFacts(sp)
	c.cache = newReplyCache(sp, &c.facts)
	c.disp = dispatcher{max: sp.cfg.MaxInFlight, ids: rs.IDs(), data: &c.data, facts: &c.facts,
		inflight: map[keyable.Key]*spec{}, onSend: c.sent, log: c.log}
	ss.att = attach{core: c, rs: rs, importProfile: ss.importProfile, offerStops: ss.lrn.offer,
		compressed: rs.VMInfo().Compressed}
	ss.wb = newWriteBehind(c, sp.cfg.WriteBehind)
	ss.prep = prepareRule{core: c, stopsOf: ss.lrn.profileTaken}
	ss.fp = framePrediction{core: c}
	ss.stops = stopRules{core: c}
	ss.vals = valueRules{core: c, shapes: &ss.shapes}
	ss.shapes = shapeRules{core: c}
	ss.lrn = newLearnedRules(c)
	ss.live = liveness{core: c}
	ss.flushFn = ss.flushHeld
	ss.rs = rs
	ss.facts.subscribe(ss.trig)
	ss.on.register(ss.trig, &ss.att, &ss.wb, &ss.prep, &ss.fp, &ss.stops, &ss.vals, &ss.shapes, &ss.lrn, &ss.live)
	return ss
}

// ---- debugger -> VM -------------------------------------------------------

// FromDebugger answers cacheable commands from the cache or a speculation
// in flight, and applies each command's effect on cached facts before it can
// reach the VM. (The relay remaps IDs in the proxy's range.)
func (ss *session) FromDebugger(rs *relay.Session, f *relay.Frame) relay.Action {
	if f.Kind != relay.KindCommand || len(f.Packet) < jdwp.HeaderSize {
		return relay.Forward
	}
	p := f.Packet
	sizes, _ := rs.IDSizes()
	ss.lock(f.Out())
	defer ss.unlock()
	defer ss.release(false) // after this read's own answer (order.go)
	// A DDM chunk (ddmlib, adblib) neither identifies a debugger nor
	// starts the attach's prefetch: a DDM-only client must not make the
	// proxy send the VM JDWP commands of its own, on which ART (9+) loads
	// its JDWP agent and then answers DDM requests it left unanswered
	// before (ddmtap's rule: nothing but DDM for a DDM client).
	// An observer sharing the VM (package share) is served from the cache
	// but taught nothing: learning follows the controller.
	// Nor, at a far end, does its near end's own command (the attach's
	// prefetch there, which follows the near end's profile): the near
	// end reports the debugger's first command (Session.Asked).
	observer := retag.FromObserver(f.ID)
	own := ss.facts.farEnd && retag.InRange(f.ID)
	if !ss.att.identified && p.Cmd() != jdwp.CmdDDMChunk && !observer && !own {
		ss.att.identify(p.Cmd(), sizes)
	}
	d := &ss.d
	*d = cmdData{}
	if info, ok := keyable.Fill(&d.key, p.Cmd(), p.Body(), sizes); ok {
		d.info, d.keyed = info, true
		d.subj = d.key.Subject(info, sizes)
		peer := ss.peerSpeculation(f.ID)
		if !peer && !observer {
			ss.asked(&d.key, info, sizes, false)
			ss.reads.asked(&d.key)
			ss.ord.asked(&d.key)
			ss.afterFirst(sizes)
			if len(ss.att.deferred) > 0 {
				ss.att.release(sizes)
			}
		}
		why := ""
		if specTracer != nil {
			why = ss.missWhy(&d.key)
		}
		if e := ss.cache.find(&d.key); e != nil {
			ss.markUsed(e.rec)
			f.Origin = relay.CacheHit
			ss.sp.countRequest(resultHit)
			if ss.wait(f.ID, &d.key, e) {
				return relay.Consume // answered later, in the VM's order (order.go)
			}
			ss.deliver(e.info, e.subj, e.pos)
			f.Answer = retag.Retag(ss.ansBuf[:0], e.reply, f.ID)
			ss.ansBuf = f.Answer[:0]
			return relay.Consume
		}
		if e, from := ss.cache.cover(&d.key, sizes); e != nil {
			if ans, ok := pickValues(ss.ansBuf[:0], f.ID, &d.key, &from, e.reply, sizes, &ss.permOffs); ok {
				return ss.answerFrom(f, e, ans)
			}
		}
		if e, start, n := ss.cache.framesOf(&d.key, sizes); e != nil {
			if ans, ok := sliceFrames(ss.ansBuf[:0], f.ID, e.reply, start, n, sizes); ok {
				return ss.answerFrom(f, e, ans)
			}
		}
		if s := ss.disp.pending(&d.key); s != nil {
			if s.deferred { // the debugger asks before the burst is in: send them now
				ss.disp.flushDeferred(ss.out)
			}
			ss.disp.openPending() // a moment this turn decided goes out now, placed
			if s.sent && ss.facts.valid(s.info, s.subj, s.gen) && s.servable() &&
				ss.facts.inPlace(s.info, s.subj, s.pos) && ss.facts.answerable(s.info, s.subj) {
				s.waiters = append(s.waiters, f.ID)
				ss.markUsed(s)
				f.Origin = relay.Belay
				ss.sp.countRequest(resultBelay)
				return relay.Consume
			}
			if !s.sent { // the debugger asks first: its own command replaces the queued one
				ss.disp.cancel(s)
			}
		}
		traceMiss(d.key.Cmd(), ss.learn.ep.serial, why)
		ss.sp.countRequest(resultMiss)
		// What a miss of running state makes the parts speculate goes to
		// the VM after the debugger's command, or the debugger could
		// not be answered with it (moment.go). A near end's own
		// speculation is no miss of the debugger's: nothing widens on
		// it; nor, at a far end, does a miss of running state (its near
		// end would give what it widened no place: offerPos).
		running := ss.facts.running(d.info, d.subj)
		if ss.disp.holding = running && !peer; ss.disp.holding {
			ss.refetch(sizes)
		}
		if !peer && !(running && ss.facts.farEnd) {
			for _, x := range ss.on.missers {
				x.missed(&d.key, sizes)
			}
		}
		ss.disp.holding = false
		if len(ss.disp.held) > 0 {
			ss.holdFlush()
		}
	} else {
		ss.release(true) // before what it changes (order.go)
		d.peer = retag.InRange(f.ID)
		x := &ss.cmd
		x.f, x.sizes, x.d, x.set.is, x.eff = f, sizes, d, false, effectOf(p)
		if p.Cmd() == jdwp.CmdEventRequestSet {
			x.set.read(p.Body(), sizes)
		}
		for _, c := range ss.on.commanders {
			if c.command(x) {
				x.f, x.d = nil, nil
				return relay.Consume
			}
		}
		x.f, x.d = nil, nil
		d.eff = x.eff
		ss.applyEffect(p, sizes, d)
	}
	if d.wb == nil || !d.wb.written || !d.wb.op.inMoment() {
		ss.disp.closeMoment() // the debugger's command runs as it would have (moment.go)
	}
	d.gen = ss.facts.gen
	d.pos = ss.facts.nextPos()
	d.reads = ss.facts.forwarded(p.Cmd(), d, d.pos)
	if d.wb != nil && d.wb.written {
		return ss.wb.answer(f, d)
	}
	f.SetData(slot, ss.data.get(d)) // back with the reply (relay.Frame.Data)
	return relay.Forward
}

// deliver: the debugger gets an answer of info read at position pos
// (facts.deliver); if it raised the floor, what the stop's speculation
// read below it goes again (reread).
func (ss *session) deliver(info keyable.Info, subj keyable.Subject, pos uint64) {
	floor := ss.facts.floor
	ss.facts.deliver(info, subj, pos)
	if ss.facts.floor > floor {
		sizes, _ := ss.att.rs.IDSizes()
		ss.reread(sizes)
	}
}

// answerFrom answers the debugger's read f with ans, made from the cached
// entry e, which answers it in another form (its fields in another order:
// permute.go; a range of its frames: frames_slice.go).
func (ss *session) answerFrom(f *relay.Frame, e *entry, ans jdwp.Packet) relay.Action {
	ss.markUsed(e.rec)
	ss.deliver(e.info, e.subj, e.pos)
	f.Answer, ss.ansBuf = ans, ans[:0]
	f.Origin = relay.CacheHit
	ss.sp.countRequest(resultHit)
	return relay.Consume
}

// heldWait is how long the held speculation waits for the debugger's
// next miss of running state, heldMax how long it waits at most: the
// reads a debugger sends together come within microseconds, and what a
// miss asks again overlaps its round trip either way.
const (
	heldWait = 2 * time.Millisecond
	heldMax  = 10 * time.Millisecond
	// orderWait and orderMax are the same while answers wait for the VM's
	// order (order.go): the reads of a debugger's several threads come
	// milliseconds apart (java-debug's thread names: up to 2.5 ms).
	orderWait = 5 * time.Millisecond
	orderMax  = 20 * time.Millisecond
)

// holdFlush (re)arms the flush of the held speculation (ss.mu held).
func (ss *session) holdFlush() {
	now := time.Now()
	if ss.heldSince.IsZero() {
		ss.heldSince = now
	}
	w, m := heldWait, heldMax
	if len(ss.ord.waiting) > 0 {
		w, m = orderWait, orderMax
	}
	wait := min(w, max(ss.heldSince.Add(m).Sub(now), 0))
	if ss.flushTimer == nil {
		ss.flushTimer = time.AfterFunc(wait, ss.flushLater)
	} else {
		ss.flushTimer.Reset(wait)
	}
}

// flushLater hands the flush to the relay's turn (the timer's goroutine).
func (ss *session) flushLater() {
	_ = ss.rs.Do(ss.flushFn) // fails only once the session ended: nothing to send
}

// flushHeld sends the speculation held since a turn that forwarded a
// miss of running state (dispatcher.held): after the debugger's command.
func (ss *session) flushHeld(out *relay.Outbox) {
	ss.lock(out)
	defer ss.unlock()
	ss.heldSince = time.Time{}
	if !ss.closed {
		ss.timedOut()
		ss.disp.flushHeld(out)
	}
}

// asked hands the parts a cacheable command the debugger asked, once the
// learner learned it (served: learner.learnCommand).
func (ss *session) asked(key *keyable.Key, info keyable.Info, sizes jdwp.IDSizes, served bool) {
	ss.learn.learnCommand(key, info, key.Subject(info, sizes), sizes, ss.facts.objType, &ss.facts.classes, served)
	for _, x := range ss.on.askers {
		x.asked(key, info, sizes)
	}
}

// effectOf is the effect of a command that is not answered from the
// cache, from keyable's table.
func effectOf(p jdwp.Packet) keyable.Effect {
	info, _ := keyable.Describe(p.Cmd())
	if info.Cacheable() {
		// A cacheable command whose body does not fit its layout (or
		// MaxParams) is treated as a mutation, conservatively.
		return keyable.EffectMutate
	}
	return info.Effect
}

// applyEffect applies the effect (d.eff) of a command that is not
// answered from the cache, when the command is seen, before the VM can
// act on it.
func (ss *session) applyEffect(p jdwp.Packet, sizes jdwp.IDSizes, d *cmdData) {
	switch d.eff {
	case keyable.EffectReadOnly:
		d.sig = signatureQueried(p.Cmd(), p.Body(), sizes)
	case keyable.EffectResume:
		ss.endEpisode()
		ss.facts.resumeSent()
		ss.facts.frames.resumed(p.Cmd(), p.Body(), sizes)
	case keyable.EffectInvoke:
		d.thread = invokeThread(p.Cmd(), p.Body(), sizes)
		d.snap, d.mark = ss.facts.invokeSent()
		ss.learn.ep.invoked = ss.learn.ep.active
		ss.facts.frames.resumed(p.Cmd(), p.Body(), sizes)
	case keyable.EffectSuspendVM:
		ss.facts.invalidateStop(reasonSuspend)
	case keyable.EffectSuspendThread:
		d.thread = jdwp.NewBodyReader(p.Body(), sizes).Thread()
		ss.facts.invalidateStop(reasonSuspend)
	case keyable.EffectRedefine:
		ss.facts.redefine(p.Body(), sizes)
	case keyable.EffectDisposeObjects:
		ss.facts.dispose(p.Body(), sizes)
	case keyable.EffectMutate:
		ss.facts.invalidateStop(reasonMutation)
	default: // EffectUnknown
		ss.facts.invalidateStop(reasonUnknownCommand)
	}
}

// invokeThread is the thread an invoke command (ObjectReference's on an
// object, ClassType's and InterfaceType's on a type) runs its method on:
// its second parameter.
func invokeThread(c jdwp.Cmd, body []byte, sizes jdwp.IDSizes) jdwp.ThreadID {
	r := jdwp.NewBodyReader(body, sizes)
	if c.Set == jdwp.SetObjectReference {
		r.Object()
	} else {
		r.Class()
	}
	t := r.Thread()
	if r.Err() != nil {
		return 0
	}
	return t
}

// ---- VM -> debugger -------------------------------------------------------

// FromVM stores replies, absorbs synthetic ones (serving belayed debugger
// commands), and tracks events.
func (ss *session) FromVM(rs *relay.Session, f *relay.Frame) relay.Action {
	switch f.Kind {
	case relay.KindReply:
		return ss.reply(rs, f)
	case relay.KindEvent:
		ss.event(rs, f)
	case relay.KindVMCommand:
		ss.lock(f.Out())
		ss.disp.closeMoment()
		ss.facts.evented() // the debugger learns the VM got this far (moment.go)
		ss.unlock()
	}
	return relay.Forward
}

func (ss *session) reply(rs *relay.Session, f *relay.Frame) relay.Action {
	p := f.Packet
	if len(p) < jdwp.HeaderSize {
		return relay.Forward
	}
	sizes, _ := rs.IDSizes()
	ss.lock(f.Out())
	defer ss.unlock()
	c := f.Cmd
	d, tracked := f.Data(slot).(*cmdData) // kept with the command (FromDebugger, dispatcher.send)
	if tracked {
		defer ss.data.put(d)
	}
	if f.Origin == relay.Synthetic && !(tracked && d.wb != nil) {
		// The relay tells replies to the proxy's own commands (the
		// connection's ID table); those of other hooks (a DDM reply whose
		// request expired) are no sample of the speculator's.
		if tracked && d.spec != nil {
			ss.disp.rtt.sampleSynthetic(f.Latency, f.Time, ss.disp.nInFlight)
			ss.specReply(d.spec, p, sizes)
		} else if tracked && d.moment {
			if p.ErrorCode() != jdwp.ErrorNone {
				ss.facts.momentFailed()
			}
		} else if tracked && d.snapshot {
			ss.att.snapReplied(p, d.gen, sizes)
		} else if tracked && d.lookup {
			ss.att.lookupReplied(d.sig, p)
			if p.ErrorCode() == jdwp.ErrorNone {
				ss.rep = reply{rs: rs, ok: true, c: jdwp.CmdVirtualMachineClassesBySignature, sig: d.sig, p: p, sizes: sizes}
				ss.replied(&ss.rep)
			}
		}
		return relay.Consume
	}
	ss.disp.rtt.sample(f.Latency)
	if !tracked {
		return relay.Forward
	}
	ok := p.ErrorCode() == jdwp.ErrorNone
	if d.reads {
		ss.facts.delivered(d.pos)
	}
	switch d.eff {
	case keyable.EffectResume:
		ss.facts.resumeReplied()
	case keyable.EffectInvoke:
		ss.facts.invokeReplied(d.snap, d.mark)
	case keyable.EffectSuspendVM:
		if ok {
			ss.facts.suspendReplied(true, 0)
		}
	case keyable.EffectSuspendThread:
		if ok {
			ss.facts.suspendReplied(false, d.thread)
		}
	}
	r := &ss.rep
	*r = reply{rs: rs, d: d, ok: ok, c: c, sig: d.sig, p: p, sizes: sizes}
	if ok {
		ss.facts.learnReply(c, d, p, sizes)
		if d.keyed {
			ss.facts.learnFromVM(c, d.key.Params(), p, sizes)
			r.params, r.valid = d.key.Params(), ss.facts.valid(d.info, d.subj, d.gen)
		}
	}
	ss.replied(r) // a written-behind one's reply is checked there and absorbed below
	if d.keyed && storable(p, d.info) && ss.facts.valid(d.info, d.subj, d.gen) {
		ss.cache.store(&d.key, d.info, d.subj, d.gen, d.pos, p, nil, sizes)
		if ok {
			ss.chain(&d.key, d.gen, p, sizes, 0)
		}
	}
	if f.Origin == relay.Synthetic {
		return relay.Consume
	}
	return relay.Forward
}

// replied hands the parts a successful reply.
func (ss *session) replied(r *reply) {
	for _, x := range ss.on.repliers {
		x.replied(r)
	}
	*r = reply{}
}

// specReply handles the VM's reply to a speculative command.
func (ss *session) specReply(s *spec, p jdwp.Packet, sizes jdwp.IDSizes) {
	ss.disp.chaining = ss.disp.replied(s) // what the reply leads to waits for its burst (dispatcher.bursts)
	if s.pred != nil && ss.hold(s, p) ||  // no waiters: unconfirmed, it served none
		p.ErrorCode() == jdwp.ErrorThreadNotSuspended && ss.notSuspended(s) {
		ss.drainAfter()
		return
	}
	for _, id := range s.waiters {
		ss.belayBuf = retag.Retag(ss.belayBuf[:0], p, id)
		ss.out.SendToDebugger(ss.belayBuf, relay.Belay, s.key.Cmd())
	}
	if len(s.waiters) > 0 {
		ss.deliver(s.info, s.subj, s.pos)
		// The debugger waited for this reply: it goes now, and what the
		// reply teaches and leads to (below) is decided while the
		// debugger reads it, no later debugger command being taken
		// before the turn ends.
		ss.out.Flush()
	}
	s.waiters = nil
	if p.ErrorCode() == jdwp.ErrorNone {
		ss.facts.learnFromVM(s.key.Cmd(), s.key.Params(), p, sizes)
		ss.rep = reply{ok: true, c: s.key.Cmd(), params: s.key.Params(), p: p, sizes: sizes,
			valid: ss.facts.valid(s.info, s.subj, s.gen)}
		ss.replied(&ss.rep)
	}
	if storable(p, s.info) && ss.facts.valid(s.info, s.subj, s.gen) {
		ss.cache.store(&s.key, s.info, s.subj, s.gen, s.pos, p, s, sizes)
		ss.noteStored(&s.key, s.info, s.subj, s.pos)
		ss.tapStored(s, p)
		if p.ErrorCode() == jdwp.ErrorNone {
			ss.chain(&s.key, s.gen, p, sizes, s.level)
		}
	} else {
		ss.wasted(s)
	}
	ss.drainAfter()
	ss.tapIdle()
}

// drainAfter sends, after a speculation's reply, what waited for the rest
// of its burst (dispatcher.deferred) once that is in, and what waited
// for room.
func (ss *session) drainAfter() {
	if !ss.disp.chaining {
		ss.disp.flushDeferred(ss.out)
	}
	ss.disp.chaining = false
	ss.disp.drain(ss.out)
}

// hold offers the reply to speculation s to the holders; true if one took it.
func (ss *session) hold(s *spec, p jdwp.Packet) bool {
	for _, x := range ss.on.holders {
		if x.hold(s, p) {
			return true
		}
	}
	return false
}

// storeSpec stores the reply p to speculation s, valid in the stop, and
// chains on it; a reply that cannot be stored is wasted.
func (ss *session) storeSpec(s *spec, p jdwp.Packet, sizes jdwp.IDSizes) {
	if storable(p, s.info) && ss.facts.valid(s.info, s.subj, s.gen) {
		ss.cache.store(&s.key, s.info, s.subj, s.gen, s.pos, p, s, sizes)
		ss.noteStored(&s.key, s.info, s.subj, s.pos)
		if p.ErrorCode() == jdwp.ErrorNone {
			ss.chain(&s.key, s.gen, p, sizes, s.level)
		}
		return
	}
	ss.wasted(s)
}

// chain hands a reply (speculative or organic) valid in the current stop
// to the parts that speculate the next wave from it: a Frames reply frame
// by frame (framer), any other to the chainers.
func (ss *session) chain(key *keyable.Key, gen generation, p jdwp.Packet, sizes jdwp.IDSizes, level uint8) {
	ep := &ss.learn.ep
	if !ep.active || gen < ss.facts.stopInval {
		return
	}
	speculating := ss.speculating()
	if key.Cmd() == jdwp.CmdThreadReferenceFrames {
		// What the debugger asks of the frames is learned by depth even
		// when nothing is speculated.
		ss.frames(key, p, sizes, speculating)
		return
	}
	if !speculating {
		return
	}
	x := &ss.ch
	*x = chained{key: key, p: p, sizes: sizes, level: level}
	for _, c := range ss.on.chainers {
		c.chain(x)
	}
	*x = chained{}
}

// frames hands each frame of a Frames reply to the framers, storing what
// each releases before the next sees the frame.
func (ss *session) frames(key *keyable.Key, p jdwp.Packet, sizes jdwp.IDSizes, speculating bool) {
	r := jdwp.NewBodyReader(p.Body(), sizes)
	params := jdwp.NewBodyReader(key.Params(), sizes)
	thread, start := params.Thread(), int(params.Int32())
	n := r.Count(sizes.FrameID + 1 + sizes.ReferenceTypeID + sizes.MethodID + 8)
	x := &ss.fr
	*x = frameSeen{sizes: sizes, key: key, thread: thread, speculating: speculating, released: x.released[:0],
		classesSeen: x.classesSeen[:0], methodsSeen: x.methodsSeen[:0], varsSeen: x.varsSeen[:0]}
	for i := 0; i < n && r.Err() == nil; i++ {
		x.frame, x.loc, x.index = r.Frame(), r.Location(), i
		if r.Err() != nil {
			break
		}
		x.depth, x.first = start+i, i == 0
		for _, f := range ss.on.framers {
			f.frame(x)
			for i, h := range x.released {
				x.released[i] = heldReply{}
				ss.storeSpec(h.s, h.p, sizes)
			}
			x.released = x.released[:0]
		}
	}
}

// notSuspended handles THREAD_NOT_SUSPENDED in reply to speculation s,
// which was sent only while its thread was believed suspended. If nothing
// changed the suspension since (s still valid), the belief was wrong: it
// is dropped, and the debugger commands belayed on s are asked again (once)
// rather than answered with the error to a command they did not send, as
// if forwarded now (only read-only commands went to the VM since, so the
// order the debugger sent its commands in still holds). It reports whether
// it asked again; if not, the waiters get the VM's reply as usual.
func (ss *session) notSuspended(s *spec) bool {
	if !ss.facts.valid(s.info, s.subj, s.gen) {
		return false // a resume or other change since: the belief is already gone
	}
	ss.endEpisode()
	ss.disp.closeMoment() // the thread runs: what it is asked goes after (stopMoment)
	ss.facts.clearSuspension()
	ss.facts.invalidateStop(reasonRunning)
	if s.reask || len(s.waiters) == 0 {
		return false
	}
	again := &spec{key: s.key, info: s.info, subj: s.subj, gen: ss.facts.gen, kind: s.kind,
		reask: true, used: true, done: true, waiters: s.waiters}
	s.waiters = nil
	ss.disp.send(ss.out, again) // not in disp.inflight: nothing else belays on it
	return true
}

// Yield closes the moment the stop's speculation holds open
// (relay.Yielder): a command of a client the session's hooks never see
// (the DDM tap's own requests) is about to go to the VM, and must find the
// program's threads as the program left them, not suspended by the
// proxy.
func (ss *session) Yield(_ *relay.Session, out *relay.Outbox) {
	ss.lock(out)
	defer ss.unlock()
	if !ss.closed {
		ss.disp.closeMoment()
	}
}

// importProfile hands the parts the profile an earlier session left
// (the attach found it).
func (ss *session) importProfile(p *profile, sizes jdwp.IDSizes) {
	ss.learn.importFrom(p, sizes)
	for _, x := range ss.on.profilers {
		x.importFrom(p, sizes)
	}
}

// lock takes mu for a call of the relay's turn whose outbox is out (nil
// for a call that sends nothing).
func (ss *session) lock(out *relay.Outbox) {
	ss.mu.Lock()
	ss.out = out
	ss.disp.turn++
}

// unlock ends what lock began, telling the tap where the stops stand
// (tell).
func (ss *session) unlock() {
	ss.disp.openPending()
	if !ss.stopMoment() {
		ss.disp.closeMoment()
	}
	ss.tell()
	ss.out = nil
	ss.mu.Unlock()
}

// stopMoment says whether the moment open stays open past this turn, so
// that what the stop's replies lead to is read in it too, at its one
// position (moment.go), while the stop's speculation is still out: from
// the first read of running state until that speculation is done, or
// anything else goes to the VM (closeMoment's callers: the debugger's
// own command first of all). At a far end, next to its VM, for at most
// maxStopMoment, which the far end holds the event for anyway. Through a
// link, while the next reply is due within maxHeldMoment of the moment's
// start: the reads one level of a stop's values leads to (java-debug: an
// object local's fields, an array local's elements) then share the
// earlier levels' moment, and the debugger may read them in any order;
// in moments of their own, an earlier level read after a later one is
// read again (reread), a round trip more. What may not go in a moment
// (dispatcher.after: a running thread's own state, a suspension count)
// waits for it to close; a debugger that asks for one first sends its own
// command, which closes it.
func (ss *session) stopMoment() bool {
	d := &ss.disp
	if !ss.learn.ep.active || d.nInFlight == 0 && len(d.queue) == 0 {
		return false
	}
	if ss.facts.farEnd {
		return time.Since(d.frozenAt) < maxStopMoment
	}
	return time.Since(d.frozenAt)+d.rtt.soFar() < maxHeldMoment
}

// maxStopMoment bounds a far end's moment (stopMoment): the push's own
// hold of a stop's event (push.Config.MaxHold).
const maxStopMoment = 50 * time.Millisecond

// maxHeldMoment bounds a moment held open through a link (stopMoment):
// after a stop that left them running, the program's other threads stand
// still for at most about this long (a long garbage collection's pause):
// a few round trips of a link of tens of milliseconds, one at 100 ms.
const maxHeldMoment = 200 * time.Millisecond

// returnMemoryAbove is the cache peak above which a session's end returns
// memory to the OS at once.
const returnMemoryAbove = 16 << 20

// Close releases the session's cache and keeps what it learned.
func (ss *session) Close(rs *relay.Session) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.closed {
		return
	}
	ss.closed = true
	if ss.flushTimer != nil {
		ss.flushTimer.Stop()
	}
	ss.endEpisode()
	if sizes, known := rs.IDSizes(); known {
		if key, p, old := ss.att.profile(); p != nil {
			ss.learn.exportTo(p, &ss.facts.seen, sizes)
			for _, x := range ss.on.profilers {
				x.exportTo(p, old, sizes)
			}
			ss.sp.profiles.put(key, p)
		}
	}
	big := ss.cache.peak >= returnMemoryAbove
	ss.cache.purge()
	if big {
		// A session that cached a lot leaves its memory to the Go heap,
		// which returns it to the OS only slowly: hand it back now.
		go debug.FreeOSMemory()
	}
	ss.sp.lastRTT.Store(int64(ss.disp.rtt.min()))
	ss.sp.lastService.Store(int64(ss.disp.rtt.service))
}
