package speculator

import (
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
	"github.com/jdwpaccel/jdwpaccel/trigger"
)

// generation counts invalidations in one session. Every command records
// the generation current when it is sent; a fact it fetched is valid while
// that generation is at least every invalidation generation covering the
// fact.
type generation uint64

// facts is what the session knows of the VM's state, and so of which
// cached replies are still true. Guarded by session.mu.
//
// It owns the invalidation generations (global per tier, per class, per
// object), the suspension state, the class signatures (to turn a
// CLASS_UNLOAD, which names a signature, into class IDs), the objects'
// types and the class facts that safeToSend checks speculative IDs
// against (safety.go).
//
// Invariants: gen only grows, and every other generation is at most gen;
// suspension is believed only when no resume-like command is in flight
// (unknown counts as running); a class with cached facts is in idSig or
// in unsigned, so an unload of an unknown signature still reaches it; the
// per-ID maps are bounded, and past a bound the whole tier is invalidated
// instead.
type facts struct {
	sp *Speculator // counts invalidations

	gen        generation
	vmInval    generation
	stopInval  generation
	classAll   generation
	objAll     generation
	classInval map[jdwp.ClassID]generation  // class -> generation of its last invalidation
	objInval   map[jdwp.ObjectID]generation // object -> generation of its last invalidation

	// Suspension as far as the proxy can tell. Unknown counts as running.
	allSuspended    bool
	suspended       map[jdwp.ThreadID]bool // threads suspended on their own
	resumesInFlight int                    // resume-like commands awaiting replies
	cleanResume     bool                   // the one in flight is a resume sent while all was suspended
	overtaken       int                    // resumes settled by an event before their replies came
	suspChanges     uint64                 // bumps on every change of the above
	suspLost        uint64                 // bumps whenever threads may have run since (clearSuspension)

	// Positions on the wire to the VM, for replies of state running
	// threads may change (moment.go).
	pos     uint64 // of the last command sent
	floor   uint64 // least position a reply of running state served now may have
	evFloor uint64 // the floor the last VM event set
	offered uint64 // replies a far end offered since that event
	// offMoment is the far end's number of the moment of the last reply
	// offered (Mark.InMoment): the next of that moment takes its position.
	offMoment uint16
	// sentRunning: a read of running state was sent since that event
	sentRunning bool
	farEnd      bool // a far end: pushes such replies, never serves them
	// nearEnd: a near end, whose VM side is a far end: its VirtualMachine
	// commands are its debugger's to the far end, so it opens no moment
	// (the far end reads its own).
	nearEnd bool
	inOrder bool // the VM's agent carries out commands in order (its Version reply): the moment applies

	// Class signatures, to turn CLASS_UNLOAD (signature only) into IDs.
	sigIDs   map[string][]jdwp.ClassID
	idSig    map[jdwp.ClassID]string   // classes whose signature is known, with it
	ownNamed map[jdwp.ClassID]struct{} // of those, the ones only the proxy's own lookups named (the debugger never saw their signature)
	unsigned map[jdwp.ClassID]struct{} // classes with cached facts, signature unknown

	objType  map[jdwp.ObjectID]jdwp.ClassID // object -> its reference type
	classes  classFacts                     // fields, superclasses, variable tables: for safeToSend
	seen     handedOut                      // class and method IDs handed out, by name (attach.go)
	frames   framePredictor                 // the threads' frame generations (framepredict.go)
	fieldBuf []jdwp.FieldID                 // safeToSend's scratch
	slotBuf  []slotTag                      // safeToSend's scratch
}

func newFacts(sp *Speculator) facts {
	return facts{
		sp:         sp,
		classInval: map[jdwp.ClassID]generation{},
		objInval:   map[jdwp.ObjectID]generation{},
		suspended:  map[jdwp.ThreadID]bool{},
		sigIDs:     map[string][]jdwp.ClassID{},
		idSig:      map[jdwp.ClassID]string{},
		ownNamed:   map[jdwp.ClassID]struct{}{},
		unsigned:   map[jdwp.ClassID]struct{}{},
		objType:    map[jdwp.ObjectID]jdwp.ClassID{},
		classes:    newClassFacts(),
	}
}

