package speculator

import (
	"bytes"
	"slices"
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/trigger"
)

// The attach: from the debugger's attach to the end of its first stop at
// a location, a debugger asks the same things every time (ID sizes,
// version, capabilities; then, for each breakpoint class, its methods and
// their line tables as the class is prepared; at the stop, the tables and
// members of the classes on the stack and of the values shown). The
// session
//
//   - prefetches, on the debugger's first command, or before it on the
//     VM_START event of a VM started with suspend=y (it waits for this
//     debugger, suspended; nothing is sent earlier to any other VM, so an
//     Android VM that takes any command for a debugger arriving never sees
//     one before the debugger's own), IDSizes first (before
//     anything whose reply holds IDs), Version and CapabilitiesNew; and,
//     once the ID sizes and the Version are known, the VM-wide commands
//     the debugger asked at its last attach (or, never seen, AllThreads and
//     TopLevelThreadGroups) — the stop-state ones only while the VM is
//     suspended (a VM started with suspend=y says so in VM_START) — and a
//     ClassesBySignature for every class the last attach asked about;
//   - records this debugger's attach sequence: VM-wide commands without
//     parameters, and class and method commands named by the class's
//     signature and the method's name and signature (never by ID), and the
//     slots it asks of frames, by method name and code index;
//   - replays the sequence learned at an earlier attach (profile, kept by
//     the Speculator across sessions, see persist.go): as soon as this
//     connection hands out the ID of a class whose signature the sequence
//     names (a CLASS_PREPARE event, a ClassesBySignature or Signature
//     reply), its class commands, and as soon as its Methods reply names a
//     method, that method's commands.
//
// IDs from an earlier connection are never sent, even to the same VM
// process (HotSpot forgets every ID it handed to a debugger when it
// detaches): replayed commands carry only IDs this connection's replies
// and events handed out (handedOut, checked by safeToSend).

// defaultPrefetch is what every debugger asks first; defaultSuspended is
// what is prefetched while the VM is suspended when no profile is known.
var (
	defaultPrefetch  = []jdwp.Cmd{jdwp.CmdIDSizes, jdwp.CmdVirtualMachineVersion, jdwp.CmdVirtualMachineCapabilitiesNew}
	defaultSuspended = []jdwp.Cmd{jdwp.CmdVirtualMachineAllThreads, jdwp.CmdVirtualMachineTopLevelThreadGroups}
)

// maxAttachCmds bounds a recorded attach sequence.
const maxAttachCmds = 512

// Identity of the debugger: its first command, with the VM's Version
// reply, keys the profile (profileKey).

// attach is the attach part (parts.go): it reacts to the debugger's first
// command (identify, called by the router before any phase) and to a
// suspend=y VM's VM_START (vmStart), to what the debugger asks during its
// attach (asked: recorded), to its ClassesBySignature (command: served
// from the attach's own lookups, lookup.go), to replies that name the VM,
// classes and methods (replied), and to CLASS_PREPARE events (its
// subscription). It owns the profile's key and the profile an earlier
// session left, which it hands to every part once found (importProfile,
// an input: the router's), and the profile this session leaves (profile,
// at Close). Its own commands are counted in the core (ownSpecs).
// Guarded by session.mu.
type attach struct {
	*core
	rs            *relay.Session
	importProfile func(p *profile, sizes jdwp.IDSizes) // hands the profile to every part
	offerStops    func(p *profile)                     // offers the prior's stop templates too (learnedRules.offer)
	started       bool                                 // the prefetch was sent (see start)
	identified    bool                                 // first is known
	first         jdwp.Cmd                             // the debugger's first command: its identity
	version       []byte                               // the VM's Version reply body, nil until known
	lookups       map[string]*lookup                   // the attach's ClassesBySignature, by signature (lookup.go)
	lookupsOff    bool                                 // lookups serve no more (lookupCommand)
	snap          snapshot                             // the class snapshot of a suspension (snapshot.go)
	key           string                               // the profile's key, "" until the Version reply
	prof          *profile                             // learned at an earlier attach, nil if none
	rec           profile                              // this attach, being recorded
	expanded      bool                                 // the second wave (after IDSizes) was sent
	compressed    bool                                 // the link to the VM is compressed (split mode's near end: snapPays)
	ansBuf        []byte                               // lookups' answers (handed to the relay)
	deferred      []deferredCmd                        // the profile's first-stop commands, until the first read (replay)
}

