package speculator

import (
	"slices"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
)

// kind is the prediction rule that produced a speculation; usage is
// tracked per kind so rules the debugger does not benefit from stop.
type kind uint8

const (
	kTemplate     kind = iota // replay of a command the debugger sent at the last stop
	kDefault                  // first-stop guesses: frame count, frames, threads
	kThreadName               // name of each thread of an AllThreads reply
	kThreadStatus             // status of each thread of an AllThreads reply
	kObsolete                 // Method.IsObsolete of each frame's method
	kThis                     // StackFrame.ThisObject at learned depths
	kFrameValues              // StackFrame.GetValues with the learned slots
	kRefType                  // ObjectReference.ReferenceType of objects found
	kString                   // StringReference.Value of strings found
	kArrayLength              // ArrayReference.Length of arrays found
	kArrayValues              // ArrayReference.GetValues with the learned range
	kFields                   // ObjectReference.GetValues with the learned fields
	kFrames                   // ThreadReference.Frames sized by the learned rule from the frame count
	kClassSource              // ReferenceType.SourceFile and SourceDebugExtension of frame classes
	kClassMembers             // ReferenceType.Methods(WithGeneric) of frame classes
	kClassInfo                // fields, interfaces, superclass of object types and their superclasses
	kLineTable                // Method.LineTable of frame methods
	kVarTable                 // Method.VariableTable(WithGeneric) of frame methods at learned depths
	kAttach                   // the attach's prefetch and learned sequence (attach.go)
	kPredThis                 // StackFrame.ThisObject on a predicted frame ID (framepredict.go)
	kPredValues               // StackFrame.GetValues on a predicted frame ID, with the learned slots
	kTypeSig                  // ReferenceType.Signature of object types no reply named
	kLearned                  // a template of the learned rules (learned.go), gated per template
	numKinds
)

// template is a stop-state command the debugger sent at a previous stop,
// replayed at the next. rel marks a ThreadReference command about the
// stopped thread, replayed for the new stopped thread.
type template struct {
	key     keyable.Key // with the thread ID zeroed when rel
	rel     bool
	seen    uint64 // last episode the debugger sent it
	unused  int    // consecutive stops at which its replay went unused
	stops   int    // stops at which the debugger sent it
	removed bool
}

// patience is how many stops in a row template t's replay may go unused
// before it is dropped: one for a read of an object's value (its fields,
// elements, length, a string), whose object a debugger reads at each stop
// it shows it (the stop's replies name it: the learned rules replay such
// reads by where the object was found, learned.go) and reads no more once
// the variable holds another one (each further replay of it is wasted);
// two for any other read (a stop's frames, a thread's state), which a
// debugger may skip at one stop.
func (t *template) patience() int {
	if _, ok := readOf(t.key.Cmd()); ok {
		return 1
	}
	return 2
}

// frameInfo is what a Frames reply said of one frame.
type frameInfo struct {
	depth  int
	thread jdwp.ThreadID
	loc    jdwp.Location
}

// methodKey names a method, or (exact) one code index of it.
type methodKey struct {
	class  jdwp.ClassID
	method jdwp.MethodID
	index  uint64
	exact  bool
}

func methodOf(loc jdwp.Location) methodKey {
	return methodKey{class: loc.ClassID(), method: loc.MethodID()}
}