// Bounds: the per-ID invalidation maps (beyond it the whole tier is
// invalidated instead) and the signature maps.
const (
	maxInvalMap = 1 << 16
	maxClasses  = 1 << 18
)

func (f *facts) bump(r reason) generation {
	f.gen++
	f.sp.countInvalidation(r)
	return f.gen
}

func (f *facts) invalidateStop(r reason) { f.stopInval = f.bump(r) }

// invalidateAll forgets every stop, class and object fact (a composite
// that cannot be read may hide anything).
func (f *facts) invalidateAll(r reason) {
	f.clearSuspension()
	g := f.bump(r)
	f.stopInval, f.classAll, f.objAll = g, g, g
}

func (f *facts) clearSuspension() {
	f.allSuspended = false
	clear(f.suspended)
	f.suspChanges++
	f.suspLost++
}

// stillAll reports whether the whole VM is believed suspended with no
// resume-like command in flight.
func (f *facts) stillAll() bool { return f.allSuspended && f.resumesInFlight == 0 }

// suspendedNow reports whether t is believed suspended.
func (f *facts) suspendedNow(t jdwp.ThreadID) bool { return f.allSuspended || f.suspended[t] }

// scopeOK reports whether a stop-state fact about subj can be stable now.
func (f *facts) scopeOK(info keyable.Info, subj keyable.Subject) bool {
	if info.Tier != keyable.TierStop {
		return true
	}
	if f.allSuspended {
		return true
	}
	if info.Scope == keyable.ScopeVM {
		return f.partialStop() // the moment (moment.go)
	}
	return info.Scope == keyable.ScopeThread && f.suspended[subj.Thread]
}

// valid reports whether a fact about subj fetched at generation gen is
// still true.
func (f *facts) valid(info keyable.Info, subj keyable.Subject, gen generation) bool {
	switch info.Tier {
	case keyable.TierVM:
		return gen >= f.vmInval
	case keyable.TierClass:
		return gen >= f.vmInval && gen >= f.classAll && gen >= f.classInval[subj.Class]
	case keyable.TierObject:
		return gen >= f.vmInval && gen >= f.objAll && gen >= f.objInval[subj.Object]
	case keyable.TierStop:
		return gen >= f.vmInval && gen >= f.stopInval && f.scopeOK(info, subj)
	}
	return false
}

// classCached notes that a fact about class c is cached: if its signature
// is unknown, an unload of any class must drop it.
func (f *facts) classCached(c jdwp.ClassID) {
	if _, known := f.idSig[c]; !known {
		f.unsigned[c] = struct{}{}
	}
}

// ---- effects of commands (keyable.Effect) --------------------------------

// resumeSent: the debugger resumes the VM or a thread.
func (f *facts) resumeSent() {
	f.cleanResume = f.resumesInFlight == 0 && f.allSuspended
	f.resumesInFlight++
	f.clearSuspension()
	f.invalidateStop(reasonResume)
}

// overtakenBy reports whether a suspending event that arrives while
// resume-like commands are in flight shows the state after them, and if so
// settles them. HotSpot often sends the next stop's event before the
// resume's reply. That event shows the state after the resume when the
// only command in flight is a resume sent while the whole VM was
// suspended: no thread could run, so none could report an event, until
// the VM had carried the resume out (a thread inside an event callback
// when everything was suspended adds its own suspension on top of the
// counts the resume lowered, so its event's suspension holds as well).
// Anything else in flight (an invoke, a second resume) leaves the state
// unknown.
func (f *facts) overtakenBy() bool {
	if f.resumesInFlight != 1 || !f.cleanResume {
		return false
	}
	f.resumesInFlight, f.cleanResume = 0, false
	f.overtaken++
	return true
}

// invokeSent: the debugger invokes a method. It returns the suspension to
// restore when the invoke's reply comes, and the mark it holds only if
// nothing else changed the suspension in between.
func (f *facts) invokeSent() (*suspSnap, uint64) {
	snap := &suspSnap{all: f.allSuspended}
	for t, ok := range f.suspended {
		if ok {
			snap.threads = append(snap.threads, t)
		}
	}
	f.cleanResume = false
	f.resumesInFlight++
	f.clearSuspension()
	f.invalidateStop(reasonInvoke)
	return snap, f.suspChanges
}

