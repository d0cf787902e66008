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
	"github.com/rs/zerolog"
)

// session is the speculator's interceptor for one relay session: the glue
// between the relay's hooks and the session's parts, each with its own
// type and invariants:
//
//   - facts (facts.go, safety.go): what the VM's state is known to be,
//     and so which cached facts are valid and which IDs are safe to send;
//   - cache (cache.go): the replies, by key, within a byte budget;
//   - learn (learner.go): what the debugger asks, stop after stop, and
//     which prediction rules pay off;
//   - disp (dispatch.go): speculation in flight or queued, and the
//     output to the VM.
//
// The prediction rules (predict.go, predict_values.go) read replies and
// the learner, and hand speculation to the dispatcher.
type session struct {
	sp  *Speculator
	log zerolog.Logger

	// mu guards every field below and the parts: the relay calls the hooks
	// from its debugger and VM reader goroutines, and one lock keeps the
	// parts consistent with each other (a reply's effect on facts, cache
	// and learner is one step).
	mu    sync.Mutex
	facts facts
	cache *replyCache
	learn learner
	disp  dispatcher
	att   attach                    // the attach's prefetch, recording and replay (attach.go)
	trig  *trigger.Manager[cmdData] // command, reply and event subscriptions
	data  dataPool                  // cmdData kept with commands in flight (slot)
	push  pushSeams                 // mode and tap (export.go)
	wb    writeBehind               // state-setting commands answered at once (writebehind.go)
	prep  prepareRule               // speculation at CLASS_PREPARE stops (predict_prepare.go)

	// out is the outbox of the relay's turn in progress (relay.Frame.Out,
	// or relay.Session.Do's), set by each entry point for its duration
	// (lock): whatever the session sends goes there.
	out *relay.Outbox

	ansBuf   []byte // cache-hit answers (debugger goroutine, handed to the relay)
	belayBuf []byte // belayed answers
	pbuf     []byte // speculative command parameters
	closed   bool
	began    time.Time // when the session started (first seconds are logged)
}

