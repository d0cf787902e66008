package speculator

import (
	"encoding/binary"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/retag"
	"github.com/jdwpaccel/jdwpaccel/trigger"
	"github.com/rs/zerolog"
)

// effect is what a non-cacheable debugger command does to cached facts.
type effect uint8

const (
	effNone          effect = iota
	effReadOnly             // known not to change any state
	effResume               // resumes threads
	effInvoke               // resumes threads until its reply, then they are suspended again
	effSuspendVM            // VirtualMachine.Suspend
	effSuspendThread        // ThreadReference.Suspend
	effMutate               // changes state (or is not known not to)
)

// cmdData is what the session remembers about a command in flight; it
// rides in the trigger pending map.
type cmdData struct {
	key     keyable.Key
	info    keyable.Info
	scopeID uint64 // class/object/thread the key's validity hangs on; thread of a Suspend
	keyed   bool
	gen     uint64 // invalidation generation when the command was sent
	eff     effect
	spec    *spec     // non-nil for a speculative command
	snap    *suspSnap // suspension before an invoke
	mark    uint64    // suspChanges right after an invoke was sent
	sig     string    // ClassesBySignature's signature
}

// suspSnap is the suspension state saved across an invoke.
type suspSnap struct {
	all     bool
	threads []uint64
}

// entry is one cached reply.
type entry struct {
	reply   []byte // whole reply packet; owned by the cache, never modified
	info    keyable.Info
	scopeID uint64
	gen     uint64
	rec     *spec // the speculation that fetched it, nil for organic replies
}

// entryOverhead approximates the bytes of an entry beyond its reply.
const entryOverhead = 200

// session is the speculator's interceptor for one relay session.
type session struct {
	sp  *Speculator
	log zerolog.Logger

	mu    sync.Mutex // guards every field below
	ids   *retag.Table
	trig  *trigger.Manager[cmdData]
	cache *simplelru.LRU[keyable.Key, *entry]
	bytes int64 // reply bytes + overhead in cache

	// Invalidation generations. gen counts invalidations; a fact fetched by
	// a command sent at generation g is valid while g >= every
	// invalidation generation that covers it.
	gen        uint64
	vmInval    uint64
	stopInval  uint64
	classAll   uint64
	objAll     uint64
	classInval map[uint64]uint64 // class ID -> generation of its last invalidation
	objInval   map[uint64]uint64 // object ID -> generation of its last invalidation

	// Suspension as far as the proxy can tell. Unknown counts as running.
	allSuspended    bool
	suspended       map[uint64]bool // threads suspended on their own
	resumesInFlight int             // resume-like commands awaiting replies
	suspChanges     uint64          // bumps on every change of the above

	// Class signatures, to turn CLASS_UNLOAD (signature only) into IDs.
	sigIDs   map[string][]uint64
	idSig    map[uint64]struct{} // classes whose signature is known
	unsigned map[uint64]struct{} // classes with cached facts, signature unknown

	objType map[uint64]uint64 // object ID -> reference type ID
	facts   classFacts        // fields, superclasses, variable tables: for safeToSend
	idBuf   []uint64          // safeToSend's scratch
	slotBuf []slotTag         // safeToSend's scratch

	inflight  map[keyable.Key]*spec // speculations sent or queued, by key
	queue     []*spec               // speculations waiting for in-flight room
	nInFlight int                   // speculations sent, reply not yet seen

	ep    episode
	learn learner
	rtt   rttEstimator

	ansBuf   []byte // cache-hit answers (debugger goroutine, handed to the relay)
	belayBuf []byte // belayed answers
	sendBuf  []byte // speculative command packets
	pbuf     []byte // speculative command parameters
	closed   bool
	began    time.Time // when the session started (first seconds are logged)
}

