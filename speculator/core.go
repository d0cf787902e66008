package speculator

import (
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/rs/zerolog"
)

// core is what a session's parts share: the explicit inputs every part is
// built with (see the package doc). Each piece has one owner type with its
// own invariants; core adds only the gates every speculation passes
// (admit, sendOwn) and the accounting of speculation's use. Guarded
// by session.mu, like everything the parts hold.
type core struct {
	sp    *Speculator
	log   zerolog.Logger
	facts facts       // the VM's state as known: validity, suspension, safe IDs
	cache *replyCache // the replies, by key
	learn learner     // what the debugger asks, stop after stop; the current stop
	disp  dispatcher  // speculation in flight or queued; the output to the VM
	data  dataPool    // cmdData kept with commands in flight (slot)
	push  pushSeams   // mode and tap (export.go)
	reads offerReads  // which offered replies the debugger read (moment.go)

	// canSend says the relay session has a VM connection to send on (a
	// unit test's may have none).
	canSend bool
	// ownSpecs are the attach's own commands (prefetch, replay, and the
	// prepare rule's while recording): their use is the attach's
	// (AttachUse). prevUse is the last attach's, from the profile (hasPrev).
	ownSpecs []*spec
	prevUse  float64
	hasPrev  bool
	// sets is the event kinds of the session's first Sets, in order:
	// what its JDI sets up as it attaches, which tells one debugger's
	// stops from another's (attach.go writes it; the learned rules read
	// it to take a profile's stop templates, learned_profile.go).
	sets firstSets

	// out is the outbox of the relay's turn in progress (relay.Frame.Out,
	// or relay.Session.Do's), set by each entry point for its duration
	// (session.lock): whatever a part sends goes there.
	out *relay.Outbox
	// specBuf is submitNew's scratch: a candidate being decided.
	specBuf spec

	pbuf     []byte    // speculative command parameters
	slotBuf  []byte    // frameSlots' answer
	slotOne  [1][]byte // frameSlots' answer: slotBuf
	belayBuf []byte    // belayed answers
	closed   bool
	began    time.Time // when the session started (first seconds are logged)
}

// LowRTT is the round trip under which wasted speculation costs about as
// much VM time as used speculation saves; there, speculation pauses while
// more than maxWaste of it goes unused (probing again every 8th stop).
const (
	LowRTT   = 2 * time.Millisecond
	maxWaste = 0.3
)

// speculating reports whether speculative commands are worth sending now.
func (c *core) speculating() bool {
	if spec, forced := c.forcedSpeculation(); forced || c.closed {
		return spec && !c.closed
	}
	rtt := c.disp.rtt.min()
	if floor := c.sp.cfg.MinRTT; floor > 0 && rtt < floor {
		return false
	}
	if c.learn.waste > maxWaste && rtt < LowRTT && c.learn.ep.serial%8 != 0 {
		return false
	}
	return true
}

// forcedSpeculation is the mode's answer to whether to speculate, and
// whether the mode decides it (ModeAdaptive leaves it to the gates).
func (c *core) forcedSpeculation() (speculate, forced bool) {
	switch c.push.mode {
	case ModeAlways:
		return !c.closed, true
	case ModeNear:
		if c.push.unpushed {
			return false, false
		}
		return false, true
	case ModeNever:
		return false, true
	}
	return false, false
}

// recording says whether the debugger's commands are part of its attach:
// until its first stop at a location ended.
func (c *core) recording() bool { return c.learn.serial <= 1 }

// attachAllowed reports whether the attach may send commands of its own:
// not in a session that sends nothing of its own (ModeNever; ModeNear
// does at attach), not with a floor on the RTT (unknown yet at attach),
// and on a fast link only while the profile's replay was mostly used.
func (c *core) attachAllowed() bool {
	if spec, forced := c.forcedSpeculation(); c.closed || forced && !spec && c.push.mode != ModeNear || c.sp.cfg.MinRTT > 0 {
		return false
	}
	if c.hasPrev && c.prevUse < maxWaste && c.disp.rtt.min() < LowRTT {
		return false
	}
	return true
}