func newSession(sp *Speculator, rs *relay.Session) *session {
	ss := &session{
		sp:    sp,
		log:   rs.Logger().With().Str(relay.LogComponent, "speculator").Logger(),
		trig:  trigger.New[cmdData](),
		learn: newLearner(),
		wb:    newWriteBehind(sp.cfg.WriteBehind),
		began: time.Now(),
	}
	ss.facts = newFacts(sp)
	ss.cache = newReplyCache(sp, &ss.facts)
	ss.disp = dispatcher{max: sp.cfg.MaxInFlight, ids: rs.IDs(), data: &ss.data, facts: &ss.facts,
		inflight: map[keyable.Key]*spec{}, onSend: ss.sent, log: ss.log}
	ss.trig.OnEvent(jdwp.EventClassPrepare, ss.facts.onClassPrepare)
	ss.trig.OnEvent(jdwp.EventClassPrepare, ss.onClassPrepare)
	ss.trig.OnEvent(jdwp.EventClassPrepare, ss.onPrepareEvent)
	ss.trig.OnEvent(jdwp.EventClassUnload, ss.facts.onClassUnload)
	ss.trig.OnEvent(jdwp.EventThreadStart, ss.facts.onThreadLifecycle)
	ss.trig.OnEvent(jdwp.EventThreadDeath, ss.facts.onThreadLifecycle)
	ss.trig.OnEvent(jdwp.EventVMDeath, ss.facts.onVMDeath)
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
	// A DDM chunk (ddmlib, adblib) neither identifies a debugger nor
	// starts the attach's prefetch: a DDM-only client must not make the
	// proxy send the VM JDWP commands of its own, on which ART (9+) loads
	// its JDWP agent and then answers DDM requests it left unanswered
	// before (ddmtap's rule: nothing but DDM for a DDM client).
	if !ss.att.identified && p.Cmd() != jdwp.CmdDDMChunk {
		ss.attachIdentify(rs, p.Cmd(), sizes)
	}
	var d cmdData
	if info, ok := keyable.Fill(&d.key, p.Cmd(), p.Body(), sizes); ok {
		d.info, d.keyed = info, true
		d.subj = d.key.Subject(info, sizes)
		if !ss.peerSpeculation(f.ID) {
			ss.learn.learnCommand(&d.key, info, d.subj, sizes, ss.facts.objType)
			ss.attachRecord(&d.key, info, sizes)
			ss.prepareAsked(&d.key, info, sizes)
		}
		if e := ss.cache.lookup(&d.key); e != nil {
			ss.markUsed(e.rec)
			f.Answer = retag.Retag(ss.ansBuf[:0], e.reply, f.ID)
			ss.ansBuf = f.Answer[:0]
			f.Origin = relay.CacheHit
			ss.sp.countRequest(resultHit)
			return relay.Consume
		}
		if s := ss.disp.pending(&d.key); s != nil {
			if s.sent && ss.facts.valid(s.info, s.subj, s.gen) && s.servable() {
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
		traceMiss(d.key.Cmd(), ss.learn.ep.serial)
		ss.sp.countRequest(resultMiss)
		ss.expandSiblings(sizes, &d.key)
	} else if ss.lookupUnkeyed(f, sizes) {
		return relay.Consume
	} else {
		d.wb = ss.wb.command(p, sizes, &ss.facts) // before the effect: it reads the suspension
		ss.prepareRequest(p, sizes)
		ss.applyEffect(p, sizes, &d)
	}
	d.gen = ss.facts.gen
	ss.trig.Command(p)
	if d.wb != nil && d.wb.written {
		return ss.writeBehind(f, &d)
	}
	f.SetData(slot, ss.data.get(&d)) // back with the reply (relay.Frame.Data)
	return relay.Forward
}

// applyEffect applies the effect of a command that is not answered from
// the cache (keyable's table), when the command is seen, before the VM can
// act on it.
func (ss *session) applyEffect(p jdwp.Packet, sizes jdwp.IDSizes, d *cmdData) {
	info, _ := keyable.Describe(p.Cmd())
	d.eff = info.Effect
	if info.Cacheable() {
		// A cacheable command whose body does not fit its layout (or
		// MaxParams) is treated as a mutation, conservatively.
		d.eff = keyable.EffectMutate
	}
	switch d.eff {
	case keyable.EffectReadOnly:
		d.sig = signatureQueried(p.Cmd(), p.Body(), sizes)
	case keyable.EffectResume:
		ss.endEpisode()
		ss.endPrepare()
		ss.facts.resumeSent()
		ss.facts.frames.resumed(p.Cmd(), p.Body(), sizes)
	case keyable.EffectInvoke:
		d.snap, d.mark = ss.facts.invokeSent()
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

// ---- VM -> debugger -------------------------------------------------------

// FromVM stores replies, absorbs synthetic ones (serving belayed debugger
// commands), and tracks events.
func (ss *session) FromVM(rs *relay.Session, f *relay.Frame) relay.Action {
	switch f.Kind {
	case relay.KindReply:
		return ss.reply(rs, f)
	case relay.KindEvent:
		ss.event(rs, f)
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
		ss.trig.Reply(c, p, d)
	}
	if f.Origin == relay.Synthetic && !(tracked && d.wb != nil) {
		// The relay tells replies to the proxy's own commands (the
		// connection's ID table); those of other hooks (a DDM reply whose
		// request expired) are no sample of the speculator's.
		if tracked && d.spec != nil {
			ss.disp.rtt.sampleSynthetic(f.Latency, f.Time, ss.disp.nInFlight)
			ss.specReply(d.spec, p, sizes)
		} else if tracked && d.lookup {
			ss.lookupReply(d.sig, p, sizes)
		}
		return relay.Consume
	}
	ss.disp.rtt.sample(f.Latency)
	if !tracked {
		return relay.Forward
	}
	if d.wb != nil {
		ss.wbReplied(rs, d.wb, p) // a written-behind one's reply is absorbed below
	}
	ok := p.ErrorCode() == jdwp.ErrorNone
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
	if ok {
		ss.facts.learnReply(c, d, p, sizes)
		if d.keyed {
			ss.facts.learnFromVM(c, d.key.Params(), p, sizes)
			ss.wbRead(c, d.key.Params(), p, sizes, d.info, d.subj, d.gen)
		}
		ss.attachReply(c, d.key.Params(), d.sig, p, sizes)
	}
	if d.keyed && storable(p, d.info) && ss.facts.valid(d.info, d.subj, d.gen) {
		ss.cache.store(&d.key, d.info, d.subj, d.gen, p, nil)
		if ok {
			ss.chain(&d.key, d.gen, p, sizes, 0)
		}
	}
	if f.Origin == relay.Synthetic {
		return relay.Consume
	}
	return relay.Forward
}

// specReply handles the VM's reply to a speculative command.
func (ss *session) specReply(s *spec, p jdwp.Packet, sizes jdwp.IDSizes) {
	ss.disp.replied(s)
	if s.pred != nil && ss.holdPredicted(s, p) || // no waiters: unconfirmed, it served none
		p.ErrorCode() == jdwp.ErrorThreadNotSuspended && ss.notSuspended(s) {
		ss.disp.drain(ss.out)
		return
	}
	for _, id := range s.waiters {
		ss.belayBuf = retag.Retag(ss.belayBuf[:0], p, id)
		ss.out.SendToDebugger(ss.belayBuf, relay.Belay, s.key.Cmd())
	}
	s.waiters = nil
	if p.ErrorCode() == jdwp.ErrorNone {
		ss.facts.learnFromVM(s.key.Cmd(), s.key.Params(), p, sizes)
		ss.wbRead(s.key.Cmd(), s.key.Params(), p, sizes, s.info, s.subj, s.gen)
		ss.attachReply(s.key.Cmd(), s.key.Params(), "", p, sizes)
	}
	if storable(p, s.info) && ss.facts.valid(s.info, s.subj, s.gen) {
		ss.cache.store(&s.key, s.info, s.subj, s.gen, p, s)
		ss.tapStored(s, p)
		if p.ErrorCode() == jdwp.ErrorNone {
			ss.chain(&s.key, s.gen, p, sizes, s.level)
		}
	} else if !s.used && !s.done {
		s.done = true
		traceSpec(s, outcomeWasted, ss.learn.ep.serial)
		ss.sp.countSpec(outcomeWasted, 1)
	}
	ss.disp.drain(ss.out)
	ss.tapIdle()
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

// lock takes mu for a call of the relay's turn whose outbox is out (nil
// for a call that sends nothing).
func (ss *session) lock(out *relay.Outbox) {
	ss.mu.Lock()
	ss.out = out
}

// unlock ends what lock began.
func (ss *session) unlock() {
	ss.out = nil
	ss.mu.Unlock()
}

// markUsed records that a speculation served the debugger.
func (ss *session) markUsed(s *spec) {
	if s == nil || s.used {
		return
	}
	s.used = true
	if !s.done {
		traceSpec(s, outcomeUsed, ss.learn.ep.serial)
		ss.sp.countSpec(outcomeUsed, 1)
	}
}

// sent is the dispatcher's onSend: a speculation goes to the VM.
func (ss *session) sent(s *spec) {
	if s.reask {
		return // the debugger's own command, asked again: no speculation
	}
	ss.learn.ep.sentKind[s.kind]++
	traceSpec(s, outcomeSent, ss.learn.ep.serial)
	ss.sp.countSpec(outcomeSent, 1)
	if time.Since(ss.began) < logOwnFor {
		ss.log.Debug().Stringer("command", s.key.Cmd()).Uint32("id", s.id).Msg("sent to the VM on the proxy's own behalf")
	}
}

// endEpisode ends the current stop, counting its wasted speculation.
func (ss *session) endEpisode() {
	ss.sp.countSpec(outcomeWasted, ss.learn.endEpisode(&ss.disp))
}

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
	ss.endEpisode()
	ss.attachClose(rs.IDSizes())
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

// LowRTT is the round trip under which wasted speculation costs about as
// much VM time as used speculation saves; there, speculation pauses while
// more than maxWaste of it goes unused (probing again every 8th stop).
const (
	LowRTT   = 2 * time.Millisecond
	maxWaste = 0.3
)

// speculating reports whether speculative commands are worth sending now.
func (ss *session) speculating() bool {
	if spec, forced := ss.forcedSpeculation(); forced || ss.closed {
		return spec && !ss.closed
	}
	rtt := ss.disp.rtt.min()
	if floor := ss.sp.cfg.MinRTT; floor > 0 && rtt < floor {
		return false
	}
	if ss.learn.waste > maxWaste && rtt < LowRTT && ss.learn.ep.serial%8 != 0 {
		return false
	}
	return true
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
