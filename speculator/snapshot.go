package speculator

import (
	"strings"
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/trigger"
)

// The class snapshot: while the whole VM is suspended no class of the
// program is loaded, prepared, initialized or unloaded (loading and
// initialization run in a thread of the program; unloading needs a
// garbage collection, which only a command that allocates can start), so
// one AllClassesWithGeneric reply answers every lookup by name of such a
// class in that suspension exactly, statuses included: ClassesBySignature
// (the entries of that signature, in the reply's order, which is the VM's
// one iteration over its loaded classes). The JDK's own classes, and so
// the whole lists, may change meanwhile: the JDWP agent's threads run
// on (snapServe).
//
// When: at a suspend=y attach (the VM_START said the whole VM waits) once
// the profile is known (the second wave, or the VM_START if it comes
// after that), and after the debugger's own
// VirtualMachine.Suspend succeeded — each time only if it pays (below).
// The snapshot is a stop-state fact of the whole VM (lookupFacts): any
// resume, invoke, suspension change, redefinition or mutation ends it, and
// so do a CLASS_PREPARE or CLASS_UNLOAD event and any debugger command
// that is neither a read nor an event request (snapCommand: those that
// allocate may collect garbage, which may unload classes).
//
// A debugger lookup while the snapshot is in flight is belayed on it: the
// VM computed the snapshot before it would have seen the lookup, with the
// same classes loaded. An error reply (a VM without the command) is
// handed to those waiters as their own: the same VM gives the same error
// to a lookup (VM_DEAD) or never had the snapshot sent (JDWP before 1.5:
// snapOK).
//
// The rule (snapPays): the snapshot costs its bytes on the link, about 74
// to 81 bytes per loaded class (the Deep workload's JDK 17 VM at its
// suspend=y attach: 387 classes, 28,605 bytes,
// TestRealVMClassSnapshotAnswersAsTheVM; BigApp's at its suspend=y attach
// about 400 classes, 28,542 bytes; BigApp's after its start-up: 15,231
// classes, 1,231,506 bytes, 1.2 s at 1 MB/s, 41 round trips of 30 ms),
// and saves one round trip per lookup the profile does not already cover
// with its own lookups by signature (attachLookup). On a compressed link
// (split mode's zstd) it costs a quarter of its bytes: zstd takes the
// reply at 15,000 classes to 156 KB in the order a VM lists them and 227
// KB shuffled (BenchmarkCompressAllClasses, ratios 6.1 and 4.2). It is
// sent when
//
//	expected lookups × RTT > expected snapshot bytes / compression / bandwidth
//
// So at 15,000 classes and 30 ms an IDE's 30 lookups (BigApp's) pay for it
// from 1.4 MB/s on a plain link and from 0.35 MB/s on a compressed one; at
// an attach to a VM that waits (suspend=y: a few hundred classes, 30 KB)
// two lookups pay for it from 0.5 MB/s.
// with the lookups and the bytes from the profile (the last attach's,
// or the prior's; a profile that never saw a snapshot: none), the RTT
// measured on the attach's first replies (IDSizes, Version), and
// the bandwidth Config.Bandwidth (assumedBandwidth when not set: a slow
// link, so that a large snapshot is not sent on a guess).

// assumedBandwidth is the link's bandwidth in bytes per second when
// Config.Bandwidth is not set.
const assumedBandwidth = 1 << 20

// snapCompression is what a compressed link divides the snapshot's bytes
// by: at least, at 15,000 classes (4.2 shuffled, 6.1 in the VM's order).
const snapCompression = 4

// snapshot is the attach's AllClassesWithGeneric of one suspension.
// Guarded by session.mu.
type snapshot struct {
	sent    bool       // a snapshot of this suspension is in flight or in
	pending bool       // to decide at the first reply that measures the RTT (snapTake)
	gen     generation // when it was sent
	in      bool       // its reply came: entries hold it
	off     bool       // it serves no more (snapCommand, an event)
	body    []byte     // the VM's reply body: AllClassesWithGeneric's answer
	entries []snapEntry
	bySig   map[string][]int // entries by signature, in the reply's order
	waiters []snapWaiter     // debugger lookups belayed on it
	bytes   int              // the size of the last reply body (for the profile)
	lookups int              // the debugger's lookups by name during the attach (for the profile)
}

// snapEntry is one class of a snapshot.
type snapEntry struct {
	tag    uint8
	id     jdwp.ClassID
	sig    string
	status int32
}

// snapWaiter is a debugger lookup belayed on the snapshot in flight.
type snapWaiter struct {
	id  uint32
	sig string // ClassesBySignature's
}

// snapOK reports whether the VM has AllClassesWithGeneric (JDWP 1.5 on).
func snapOK(version []byte) bool {
	r := jdwp.NewBodyReader(version, jdwp.IDSizes{})
	r.StringBytes()
	major, minor := r.Int32(), r.Int32()
	return r.Err() == nil && (major > 1 || major == 1 && minor >= 5)
}