// start sends the first prefetch wave, on the debugger's first
// command (not yet forwarded) or on a suspend=y VM's VM_START: IDSizes
// first, so that a debugger asking it first is belayed on it.
func (a *attach) start() {
	a.started = true
	if !a.attachAllowed() {
		return
	}
	for _, c := range defaultPrefetch {
		a.specAttach(jdwp.IDSizes{}, c, nil)
	}
}

// identify notes the debugger's first command c.
func (a *attach) identify(c jdwp.Cmd, sizes jdwp.IDSizes) {
	if !a.started {
		a.start()
	}
	a.identified, a.first = true, c
	a.attachProfile(sizes)
}

// attachProfile looks up the profile once the debugger and the VM are
// known, and sends the second wave.
func (a *attach) attachProfile(sizes jdwp.IDSizes) {
	if a.key != "" || !a.identified || a.version == nil {
		return
	}
	a.key = profileKey(a.version, a.first)
	a.prof = a.sp.profiles.get(a.key)
	var prior *profile
	var others []*profile
	if !a.sp.noPrior {
		prior, others = priorFor(a.first, a.push.mode == ModeAlways, a.version) // prior.go
	}
	if a.prof == nil {
		a.prof, prior = prior, nil
	}
	if a.prof != nil {
		a.hasPrev, a.prevUse = true, a.prof.AttachUse
		a.importProfile(a.prof, sizes)
	}
	// Another debugger (one first command, other JDIs) may have left the
	// profile: the prior's stop templates, its JDI's or another's, stand
	// in for its.
	if prior != nil {
		a.offerStops(prior)
	}
	for _, p := range others {
		a.offerStops(p)
	}
	a.attachSecondWave(sizes)
}

// firstSets is the event kinds of a session's first Sets, in order
// (core.sets). Every JDI sets up requests of its own as it attaches,
// before its debugger does anything (OpenJDK's: CLASS_PREPARE, then
// CLASS_UNLOAD; Eclipse's: CLASS_UNLOAD, then its debugger's): debuggers
// that begin with the same command (IDSizes) differ there.
//
// It also keeps the debugger's setup: the kinds of its requests about no
// place in the program (bookkeeping) it made before its first stop at a
// location. Those are the same from session to session of one debugger,
// whatever it debugs (jdb: thread starts and deaths; java-debug: those,
// unsuspending, and the VM's death; an IDE on OpenJDK's JDI: none of its
// own), where its breakpoints, steps, watchpoints and exception
// breakpoints are the user's.
type firstSets struct {
	n     int
	kinds [2]jdwp.EventKind
	setup uint8 // bookkeeping bits of the kinds set before the first stop at a location
}

// add notes a Set of kind k, sent before the session's first stop at a
// location if setup.
func (s *firstSets) add(k jdwp.EventKind, setup bool) {
	if s.n < len(s.kinds) {
		s.kinds[s.n] = k
		s.n++
	}
	if setup {
		s.setup |= bookkeeping(k)
	}
}

// bookkeepingKinds are the event kinds whose requests name no place in
// the program: a debugger's own bookkeeping, not its user's.
var bookkeepingKinds = [...]jdwp.EventKind{jdwp.EventThreadStart, jdwp.EventThreadDeath, jdwp.EventClassUnload, jdwp.EventVMDeath}

// bookkeeping is k's bit in firstSets.setup, 0 if it is the user's.
func bookkeeping(k jdwp.EventKind) uint8 {
	if i := slices.Index(bookkeepingKinds[:], k); i >= 0 {
		return 1 << i
	}
	return 0
}

// setupBits is a recorded setup ks as firstSets.setup's bits.
func setupBits(ks []jdwp.EventKind) uint8 {
	var b uint8
	for _, k := range ks {
		b |= bookkeeping(k)
	}
	return b
}

// contradicts says whether the setup so far has a kind a profile's
// recorded setup ks lacks (one that recorded none contradicts nothing).
func (s *firstSets) contradicts(ks []jdwp.EventKind) bool {
	return len(ks) > 0 && s.setup&^setupBits(ks) != 0
}

// setupKinds is the debugger's setup as a profile records it (nil: none).
func (s *firstSets) setupKinds() []jdwp.EventKind {
	var ks []jdwp.EventKind
	for i, k := range bookkeepingKinds {
		if s.setup&(1<<i) != 0 {
			ks = append(ks, k)
		}
	}
	return ks
}

