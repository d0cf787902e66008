package speculator

import (
	"bytes"
	"cmp"
	"maps"
	"slices"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
	"github.com/jdwpaccel/jdwpaccel/trigger"
)

// The prepare rule: a suspending CLASS_PREPARE stop (not a stop at a
// location: no episode) is where a debugger resolves its deferred
// breakpoints in the prepared class: JDI reads the class's methods
// (ReferenceType.MethodsWithGeneric), its strata
// (SourceDebugExtension), then the line table of each method, one after
// another, before it sets the breakpoints and resumes. The rule sends
// those reads at the event, and the line tables as soon as the methods
// reply names the methods (capped at maxPrepareMethods per class).
//
// Gate: a class is speculated on only
//
//   - with the commands the debugger asked of a prepared class at an
//     earlier CLASS_PREPARE stop of this session (learned below), or
//   - for a class the debugger asked to be told of: a suspending
//     CLASS_PREPARE request of its own with a ClassMatch modifier that
//     matches the class's name (not the catch-all "*"). An IDE asks that
//     only for a class it has breakpoints in and not yet loaded, and it
//     resolves them when told: it reads the methods, the strata and the
//     line tables (defaultPrepare).
//
// Safety (safeToSend, spec.prep): the class ID is the one this
// connection's CLASS_PREPARE event handed out, the method IDs those of
// this connection's Methods reply for that class (handedOut); the
// commands are class-lifetime reads (keyable.TierClass), cached until
// the class is unloaded or redefined. Speculation still unused when the
// debugger resumes is counted as waste. Before the first stop at a
// location it is part of the attach's own commands: gated, and counted in
// its use, with them (attachAllowed, AttachUse).

// maxPrepareMethods caps the line tables speculated per class, and
// maxPrepareSpecs the speculation of one prepare stop.
const (
	maxPrepareMethods = 64
	maxPrepareSpecs   = 512
	maxPreparePattern = 256
)

// prepareRule is the prepare rule: a part (parts.go) that reacts to the
// debugger's CLASS_PREPARE requests (command), to the classes a
// suspending composite prepares (its CLASS_PREPARE subscription, then
// stopped), to Methods replies for those classes (replied), to what the
// debugger asks of them (asked) and to its resume (command); it takes and
// leaves its share of the profile. Guarded by session.mu.
type prepareRule struct {
	*core
	patterns [][]byte                    // ClassMatch patterns of the debugger's suspending CLASS_PREPARE requests
	pending  []preparedClass             // classes of the composite event being read
	stop     map[jdwp.ClassID]*stopClass // classes of the current prepare stop
	// resolves is, by how a request's patterns match a class (matchKind),
	// whether the debugger read such a class at the last prepare stop
	// that had one (1), or not (-1: none is read ahead), or unknown (0).
	// An IDE asks to be told of Outer and Outer$*, and may resolve its
	// breakpoints in the inner classes too, or only in Outer.
	resolves   [numMatchKinds]int8
	classCmds  map[jdwp.Cmd]bool // asked of a prepared class (class ID only) at a prepare stop
	methodCmds map[jdwp.Cmd]bool // asked of a prepared class's method at a prepare stop
	vmCmds     map[jdwp.Cmd]bool // asked without parameters of the VM's state at a prepare stop (AllThreads)
	specs      []*spec           // sent at the current prepare stop
	// stopsOf is the profile whose stop templates the session took
	// (learnedRules.profileTaken: its debugger's JDI's), nil while none.
	stopsOf func() *profile
}

type preparedClass struct {
	id  jdwp.ClassID
	sig string
}

// stopClass is a class of the current prepare stop: how the debugger's
// patterns match it, and whether the debugger read anything of it.
type stopClass struct {
	kind matchKind
	read bool
}

// matchKind is how the patterns of the debugger's CLASS_PREPARE requests
// match a class: not at all, by a pattern naming it (exactly, or ending
// in '*' after a package: "p.q.*"), or only by one for the inner classes
// of another ("Outer$*").
type matchKind uint8

const (
	matchNone matchKind = iota
	matchName
	matchInner
	numMatchKinds
)