// snapPays applies the rule above with profile p (nil: no lookups expected).
func (a *attach) snapPays(p *profile) bool {
	if a.sp.snapAll {
		return true
	}
	if p == nil {
		return false
	}
	lookups := p.Lookups - len(p.Sigs)
	if lookups <= 0 || p.SnapBytes <= 0 {
		return false
	}
	bw := a.sp.cfg.Bandwidth
	if bw <= 0 {
		bw = assumedBandwidth
	}
	bytes := float64(p.SnapBytes)
	if a.compressed {
		bytes /= snapCompression
	}
	cost := time.Duration(bytes / float64(bw) * float64(time.Second))
	return time.Duration(lookups)*a.disp.rtt.soFar() > cost
}

// snapTake sends the snapshot of this suspension if the VM is suspended
// as a whole and the rule says it pays.
func (a *attach) snapTake(sizes jdwp.IDSizes) {
	s := &a.snap
	s.pending = false
	if s.sent && a.snapValid() || !a.canSend || !a.attachAllowed() || !a.facts.stillAll() || !snapOK(a.version) {
		return
	}
	if a.disp.rtt.soFar() == 0 && !a.sp.snapAll {
		// No round trip measured yet (a near end whose attach's replies
		// were pushed): decide at the first.
		s.pending = a.prof != nil
		return
	}
	if !a.snapPays(a.prof) {
		return
	}
	a.snapDrop()
	s.sent, s.gen, s.off = true, a.facts.gen, false
	a.disp.closeMoment()
	id := a.disp.ids.NewSynthetic()
	a.disp.sendBuf = jdwp.AppendCommand(a.disp.sendBuf[:0], id, jdwp.CmdVirtualMachineAllClassesWithGeneric, nil)
	a.out.SendToVMData(a.disp.sendBuf, relay.Synthetic, slot, a.data.get(&cmdData{snapshot: true, gen: s.gen}))
	if time.Since(a.began) < logOwnFor {
		a.log.Debug().Stringer("command", jdwp.CmdVirtualMachineAllClassesWithGeneric).Uint32("id", id).Msg("sent to the VM on the proxy's own behalf")
	}
}

// snapDrop forgets the snapshot (not its waiters: they are answered when
// its reply comes).
func (a *attach) snapDrop() {
	s := &a.snap
	s.sent, s.in, s.body, s.entries = false, false, s.body[:0], s.entries[:0]
	clear(s.bySig)
}

func (a *attach) snapValid() bool {
	s := &a.snap
	return s.sent && !s.off && a.facts.valid(lookupFacts, keyable.Subject{}, s.gen)
}

// snapReplied takes the snapshot's reply p: it answers the lookups belayed
// on it, and keeps it while it may serve; it hands out the classes it
// lists (handedOut), and replays the profile's commands for them.
func (a *attach) snapReplied(p jdwp.Packet, gen generation, sizes jdwp.IDSizes) {
	s := &a.snap
	ok := p.ErrorCode() == jdwp.ErrorNone && s.sent && !s.in && s.gen == gen
	if ok {
		s.body = append(s.body[:0], p.Body()...)
		ok = s.parse(sizes)
	}
	if ok {
		s.in = true
		s.bytes = len(s.body)
		for i := range s.entries {
			a.attachClass(sizes, s.entries[i].id, s.entries[i].sig, true)
		}
	}
	for _, w := range s.waiters {
		if ok {
			a.belayBuf = jdwp.AppendReply(a.belayBuf[:0], w.id, jdwp.ErrorNone, s.answer(w.sig, sizes))
			a.snapShown(w.sig)
		} else {
			a.belayBuf = jdwp.AppendReply(a.belayBuf[:0], w.id, p.ErrorCode(), nil)
		}
		a.out.SendToDebugger(a.belayBuf, relay.Belay, jdwp.CmdVirtualMachineClassesBySignature)
	}
	s.waiters = s.waiters[:0]
	if !ok || !a.snapValid() {
		a.snapDrop()
	}
}

// snapShown notes the signatures the debugger saw in the snapshot's
// answer to its lookup of sig.
func (a *attach) snapShown(sig string) {
	for _, i := range a.snap.bySig[sig] {
		a.facts.addSignature([]byte(sig), a.snap.entries[i].id)
	}
}

// parse reads the body into entries; false if it does not parse.
func (s *snapshot) parse(sizes jdwp.IDSizes) bool {
	r := jdwp.NewBodyReader(s.body, sizes)
	n := r.Count(1 + sizes.ReferenceTypeID + 4 + 4 + 4)
	if s.bySig == nil {
		s.bySig = map[string][]int{}
	}
	for i := 0; i < n && r.Err() == nil; i++ {
		e := snapEntry{tag: r.Uint8(), id: r.Class(), sig: r.String()}
		r.StringBytes()
		e.status = r.Int32()
		s.bySig[e.sig] = append(s.bySig[e.sig], len(s.entries))
		s.entries = append(s.entries, e)
	}
	return r.Err() == nil && r.Remaining() == 0
}

