package speculator

import (
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/retag"
)

// This file holds the seams that let another package move speculative
// replies between two proxies (package push, split mode): a far end next to
// the VM speculates at zero round trip and is told each speculative reply
// it stores (Tap), and a near end next to the debugger stores replies it
// did not fetch itself (Offer) under the same validity rules as its own.

// Mode says when a session sends speculative commands.
type Mode uint8

const (
	// ModeAdaptive speculates when the measured round trip makes it worth
	// the VM time (Config.MinRTT, and the pause on fast links while most
	// speculation goes unused): the proxy's usual mode.
	ModeAdaptive Mode = iota
	// ModeAlways speculates at every stop, whatever the round trip: for a
	// far end next to the VM, whose speculation is pushed across the link.
	ModeAlways
	// ModeNever sends nothing of its own: the cache serves replies to the
	// debugger's commands and replies offered to it (Offer). For a near end
	// whose far end speculates.
	ModeNever
	// ModeNear is ModeNever at stops, but prefetches and replays the
	// attach (attach.go) as ModeAdaptive does: a near end whose far end
	// pushes only stops' speculation. Its attach commands are read-only
	// commands sent across the link, which the far end answers from its own
	// attach's cache or forwards; pipelined, they make the near end's
	// attach no slower than an IDE-side proxy's.
	ModeNear
)

// SpecReply is a speculative reply a session stored, as a Tap is told of
// it. Params and Reply are the session's: valid only during the call.
type SpecReply struct {
	// Stop is the serial of the stop it was fetched for.
	Stop   uint64
	Cmd    jdwp.Cmd
	Params []byte
	Reply  jdwp.Packet
	// Score is how likely the debugger is to use it, from what the
	// learner saw at earlier stops: 1 for a command the debugger sent at
	// the last stop or a rule whose speculation it always used, towards 0
	// for rules whose speculation went unused.
	Score float64
	// Moment is the position of the moment it was read in (moment.go:
	// the VM suspended around its reads), 0 for none: replies of one
	// moment share it.
	Moment uint64
}

// StopInfo is where a tapped session's stops stand, as its tap is told.
type StopInfo struct {
	// Serial numbers the suspending stops the session took, located or
	// not, from 1; 0 is the attach, before the first.
	Serial uint64
	// Active says stop Serial is in progress: a stop at a location, from
	// its event until the next resume or anything else that ends it, or
	// a suspending CLASS_PREPARE, until the next resume.
	Active bool
	// Idle says no speculation is in flight or queued.
	Idle bool
	// Awaiting says the stop's speculation waits for the debugger's first
	// read (a far end's profile it does not trust yet): what it gathers
	// comes after that read.
	Awaiting bool
	// Mark is the session's mark when told: after a stop's event, it
	// stands for "fetched during this stop".
	Mark Mark
}

// A Tap is told of a tapped session's stops and speculation: stop n began
// (Event), ended (Ended), its speculation is idle (Idle), a speculative
// reply was stored (Stored). Its methods are called with the session's
// lock held, in the relay's turn (out is the turn's outbox): they must not
// block and must not call the Session back.
type Tap interface {
	// Event: the session handled a VM event; st is where its stops stand
	// after it (stop st.Serial began with it if Serial grew).
	Event(out *relay.Outbox, st StopInfo)
	// Ended: stop serial, active when last told, has ended (the debugger
	// resumed, or its thread was found running).
	Ended(out *relay.Outbox, serial uint64)
	// Stored: a speculative reply was stored in the cache, valid at the
	// time of the call.
	Stored(out *relay.Outbox, r *SpecReply)
	// Idle: the session has no speculation in flight or queued (after a
	// reply, or the attach's prefetch), during stop serial stop.
	Idle(out *relay.Outbox, stop uint64)
}

// pushSeams is a session's mode and tap (Session), under session.mu.
type pushSeams struct {
	mode Mode
	// unpushed: in ModeNear, the current stop came without pushed state,
	// so the session speculates on it as ModeAdaptive would (Unpushed).
	unpushed bool
	tap      Tap // nil: untapped
	rep      SpecReply
	// stop numbers the suspending stops the session took, located or
	// not, from 1; 0 is the attach, before any stop (StopInfo.Serial).
	stop uint64
	// evented: the turn handled a VM event (the tap is told, tell);
	// active: the tap was last told a stop is active.
	evented, active bool
	// prepare: the current stop prepared a class (a suspending
	// CLASS_PREPARE) and the debugger has not resumed since.
	prepare bool
}