// episode is one stop: from a suspending event to the next resume or stop.
type episode struct {
	active    bool
	serial    uint64
	thread    jdwp.ThreadID
	loc       jdwp.Location              // where the stop event says the thread is
	frames    map[jdwp.FrameID]frameInfo // frames of this stop's Frames replies
	predicted []*spec                    // speculation on predicted frame IDs (framepredict.go)
	requested []*template                // templates the debugger sent, in order
	specs     []*spec
	// unplaced: at a far end, the near end read running state at this
	// stop, so it places none of this stop's replies of running state
	// sent from here on (offerPos): none is sent (unqueueRunning).
	unplaced   bool
	frameCount int32  // the stopped thread's frame count, 0 until seen
	valueDepth uint64 // depths whose values the debugger asked (bit set)
	thisDepth  uint64
	threads    []jdwp.ThreadID         // the VM's threads, from this stop's AllThreads reply
	others     listed                  // what the debugger asked of threads other than the stopped one
	expanded   [numKinds]bool          // rules already widened by expandSiblings
	wantFields map[jdwp.ObjectID]uint8 // objects awaiting their type before fields
	wantArray  map[jdwp.ObjectID]bool  // arrays awaiting their length before values
	// objLevel is the nesting level at which the stop's speculation found
	// each object (values), and readLevel one more than the deepest level
	// of the objects the debugger read, by kind of read (valueRules.asked).
	objLevel  map[jdwp.ObjectID]uint8
	readLevel [numReads]uint8
	// found and read count, by kind of read and level, the objects (with
	// fields) and arrays the value rules found at the stop and those of
	// them the debugger read (valueRules.asked); readObj marks, by bit
	// of kind, an object counted read.
	found, read [numReads][maxValueLevel + 1]uint16
	readObj     map[jdwp.ObjectID]uint8
	// objects are the objects with fields the value rules found (in
	// objLevel), and listed the types whose fields the debugger asked, at
	// this stop (learner.learnShownFacts).
	objects []jdwp.ObjectID
	listed  []jdwp.ClassID
	// deeper: the debugger read a value deeper than the stop followed
	// (learner.follows), so the rest of the stop follows every level, and
	// deferred (what the value rules found and did not follow) is
	// followed at once (valueRules.deepen).
	deeper   bool
	deferred []deferredValue
	sentKind [numKinds]int
	usedKind [numKinds]int
	asked    map[jdwp.Cmd]bool // commands the debugger sent during this stop
	partial  bool              // the stop suspended only some threads (moment.go)
	// invoked: the debugger invoked a method during this stop, which
	// voided the stop's state (facts.invokeSent).
	invoked bool
	// shadow holds what gated rules would have sent at this stop, scored
	// against what the debugger asks as if sent (at no cost to the VM).
	shadow     map[keyable.Key]kind
	shadowKind [numKinds]int
	shadowUsed [numKinds]int
}