// answer is the body of the VM's reply to ClassesBySignature of sig
// while the snapshot holds.
func (s *snapshot) answer(sig string, sizes jdwp.IDSizes) []byte {
	w := jdwp.BodyWriter{Sizes: sizes}
	w.Int32(int32(len(s.bySig[sig])))
	for _, i := range s.bySig[sig] {
		e := &s.entries[i]
		w.Uint8(e.tag)
		w.Class(e.id)
		w.Int32(e.status)
	}
	return w.Buf
}

// snapServe answers the debugger's lookup by name f (ClassesBySignature
// of a class only the program can load: frozen) from the snapshot, or
// belays it on the snapshot in flight; it reports whether it did.
//
// Frozen: a suspension stops the program's threads, not the JDWP agent's
// own, which run JDK code as a debugger connects (the agent updates its
// properties through jdk.internal.vm.VMSupport) and so may load JDK
// classes while the whole VM is suspended: a JDK 17 VM started with
// suspend=y was seen to list [Ljava/util/concurrent/ConcurrentHashMap$CounterCell;
// in its AllClasses reply a moment after the snapshot was taken, which
// did not (TestRealVMClassSnapshotAnswersAsTheVM, once in a CI run). So
// the whole lists (AllClasses, AllClassesWithGeneric) and the lookups of
// the JDK's own classes go to the VM; a class of the program, or an array
// of one, loads only in a thread of the program.
func (a *attach) snapServe(f *relay.Frame, sizes jdwp.IDSizes) bool {
	c := f.Packet.Cmd()
	var sig string
	switch c {
	case jdwp.CmdVirtualMachineClassesBySignature:
		r := jdwp.NewBodyReader(f.Packet.Body(), sizes)
		sig = r.String()
		if r.Err() != nil || r.Remaining() != 0 {
			return false // the VM's own error
		}
		if jdkOwned(sig) {
			return false // the JDWP agent's own threads may load it (frozen, above)
		}
	default:
		return false // the whole list: the JDWP agent's own threads may add to it (frozen, above)
	}
	if !a.snapValid() {
		return false
	}
	s := &a.snap
	if !s.in {
		s.waiters = append(s.waiters, snapWaiter{id: f.ID, sig: sig})
		f.Origin = relay.Belay
		a.sp.countRequest(resultBelay)
		return true
	}
	f.Answer = jdwp.AppendReply(a.ansBuf[:0], f.ID, jdwp.ErrorNone, s.answer(sig, sizes))
	a.ansBuf = f.Answer[:0]
	a.snapShown(sig)
	f.Origin = relay.CacheHit
	a.sp.countRequest(resultHit)
	return true
}

// jdkOwned says whether sig names a class the JDK's own code may load
// (snapServe): one of its packages', or an array of one or of a
// primitive type.
func jdkOwned(sig string) bool {
	elem := strings.TrimLeft(sig, "[")
	if len(elem) <= 1 || elem[0] != 'L' {
		return true // a primitive type or its arrays (or not a class signature: the VM's own answer)
	}
	for _, p := range [...]string{"java/", "javax/", "jdk/", "sun/", "com/sun/"} {
		if strings.HasPrefix(elem[1:], p) {
			return true
		}
	}
	return false
}

// snapCommand sees a debugger command that is not a cacheable read:
// anything but a lookup by name or an event request ends the snapshot.
func (a *attach) snapCommand(c jdwp.Cmd) {
	switch c {
	case jdwp.CmdEventRequestSet, jdwp.CmdEventRequestClear, jdwp.CmdVirtualMachineClassesBySignature,
		jdwp.CmdVirtualMachineAllClasses, jdwp.CmdVirtualMachineAllClassesWithGeneric:
	default:
		a.snap.off = true
	}
}

// seen does nothing (compositor).
func (a *attach) seen(*jdwp.Composite, error) {}

// taken takes the snapshot at a VM_START that suspends the whole VM and
// comes after the attach's second wave (a VM that sent it after the
// Version reply): the decision at the second wave was taken without the
// suspension (compositor: called once the session took it in).
func (a *attach) taken(c *jdwp.Composite) {
	if c == nil || c.SuspendPolicy != jdwp.SuspendAll || !a.expanded || a.rs == nil {
		return
	}
	for i := range c.Events {
		if c.Events[i].Kind == jdwp.EventVMStart {
			if sizes, ok := a.rs.IDSizes(); ok {
				a.snapTake(sizes)
			}
			return
		}
	}
}

// snapEvent ends the snapshot at a CLASS_PREPARE or CLASS_UNLOAD event:
// the set of classes changed.
func (a *attach) snapEvent(jdwp.SuspendPolicy, *jdwp.Event) { a.snap.off = true }

// subscribeSnap subscribes the snapshot to the events that end it.
func (a *attach) subscribeSnap(t *trigger.Manager) {
	t.OnEvent(jdwp.EventClassPrepare, a.snapEvent)
	t.OnEvent(jdwp.EventClassUnload, a.snapEvent)
}