// resumeReplied: a resume's reply came. The VM answers commands in order,
// so a reply after overtakenBy settled its resume is that resume's.
func (f *facts) resumeReplied() {
	if f.overtaken > 0 {
		f.overtaken--
		return
	}
	f.resumesInFlight = max(0, f.resumesInFlight-1)
}

// invokeReplied: the invoke's reply came; the VM suspended the threads
// again as they were.
func (f *facts) invokeReplied(snap *suspSnap, mark uint64) {
	f.resumesInFlight = max(0, f.resumesInFlight-1)
	if f.resumesInFlight == 0 && f.suspChanges == mark && snap != nil {
		f.allSuspended = snap.all
		for _, t := range snap.threads {
			f.suspended[t] = true
		}
		f.suspChanges++
		f.invalidateStop(reasonInvoke)
	}
}

// suspendReplied: the reply to a successful suspend of the VM (all) or
// of thread t.
func (f *facts) suspendReplied(all bool, t jdwp.ThreadID) {
	if f.resumesInFlight != 0 {
		return
	}
	if all {
		f.allSuspended = true
	} else {
		f.suspended[t] = true
	}
	f.suspChanges++
	f.invalidateStop(reasonSuspend)
}

// redefine: the classes a RedefineClasses body lists change.
func (f *facts) redefine(body []byte, sizes jdwp.IDSizes) {
	g := f.bump(reasonRedefine)
	f.stopInval = g
	r := jdwp.NewBodyReader(body, sizes)
	n := r.Count(sizes.ReferenceTypeID + 4)
	for i := 0; i < n && r.Err() == nil; i++ {
		id := r.Class()
		r.Bytes(int(r.Int32()))
		if r.Err() == nil {
			f.classInval[id] = g
			f.classes.forget(id)
			f.seen.forget(id)
		}
	}
	if r.Err() != nil || len(f.classInval) > maxInvalMap {
		f.classAll = g
		clear(f.classInval)
		f.classes.reset()
	}
}

// dispose: the object IDs a DisposeObjects body lists may be reused.
func (f *facts) dispose(body []byte, sizes jdwp.IDSizes) {
	g := f.bump(reasonDispose)
	r := jdwp.NewBodyReader(body, sizes)
	n := r.Count(sizes.ObjectID + 4)
	for i := 0; i < n && r.Err() == nil; i++ {
		id := r.Object()
		r.Int32()
		if r.Err() == nil {
			f.objInval[id] = g
			delete(f.objType, id)
		}
	}
	if r.Err() != nil || len(f.objInval) > maxInvalMap {
		f.objAll = g
		clear(f.objInval)
	}
}

// ---- events ----------------------------------------------------------------

// subscribe subscribes facts to the events that change them.
func (f *facts) subscribe(t *trigger.Manager) {
	t.OnEvent(jdwp.EventClassPrepare, f.onClassPrepare)
	t.OnEvent(jdwp.EventClassUnload, f.onClassUnload)
	t.OnEvent(jdwp.EventThreadStart, f.onThreadLifecycle)
	t.OnEvent(jdwp.EventThreadDeath, f.onThreadLifecycle)
	t.OnEvent(jdwp.EventVMDeath, f.onVMDeath)
}

func (f *facts) onClassPrepare(_ jdwp.SuspendPolicy, e *jdwp.Event) {
	f.addSignature(e.Signature, e.ClassID())
}

func (f *facts) onClassUnload(_ jdwp.SuspendPolicy, e *jdwp.Event) {
	g := f.bump(reasonClassUnload)
	if ids, ok := f.sigIDs[string(e.Signature)]; ok {
		for _, id := range ids {
			f.classInval[id] = g
			f.classes.forget(id)
			f.seen.forget(id)
			delete(f.idSig, id)
			delete(f.ownNamed, id)
		}
		delete(f.sigIDs, string(e.Signature))
	}
	// Classes with cached facts whose signature was never seen might be
	// the one unloaded.
	for id := range f.unsigned {
		f.classInval[id] = g
		f.classes.forget(id)
	}
	clear(f.unsigned)
	if len(f.classInval) > maxInvalMap {
		f.classAll = g
		clear(f.classInval)
		f.classes.reset()
	}
}