// learner is what the session learned about the debugger across stops,
// and the current stop (ep). Guarded by session.mu.
//
// It owns the templates, the learned parameters (slots, fields, array
// range, frames rule, depths) and the usage gates: a rule keeps predicting
// only while its speculation gets used (ratio), and stop-state speculation
// pauses on fast links while most of it is wasted (waste). Invariants:
// every template in templates is either removed or in byKey under its key;
// ep.serial is the serial of the last episode begun and grows by one per
// stop; every bounded map is cleared rather than grown past its bound.
type learner struct {
	ep     episode
	serial uint64
	// stopSig is the signature command the stop templates taken from a
	// profile ask (learnedRules.take), zero if none or both.
	stopSig jdwp.Cmd
	// profiled says the learned rules took a profile with templates of
	// the current stop's kind (learnedRules.stopped): near the debugger,
	// their roots, once its first read confirms them, stand for a first
	// stop's guesses beyond the stopped thread's frames and name
	// (core.guessesLearned).
	profiled bool
	// firstRead is what the session's first stop's reads said of the
	// profile (learnedRules.confirm).
	firstRead firstState
	templates []*template
	byKey     map[keyable.Key]*template
	slots     map[methodKey]*slotLists // SF.GetValues parameters after the frame ID
	// visibleSlots is whether the debugger reads, of a frame, the values
	// of every variable visible at its location (JDI's visibleVariables,
	// as classFacts.visibleSlots lists them, in any order):
	// 1 at the last read whose method's variables were known, -1 not, 0
	// none yet. Then a frame at a code index it never read is read by its
	// visible variables, not by the method's last list (core.frameSlots).
	visibleSlots int8
	visBuf       []byte                  // visibleSlots' scratch
	fields       map[jdwp.ClassID][]byte // reference type -> OR.GetValues parameters after the object ID
	arrReads     []arrRead               // the debugger's ArrayReference.GetValues (first, length), latest first, distinct
	arrKnown     bool
	// fieldOrder is how the debugger lists the fields of an object whose
	// type it never read (a profile's, until orderSeen: learned from this
	// session's reads by shapeRules.asked).
	fieldOrder fieldOrder
	orderSeen  bool
	// framesRule is how many top frames the debugger asks after the
	// frame count: 0 unknown, -1 all of them, n > 0 at most n.
	framesRule int32
	valueDepth uint64
	thisDepth  uint64
	// readLevel is, by kind of read, one more than the deepest nesting
	// level of the values a stop shows that the debugger read at the last
	// stop it showed (0: none), once levelsKnown (learner.follows).
	readLevel   [numReads]uint8
	levelsKnown bool
	// sparse says, by kind of read and level, that at the last stop that
	// found such values there the debugger read fewer than half of them
	// (the one of several siblings its user opened): the stop does not
	// follow them all (learner.follows), the learned rules reading again
	// the ones it read, by where they were found.
	sparse [numReads][maxValueLevel + 1]bool
	// named is, for each thread whose name the debugger asked in this
	// session, serial+1 when it last did; renames, that it asked one
	// again after a resume (OpenJDK's JDI, at each stop) rather than once
	// a thread (Eclipse's JDI: java-debug names a thread when it first
	// lists it). Until it renames, the rules name no thread it named.
	named   map[jdwp.ThreadID]uint64
	renames bool
	// shownFacts is whether the debugger lists the type facts of an
	// object it shows (reads the type of) but does not open (reads no
	// field of), learned at the stops that showed one whose type it never
	// listed before (learnShownFacts); listed holds the types whose
	// fields it asked in this session.
	shownFacts factsListing
	listed     map[jdwp.ClassID]struct{}
	ratio      [numKinds]float64 // smoothed used/sent per kind
	waste      float64           // smoothed wasted/sent of stop-state speculation
	// asked is one more than the last episode (0: the attach) in which the debugger sent
	// each cacheable command (any parameters); rules derived from replies
	// predict only commands the debugger sends in this workload.
	asked map[jdwp.Cmd]uint64
	// shapes are the fields the debugger read of objects by their type's
	// signature, from the profile (shapes.go); fields (by this session's
	// class IDs) take precedence.
	shapes map[string][]fieldRef
	// threads are the VM's threads as the last AllThreads reply listed
	// them (the attach's, before the first stop).
	threads []jdwp.ThreadID
	// others is what, at the last stop it asked anything, the debugger
	// asked of a thread other than the stopped one: a debugger that lists
	// its threads, rather than only naming the one that stopped
	// (specKnownThreads).
	others listed
	tbuf   []byte // template parameters scratch
}

func newLearner() learner {
	l := learner{byKey: map[keyable.Key]*template{}, slots: map[methodKey]*slotLists{},
		fields: map[jdwp.ClassID][]byte{}, asked: map[jdwp.Cmd]uint64{}}
	for i := range l.ratio {
		l.ratio[i] = 1
	}
	return l
}

// Bounds of learned state and of speculation per stop.
const (
	maxTemplates   = 1024
	maxLearned     = 4096
	maxSpecPerStop = 1024
	maxDepth       = 64
)

// kindAllowed gates prediction rules: a derived rule (not a template or the
// first-stop default) predicts command c only if the debugger has sent c
// (with any parameters) in this session and not left it unasked at a stop
// where a rule predicted it (endEpisode). The debugger not sending c at a
// stop no rule predicted it at is no evidence against the rule: the stop
// may have had nothing to ask it about (no string, no new class).
func (l *learner) kindAllowed(k kind, c jdwp.Cmd) bool {
	return !derived(k) || l.asked[c] != 0
}