// setUpAs says whether a profile recorded after setup ks came from a
// debugger that set itself up as this session's did; a profile that
// recorded none (written before it was, or of a debugger with none) is
// taken as such.
func (s *firstSets) setUpAs(ks []jdwp.EventKind) bool {
	return len(ks) == 0 || setupBits(ks) == s.setup
}

func (s *firstSets) list() []jdwp.EventKind { return s.kinds[:s.n] }

// known says whether the first Sets are all in (which profile fits).
func (s *firstSets) known() bool { return s.n == len(s.kinds) }

// fits says whether a profile recorded after Sets of kinds ks came from a
// debugger that attached as this session's did; a profile that recorded
// none (written before they were, or of a debugger that set none) is
// taken as before.
func (s *firstSets) fits(ks []jdwp.EventKind) bool { return len(ks) == 0 || slices.Equal(ks, s.list()) }

// specAttach sends command c with params as attach speculation.
func (a *attach) specAttach(sizes jdwp.IDSizes, c jdwp.Cmd, params []byte) {
	if !a.canSend || len(a.ownSpecs) >= maxAttachCmds {
		return
	}
	s := &spec{kind: kAttach}
	info, ok := keyable.Fill(&s.key, c, params, sizes)
	if !ok {
		return
	}
	s.info, s.subj = info, s.key.Subject(info, sizes)
	if a.facts.scopeOK(info, s.subj) && a.sendOwn(s, sizes) {
		a.ownSpecs = append(a.ownSpecs, s)
	}
}

// vmStart notes a VM_START event read before the ID sizes are known
// (the composite's header needs none): with SUSPEND_ALL the VM is
// suspended (libjdwp suspends before it sends the event) and waits for
// this debugger, so the prefetch starts.
func (a *attach) vmStart(body []byte) {
	if policy, first, ok := jdwp.CompositeHead(body); ok && policy == jdwp.SuspendAll && first == jdwp.EventVMStart &&
		a.facts.resumesInFlight == 0 {
		a.facts.allSuspended = true
		a.facts.suspChanges++
		if !a.started {
			a.start()
		}
	}
}

// replied learns from a successful reply to command c with params
// (the debugger's or the proxy's, not one fetched elsewhere) what the
// attach needs: the profile once the Version is known, the second wave
// once the ID sizes are, class and method IDs with their names.
func (a *attach) replied(x *reply) {
	c, params, sig, p, sizes := x.c, x.params, x.sig, x.p, x.sizes
	if a.started && a.snap.pending && !x.offered {
		a.snapTake(sizes) // a round trip measured
	}
	if !a.started || x.offered || !x.ok {
		return
	}
	r := jdwp.NewBodyReader(p.Body(), sizes)
	switch c {
	case jdwp.CmdVirtualMachineSuspend:
		if x.d != nil {
			a.snapTake(sizes) // the debugger suspended the VM
		}
	case jdwp.CmdVirtualMachineVersion:
		if a.version == nil {
			a.version = append([]byte{}, p.Body()...)
			a.attachProfile(sizes)
		}
	case jdwp.CmdVirtualMachineAllThreads:
		n := r.Count(sizes.ObjectID)
		a.learn.threads = a.learn.threads[:0]
		for i := 0; i < n && r.Err() == nil && i < maxSpecPerStop; i++ {
			a.learn.threads = append(a.learn.threads, r.Thread())
		}
	case jdwp.CmdReferenceTypeSignature, jdwp.CmdReferenceTypeSignatureWithGeneric:
		s := r.StringBytes()
		if r.Err() == nil && len(params) > 0 {
			id := jdwp.NewBodyReader(params, sizes).Class()
			if _, known := a.facts.seen.sigOf[id]; !known { // (a string only for a new class)
				a.attachClass(sizes, id, string(s), false)
			}
		}
	case jdwp.CmdVirtualMachineClassesBySignature:
		lookupClasses(r, func(id jdwp.ClassID) {
			a.attachClass(sizes, id, sig, x.d == nil || x.d.peer) // the attach's own lookup, or a proxy's in front
		})
	case jdwp.CmdReferenceTypeMethods, jdwp.CmdReferenceTypeMethodsWithGeneric:
		a.attachMethods(c, params, r, sizes)
	}
}