// frameSlots is the slot lists to ask of a frame at loc (StackFrame.
// GetValues' parameters after the frame), the first the likeliest: those
// the debugger asked of the method at that code index, else, for a
// debugger that reads a frame's visible variables (learner.visibleSlots),
// the ones visible there (a step into a new variable's scope reads it
// too), else those it asked of the method (slotLists), else (a method it
// never showed) the one JDI's visibleVariables lists there
// (classFacts.visibleSlots). The answer is valid until the next call or
// the learner's next command.
func (c *core) frameSlots(loc jdwp.Location) ([][]byte, bool) {
	mk := methodOf(loc)
	exact := mk
	exact.index, exact.exact = loc.Index, true
	if s, ok := c.learn.slots[exact]; ok && s.n > 0 {
		return s.all(), true
	}
	s, learned := c.learn.slots[mk]
	learned = learned && s.n > 0
	if learned && c.learn.visibleSlots <= 0 {
		return s.all(), true
	}
	var visible bool
	c.slotBuf, visible = c.facts.classes.visibleSlots(c.slotBuf[:0], loc)
	if !visible && learned {
		return s.all(), true
	}
	c.slotOne[0] = c.slotBuf
	return c.slotOne[:], visible
}

// writer returns a BodyWriter over the parameter scratch.
func (c *core) writer(sizes jdwp.IDSizes) jdwp.BodyWriter {
	return jdwp.BodyWriter{Buf: c.pbuf[:0], Sizes: sizes}
}

// arrayLength is the length of array arr, if a reply the cache holds
// says it.
func (c *core) arrayLength(arr jdwp.ObjectID, sizes jdwp.IDSizes) (int32, bool) {
	var b [8]byte
	w := jdwp.BodyWriter{Buf: b[:0], Sizes: sizes}
	w.Object(arr)
	var k keyable.Key
	if _, ok := keyable.Fill(&k, jdwp.CmdArrayReferenceLength, w.Buf, sizes); !ok {
		return 0, false
	}
	e := c.cache.peek(&k)
	if e == nil || len(e.reply) < jdwp.HeaderSize+4 || jdwp.Packet(e.reply).ErrorCode() != jdwp.ErrorNone {
		return 0, false
	}
	r := jdwp.NewBodyReader(jdwp.Packet(e.reply).Body(), sizes)
	n := r.Int32()
	return n, r.Err() == nil
}

// specParams speculates command cmd with the given parameters unless the
// answer is cached or in flight, the rule is gated, the scope is not
// suspended, the IDs are not shown safe, or the stop's budget is spent.
func (c *core) specParams(sizes jdwp.IDSizes, cmd jdwp.Cmd, params []byte, k kind, tp *template, level uint8) {
	c.submitNew(sizes, spec{kind: k, tmpl: tp, level: level}, cmd, params)
}

// submitNew puts a speculation described by d (kind, template, level,
// learned template, predicted frame, again) to the gates every stop's
// speculation passes (admit), and returns the spec sent, or nil. Most
// candidates are refused (cached already, in flight): they are decided in
// a scratch spec, and one is allocated for those sent only.
func (c *core) submitNew(sizes jdwp.IDSizes, d spec, cmd jdwp.Cmd, params []byte) *spec {
	c.specBuf = d
	var kept *spec
	if c.admit(sizes, &c.specBuf, cmd, params) {
		kept = new(spec)
		*kept = c.specBuf
	}
	c.specBuf = spec{} // holds nothing past the call
	if kept != nil {
		c.enter(kept)
	}
	return kept
}