// shadowed says whether a derived rule's prediction key is held back
// because little of the rule's speculation gets used; it is then noted as
// the rule's shadow and scored as if sent, so the rule comes back as soon
// as the debugger asks what it predicts (without probes costing the VM).
func (l *learner) shadowed(k kind, key *keyable.Key) bool {
	if !derived(k) || l.ratio[k] >= minRatio {
		return false
	}
	ep := &l.ep
	if ep.shadow == nil {
		ep.shadow = map[keyable.Key]kind{}
	}
	if _, dup := ep.shadow[*key]; !dup && len(ep.shadow) < maxSpecPerStop {
		ep.shadow[*key] = k
		ep.shadowKind[k]++
	}
	return true
}

// minRatio is the smoothed used/sent under which a rule stops sending.
const minRatio = 0.3

// derived says whether rule k predicts from replies (gated by asked),
// rather than replaying the debugger (templates) or guessing the first stop.
func derived(k kind) bool { return k != kTemplate && k != kDefault && k != kLearned }

func (l *learner) beginEpisode(thread jdwp.ThreadID, loc jdwp.Location) {
	l.serial++
	l.ep = episode{active: true, serial: l.serial, thread: thread, loc: loc, frames: map[jdwp.FrameID]frameInfo{},
		wantFields: map[jdwp.ObjectID]uint8{}, wantArray: map[jdwp.ObjectID]bool{}, objLevel: map[jdwp.ObjectID]uint8{}}
}

// endEpisode accounts the stop's speculation, drops what it still had
// queued at d, updates what was learned, and returns the number of its
// stop-state speculations wasted.
func (l *learner) endEpisode(d *dispatcher) (wasted int) {
	ep := &l.ep
	if !ep.active {
		return 0
	}
	for _, s := range ep.specs {
		if s.cancelled || !s.sent {
			d.forget(s)
			continue
		}
		if s.used {
			ep.usedKind[s.kind]++
		} else if s.info.Tier == keyable.TierStop && !s.done {
			s.done = true
			traceSpec(s, outcomeWasted, ep.serial)
			wasted++
			if c := s.key.Cmd(); derived(s.kind) && !ep.asked[c] {
				// A rule predicted c and the debugger did not ask it at
				// all at this stop: no rule predicts c until it does.
				delete(l.asked, c)
			}
		}
		if t := s.tmpl; t != nil && !t.removed {
			if s.used || t.seen == ep.serial {
				t.unused = 0
			} else if t.unused++; t.unused >= t.patience() {
				t.removed = true
				delete(l.byKey, t.key)
			}
		}
	}
	d.dropQueue()
	if ep.partial && len(ep.asked) > 0 {
		// Other threads ran during this stop: a template of their state
		// whose command the debugger did not send at all is not replayed
		// again (each would be a read of the running program for nothing).
		for _, t := range l.templates {
			if info, _ := keyable.Describe(t.key.Cmd()); !t.removed && info.Scope == keyable.ScopeVM && !ep.asked[t.key.Cmd()] {
				t.removed = true
				delete(l.byKey, t.key)
			}
		}
	}
	if stopSent := countStopSent(ep.specs); stopSent > 0 {
		l.waste = l.waste/2 + float64(wasted)/float64(stopSent)/2
	} else {
		// Nothing sent (paused, or all cached) is no new evidence of
		// waste: let the estimate fade so a pause ends after a few stops
		// rather than only at a probe.
		l.waste *= 0.75
	}
	for k := range ep.sentKind {
		if n := ep.sentKind[k] + ep.shadowKind[k]; n > 0 {
			l.ratio[k] = l.ratio[k]/2 + float64(ep.usedKind[k]+ep.shadowUsed[k])/float64(n)/2
		}
	}
	// Templates for the next stop: what the debugger sent at this one, in
	// its order, then the older ones still alive.
	if len(ep.requested) > 0 {
		next := append([]*template(nil), ep.requested...)
		for _, t := range l.templates {
			if !t.removed && t.seen != ep.serial && len(next) < maxTemplates {
				next = append(next, t)
			}
		}
		l.templates = next
	} else {
		live := l.templates[:0]
		for _, t := range l.templates {
			if !t.removed {
				live = append(live, t)
			}
		}
		l.templates = live
	}
	if len(ep.asked) > 0 {
		l.others = ep.others
	}
	if ep.valueDepth != 0 {
		l.valueDepth = ep.valueDepth
	}
	if ep.readLevel != [numReads]uint8{} || ep.asked[jdwp.CmdThreadReferenceFrames] {
		// The debugger showed the stop (its frames): as deep as it read
		// values there, or none (a debugger that steps with no variable
		// shown, as jdb).
		l.readLevel, l.levelsKnown = ep.readLevel, true
	}
	if ep.thisDepth != 0 {
		l.thisDepth = ep.thisDepth
	}
	for rk := range ep.found {
		for lv, n := range ep.found[rk] {
			if n > 0 {
				l.sparse[rk][lv] = 2*ep.read[rk][lv] < n
			}
		}
	}
	*ep = episode{}
	return wasted
}