func newSession(sp *Speculator, rs *relay.Session) *session {
	ss := &session{
		sp:         sp,
		log:        rs.Logger().With().Str("component", "speculator").Logger(),
		ids:        retag.NewTable(),
		trig:       trigger.New[cmdData](),
		classInval: map[uint64]uint64{},
		objInval:   map[uint64]uint64{},
		suspended:  map[uint64]bool{},
		sigIDs:     map[string][]uint64{},
		idSig:      map[uint64]struct{}{},
		unsigned:   map[uint64]struct{}{},
		objType:    map[uint64]uint64{},
		facts:      newClassFacts(),
		inflight:   map[keyable.Key]*spec{},
		learn:      newLearner(),
		began:      time.Now(),
	}
	cache, err := simplelru.NewLRU[keyable.Key, *entry](sp.cfg.MaxEntries, ss.evicted)
	if err != nil { // only for a non-positive size, which fill prevents
		panic(err)
	}
	ss.cache = cache
	ss.trig.OnEvent(jdwp.EventClassPrepare, ss.onClassPrepare)
	ss.trig.OnEvent(jdwp.EventClassUnload, ss.onClassUnload)
	ss.trig.OnEvent(jdwp.EventThreadStart, ss.onThreadLifecycle)
	ss.trig.OnEvent(jdwp.EventThreadDeath, ss.onThreadLifecycle)
	ss.trig.OnEvent(jdwp.EventVMDeath, ss.onVMDeath)
	return ss
}

// ---- validity -------------------------------------------------------------

func (ss *session) bump(r reason) uint64 {
	ss.gen++
	ss.sp.countInvalidation(r)
	return ss.gen
}

func (ss *session) invalidateStop(r reason) { ss.stopInval = ss.bump(r) }

func (ss *session) clearSuspension() {
	ss.allSuspended = false
	clear(ss.suspended)
	ss.suspChanges++
}

// scopeOK reports whether a stop-state fact of the given scope can be
// stable now.
func (ss *session) scopeOK(info keyable.Info, scopeID uint64) bool {
	if info.Tier != keyable.TierStop {
		return true
	}
	if ss.allSuspended {
		return true
	}
	return info.Scope == keyable.ScopeThread && ss.suspended[scopeID]
}

// valid reports whether a fact fetched at generation gen is still true.
func (ss *session) valid(info keyable.Info, scopeID, gen uint64) bool {
	switch info.Tier {
	case keyable.TierVM:
		return gen >= ss.vmInval
	case keyable.TierClass:
		return gen >= ss.vmInval && gen >= ss.classAll && gen >= ss.classInval[scopeID]
	case keyable.TierObject:
		return gen >= ss.vmInval && gen >= ss.objAll && gen >= ss.objInval[scopeID]
	case keyable.TierStop:
		return gen >= ss.vmInval && gen >= ss.stopInval && ss.scopeOK(info, scopeID)
	}
	return false
}

// storable reports whether a reply may be cached at all.
func storable(p jdwp.Packet, info keyable.Info) bool {
	code := p.ErrorCode()
	return code == jdwp.ErrorNone || info.AbsentOK && code == jdwp.ErrorAbsentInformation
}

// ---- cache ----------------------------------------------------------------

func (ss *session) store(key *keyable.Key, info keyable.Info, scopeID, gen uint64, p jdwp.Packet, rec *spec) {
	e := &entry{reply: append([]byte(nil), p...), info: info, scopeID: scopeID, gen: gen, rec: rec}
	size := int64(len(e.reply) + entryOverhead)
	if old, ok := ss.cache.Peek(*key); ok {
		ss.cache.Remove(*key) // evicted() accounts for it
		_ = old
	}
	ss.cache.Add(*key, e)
	ss.bytes += size
	ss.sp.addCache(size, 1)
	for ss.bytes > ss.sp.cfg.CacheBytes && ss.cache.Len() > 0 {
		ss.cache.RemoveOldest()
	}
	if info.Tier == keyable.TierClass {
		if _, known := ss.idSig[scopeID]; !known {
			ss.unsigned[scopeID] = struct{}{}
		}
	}
}

