package speculator

import (
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
	"github.com/jdwpaccel/jdwpaccel/relay"
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

// attach is the session's attach state. Part of session, guarded by
// session.mu.
type attach struct {
	rs         *relay.Session
	started    bool               // the prefetch was sent (see attachStart)
	canSend    bool               // the relay session has a VM connection to send on
	identified bool               // first is known
	first      jdwp.Cmd           // the debugger's first command: its identity
	version    []byte             // the VM's Version reply body, nil until known
	caps       string             // hash of the VM's CapabilitiesNew reply body, "" until known
	lookups    map[string]*lookup // the attach's ClassesBySignature, by signature (lookup.go)
	lookupsOff bool               // lookups serve no more (lookupCommand)
	key        string             // the profile's key, "" until the Version reply
	prof       *profile           // learned at an earlier attach, nil if none
	rec        profile            // this attach, being recorded
	specs      []*spec            // sent by the attach replay and prefetch
	expanded   bool               // the second wave (after IDSizes) was sent
}

// attachStart sends the first prefetch wave, on the debugger's first
// command (not yet forwarded) or on a suspend=y VM's VM_START: IDSizes
// first, so that a debugger asking it first is belayed on it.
func (ss *session) attachStart(rs *relay.Session) {
	a := &ss.att
	a.started, a.rs = true, rs
	a.canSend = rs.IDs() != nil // a relay session without a VM connection (a unit test's) has none
	if !ss.attachAllowed() {
		return
	}
	for _, c := range defaultPrefetch {
		ss.specAttach(jdwp.IDSizes{}, c, nil)
	}
}

// attachIdentify notes the debugger's first command c.
func (ss *session) attachIdentify(rs *relay.Session, c jdwp.Cmd, sizes jdwp.IDSizes) {
	if !ss.att.started {
		ss.attachStart(rs)
	}
	ss.att.identified, ss.att.first = true, c
	ss.attachProfile(sizes)
}

// attachProfile looks up the profile once the debugger and the VM are
// known, and sends the second wave.
func (ss *session) attachProfile(sizes jdwp.IDSizes) {
	a := &ss.att
	if a.key != "" || !a.identified || a.version == nil {
		return
	}
	a.key = profileKey(a.version, a.first)
	a.prof = ss.sp.profiles.get(a.key)
	if a.prof != nil {
		a.prof.applyTo(&ss.learn, sizes)
		ss.prep.importFrom(a.prof)
		ss.learn.shapesImport(a.prof)
		ss.wbImport()
	}
	ss.attachSecondWave(sizes)
}

// recording says whether the debugger's commands are part of its attach:
// until its first stop at a location ended.
func (ss *session) recording() bool { return ss.learn.serial <= 1 }

// attachAllowed reports whether the attach may send commands of its own:
// not in a session that sends nothing of its own (ModeNever; ModeNear
// does at attach), not with a floor on the RTT (unknown yet at attach),
// and on a fast link only while the profile's replay was mostly used.
func (ss *session) attachAllowed() bool {
	if spec, forced := ss.forcedSpeculation(); ss.closed || forced && !spec && ss.push.mode != ModeNear || ss.sp.cfg.MinRTT > 0 {
		return false
	}
	if p := ss.att.prof; p != nil && p.AttachUse < maxWaste && ss.disp.rtt.min() < LowRTT {
		return false
	}
	return true
}

// specAttach sends command c with params as attach speculation.
func (ss *session) specAttach(sizes jdwp.IDSizes, c jdwp.Cmd, params []byte) {
	a := &ss.att
	if !a.canSend || len(a.specs) >= maxAttachCmds {
		return
	}
	s := &spec{kind: kAttach}
	info, ok := keyable.Fill(&s.key, c, params, sizes)
	if !ok {
		return
	}
	s.info, s.subj = info, s.key.Subject(info, sizes)
	if ss.facts.scopeOK(info, s.subj) && ss.sendOwn(s, sizes) {
		a.specs = append(a.specs, s)
	}
}

// sendOwn sends speculation s that belongs to no stop (the attach's, the
// prepare rule's; its key, info and subject filled) unless its reply is
// cached or in flight or its IDs are not shown safe, and reports whether
// it was sent.
func (ss *session) sendOwn(s *spec, sizes jdwp.IDSizes) bool {
	if ss.cache.has(&s.key) {
		return false
	}
	if old := ss.disp.pending(&s.key); old != nil && !old.cancelled {
		return false
	}
	if !ss.facts.safeToSend(s, nil, sizes) {
		ss.sp.countSpec(outcomeWithheld, 1)
		return false
	}
	s.gen = ss.facts.gen
	ss.disp.submit(ss.out, s)
	return true
}

// attachVMStart notes a VM_START event read before the ID sizes are known
// (the composite's header needs none): with SUSPEND_ALL the VM is
// suspended (libjdwp suspends before it sends the event) and waits for
// this debugger, so the prefetch starts.
func (ss *session) attachVMStart(rs *relay.Session, body []byte) {
	if policy, first, ok := jdwp.CompositeHead(body); ok && policy == jdwp.SuspendAll && first == jdwp.EventVMStart &&
		ss.facts.resumesInFlight == 0 {
		ss.facts.allSuspended = true
		ss.facts.suspChanges++
		if !ss.att.started {
			ss.attachStart(rs)
		}
	}
}

// attachReply learns from a successful reply to command c with params
// (the debugger's or the proxy's) what the attach needs: the profile once
// the Version is known, the second wave once the ID sizes are, class and
// method IDs with their names.
func (ss *session) attachReply(c jdwp.Cmd, params []byte, sig string, p jdwp.Packet, sizes jdwp.IDSizes) {
	a := &ss.att
	if !a.started || p.ErrorCode() != jdwp.ErrorNone {
		return
	}
	r := jdwp.NewBodyReader(p.Body(), sizes)
	switch c {
	case jdwp.CmdVirtualMachineVersion:
		if a.version == nil {
			a.version = append([]byte{}, p.Body()...)
			ss.attachProfile(sizes)
		}
	case jdwp.CmdVirtualMachineCapabilitiesNew:
		ss.wbCaps(p)
	case jdwp.CmdVirtualMachineAllThreads:
		n := r.Count(sizes.ObjectID)
		ss.learn.threads = ss.learn.threads[:0]
		for i := 0; i < n && r.Err() == nil && i < maxSpecPerStop; i++ {
			ss.learn.threads = append(ss.learn.threads, r.Thread())
		}
	case jdwp.CmdReferenceTypeSignature, jdwp.CmdReferenceTypeSignatureWithGeneric:
		s := r.StringBytes()
		if r.Err() == nil && len(params) > 0 {
			id := jdwp.NewBodyReader(params, sizes).Class()
			if _, known := ss.facts.seen.sigOf[id]; !known { // (a string only for a new class)
				ss.attachClass(sizes, id, string(s))
			}
		}
	case jdwp.CmdVirtualMachineClassesBySignature:
		n := r.Count(1 + sizes.ReferenceTypeID + 4)
		for i := 0; i < n && r.Err() == nil; i++ {
			r.Uint8()
			id := r.Class()
			r.Int32()
			if r.Err() == nil {
				ss.attachClass(sizes, id, sig)
			}
		}
	case jdwp.CmdReferenceTypeMethods, jdwp.CmdReferenceTypeMethodsWithGeneric:
		ss.attachMethods(c, params, r, sizes)
		ss.prepareMethods(c, params, p, sizes)
	}
}

// attachSecondWave sends, once both the ID sizes and the profile are
// known, the VM-wide commands the debugger asked at its last attach (or
// the default ones).
func (ss *session) attachSecondWave(sizes jdwp.IDSizes) {
	a := &ss.att
	if a.expanded || a.key == "" || !ss.attachAllowed() {
		return
	}
	a.expanded = true
	cmds := defaultSuspended
	if a.prof != nil {
		cmds = a.prof.vmCmds()
	}
	for _, c := range cmds {
		ss.specAttach(sizes, c, nil)
	}
	if a.prof != nil && a.canSend {
		for _, sig := range a.prof.signatures() {
			ss.attachLookup(sig)
		}
	}
}

// attachLookup asks the VM for the classes of signature sig: read-only,
// no ID. The reply is the session's alone (it hands out class IDs for the
// replay) and is not cached: classes of that signature may be loaded
// later.
func (ss *session) attachLookup(sig string) {
	for _, s := range ss.facts.seen.sigOf {
		if s == sig {
			return // already handed out
		}
	}
	w := jdwp.BodyWriter{Buf: ss.pbuf[:0]}
	w.String(sig)
	ss.pbuf = w.Buf
	id := ss.disp.ids.NewSynthetic()
	ss.disp.sendBuf = jdwp.AppendCommand(ss.disp.sendBuf[:0], id, jdwp.CmdVirtualMachineClassesBySignature, ss.pbuf)
	ss.out.SendToVMData(ss.disp.sendBuf, relay.Synthetic, slot, ss.data.get(&cmdData{sig: sig, lookup: true}))
	ss.lookupSent(sig)
	if time.Since(ss.began) < logOwnFor {
		ss.log.Debug().Stringer("command", jdwp.CmdVirtualMachineClassesBySignature).Uint32("id", id).Msg("sent to the VM on the proxy's own behalf")
	}
}

// attachClass notes that this connection handed out class id with
// signature sig, and replays the profile's commands for it.
func (ss *session) attachClass(sizes jdwp.IDSizes, id jdwp.ClassID, sig string) {
	if id == 0 || sig == "" {
		return
	}
	if _, known := ss.facts.seen.sigOf[id]; known {
		return
	}
	ss.facts.addSignature([]byte(sig), id)
	ss.facts.seen.class(id, sig)
	p := ss.att.prof
	if p == nil || !ss.attachAllowed() {
		return
	}
	w := jdwp.BodyWriter{Buf: ss.pbuf[:0], Sizes: sizes}
	w.Class(id)
	ss.pbuf = w.Buf
	for _, e := range p.Class {
		if e.Sig == sig {
			ss.specAttach(sizes, jdwp.Cmd{Set: e.Set, Cmd: e.Cmd}, ss.pbuf)
		}
	}
}

// onClassPrepare is the CLASS_PREPARE handler: the event hands out the
// class's ID.
func (ss *session) onClassPrepare(_ jdwp.SuspendPolicy, e *jdwp.Event) {
	if sizes, ok := ss.att.sizes(); ok {
		ss.attachClass(sizes, e.ClassID(), string(e.Signature))
	}
}

func (a *attach) sizes() (jdwp.IDSizes, bool) {
	if a.rs == nil {
		return jdwp.IDSizes{}, false
	}
	return a.rs.IDSizes()
}

// attachMethods records the methods of a Methods reply for a class this
// connection handed out, and replays the profile's method commands.
func (ss *session) attachMethods(c jdwp.Cmd, params []byte, r *jdwp.BodyReader, sizes jdwp.IDSizes) {
	class := jdwp.NewBodyReader(params, sizes).Class()
	sig, ok := ss.facts.seen.sigOf[class]
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
	ss.facts.seen.methods[class] = ms
	p := ss.att.prof
	if p == nil {
		return
	}
	p.slotsTo(&ss.learn, class, sig, ms)
	if !ss.attachAllowed() {
		return
	}
	for id, m := range ms {
		for _, e := range p.Method {
			if e.Sig == sig && e.Name == m.name && e.MSig == m.sig {
				w := jdwp.BodyWriter{Buf: ss.pbuf[:0], Sizes: sizes}
				w.Class(class)
				w.Method(id)
				ss.pbuf = w.Buf
				ss.specAttach(sizes, jdwp.Cmd{Set: e.Set, Cmd: e.Cmd}, ss.pbuf)
			}
		}
	}
}

// attachRecord records a debugger's cacheable command during the attach,
// by signature and name.
func (ss *session) attachRecord(key *keyable.Key, info keyable.Info, sizes jdwp.IDSizes) {
	a := &ss.att
	if !ss.recording() || a.rec.size() >= maxAttachCmds {
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
	sig, ok := ss.facts.seen.sigOf[class]
	if !ok || r.Err() != nil {
		return
	}
	if r.Remaining() == 0 {
		a.rec.addClass(classCmd{Sig: sig, Set: c.Set, Cmd: c.Cmd})
		return
	}
	m, ok := ss.facts.seen.methods[class][r.Method()]
	if ok && r.Err() == nil && r.Remaining() == 0 {
		a.rec.addMethod(methodCmd{Sig: sig, Name: m.name, MSig: m.sig, Set: c.Set, Cmd: c.Cmd})
	}
}

// attachClose stores what the session learned for the next attach of the
// same debugger to the same kind of VM.
func (ss *session) attachClose(sizes jdwp.IDSizes, known bool) {
	a := &ss.att
	if a.key == "" || !known {
		return
	}
	sent, used := 0, 0
	for _, s := range a.specs {
		if s.sent {
			sent++
			if s.used {
				used++
			}
		}
	}
	p := a.rec
	p.AttachUse = 1
	if sent > 0 {
		p.AttachUse = float64(used) / float64(sent)
	}
	if ss.recording() && a.prof != nil {
		// The session ended before its first stop ended: keep what was
		// learned.
		p.merge(a.prof)
	}
	p.learnFrom(&ss.learn, sizes)
	ss.prep.exportTo(&p)
	p.slotsFrom(&ss.learn, &ss.facts.seen)
	p.Shapes = ss.shapesExport(a.prof, sizes)
	if p.WB = ss.wbExport(); p.WB == nil && a.prof != nil {
		p.WB = a.prof.WB
	}
	ss.sp.profiles.put(a.key, &p)
}