func countStopSent(specs []*spec) int {
	n := 0
	for _, s := range specs {
		if s.sent && !s.cancelled && s.info.Tier == keyable.TierStop {
			n++
		}
	}
	return n
}

// factsListing is what a debugger was seen to do with the type facts of
// the objects a stop shows and it does not open (learner.shownFacts).
type factsListing uint8

const (
	factsUnknown   factsListing = iota // not seen yet: listed (as OpenJDK's JDI does)
	factsListed                        // it listed some (OpenJDK's JDI)
	factsNotListed                     // it listed none it had not listed before (Eclipse's JDI)
)

// maxListed bounds the types the learner keeps as listed by the debugger.
const maxListed = 1 << 14

// learnShownFacts learns shownFacts from the stop that ends (objType:
// the type of each object, as known): whether the debugger listed the
// fields of the type of an object it showed and did not open, or listed
// none of the types of such objects it had never listed before (a type
// listed at an earlier stop it does not list again). A type of an object
// it opened says nothing (it lists the fields of what it opens).
func (l *learner) learnShownFacts(objType map[jdwp.ObjectID]jdwp.ClassID) {
	ep := &l.ep
	if len(ep.objects) == 0 {
		l.noteListed(ep.listed)
		return
	}
	opened := map[jdwp.ClassID]bool{}
	for _, o := range ep.objects {
		if t, ok := objType[o]; ok && ep.readObj[o]&(1<<readFields) != 0 {
			opened[t] = true
		}
	}
	listedNow := map[jdwp.ClassID]bool{}
	for _, t := range ep.listed {
		listedNow[t] = true
	}
	var listed, silent bool
	for _, o := range ep.objects {
		t, ok := objType[o]
		if !ok || opened[t] || ep.readObj[o]&(1<<readNames) == 0 {
			continue // not shown, or of a type the debugger opened
		}
		if listedNow[t] {
			listed = true
		} else if _, before := l.listed[t]; !before {
			silent = true
		}
	}
	switch {
	case listed:
		l.shownFacts = factsListed
	case silent:
		l.shownFacts = factsNotListed
	}
	l.noteListed(ep.listed)
}

func (l *learner) noteListed(types []jdwp.ClassID) {
	if len(l.listed)+len(types) > maxListed {
		clear(l.listed)
	}
	if l.listed == nil && len(types) > 0 {
		l.listed = map[jdwp.ClassID]struct{}{}
	}
	for _, t := range types {
		l.listed[t] = struct{}{}
	}
}

// firstState is what the reads at a session's first stop said of the
// profile it took (learnedRules.confirm).
type firstState uint8

const (
	firstUnknown   firstState = iota // nothing decided yet
	firstConfirmed                   // its debugger read the profile's first read before any read refuting it, or the profile says nothing
	firstRefuted                     // it read otherwise: another debugger's profile
)

// forgetProfile forgets what the learner took of a profile whose
// debugger reads otherwise than this session's (learnedRules.confirm):
// the commands it asked, with those this session's debugger asked before
// its first stop (the rules deriving from replies predict at a stop only
// what this debugger asked at one), and its templates this session's
// debugger has not asked.
func (l *learner) forgetProfile() {
	for c, at := range l.asked {
		if at <= 1 {
			delete(l.asked, c)
		}
	}
	kept := l.templates[:0]
	for _, t := range l.templates {
		if t.seen == 0 {
			t.removed = true
			delete(l.byKey, t.key)
			continue
		}
		kept = append(kept, t)
	}
	clear(l.templates[len(kept):])
	l.templates = kept
}