// evicted is the LRU's callback for every entry leaving the cache.
func (ss *session) evicted(_ keyable.Key, e *entry) {
	size := int64(len(e.reply) + entryOverhead)
	ss.bytes -= size
	ss.sp.addCache(-size, -1)
	if r := e.rec; r != nil && !r.used && !r.done {
		r.done = true
		traceSpec(r, outcomeWasted, 999)
		ss.sp.countSpec(outcomeWasted, 1)
	}
}

// lookup returns a valid cached entry for key, dropping an invalid one.
func (ss *session) lookup(key *keyable.Key) *entry {
	e, ok := ss.cache.Get(*key)
	if !ok {
		return nil
	}
	if ss.valid(e.info, e.scopeID, e.gen) {
		return e
	}
	ss.cache.Remove(*key)
	return nil
}

// ---- debugger -> VM -------------------------------------------------------

// FromDebugger answers cacheable commands from the cache or a speculation
// in flight, applies each command's effect on cached facts before it can
// reach the VM, and remaps IDs in the proxy's range.
func (ss *session) FromDebugger(rs *relay.Session, f *relay.Frame) relay.Action {
	if f.Kind != relay.KindCommand || len(f.Packet) < jdwp.HeaderSize {
		return relay.Forward
	}
	p := f.Packet
	sizes, _ := rs.IDSizes()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var d cmdData
	if info, ok := keyable.Fill(&d.key, p.Cmd(), p.Body(), sizes); ok {
		d.info, d.keyed = info, true
		d.scopeID = d.key.ScopeID(info, sizes)
		ss.learnCommand(&d.key, info, d.scopeID, sizes)
		if e := ss.lookup(&d.key); e != nil {
			ss.markUsed(e.rec)
			f.Answer = retag.Retag(ss.ansBuf[:0], e.reply, f.ID)
			ss.ansBuf = f.Answer[:0]
			f.Origin = relay.CacheHit
			ss.sp.countRequest(resultHit)
			return relay.Consume
		}
		if s := ss.inflight[d.key]; s != nil {
			if s.sent && ss.valid(s.info, s.scopeID, s.gen) {
				s.waiters = append(s.waiters, f.ID)
				ss.markUsed(s)
				f.Origin = relay.Belay
				ss.sp.countRequest(resultBelay)
				return relay.Consume
			}
			if !s.sent { // the debugger asks first: its own command replaces the queued one
				s.cancelled = true
				delete(ss.inflight, d.key)
			}
		}
		traceMiss(d.key.Cmd(), ss.ep.serial)
		ss.sp.countRequest(resultMiss)
		ss.expandSiblings(rs, sizes, &d.key)
	} else {
		ss.applyEffect(p, sizes, &d)
	}
	d.gen = ss.gen
	ss.ids.FromDebugger(p)
	ss.trig.Command(p, d)
	return relay.Forward
}

// readOnly lists the non-cacheable commands known to change no state that
// a cached fact depends on.
var readOnly = map[jdwp.Cmd]bool{
	jdwp.CmdVirtualMachineClassesBySignature:    true,
	jdwp.CmdVirtualMachineAllClasses:            true,
	jdwp.CmdVirtualMachineAllClassesWithGeneric: true,
	jdwp.CmdVirtualMachineInstanceCounts:        true,
	jdwp.CmdVirtualMachineAllModules:            true,
	jdwp.CmdVirtualMachineHoldEvents:            true,
	jdwp.CmdVirtualMachineReleaseEvents:         true,
	jdwp.CmdReferenceTypeNestedTypes:            true,
	jdwp.CmdReferenceTypeStatus:                 true,
	jdwp.CmdReferenceTypeInstances:              true,
	jdwp.CmdObjectReferenceIsCollected:          true,
	jdwp.CmdObjectReferenceReferringObjects:     true,
	jdwp.CmdObjectReferenceDisableCollection:    true,
	jdwp.CmdClassLoaderReferenceVisibleClasses:  true,
	jdwp.CmdEventRequestSet:                     true,
	jdwp.CmdEventRequestClear:                   true,
	jdwp.CmdEventRequestClearAllBreakpoints:     true,
}