// Session is one relay session's speculator with the seams of this file.
// Its Interceptor must be installed on the session (instead of the one
// NewSession or Hooks would make).
type Session struct{ ss *session }

// NewTapped returns a session whose speculation follows mode and whose
// stored speculative replies are told to tap (nil for none).
func (sp *Speculator) NewTapped(rs *relay.Session, mode Mode, tap Tap) *Session {
	ss := newSession(sp, rs)
	ss.push = pushSeams{mode: mode, tap: tap}
	ss.facts.farEnd = mode == ModeAlways
	ss.facts.nearEnd = mode == ModeNear || mode == ModeNever
	ss.cache.pause(mode == ModeNever)
	return &Session{ss: ss}
}

// Interceptor is the session's relay interceptor.
func (s *Session) Interceptor() relay.Interceptor { return s.ss }

// A Mark is a point in a session's invalidation history: a reply fetched
// at a mark is valid while nothing invalidated it since (see facts.valid).
// A tap is told the mark of each stop (StopInfo.Mark); MarkNow stands
// for the session's mark at the time of the Offer.
type Mark struct {
	gen    generation
	now    bool
	moment uint16
}

// InMoment is m for a reply read in the numbered moment of its stop (a
// far end's Record.Moment; 0: none): the replies of one moment read the
// program at one instant, and the debugger may be answered with them in
// any order (moment.go).
func (m Mark) InMoment(moment uint16) Mark {
	m.moment = moment
	return m
}

// MarkNow stands for the session's mark when the reply is offered: for a
// reply fetched now.
func MarkNow() Mark { return Mark{now: true} }

// stopInfo is where the session's stops stand.
func (ss *session) stopInfo() StopInfo {
	return StopInfo{Serial: ss.push.stop, Active: ss.stopActive(), Idle: ss.idle(), Awaiting: ss.awaitFirst && ss.learn.ep.active, Mark: Mark{gen: ss.facts.gen}}
}

// stopActive says whether the current stop is in progress (StopInfo.Active).
func (ss *session) stopActive() bool { return ss.learn.ep.active || ss.push.prepare }

// idle says whether no speculation is in flight or queued.
func (ss *session) idle() bool {
	return ss.disp.nInFlight == 0 && len(ss.disp.queue) == 0 && len(ss.disp.after) == 0 && len(ss.disp.deferred) == 0
}

// tell tells the tap, at the end of a turn, where the stops stand: after
// a VM event, always (Event); otherwise when the stop it was told active
// has ended (Ended).
func (ss *session) tell() {
	t := ss.push.tap
	if t == nil {
		return
	}
	evented := ss.push.evented
	ss.push.evented = false
	switch active := ss.stopActive(); {
	case evented:
		ss.push.active = active
		t.Event(ss.out, ss.stopInfo())
	case ss.push.active && !active:
		ss.push.active = false
		t.Ended(ss.out, ss.push.stop)
	}
}

// OfferResult is what Offer did with a reply.
type OfferResult uint8

const (
	// OfferStored: the reply is cached.
	OfferStored OfferResult = iota
	// OfferStale: something invalidated it since its mark (or its scope is
	// not suspended); not cached.
	OfferStale
	// OfferCached: a valid reply for the command was cached already.
	OfferCached
	// OfferInvalid: not a cacheable command with parameters that fit its
	// layout, or an error reply that is not stable; not cached.
	OfferInvalid
)