func (f *facts) onThreadLifecycle(jdwp.SuspendPolicy, *jdwp.Event) {
	f.invalidateStop(reasonThreadLifecycle)
}

func (f *facts) onVMDeath(jdwp.SuspendPolicy, *jdwp.Event) {
	g := f.bump(reasonVMDeath)
	f.vmInval, f.stopInval, f.classAll, f.objAll = g, g, g, g
	f.classes.reset()
}

// ---- facts from replies ----------------------------------------------------

func (f *facts) addSignature(sig []byte, id jdwp.ClassID) {
	if id == 0 {
		return
	}
	delete(f.ownNamed, id) // named where the debugger sees it
	if _, ok := f.idSig[id]; ok {
		return
	}
	if len(f.idSig) >= maxClasses {
		// Forget signatures; classes with cached facts become "unsigned"
		// only as facts are stored again, so invalidate the class tier.
		clear(f.idSig)
		clear(f.ownNamed)
		clear(f.sigIDs)
		clear(f.unsigned)
		f.classAll = f.bump(reasonClassUnload)
	}
	s := string(sig)
	f.idSig[id] = s
	f.sigIDs[s] = append(f.sigIDs[s], id)
	delete(f.unsigned, id)
}

// addOwnSignature notes the signature of class id as one of the proxy's
// own lookups named it (the attach's class snapshot or lookups by name),
// which the debugger did not see: it may still ask for it.
func (f *facts) addOwnSignature(sig []byte, id jdwp.ClassID) {
	if _, known := f.idSig[id]; known || id == 0 {
		return
	}
	f.addSignature(sig, id)
	if _, ok := f.idSig[id]; ok {
		f.ownNamed[id] = struct{}{}
	}
}

// addNamed notes the signature of class id from a lookup's reply, one a
// proxy in front sent on its own if peer (the debugger does not see it).
func (f *facts) addNamed(sig []byte, id jdwp.ClassID, peer bool) {
	if peer {
		f.addOwnSignature(sig, id)
	} else {
		f.addSignature(sig, id)
	}
}

// signatureQueried is the signature a ClassesBySignature command asks
// for, kept until its reply names the classes ("" for other commands).
func signatureQueried(c jdwp.Cmd, body []byte, sizes jdwp.IDSizes) string {
	if c != jdwp.CmdVirtualMachineClassesBySignature {
		return ""
	}
	return jdwp.NewBodyReader(body, sizes).String()
}

// learnReply records the signatures and object types in a successful
// reply to the debugger's command c (d as recorded when it was sent).
func (f *facts) learnReply(c jdwp.Cmd, d *cmdData, p jdwp.Packet, sizes jdwp.IDSizes) {
	r := jdwp.NewBodyReader(p.Body(), sizes)
	switch c {
	case jdwp.CmdReferenceTypeSignature, jdwp.CmdReferenceTypeSignatureWithGeneric:
		if d.keyed {
			sig := r.StringBytes()
			if r.Err() == nil {
				f.addSignature(sig, d.subj.Class)
			}
		}
	case jdwp.CmdVirtualMachineAllClasses, jdwp.CmdVirtualMachineAllClassesWithGeneric:
		n := r.Count(1 + sizes.ReferenceTypeID + 4 + 4)
		for i := 0; i < n && r.Err() == nil; i++ {
			r.Uint8()
			id := r.Class()
			sig := r.StringBytes()
			if c == jdwp.CmdVirtualMachineAllClassesWithGeneric {
				r.StringBytes()
			}
			r.Int32()
			if r.Err() == nil {
				f.addNamed(sig, id, d.peer)
			}
		}
	case jdwp.CmdVirtualMachineClassesBySignature:
		lookupClasses(r, func(id jdwp.ClassID) { f.addNamed([]byte(d.sig), id, d.peer) })
	case jdwp.CmdObjectReferenceReferenceType:
		if d.keyed {
			r.Uint8()
			t := r.Class()
			if r.Err() == nil {
				f.setObjType(d.subj.Object, t)
			}
		}
	}
}

func (f *facts) setObjType(obj jdwp.ObjectID, t jdwp.ClassID) {
	if len(f.objType) >= maxInvalMap {
		clear(f.objType)
	}
	f.objType[obj] = t
}