// applyEffect invalidates what a non-cacheable command may change, when
// the command is seen (before the VM can act on it).
func (ss *session) applyEffect(p jdwp.Packet, sizes jdwp.IDSizes, d *cmdData) {
	c := p.Cmd()
	switch c {
	case jdwp.CmdVirtualMachineResume, jdwp.CmdThreadReferenceResume:
		d.eff = effResume
		ss.endEpisode()
		ss.resumesInFlight++
		ss.clearSuspension()
		ss.invalidateStop(reasonResume)
	case jdwp.CmdClassTypeInvokeMethod, jdwp.CmdClassTypeNewInstance, jdwp.CmdInterfaceTypeInvokeMethod,
		jdwp.CmdObjectReferenceInvokeMethod:
		d.eff = effInvoke
		d.snap = &suspSnap{all: ss.allSuspended}
		for t, ok := range ss.suspended {
			if ok {
				d.snap.threads = append(d.snap.threads, t)
			}
		}
		ss.resumesInFlight++
		ss.clearSuspension()
		d.mark = ss.suspChanges
		ss.invalidateStop(reasonInvoke)
	case jdwp.CmdVirtualMachineSuspend:
		d.eff = effSuspendVM
		ss.invalidateStop(reasonSuspend)
	case jdwp.CmdThreadReferenceSuspend:
		d.eff = effSuspendThread
		r := jdwp.NewBodyReader(p.Body(), sizes)
		d.scopeID = r.ObjectID()
		ss.invalidateStop(reasonSuspend)
	case jdwp.CmdVirtualMachineRedefineClasses:
		d.eff = effMutate
		g := ss.bump(reasonRedefine)
		ss.stopInval = g
		r := jdwp.NewBodyReader(p.Body(), sizes)
		n := r.Count(sizes.ReferenceTypeID + 4)
		for i := 0; i < n && r.Err() == nil; i++ {
			id := r.ReferenceTypeID()
			r.Bytes(int(r.Int32()))
			if r.Err() == nil {
				ss.classInval[id] = g
				ss.facts.forget(id)
			}
		}
		if r.Err() != nil || len(ss.classInval) > maxInvalMap {
			ss.classAll = g
			clear(ss.classInval)
			ss.facts.reset()
		}
	case jdwp.CmdVirtualMachineDisposeObjects:
		d.eff = effReadOnly
		g := ss.bump(reasonDispose)
		r := jdwp.NewBodyReader(p.Body(), sizes)
		n := r.Count(sizes.ObjectID + 4)
		for i := 0; i < n && r.Err() == nil; i++ {
			id := r.ObjectID()
			r.Int32()
			if r.Err() == nil {
				ss.objInval[id] = g
				delete(ss.objType, id)
			}
		}
		if r.Err() != nil || len(ss.objInval) > maxInvalMap {
			ss.objAll = g
			clear(ss.objInval)
		}
	case jdwp.CmdVirtualMachineClassesBySignature:
		d.eff = effReadOnly
		r := jdwp.NewBodyReader(p.Body(), sizes)
		d.sig = r.String()
	default:
		if readOnly[c] {
			d.eff = effReadOnly
			return
		}
		d.eff = effMutate
		if c.Known() {
			ss.invalidateStop(reasonMutation)
		} else {
			ss.invalidateStop(reasonUnknownCommand)
		}
	}
}