// command notes the ClassMatch patterns of a debugger's suspending
// EventRequest.Set for CLASS_PREPARE, and ends the prepare stop at the
// debugger's resume (endStop).
func (pr *prepareRule) command(x *command) bool {
	if x.eff == keyable.EffectResume {
		pr.endStop()
		return false
	}
	set := &x.set
	if !set.is || set.kind != jdwp.EventClassPrepare || set.policy == jdwp.SuspendNone {
		return false
	}
	for i := range set.mods {
		m := &set.mods[i]
		if m.Kind == jdwp.ModClassMatch && len(bytes.Trim(m.Pattern, "*")) > 0 && len(pr.patterns) < maxPreparePattern {
			pr.patterns = append(pr.patterns, bytes.Clone(m.Pattern))
		}
	}
	return false
}

// subscribe notes the classes of suspending CLASS_PREPARE events.
func (pr *prepareRule) subscribe(t *trigger.Manager) {
	t.OnEvent(jdwp.EventClassPrepare, pr.onPrepareEvent)
}

// seen does nothing: the classes come by subscription (compositor).
func (pr *prepareRule) seen(*jdwp.Composite, error) {}

// taken forgets the composite's classes, speculated on or not.
func (pr *prepareRule) taken(*jdwp.Composite) { pr.pending = pr.pending[:0] }

// matches says how the patterns of the debugger's requests match the
// class of signature sig ("Lp/q/C;" is named p.q.C; a pattern may start
// or end with '*'): by one naming it, else only by one of an outer
// class's inner classes (ending in "$*"), else not.
func (pr *prepareRule) matches(sig string) matchKind {
	if len(sig) < 3 || sig[0] != 'L' || sig[len(sig)-1] != ';' {
		return matchNone
	}
	name := []byte(sig[1 : len(sig)-1])
	for i, b := range name {
		if b == '/' {
			name[i] = '.'
		}
	}
	kind := matchNone
	for _, p := range pr.patterns {
		switch {
		case p[0] == '*' && bytes.HasSuffix(name, p[1:]),
			p[len(p)-1] == '*' && bytes.HasPrefix(name, p[:len(p)-1]),
			bytes.Equal(name, p):
			if !bytes.HasSuffix(p, []byte("$*")) {
				return matchName
			}
			kind = matchInner
		}
	}
	return kind
}

// onPrepareEvent notes a class prepared by a suspending event; it is
// speculated on once the whole composite is read (prepareStop).
func (pr *prepareRule) onPrepareEvent(policy jdwp.SuspendPolicy, e *jdwp.Event) {
	if policy != jdwp.SuspendNone && len(pr.pending) < maxPrepareMethods {
		pr.pending = append(pr.pending, preparedClass{id: e.ClassID(), sig: string(e.Signature)})
	}
}

// stopped speculates, at a suspending event, the class reads for the
// classes it prepared; such a stop is active until the debugger resumes
// (pushSeams.prepare).
func (pr *prepareRule) stopped(sizes jdwp.IDSizes) {
	pr.push.prepare = len(pr.pending) > 0
	if len(pr.pending) == 0 || !pr.speculating() {
		return
	}
	pr.takeStops(sizes)
	if pr.stop == nil {
		pr.stop = map[jdwp.ClassID]*stopClass{}
	}
	for _, pc := range pr.pending {
		kind := pr.matches(pc.sig)
		pr.stop[pc.id] = &stopClass{kind: kind}
		if pr.resolves[kind] < 0 {
			continue // the debugger read no class matched so at the last stop with one
		}
		matched := kind != matchNone
		w := pr.writer(sizes)
		w.Class(pc.id)
		pr.pbuf = w.Buf
		if matched {
			pr.specPrepare(sizes, pr.membersCmd(), pr.pbuf)
			pr.specPrepare(sizes, jdwp.CmdReferenceTypeSourceDebugExtension, pr.pbuf)
		}
		for c := range pr.classCmds {
			pr.specPrepare(sizes, c, pr.pbuf)
		}
	}
	for c := range pr.vmCmds {
		pr.specPrepare(sizes, c, nil)
	}
}

// membersCmd is the methods command this debugger asks: MethodsWithGeneric
// (JDI, on any VM of JDWP 1.5 or later) unless it asked only Methods.
func (pr *prepareRule) membersCmd() jdwp.Cmd {
	if pr.learn.asked[jdwp.CmdReferenceTypeMethods] != 0 && pr.learn.asked[jdwp.CmdReferenceTypeMethodsWithGeneric] == 0 {
		return jdwp.CmdReferenceTypeMethods
	}
	return jdwp.CmdReferenceTypeMethodsWithGeneric
}