// learnCommand records what the debugger asks during a stop. objType is
// the known type of an object (facts.objType). served says a near end
// served it from the stop's pushed replies (Session.Asked): read before
// any invoke of the stop, which voids them there, whenever its report
// comes.
func (l *learner) learnCommand(key *keyable.Key, info keyable.Info, subj keyable.Subject, sizes jdwp.IDSizes,
	objType map[jdwp.ObjectID]jdwp.ClassID, classes *classFacts, served bool) {
	ep := &l.ep
	c := key.Cmd()
	l.asked[c] = l.serial + 1 // 1 at the attach, n+1 at stop n
	if c == jdwp.CmdThreadReferenceName {
		l.nameAsked(jdwp.NewBodyReader(key.Params(), sizes).Thread())
	}
	if !ep.active {
		return
	}
	if ep.asked == nil {
		ep.asked = map[jdwp.Cmd]bool{}
	}
	ep.asked[c] = true
	if k, ok := ep.shadow[*key]; ok {
		delete(ep.shadow, *key)
		ep.shadowUsed[k]++
	}
	params := key.Params()
	switch c {
	case jdwp.CmdStackFrameGetValues, jdwp.CmdStackFrameThisObject:
		r := jdwp.NewBodyReader(params, sizes)
		r.Thread()
		fi, ok := ep.frames[r.Frame()]
		if !ok || fi.depth >= maxDepth {
			return
		}
		if c == jdwp.CmdStackFrameThisObject {
			ep.thisDepth |= 1 << fi.depth
			return
		}
		ep.valueDepth |= 1 << fi.depth
		tail := params[sizes.ObjectID+sizes.FrameID:]
		if classes != nil {
			if vis, ok := classes.visibleSlots(l.visBuf[:0], fi.loc); ok {
				l.visBuf = vis
				l.visibleSlots = -1
				if len(vis) == len(tail) && len(tail) >= 4 && covers(vis[4:], tail[4:], 5) {
					l.visibleSlots = 1 // in any order: it is answered in its own (permute.go)
				}
			}
		}
		mk := methodOf(fi.loc)
		l.slotsOf(mk).add(ep.serial, tail)
		mk.index, mk.exact = fi.loc.Index, true
		l.slotsOf(mk).add(ep.serial, tail)
		return
	case jdwp.CmdObjectReferenceGetValues:
		if t, ok := objType[jdwp.NewBodyReader(params, sizes).Object()]; ok {
			if len(l.fields) >= maxLearned {
				clear(l.fields)
			}
			l.fields[t] = setBytes(l.fields[t], params[sizes.ObjectID:])
		}
	case jdwp.CmdThreadReferenceFrames:
		r := jdwp.NewBodyReader(params, sizes)
		thread, start, n := r.Thread(), r.Int32(), r.Int32()
		if cnt := ep.frameCount; thread == ep.thread && start == 0 && n > 0 && cnt > 0 {
			switch {
			case n < cnt:
				l.framesRule = n
			case n == cnt && (l.framesRule <= 0 || n > l.framesRule):
				l.framesRule = -1
			}
		}
	case jdwp.CmdThreadReferenceName, jdwp.CmdThreadReferenceStatus:
		if firstThread(key, sizes) != ep.thread {
			ep.others.names = ep.others.names || c == jdwp.CmdThreadReferenceName
			ep.others.statuses = ep.others.statuses || c == jdwp.CmdThreadReferenceStatus
		}
	case jdwp.CmdArrayReferenceGetValues:
		l.arrKnown = true // (the read itself: valueRules.asked, which knows the array's length)
	}
	if info.Tier != keyable.TierStop || ep.invoked && !served {
		// (A read after an invoke is no template: replayed at the next
		// stop's event, its reply would be voided by that stop's invoke
		// before the debugger asked; read before it too, it is one.)
		return
	}
	// A template: replayed verbatim (or for the new stopped thread).
	tk := *key
	rel := c.Set == jdwp.SetThreadReference && firstThread(key, sizes) == ep.thread
	if rel {
		tk = l.withThread(key, 0, sizes)
	}
	t := l.byKey[tk]
	if t == nil {
		if len(l.byKey) >= maxTemplates {
			return
		}
		t = &template{key: tk, rel: rel}
		l.byKey[tk] = t
	}
	t.unused = 0
	if t.seen != ep.serial {
		t.seen = ep.serial
		t.stops++
		ep.requested = append(ep.requested, t)
	}
}