// maxInvalMap bounds the per-ID invalidation maps; beyond it the whole tier
// is invalidated instead.
const maxInvalMap = 1 << 16

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
	ss.mu.Lock()
	defer ss.mu.Unlock()
	c, d, tracked := ss.trig.Reply(p) // by the wire ID, before un-remapping
	owner := ss.ids.Reply(p)
	if owner == retag.Synthetic {
		f.Origin = relay.Synthetic
		ss.rtt.sampleSynthetic(f.Latency, f.Time, ss.nInFlight)
		if tracked && d.spec != nil {
			ss.specReply(rs, d.spec, p, sizes)
		}
		return relay.Consume
	}
	ss.rtt.sample(f.Latency)
	if !tracked {
		return relay.Forward
	}
	ok := p.ErrorCode() == jdwp.ErrorNone
	switch d.eff {
	case effResume:
		ss.resumesInFlight = max(0, ss.resumesInFlight-1)
	case effInvoke:
		ss.resumesInFlight = max(0, ss.resumesInFlight-1)
		if ss.resumesInFlight == 0 && ss.suspChanges == d.mark && d.snap != nil {
			ss.allSuspended = d.snap.all
			for _, t := range d.snap.threads {
				ss.suspended[t] = true
			}
			ss.suspChanges++
			ss.invalidateStop(reasonInvoke)
		}
	case effSuspendVM:
		if ok && ss.resumesInFlight == 0 {
			ss.allSuspended = true
			ss.suspChanges++
			ss.invalidateStop(reasonSuspend)
		}
	case effSuspendThread:
		if ok && ss.resumesInFlight == 0 {
			ss.suspended[d.scopeID] = true
			ss.suspChanges++
			ss.invalidateStop(reasonSuspend)
		}
	}
	if ok {
		ss.trackSignatures(c, &d, p, sizes)
		if d.keyed {
			ss.facts.learn(c, d.key.Params(), p, sizes)
		}
	}
	if d.keyed && storable(p, d.info) && ss.valid(d.info, d.scopeID, d.gen) {
		ss.store(&d.key, d.info, d.scopeID, d.gen, p, nil)
		if ok {
			ss.chain(rs, &d.key, d.gen, p, sizes, 0)
		}
	}
	return relay.Forward
}

// specReply handles the VM's reply to a speculative command.
func (ss *session) specReply(rs *relay.Session, s *spec, p jdwp.Packet, sizes jdwp.IDSizes) {
	if ss.inflight[s.key] == s {
		delete(ss.inflight, s.key)
	}
	ss.nInFlight--
	for _, id := range s.waiters {
		ss.belayBuf = retag.Retag(ss.belayBuf[:0], p, id)
		if err := rs.SendToDebugger(ss.belayBuf, relay.Belay, s.key.Cmd()); err != nil {
			ss.log.Debug().Err(err).Msg("cannot answer a belayed command")
		}
	}
	s.waiters = nil
	if p.ErrorCode() == jdwp.ErrorNone {
		ss.facts.learn(s.key.Cmd(), s.key.Params(), p, sizes)
	}
	if storable(p, s.info) && ss.valid(s.info, s.scopeID, s.gen) {
		ss.store(&s.key, s.info, s.scopeID, s.gen, p, s)
		if p.ErrorCode() == jdwp.ErrorNone {
			ss.chain(rs, &s.key, s.gen, p, sizes, s.level)
		}
	} else if !s.used && !s.done {
		s.done = true
		traceSpec(s, outcomeWasted, ss.ep.serial)
		ss.sp.countSpec(outcomeWasted, 1)
	}
	ss.drain(rs)
}

// markUsed records that a speculation served the debugger.
func (ss *session) markUsed(s *spec) {
	if s == nil || s.used {
		return
	}
	s.used = true
	if !s.done {
		traceSpec(s, outcomeUsed, ss.ep.serial)
		ss.sp.countSpec(outcomeUsed, 1)
	}
}

// ---- events ---------------------------------------------------------------

// locatable reports whether an event kind stops a thread at a location the
// debugger will inspect.
func locatable(k jdwp.EventKind) bool {
	switch k {
	case jdwp.EventSingleStep, jdwp.EventBreakpoint, jdwp.EventMethodEntry, jdwp.EventMethodExit,
		jdwp.EventMethodExitWithReturnValue, jdwp.EventException, jdwp.EventFieldAccess,
		jdwp.EventFieldModification, jdwp.EventMonitorContendedEnter, jdwp.EventMonitorContendedEntered,
		jdwp.EventMonitorWait, jdwp.EventMonitorWaited:
		return true
	}
	return false
}