// admit fills s (key, info, subject) for command cmd with params and says
// whether it passes the gates; it keeps no pointer to s.
func (c *core) admit(sizes jdwp.IDSizes, s *spec, cmd jdwp.Cmd, params []byte) bool {
	ep := &c.learn.ep
	if !ep.active || len(ep.specs) >= maxSpecPerStop || !c.learn.kindAllowed(s.kind, cmd) {
		return false
	}
	info, ok := keyable.Fill(&s.key, cmd, params, sizes)
	if !ok {
		return false
	}
	s.info = info
	s.subj = s.key.Subject(info, sizes)
	if !c.facts.scopeOK(info, s.subj) || ep.unplaced && c.facts.running(info, s.subj) {
		return false
	}
	if cmd == jdwp.CmdThreadReferenceName && c.learn.nameKnown(jdwp.NewBodyReader(params, sizes).Thread()) {
		return false // named once, and it named this one (learner.nameKnown)
	}
	if c.cache.has(&s.key) || c.cache.covered(&s.key, sizes) || c.facts.classes.tableless(cmd, params, sizes) {
		return false
	}
	if old := c.disp.pending(&s.key); old != nil && !old.cancelled && c.facts.valid(old.info, old.subj, old.gen) &&
		(!old.sent || c.facts.inPlace(old.info, old.subj, old.pos)) {
		return false
	}
	if c.learn.shadowed(s.kind, &s.key) {
		return false
	}
	if !c.facts.safeToSend(s, ep.frames, sizes) {
		c.sp.countSpec(outcomeWithheld, 1)
		return false
	}
	return true
}

// enter makes s, admitted, the stop's and hands it to the dispatcher.
func (c *core) enter(s *spec) {
	ep := &c.learn.ep
	s.gen = c.facts.gen
	ep.specs = append(ep.specs, s)
	if s.pred != nil {
		ep.predicted = append(ep.predicted, s)
	}
	c.disp.submit(c.out, s)
}

// guessesLearned says whether a stop with no templates of this session's
// guesses only the stopped thread's frames and name (what every debugger
// shows), the learned rules replaying what else their profile's debugger
// read first (its thread list, its frame count) once this debugger's
// first read confirmed the profile (learnedRules.confirm): near the
// debugger, which reads first before any reply could be back. A far end
// guesses as before.
func (c *core) guessesLearned() bool {
	return c.learn.profiled && !c.facts.farEnd && len(c.learn.templates) == 0
}

// sendOwn sends speculation s that belongs to no stop (the attach's, the
// prepare rule's; its key, info and subject filled) unless its reply is
// cached or in flight or its IDs are not shown safe, and reports whether
// it was sent.
func (c *core) sendOwn(s *spec, sizes jdwp.IDSizes) bool {
	if c.cache.has(&s.key) || c.facts.classes.tableless(s.key.Cmd(), s.key.Params(), sizes) {
		return false
	}
	if old := c.disp.pending(&s.key); old != nil && !old.cancelled {
		return false
	}
	if !c.facts.safeToSend(s, nil, sizes) {
		c.sp.countSpec(outcomeWithheld, 1)
		return false
	}
	s.gen = c.facts.gen
	c.disp.submit(c.out, s)
	return true
}

// markUsed records that a speculation served the debugger.
func (c *core) markUsed(s *spec) {
	if s == nil || s.used {
		return
	}
	s.used = true
	if !s.done {
		traceSpec(s, outcomeUsed, c.learn.ep.serial)
		c.sp.countSpec(outcomeUsed, 1)
	}
}

// wasted counts s as wasted, once.
func (c *core) wasted(s *spec) {
	if !s.used && !s.done {
		s.done = true
		traceSpec(s, outcomeWasted, c.learn.ep.serial)
		c.sp.countSpec(outcomeWasted, 1)
	}
}

// sent is the dispatcher's onSend: a speculation goes to the VM.
func (c *core) sent(s *spec) {
	if s.reask {
		return // the debugger's own command, asked again: no speculation
	}
	c.learn.ep.sentKind[s.kind]++
	s.serial, s.far = c.learn.ep.serial, c.facts.farEnd
	traceSpec(s, outcomeSent, c.learn.ep.serial)
	c.sp.countSpec(outcomeSent, 1)
	if time.Since(c.began) < logOwnFor {
		c.log.Debug().Stringer("command", s.key.Cmd()).Uint32("id", s.id).Msg("sent to the VM on the proxy's own behalf")
	}
}

// endEpisode ends the current stop, counting its wasted speculation.
func (c *core) endEpisode() {
	if c.learn.ep.active {
		c.learn.learnShownFacts(c.facts.objType)
	}
	c.sp.countSpec(outcomeWasted, c.learn.endEpisode(&c.disp))
}