// explained drops the verbatim template of key, which the debugger sent
// at this stop, because the learned rules (learned.go) explain an ID in it
// by a reply of this stop and saw those IDs change from stop to stop:
// replayed verbatim at the next stop, it would ask the last stop's
// objects.
func (l *learner) explained(key *keyable.Key, sizes jdwp.IDSizes) {
	ep := &l.ep
	tk := *key
	if key.Cmd().Set == jdwp.SetThreadReference && firstThread(key, sizes) == ep.thread {
		tk = l.withThread(key, 0, sizes)
	}
	t := l.byKey[tk]
	if t == nil || t.seen != ep.serial {
		return
	}
	t.removed = true
	delete(l.byKey, tk)
	if i := slices.Index(ep.requested, t); i >= 0 {
		ep.requested = slices.Delete(ep.requested, i, i+1)
	}
}

// firstThread is the thread a ThreadReference command's parameters start
// with.
func firstThread(k *keyable.Key, sizes jdwp.IDSizes) jdwp.ThreadID {
	return jdwp.NewBodyReader(k.Params(), sizes).Thread()
}

// slotLists are the slot lists the debugger asked of the frames of one
// method (at one code index, if exact) at the last stop it asked any
// there: StackFrame.GetValues' parameters after the frame, one per
// distinct command, at most maxSlotLists (a watched variable beside the
// Variables view's), in the order asked. A stop's lists replace an
// earlier stop's, so a debugger that asks one list a frame keeps one.
type slotLists struct {
	serial uint64 // the stop they were asked at (0: taken from a profile)
	n      int
	lists  [maxSlotLists][]byte
}

const maxSlotLists = 2

// add records list, asked at stop serial.
func (s *slotLists) add(serial uint64, list []byte) {
	if s.serial != serial {
		s.serial, s.n = serial, 0
	}
	for _, l := range s.all() {
		if string(l) == string(list) {
			return
		}
	}
	if s.n < len(s.lists) {
		s.lists[s.n] = setBytes(s.lists[s.n], list)
		s.n++
	}
}

// all is the lists, in the order asked (the learner's: valid until the
// next add).
func (s *slotLists) all() [][]byte { return s.lists[:s.n] }

// slotsOf is the slot lists of mk, made if none (the map bounded).
func (l *learner) slotsOf(mk methodKey) *slotLists {
	s, ok := l.slots[mk]
	if !ok {
		if len(l.slots) >= maxLearned {
			clear(l.slots)
		}
		s = &slotLists{}
		l.slots[mk] = s
	}
	return s
}

func setBytes(dst, src []byte) []byte {
	if string(dst) == string(src) {
		return dst
	}
	return append(dst[:0:0], src...)
}

// withThread returns a copy of k whose first (thread) parameter is t.
func (l *learner) withThread(k *keyable.Key, t jdwp.ThreadID, sizes jdwp.IDSizes) keyable.Key {
	l.tbuf = replaceThread(l.tbuf[:0], k.Params(), t, sizes)
	var out keyable.Key
	if _, ok := keyable.Fill(&out, k.Cmd(), l.tbuf, sizes); !ok {
		return *k // cannot happen: same layout, same sizes
	}
	return out
}