// replied chains, from a Methods reply for a class of the current
// prepare stop, the method reads for its methods (in the reply's order).
func (pr *prepareRule) replied(x *reply) {
	c, params, p, sizes := x.c, x.params, x.p, x.sizes
	if x.offered || !x.ok || c != jdwp.CmdReferenceTypeMethods && c != jdwp.CmdReferenceTypeMethodsWithGeneric {
		return
	}
	class := jdwp.NewBodyReader(params, sizes).Class()
	sc, ok := pr.stop[class]
	if !ok || !pr.canSend || !pr.speculating() {
		return
	}
	matched := sc.kind != matchNone
	if !matched && len(pr.methodCmds) == 0 {
		return
	}
	n := 0
	eachMethod(c, p.Body(), sizes, func(id jdwp.MethodID, _ int32) bool {
		w := pr.writer(sizes)
		w.Class(class)
		w.Method(id)
		pr.pbuf = w.Buf
		if matched {
			pr.specPrepare(sizes, jdwp.CmdMethodLineTable, pr.pbuf)
		}
		for mc := range pr.methodCmds {
			pr.specPrepare(sizes, mc, pr.pbuf)
		}
		n++
		return n < maxPrepareMethods
	})
}

// specPrepare sends the class-lifetime read c with params as the prepare
// rule's speculation, unless cached or in flight or its IDs were not
// handed out by this connection.
func (pr *prepareRule) specPrepare(sizes jdwp.IDSizes, c jdwp.Cmd, params []byte) {
	if len(pr.specs) >= maxPrepareSpecs || pr.recording() && !pr.attachAllowed() {
		return
	}
	s := &spec{kind: prepareKind(c), prep: true}
	info, ok := keyable.Fill(&s.key, c, params, sizes)
	if !ok || !prepareRead(info, c) || !pr.facts.scopeOK(info, keyable.Subject{}) {
		return
	}
	s.info, s.subj = info, s.key.Subject(info, sizes)
	if !pr.sendOwn(s, sizes) {
		return
	}
	pr.specs = append(pr.specs, s)
	if pr.recording() && len(pr.ownSpecs) < maxAttachCmds {
		pr.ownSpecs = append(pr.ownSpecs, s) // part of the attach's use (AttachUse)
	}
}

func prepareKind(c jdwp.Cmd) kind {
	switch c {
	case jdwp.CmdReferenceTypeMethods, jdwp.CmdReferenceTypeMethodsWithGeneric:
		return kClassMembers
	case jdwp.CmdReferenceTypeSourceFile, jdwp.CmdReferenceTypeSourceDebugExtension:
		return kClassSource
	case jdwp.CmdMethodLineTable:
		return kLineTable
	case jdwp.CmdMethodVariableTable, jdwp.CmdMethodVariableTableWithGeneric:
		return kVarTable
	}
	return kClassInfo
}

// prepareRead says whether the prepare rule may speculate c (described
// by info): a class-lifetime read of a class or its method, or a read of
// the VM's state without parameters (its threads, read while the stop
// lasts: ScopeVM, under the moment's rules at a stop of one thread).
func prepareRead(info keyable.Info, c jdwp.Cmd) bool {
	var a [4]keyable.Param
	return info.Tier == keyable.TierClass ||
		info.Tier == keyable.TierStop && info.Scope == keyable.ScopeVM && len(info.Params(a[:0])) == 0 && c.Set == jdwp.SetVirtualMachine
}

// asked learns what the debugger asks of a class prepared at the
// current prepare stop, and of the VM's state there.
func (pr *prepareRule) asked(key *keyable.Key, info keyable.Info, sizes jdwp.IDSizes) {
	if len(pr.stop) == 0 {
		return
	}
	if info.Tier == keyable.TierStop && prepareRead(info, key.Cmd()) { // the VM's state, no parameters
		pr.note(&pr.vmCmds, key.Cmd())
		return
	}
	if info.Tier != keyable.TierClass {
		return
	}
	r := jdwp.NewBodyReader(key.Params(), sizes)
	sc, ok := pr.stop[r.Class()]
	if !ok || r.Err() != nil {
		return
	}
	sc.read = true
	learned := &pr.classCmds
	if r.Remaining() > 0 {
		if r.Method(); r.Err() != nil || r.Remaining() != 0 {
			return
		}
		learned = &pr.methodCmds
	}
	pr.note(learned, key.Cmd())
}