// attachSecondWave sends, once both the ID sizes and the profile are
// known, the VM-wide commands the debugger asked at its last attach (or
// the default ones); not once the session's first stop at a location
// began (a VM whose Version reply came after it): what the debugger
// reads there is that stop's (its speculation, or a far end's bundle).
func (a *attach) attachSecondWave(sizes jdwp.IDSizes) {
	if a.expanded || a.key == "" || !a.attachAllowed() || a.learn.ep.serial > 0 {
		return
	}
	a.expanded = true
	cmds := defaultSuspended
	if a.prof != nil {
		cmds = a.prof.vmCmds()
	}
	for _, c := range cmds {
		a.specAttach(sizes, c, nil)
	}
	if a.prof != nil && a.canSend {
		for _, sig := range a.prof.signatures() {
			a.attachLookup(sig)
		}
	}
	a.snapTake(sizes)
}

// attachLookup asks the VM for the classes of signature sig: read-only,
// no ID. The reply is the session's alone (it hands out class IDs for the
// replay) and is not cached: classes of that signature may be loaded
// later.
func (a *attach) attachLookup(sig string) {
	for _, s := range a.facts.seen.sigOf {
		if s == sig {
			return // already handed out
		}
	}
	w := jdwp.BodyWriter{Buf: a.pbuf[:0]}
	w.String(sig)
	a.pbuf = w.Buf
	a.disp.closeMoment()
	id := a.disp.ids.NewSynthetic()
	a.disp.sendBuf = jdwp.AppendCommand(a.disp.sendBuf[:0], id, jdwp.CmdVirtualMachineClassesBySignature, a.pbuf)
	a.out.SendToVMData(a.disp.sendBuf, relay.Synthetic, slot, a.data.get(&cmdData{sig: sig, lookup: true}))
	a.lookupSent(sig)
	if time.Since(a.began) < logOwnFor {
		a.log.Debug().Stringer("command", jdwp.CmdVirtualMachineClassesBySignature).Uint32("id", id).Msg("sent to the VM on the proxy's own behalf")
	}
}

// attachClass notes that this connection handed out class id with
// signature sig (in a reply to the proxy's own lookup, which the debugger
// did not see, if own), and replays the profile's commands for it.
func (a *attach) attachClass(sizes jdwp.IDSizes, id jdwp.ClassID, sig string, own bool) {
	if id == 0 || sig == "" {
		return
	}
	if _, known := a.facts.seen.sigOf[id]; known {
		return
	}
	if own {
		a.facts.addOwnSignature([]byte(sig), id)
	} else {
		a.facts.addSignature([]byte(sig), id)
	}
	a.facts.seen.class(id, sig)
	p := a.prof
	if p == nil || !a.attachAllowed() {
		return
	}
	w := jdwp.BodyWriter{Buf: a.pbuf[:0], Sizes: sizes}
	w.Class(id)
	a.pbuf = w.Buf
	for _, e := range p.Class {
		if e.Sig == sig {
			a.replay(sizes, jdwp.Cmd{Set: e.Set, Cmd: e.Cmd}, a.pbuf, e.Stop)
		}
	}
}

// replay sends the profile's command c with params: at once if its
// debugger asked it at the attach; if at its first stop, once this
// session's debugger's reads at its first stop confirmed the profile
// (learner.firstRead: another debugger with the same attach reads none
// of it), and not before that stop (deferred).
func (a *attach) replay(sizes jdwp.IDSizes, c jdwp.Cmd, params []byte, stop bool) {
	switch {
	case !stop && !a.setUpOtherwise() || a.learn.firstRead == firstConfirmed:
		a.specAttach(sizes, c, params)
	case a.learn.firstRead == firstUnknown && len(a.deferred) < maxAttachCmds:
		a.deferred = append(a.deferred, deferredCmd{c: c, params: bytes.Clone(params)})
	}
}

// setUpOtherwise says whether the debugger has set itself up in a way
// the profile's never did (a bookkeeping request of a kind its setup
// lacks: jdb's thread start requests, against an IDE's profile): the
// commands that debugger asked at its attach then wait for this one's
// first read at a stop, as those it asked at a stop do.
func (a *attach) setUpOtherwise() bool { return a.prof != nil && a.sets.contradicts(a.prof.Setup) }

// release sends the deferred commands, once the first stop's reads
// confirmed the profile, or drops them, once they refuted it.
func (a *attach) release(sizes jdwp.IDSizes) {
	switch a.learn.firstRead {
	case firstUnknown:
		return
	case firstConfirmed:
		for _, d := range a.deferred {
			a.specAttach(sizes, d.c, d.params)
		}
	}
	a.deferred = nil
}

// deferredCmd is a command of the profile that waits for the first
// stop's reads (attach.replay).
type deferredCmd struct {
	c      jdwp.Cmd
	params []byte
}