func (ss *session) event(rs *relay.Session, f *relay.Frame) {
	sizes, known := rs.IDSizes()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if !known {
		// Events before IDSizes can only be VM_START; without sizes nothing
		// is cached yet, so there is nothing to invalidate.
		return
	}
	comp, err := ss.trig.Events(f.Packet.Body(), sizes)
	if err != nil {
		// A composite we cannot read may hide anything: forget it all.
		ss.endEpisode()
		ss.clearSuspension()
		g := ss.bump(reasonUnknownCommand)
		ss.stopInval, ss.classAll, ss.objAll = g, g, g
		return
	}
	var thread uint64
	stop := false
	for i := range comp.Events {
		e := &comp.Events[i]
		if thread == 0 && e.Thread != 0 {
			thread = e.Thread
		}
		if locatable(e.Kind) {
			stop = true
			thread = e.Thread
			break
		}
	}
	if comp.SuspendPolicy == jdwp.SuspendNone {
		// An event from a thread shows that thread running.
		for i := range comp.Events {
			if t := comp.Events[i].Thread; t != 0 && (ss.allSuspended || ss.suspended[t]) {
				ss.endEpisode()
				ss.clearSuspension()
				ss.invalidateStop(reasonRunning)
				break
			}
		}
		return
	}
	ss.endEpisode()
	ss.invalidateStop(reasonStop)
	if ss.resumesInFlight > 0 {
		// A resume may be overtaking this event in the VM: state unknown.
		ss.clearSuspension()
		return
	}
	if comp.SuspendPolicy == jdwp.SuspendAll {
		ss.allSuspended = true
	} else if thread != 0 {
		ss.suspended[thread] = true
	}
	ss.suspChanges++
	if stop && thread != 0 {
		ss.beginEpisode(thread)
		if ss.speculating() {
			ss.speculateStop(rs, sizes)
		}
	}
}

func (ss *session) onClassPrepare(_ jdwp.SuspendPolicy, e *jdwp.Event) {
	ss.addSignature(e.Signature, e.TypeID)
}

func (ss *session) onClassUnload(_ jdwp.SuspendPolicy, e *jdwp.Event) {
	g := ss.bump(reasonClassUnload)
	if ids, ok := ss.sigIDs[string(e.Signature)]; ok {
		for _, id := range ids {
			ss.classInval[id] = g
			ss.facts.forget(id)
			delete(ss.idSig, id)
		}
		delete(ss.sigIDs, string(e.Signature))
	}
	// Classes with cached facts whose signature was never seen might be
	// the one unloaded.
	for id := range ss.unsigned {
		ss.classInval[id] = g
		ss.facts.forget(id)
	}
	clear(ss.unsigned)
	if len(ss.classInval) > maxInvalMap {
		ss.classAll = g
		clear(ss.classInval)
		ss.facts.reset()
	}
}

func (ss *session) onThreadLifecycle(jdwp.SuspendPolicy, *jdwp.Event) {
	ss.invalidateStop(reasonThreadLifecycle)
}

func (ss *session) onVMDeath(jdwp.SuspendPolicy, *jdwp.Event) {
	g := ss.bump(reasonVMDeath)
	ss.vmInval, ss.stopInval, ss.classAll, ss.objAll = g, g, g, g
	ss.facts.reset()
}

// maxClasses bounds the signature maps.
const maxClasses = 1 << 18

func (ss *session) addSignature(sig []byte, id uint64) {
	if id == 0 {
		return
	}
	if _, ok := ss.idSig[id]; ok {
		return
	}
	if len(ss.idSig) >= maxClasses {
		// Forget signatures; classes with cached facts become "unsigned"
		// only as facts are stored again, so invalidate the class tier.
		clear(ss.idSig)
		clear(ss.sigIDs)
		clear(ss.unsigned)
		ss.classAll = ss.bump(reasonClassUnload)
	}
	ss.idSig[id] = struct{}{}
	s := string(sig)
	ss.sigIDs[s] = append(ss.sigIDs[s], id)
	delete(ss.unsigned, id)
}

