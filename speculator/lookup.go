package speculator

import (
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/retag"
)

// A ClassesBySignature reply is not cacheable in general (a class of that
// signature may be loaded at any time), but while the whole VM is
// suspended no class is loaded or unloaded: at an attach to a VM started
// with suspend=y, the attach's own lookups (attachLookup) answer the
// debugger's ClassesBySignature for the same signatures, as a stop-state
// fact of the whole VM. Any resume or other invalidation of stop state
// ends that, and so does any debugger command that is neither a cacheable
// read nor an event request (InstanceCounts, Instances and
// ReferringObjects may run a garbage collection, which may unload
// classes).

// lookup is the attach's own ClassesBySignature of one signature.
type lookup struct {
	gen     generation // when it was sent
	reply   []byte     // the VM's reply, nil until it came
	waiters []uint32   // debugger commands belayed on it
}

// lookupFacts is the stop-state fact the lookups are.
var lookupFacts = keyable.Info{Effect: keyable.EffectReadOnly, Tier: keyable.TierStop, Scope: keyable.ScopeVM}

// lookupSent records a lookup of sig sent now.
func (a *attach) lookupSent(sig string) {
	if a.lookups == nil {
		a.lookups = map[string]*lookup{}
	}
	a.lookups[sig] = &lookup{gen: a.facts.gen}
}

// lookupReplied answers the debugger commands belayed on the lookup of
// sig, and keeps the reply while it may serve.
func (a *attach) lookupReplied(sig string, p jdwp.Packet) {
	l := a.lookups[sig]
	if l == nil {
		return
	}
	for _, id := range l.waiters {
		a.belayBuf = retag.Retag(a.belayBuf[:0], p, id)
		a.out.SendToDebugger(a.belayBuf, relay.Belay, jdwp.CmdVirtualMachineClassesBySignature)
	}
	l.waiters = nil
	if p.ErrorCode() == jdwp.ErrorNone && a.lookupValid(l) {
		l.reply = append([]byte(nil), p...)
	} else {
		delete(a.lookups, sig)
	}
}

func (a *attach) lookupValid(l *lookup) bool {
	return !a.lookupsOff && a.facts.valid(lookupFacts, keyable.Subject{}, l.gen)
}

// lookupServe answers the debugger's ClassesBySignature f from a valid
// lookup of the same signature (a hit, or a belay while it is in flight),
// and reports whether it did.
func (a *attach) lookupServe(f *relay.Frame, sizes jdwp.IDSizes) bool {
	r := jdwp.NewBodyReader(f.Packet.Body(), sizes)
	sig := r.String()
	if r.Err() == nil && a.recording() && a.rec.size() < maxAttachCmds {
		a.rec.addSig(sig)
	}
	l := a.lookups[sig]
	if l == nil || r.Err() != nil || r.Remaining() != 0 {
		return false
	}
	if !a.lookupValid(l) {
		delete(a.lookups, sig)
		return false
	}
	if l.reply == nil {
		l.waiters = append(l.waiters, f.ID)
		f.Origin = relay.Belay
		a.sp.countRequest(resultBelay)
		return true
	}
	f.Answer = retag.Retag(a.ansBuf[:0], l.reply, f.ID)
	a.ansBuf = f.Answer[:0]
	a.lookupShown(sig, jdwp.Packet(l.reply), sizes)
	f.Origin = relay.CacheHit
	a.sp.countRequest(resultHit)
	return true
}

// lookupShown notes the classes of a lookup's reply p, of signature sig,
// as named where the debugger sees them: it was answered with it. (A
// lookup that answers a belayed debugger command is taken as the proxy's
// own: the debugger may be asked a signature it has, a read wasted.)
func (a *attach) lookupShown(sig string, p jdwp.Packet, sizes jdwp.IDSizes) {
	lookupClasses(jdwp.NewBodyReader(p.Body(), sizes), func(id jdwp.ClassID) {
		a.facts.addSignature([]byte(sig), id)
	})
}

// lookupClasses calls fn with each class of a ClassesBySignature reply
// read by r, in order; it stops at the first malformed entry.
func lookupClasses(r *jdwp.BodyReader, fn func(id jdwp.ClassID)) {
	n := r.Count(1 + r.Sizes().ReferenceTypeID + 4)
	for i := 0; i < n && r.Err() == nil; i++ {
		r.Uint8()
		id := r.Class()
		r.Int32()
		if r.Err() == nil {
			fn(id)
		}
	}
}

// lookupCommand sees a debugger command that is not cacheable: anything
// but an event request or a lookup ends serving lookups.
func (a *attach) lookupCommand(c jdwp.Cmd) {
	switch c {
	case jdwp.CmdEventRequestSet, jdwp.CmdEventRequestClear, jdwp.CmdVirtualMachineClassesBySignature:
	default:
		a.lookupsOff = true
	}
}

// command sees a debugger command that is not cacheable, answering
// it from a lookup if it can; true if it did (the command is consumed).
func (a *attach) command(x *command) bool {
	c := x.f.Packet.Cmd()
	if x.set.is {
		a.sets.add(x.set.kind, a.learn.ep.serial == 0) // before the first stop at a location: its setup
	}
	switch c {
	case jdwp.CmdVirtualMachineClassesBySignature, jdwp.CmdVirtualMachineAllClasses, jdwp.CmdVirtualMachineAllClassesWithGeneric:
		if a.recording() {
			a.snap.lookups++
		}
	}
	if c == jdwp.CmdVirtualMachineClassesBySignature && a.lookupServe(x.f, x.sizes) {
		return true
	}
	a.snapCommand(c)
	if a.snapServe(x.f, x.sizes) {
		return true
	}
	a.lookupCommand(c)
	return false
}