// endStop ends the prepare stop at the debugger's resume: what it sent
// and the debugger did not use is wasted.
func (pr *prepareRule) endStop() {
	pr.push.prepare = false
	wasted := 0
	for _, s := range pr.specs {
		switch {
		case !s.sent:
			pr.disp.forget(s)
			s.cancelled = true
		case !s.used && !s.done:
			s.done = true
			traceSpec(s, outcomeWasted, pr.learn.serial)
			wasted++
		}
	}
	pr.sp.countSpec(outcomeWasted, wasted)
	pr.specs = pr.specs[:0]
	var seen, read [numMatchKinds]bool
	for _, sc := range pr.stop {
		seen[sc.kind] = true
		read[sc.kind] = read[sc.kind] || sc.read
	}
	for k := range seen {
		switch {
		case !seen[k]:
		case read[k]:
			pr.resolves[k] = 1
		default:
			pr.resolves[k] = -1
		}
	}
	clear(pr.stop)
}

// maxPrepareCmds bounds the commands learned per prepared class and method.
const maxPrepareCmds = 16

// exportTo keeps in profile p what the debugger asks at CLASS_PREPARE stops
// (ID-free: commands only), and which kinds of matched classes it read.
func (pr *prepareRule) exportTo(p, _ *profile, _ jdwp.IDSizes) {
	p.PrepClass, p.PrepMethod, p.PrepVM = sortedCmds(pr.classCmds), sortedCmds(pr.methodCmds), sortedCmds(pr.vmCmds)
	p.PrepRead = nil
	if pr.resolves != [numMatchKinds]int8{} {
		p.PrepRead = append(p.PrepRead, pr.resolves[:]...)
	}
}

// takeStops takes what the profile of the debugger's JDI (the one whose
// stop templates the session took) saw asked at CLASS_PREPARE stops (its
// commands join what this session learns: importFrom): the profile of its
// first command may be another JDI's (the prior's is OpenJDK's, whose JDI
// reads nothing of the VM there; Eclipse's reads the thread list as it
// resumes a stop that suspended all).
func (pr *prepareRule) takeStops(sizes jdwp.IDSizes) {
	if p := pr.stopsOf(); p != nil {
		pr.importFrom(p, sizes)
	}
}

// importFrom starts the session knowing what an earlier session of the same
// debugger saw asked at CLASS_PREPARE stops.
func (pr *prepareRule) importFrom(p *profile, _ jdwp.IDSizes) {
	for _, c := range p.PrepClass {
		pr.note(&pr.classCmds, c)
	}
	for _, c := range p.PrepMethod {
		pr.note(&pr.methodCmds, c)
	}
	for _, c := range p.PrepVM {
		pr.note(&pr.vmCmds, c)
	}
	if len(p.PrepRead) == int(numMatchKinds) {
		copy(pr.resolves[:], p.PrepRead)
	}
}

func (pr *prepareRule) note(m *map[jdwp.Cmd]bool, c jdwp.Cmd) {
	if *m == nil {
		*m = map[jdwp.Cmd]bool{}
	}
	if len(*m) < maxPrepareCmds {
		(*m)[c] = true
	}
}

// compareCmd orders commands by command set, then command.
func compareCmd(a, b jdwp.Cmd) int {
	return cmp.Or(cmp.Compare(a.Set, b.Set), cmp.Compare(a.Cmd, b.Cmd))
}

// sortedCmds is m's commands in one order (a profile file does not
// churn), nil if none.
func sortedCmds[V any](m map[jdwp.Cmd]V) []jdwp.Cmd {
	if len(m) == 0 {
		return nil
	}
	return slices.SortedFunc(maps.Keys(m), compareCmd)
}

// prepareValid says whether commands read back from a profile are
// class-lifetime reads, within bounds.
func prepareValid(cs []jdwp.Cmd) bool {
	if len(cs) > maxPrepareCmds {
		return false
	}
	for _, c := range cs {
		if info, ok := keyable.Lookup(c); !ok || !prepareRead(info, c) {
			return false
		}
	}
	return true
}