// trackSignatures learns class signatures from replies.
func (ss *session) trackSignatures(c jdwp.Cmd, d *cmdData, p jdwp.Packet, sizes jdwp.IDSizes) {
	switch c {
	case jdwp.CmdReferenceTypeSignature, jdwp.CmdReferenceTypeSignatureWithGeneric:
		if d.keyed {
			r := jdwp.NewBodyReader(p.Body(), sizes)
			sig := r.StringBytes()
			if r.Err() == nil {
				ss.addSignature(sig, d.scopeID)
			}
		}
	case jdwp.CmdVirtualMachineAllClasses, jdwp.CmdVirtualMachineAllClassesWithGeneric:
		r := jdwp.NewBodyReader(p.Body(), sizes)
		n := r.Count(1 + sizes.ReferenceTypeID + 4 + 4)
		for i := 0; i < n && r.Err() == nil; i++ {
			r.Uint8()
			id := r.ReferenceTypeID()
			sig := r.StringBytes()
			if c == jdwp.CmdVirtualMachineAllClassesWithGeneric {
				r.StringBytes()
			}
			r.Int32()
			if r.Err() == nil {
				ss.addSignature(sig, id)
			}
		}
	case jdwp.CmdVirtualMachineClassesBySignature:
		r := jdwp.NewBodyReader(p.Body(), sizes)
		n := r.Count(1 + sizes.ReferenceTypeID + 4)
		for i := 0; i < n && r.Err() == nil; i++ {
			r.Uint8()
			id := r.ReferenceTypeID()
			r.Int32()
			if r.Err() == nil {
				ss.addSignature([]byte(d.sig), id)
			}
		}
	case jdwp.CmdObjectReferenceReferenceType:
		if d.keyed {
			r := jdwp.NewBodyReader(p.Body(), sizes)
			r.Uint8()
			t := r.ReferenceTypeID()
			if r.Err() == nil {
				ss.setObjType(d.scopeID, t)
			}
		}
	}
}

func (ss *session) setObjType(obj, t uint64) {
	if len(ss.objType) >= maxInvalMap {
		clear(ss.objType)
	}
	ss.objType[obj] = t
}

// Close releases the session's cache.
func (ss *session) Close(*relay.Session) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.closed {
		return
	}
	ss.closed = true
	ss.endEpisode()
	ss.cache.Purge() // evicted() returns the bytes and counts unused speculation
	ss.sp.lastRTT.Store(int64(ss.rtt.min()))
	ss.sp.lastService.Store(int64(ss.rtt.service))
}

// specTracer, when set (only by tests, before any session starts), is
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

// ---- round-trip estimation ------------------------------------------------

// rttEstimator tracks the link round trip (minimum of recent reply
// latencies, which include VM service and queueing) and the VM's service
// time (spacing of back-to-back synthetic replies).
type rttEstimator struct {
	ring      [32]time.Duration
	n         int
	lastSynth time.Time
	service   time.Duration // EWMA
}

func (r *rttEstimator) sample(d time.Duration) {
	if d <= 0 {
		return
	}
	r.ring[r.n%len(r.ring)] = d
	r.n++
}

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
	if r.n < 3 {
		return 0
	}
	n := min(r.n, len(r.ring))
	m := r.ring[0]
	for _, d := range r.ring[1:n] {
		m = min(m, d)
	}
	return m
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
	if ss.closed {
		return false
	}
	rtt := ss.rtt.min()
	if floor := ss.sp.cfg.MinRTT; floor > 0 && rtt < floor {
		return false
	}
	if ss.learn.waste > maxWaste && rtt < LowRTT && ss.ep.serial%8 != 0 {
		return false
	}
	return true
}

// putID writes a size-byte big-endian ID at b[0:size].
func putID(b []byte, v uint64, size int) {
	for i := size - 1; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
}

func be32(b []byte) int32 { return int32(binary.BigEndian.Uint32(b)) }