// Offer stores reply, the VM's reply to command c with parameters params,
// fetched elsewhere at mark m, under the rules of the session's own
// replies: only a cacheable command, only while nothing invalidated it
// since m. The cache keeps its own copy. Facts the reply carries (class
// signatures, object types, class members) are learned as from any reply.
func (s *Session) Offer(c jdwp.Cmd, params []byte, reply jdwp.Packet, m Mark, sizes jdwp.IDSizes) OfferResult {
	if len(reply) < jdwp.HeaderSize || !reply.IsReply() {
		return OfferInvalid
	}
	ss := s.ss
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var d cmdData
	info, ok := keyable.Fill(&d.key, c, params, sizes)
	if !ok || !storable(reply, info) || ss.closed {
		return OfferInvalid
	}
	if m.now {
		m.gen = ss.facts.gen
	}
	d.info, d.keyed, d.gen = info, true, m.gen
	d.subj = d.key.Subject(info, sizes)
	if !ss.facts.valid(info, d.subj, m.gen) {
		return OfferStale
	}
	if ss.cache.has(&d.key) {
		return OfferCached
	}
	if reply.ErrorCode() == jdwp.ErrorNone {
		ss.facts.learnReply(c, &d, reply, sizes)
		ss.facts.learnFromVM(c, d.key.Params(), reply, sizes)
		ss.replied(offeredReply(c, d.key.Params(), reply, sizes)) // valid: checked above
	}
	var pos uint64
	if ss.facts.running(info, d.subj) {
		pos = ss.facts.offerPos(m.moment) // after the stop's event (moment.go)
		if pos != 0 {
			ss.reads.offered(&d.key)
		}
	}
	ss.cache.store(&d.key, info, d.subj, m.gen, pos, reply, nil, sizes)
	ss.noteStored(&d.key, info, d.subj, pos)
	return OfferStored
}

// offeredReply is a reply fetched elsewhere, valid, for the reply phase.
func offeredReply(c jdwp.Cmd, params []byte, p jdwp.Packet, sizes jdwp.IDSizes) *reply {
	return &reply{ok: true, c: c, params: params, p: p, sizes: sizes, valid: true, offered: true}
}

// Identify tells a session not identified yet the debugger's first
// command c, answered elsewhere (by a near end, from the attach's replies
// pushed there): it identifies the debugger (attach.go: the key of its
// profile), as if it had come here, and may start the attach's prefetch,
// which goes to out (the relay turn's outbox). A far end never sees that
// command itself, and what its near end forwards first depends on what
// the near end knew: the profile would be learned under one key and
// looked up under another.
func (s *Session) Identify(out *relay.Outbox, c jdwp.Cmd, sizes jdwp.IDSizes) {
	ss := s.ss
	ss.lock(out)
	defer ss.unlock()
	if a := &ss.att; !a.identified && !ss.closed {
		a.identify(c, sizes)
	}
}

// Asked tells the session that the debugger sent command c with params and
// was answered elsewhere (by a near end, from replies this session's
// speculation pushed there): the learner learns it as a command of the
// current stop (and of the attach, or the CLASS_PREPARE stop, it was
// sent at), and the speculation that fetched it counts as used.
func (s *Session) Asked(out *relay.Outbox, c jdwp.Cmd, params []byte, sizes jdwp.IDSizes) {
	ss := s.ss
	ss.lock(out)
	defer ss.unlock()
	var key keyable.Key
	info, ok := keyable.Fill(&key, c, params, sizes)
	if !ok || ss.closed {
		return
	}
	// The near end served the reply pushed from here: its speculation is
	// used, even if the reply no longer answers here (out of place at
	// this end after the near end's later reads, or too old), before
	// anything here looks it up as an answer (and drops it).
	if e := ss.cache.servedFrom(&key, sizes); e != nil {
		ss.markUsed(e.rec)
	}
	ss.asked(&key, info, sizes, true)
	ss.afterFirst(sizes)
}

// tapStored tells the tap of speculative reply p to s, just stored.
func (ss *session) tapStored(s *spec, p jdwp.Packet) {
	t := ss.push.tap
	if t == nil {
		return
	}
	score := ss.learn.ratio[s.kind]
	switch {
	case s.kind == kDefault:
		score = 1
	case s.tmpl != nil:
		score = 1 / float64(1+s.tmpl.unused)
	}
	ss.push.rep = SpecReply{Stop: ss.push.stop, Cmd: s.key.Cmd(), Params: s.key.Params(), Reply: p, Score: score}
	if s.moment {
		ss.push.rep.Moment = s.pos
	}
	t.Stored(ss.out, &ss.push.rep)
	ss.push.rep = SpecReply{}
}