// replaceThread appends params to dst with its first (thread) ID set to t.
func replaceThread(dst, params []byte, t jdwp.ThreadID, sizes jdwp.IDSizes) []byte {
	w := jdwp.BodyWriter{Buf: dst, Sizes: sizes}
	w.Thread(t)
	if len(params) >= sizes.ObjectID {
		w.Buf = append(w.Buf, params[sizes.ObjectID:]...)
	}
	return w.Buf
}

// arrRead is the part of an array the debugger read: from First, Len
// elements at most (an IDE reads a head of each array it shows: one size
// to name its elements, another to list them).
type arrRead struct {
	First int32 `json:"first"`
	Len   int32 `json:"len"`
}

// maxArrReads bounds the array reads kept.
const maxArrReads = 4

// arrRead notes an array read of the debugger's: first of the kept ones,
// the oldest dropped past maxArrReads.
func (l *learner) arrRead(a arrRead) {
	if i := slices.Index(l.arrReads, a); i >= 0 {
		l.arrReads = slices.Delete(l.arrReads, i, i+1)
	}
	l.arrReads = slices.Insert(l.arrReads, 0, a)
	if len(l.arrReads) > maxArrReads {
		l.arrReads = l.arrReads[:maxArrReads]
	}
}

// arrPage is how many elements of an array an IDE shows at first (VS
// Code's Java debugger, IntelliJ, Eclipse: a page of 100): a debugger that
// read a whole array reads a longer one's first page.
const arrPage = 100

// arrayRead notes the debugger's read of n elements of an array from
// first: a read of a whole array (its length known here) shorter than a
// page is kept as the page (arrPage), which an array's length clips to
// the whole of it, so that arrays of other lengths are read ahead whole,
// as the debugger reads them, and not also as long as the one it read
// (for each shorter or longer array, a read ahead it never makes); any
// other read is kept as it was (a debugger that shows at most n elements
// of a longer array, or a page past the first).
func (l *learner) arrayRead(first, n, length int32, lengthKnown bool) {
	if lengthKnown && first == 0 && n == length && n < arrPage {
		n = arrPage
	}
	l.arrRead(arrRead{First: first, Len: n})
}

// listed is what a debugger asked of the threads it lists.
type listed struct{ names, statuses bool }

// maxNamed bounds the threads a session keeps it named (learner.named).
const maxNamed = 4096

// nameAsked learns that the debugger asked thread t's name.
func (l *learner) nameAsked(t jdwp.ThreadID) {
	if s, ok := l.named[t]; ok && s != l.serial+1 {
		l.renames = true
	}
	if l.named == nil || len(l.named) >= maxNamed {
		l.named = map[jdwp.ThreadID]uint64{}
	}
	l.named[t] = l.serial + 1
}

// namedBefore says whether the debugger, which names a thread once,
// named thread t before this stop.
func (l *learner) namedBefore(t jdwp.ThreadID) bool {
	s, ok := l.named[t]
	return ok && !l.renames && s != l.serial+1
}

// nameKnown says whether no rule asks thread t's name ahead (the gate is
// core.admit's): the debugger named it in this session, and names a
// thread once. Never the stopped thread's: every debugger shows it at a
// stop.
func (l *learner) nameKnown(t jdwp.ThreadID) bool {
	_, ok := l.named[t]
	return ok && !l.renames && t != l.ep.thread
}

// signatureCmd is the signature command the debugger asked last, if it
// asked one: Eclipse's JDI asks the generic signature of classes at
// attach and the plain one of the objects it shows at a stop. Until it
// asked one at a stop, the one the profile's stop templates ask.
func (l *learner) signatureCmd() (jdwp.Cmd, bool) {
	c, last := jdwp.CmdReferenceTypeSignatureWithGeneric, l.asked[jdwp.CmdReferenceTypeSignatureWithGeneric]
	if plain := l.asked[jdwp.CmdReferenceTypeSignature]; plain > last {
		c, last = jdwp.CmdReferenceTypeSignature, plain
	}
	if last <= 1 && l.stopSig != (jdwp.Cmd{}) { // at the attach, or from a profile
		return l.stopSig, true
	}
	return c, last != 0
}