// subscribe takes the class IDs CLASS_PREPARE events hand out.
func (a *attach) subscribe(t *trigger.Manager) {
	t.OnEvent(jdwp.EventClassPrepare, a.onClassPrepare)
	a.subscribeSnap(t)
}

// onClassPrepare is the CLASS_PREPARE handler: the event hands out the
// class's ID.
func (a *attach) onClassPrepare(_ jdwp.SuspendPolicy, e *jdwp.Event) {
	if !a.started {
		return
	}
	if sizes, ok := a.rs.IDSizes(); ok {
		a.attachClass(sizes, e.ClassID(), string(e.Signature), false)
	}
}

// attachMethods records the methods of a Methods reply for a class this
// connection handed out, and replays the profile's method commands.
func (a *attach) attachMethods(c jdwp.Cmd, params []byte, r *jdwp.BodyReader, sizes jdwp.IDSizes) {
	class := jdwp.NewBodyReader(params, sizes).Class()
	sig, ok := a.facts.seen.sigOf[class]
	if !ok {
		return
	}
	ms := map[jdwp.MethodID]methodName{}
	n := r.Count(sizes.MethodID + 4 + 4 + 4)
	for i := 0; i < n && r.Err() == nil; i++ {
		id := r.Method()
		m := methodName{name: r.String(), sig: r.String()}
		if c == jdwp.CmdReferenceTypeMethodsWithGeneric {
			r.StringBytes()
		}
		r.Int32()
		if r.Err() == nil {
			ms[id] = m
		}
	}
	a.facts.seen.methods[class] = ms
	p := a.prof
	if p == nil {
		return
	}
	a.learn.importSlots(p, class, sig, ms)
	if !a.attachAllowed() {
		return
	}
	for id, m := range ms {
		for _, e := range p.Method {
			if e.Sig == sig && e.Name == m.name && e.MSig == m.sig {
				w := jdwp.BodyWriter{Buf: a.pbuf[:0], Sizes: sizes}
				w.Class(class)
				w.Method(id)
				a.pbuf = w.Buf
				a.replay(sizes, jdwp.Cmd{Set: e.Set, Cmd: e.Cmd}, a.pbuf, e.Stop)
			}
		}
	}
}

// asked records a debugger's cacheable command during the attach,
// by signature and name.
func (a *attach) asked(key *keyable.Key, info keyable.Info, sizes jdwp.IDSizes) {
	if !a.recording() || a.rec.size() >= maxAttachCmds {
		return
	}
	c, params := key.Cmd(), key.Params()
	if len(params) == 0 {
		a.rec.addVM(c)
		return
	}
	if info.Tier != keyable.TierClass {
		return
	}
	r := jdwp.NewBodyReader(params, sizes)
	class := r.Class()
	sig, ok := a.facts.seen.sigOf[class]
	if !ok || r.Err() != nil {
		return
	}
	stop := a.learn.serial > 0
	if r.Remaining() == 0 {
		a.rec.addClass(classCmd{Sig: sig, Set: c.Set, Cmd: c.Cmd, Stop: stop})
		return
	}
	m, ok := a.facts.seen.methods[class][r.Method()]
	if ok && r.Err() == nil && r.Remaining() == 0 {
		a.rec.addMethod(methodCmd{Sig: sig, Name: m.name, MSig: m.sig, Set: c.Set, Cmd: c.Cmd, Stop: stop})
	}
}

// profile is what this session leaves for the next attach of the same
// debugger to the same kind of VM (its key and the profile, which the
// other parts add their shares to), and the profile it found (old); nil
// if the debugger or the VM was never known.
func (a *attach) profile() (key string, p, old *profile) {
	if a.key == "" {
		return "", nil, nil
	}
	sent, used := 0, 0
	for _, s := range a.ownSpecs {
		if s.sent {
			sent++
			if s.used {
				used++
			}
		}
	}
	rec := a.rec
	rec.Sets = slices.Clone(a.sets.list())
	rec.Setup = a.sets.setupKinds()
	rec.Lookups, rec.SnapBytes = a.snap.lookups, a.snap.bytes
	if rec.SnapBytes == 0 && a.prof != nil {
		rec.SnapBytes = a.prof.SnapBytes
	}
	rec.AttachUse = 1
	if sent > 0 {
		rec.AttachUse = float64(used) / float64(sent)
	}
	if a.recording() && a.prof != nil {
		// The session ended before its first stop ended: keep what was
		// learned.
		rec.merge(a.prof)
	}
	return a.key, &rec, a.prof
}