// tapIdle tells the tap when nothing is in flight or queued.
func (ss *session) tapIdle() {
	if t := ss.push.tap; t != nil && ss.idle() {
		t.Idle(ss.out, ss.push.stop)
	}
}

// Unpushed says, before a ModeNear session sees a stop event, whether that
// stop comes without pushed state (the far end did not take it for a stop,
// or gathered nothing for it): then the session speculates on it itself,
// as ModeAdaptive, rather than leave every read to cross the link.
func (s *Session) Unpushed(on bool) {
	s.ss.mu.Lock()
	s.ss.push.unpushed = on
	s.ss.mu.Unlock()
}

// Prefetch starts the attach's prefetch now (attach.go), rather than on
// the debugger's first command: for a far end that pushes the replies to
// the near end before the debugger asks (package push's attach bundle).
// Its commands go to out, the outbox of the relay's turn (rs.Do); if it
// sent none (all cached, or nothing allowed), the tap is told Idle.
func (s *Session) Prefetch(out *relay.Outbox) {
	ss := s.ss
	ss.lock(out)
	defer ss.unlock()
	if !ss.att.started && !ss.closed {
		ss.att.start()
	}
	ss.tapIdle()
}

// Attached starts the attach of a session whose prefetch's replies were
// offered before the debugger's first command (Offer; package push's
// attach bundle, with the ID sizes already set on the relay session): the prefetch sends
// only what the cache lacks, and the attach learns from the cached
// replies what it learns from its own (the VM's version, which keys the
// profile, and its capabilities). The pushed replies count in the
// attach's use (AttachUse) as its own prefetch would: sent, and used once
// they serve the debugger (but not in the speculation counts: this
// session sent nothing). Its commands go to out, the outbox of the
// relay's turn.
func (s *Session) Attached(out *relay.Outbox) {
	ss := s.ss
	sizes, _ := ss.att.rs.IDSizes()
	ss.lock(out)
	defer ss.unlock()
	if ss.att.started || ss.closed {
		return
	}
	ss.att.start()
	for _, c := range defaultPrefetch {
		pushed := &spec{kind: kAttach, sent: true, done: true}
		info, ok := keyable.Fill(&pushed.key, c, nil, sizes)
		if !ok {
			continue
		}
		e := ss.cache.peek(&pushed.key)
		if e == nil {
			continue
		}
		if e.rec == nil && len(ss.ownSpecs) < maxAttachCmds {
			pushed.info, pushed.subj, pushed.gen = info, e.subj, e.gen
			ss.cache.adopt(e, pushed)
			ss.ownSpecs = append(ss.ownSpecs, pushed)
		}
		if p := jdwp.Packet(e.reply); p.ErrorCode() == jdwp.ErrorNone {
			ss.replied(&reply{rs: ss.att.rs, ok: true, c: c, p: p, sizes: sizes})
		}
	}
}

// SetMode changes the session's mode (package push's far end turns its
// speculation off, ModeNever, on a link too fast for pushing to pay, and
// back on, ModeAlways). A session in ModeNever caches nothing: the only
// one to ask it anything is a near end that caches the same replies, so
// a reply stored here would never be served (its cache is emptied).
func (s *Session) SetMode(m Mode) {
	s.ss.mu.Lock()
	s.ss.push.mode = m
	s.ss.facts.farEnd = m == ModeAlways
	s.ss.cache.pause(m == ModeNever)
	s.ss.mu.Unlock()
}

// peerSpeculation says whether a command with the ID id, from this
// session's debugger, is the speculation of a proxy in front of it rather
// than the debugger's own: a command in the proxies' ID range
// (retag.InRange) comes from the near end speculating itself, in a session
// that sends nothing of its own (split mode's far end gone quiet) or at a
// stop (what a near end's miss asks again, moment.go). It is served as any
// other, but not learned as something the debugger asks (the near end's
// usage reports tell what the debugger used). At attach the near end's
// prefetch is learned as the debugger's attach, which it replays.
func (ss *session) peerSpeculation(id uint32) bool {
	return retag.InRange(id) && (ss.push.mode == ModeNever || ss.learn.ep.active)
}
