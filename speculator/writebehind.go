package speculator

import "github.com/jdwpaccel/jdwpaccel/jdwp"

// Write-behind answers a state-setting debugger command (EventRequest.Set,
// EventRequest.Clear, VirtualMachine.Resume, ThreadReference.Resume) at
// once with the reply the VM will give, sends the command on to the VM as
// the proxy's own (in the debugger's order: it is queued before the hook
// returns) and checks the VM's reply when it comes. It does so only when
// the proxy can prove that reply; everything else is forwarded as before,
// so a debugger sending malformed or invalid requests gets the VM's own
// error. The proof, per session:
//
//   - Set: until the session's first stop, a Set of the same event kind
//     was forwarded in this session and the VM's reply came back (timing,
//     below); the request's event kind,
//     suspend policy and modifier kinds (in order) succeeded before, or the
//     shape is one HotSpot accepts whatever came before (provableShape);
//     every ID in it is one the VM accepted or
//     handed out in this session and still valid; no instance filter; a
//     Count is positive; a step's thread is suspended and has no other step
//     request active. A thread is valid only when proven alive since the
//     threads last ran (facts.suspLost): it is named by an event that
//     suspended it or by an AllThreads reply of this stop, and it has been
//     suspended since, so it cannot have died (its THREAD_DEATH event is
//     one the debugger may never have asked for). Classes, locations and
//     fields depend on whether an unfiltered CLASS_UNLOAD request of this
//     session is active (JDI always has one): if so, they are valid from
//     events, replies naming classes and accepted requests until any
//     CLASS_UNLOAD (locations and fields also until a redefinition); if
//     not, an unload would go unseen, so only what was learned while the
//     whole VM has been suspended since counts. A location is also valid
//     when its index is within its method's code range from a LineTable
//     reply (writeBehind.read), under the same rule. The
//     request ID is predicted: libjdwp numbers requests from one counter
//     (one per Set, failed installs included), so the answer is the last
//     ID plus one once two Sets' replies were consecutive across a stop
//     (or, with the VM suspended, back to back), or at once on HotSpot
//     (seqHotSpot), no forwarded Set is in flight and none failed since the
//     last reply. The shapes, and the back-to-back numbering, may also come
//     from an earlier session on the same kind of VM
//     (writebehind_profile.go); the last ID never does.
//   - Clear: a request this session created and has not cleared, with its
//     own event kind (libjdwp answers NONE, also for a request it already
//     deleted itself, as it does a count-filtered one once it fired).
//   - VirtualMachine.Resume once one succeeded, or on HotSpot's libjdwp
//     once a forwarded Set came back (the session's first, whose latency
//     a client may time, went to the VM): its Resume answers an empty
//     reply but for a dead VM (threadControl_resumeAll treats a thread's
//     death as done; JDWP lists VM_DEAD alone), whose death ends the
//     session either way. ThreadReference.Resume for a thread known
//     suspended, once one succeeded.
//
// Timing. A client may time a state-setting command to measure the link
// and decide from it: java-debug times the VM_DEATH request it sets at
// attach and turns its async mode on above 15 ms (and, above 10 ms,
// stops invoking size(), toArray() and toString() in the debuggee for its
// Variables view). Its JDI (Eclipse's) sets an internal CLASS_UNLOAD
// request before it, so "the session's first Set goes to the VM" is not
// enough. A client measures the link as it attaches, before it sets up
// what it debugs, and with a request that has no filter (nothing of it
// to check, nothing it can get wrong): java-debug's VM_DEATH request, the
// second Set of its session, is followed by its class-prepare requests,
// each with a class pattern. So until the session's first stop (an event
// that suspends, other than VM_START) and until the debugger sent a Set
// with a modifier, the first Set of each event kind is forwarded and
// answered with the VM's own reply, so that whichever of them a client
// times sees the link's real latency. From the first Set with a modifier
// on (that one included), and after the first stop, everything provable
// is written behind. Never before the session's first forwarded Set came
// back: the request ID is predicted from the VM's own (seqExact). It costs
// one round trip per event kind the client sets unfiltered before its
// first filtered request (two for java-debug: CLASS_UNLOAD, VM_DEATH).
//
// A written-behind command the VM answers otherwise (an error, another
// request ID) is logged at error, counted, and ends the debugger's session
// (relay.Session.Fail): a debugger that was told "OK" must not go on with a
// wrong picture. For a request ID the proxy could instead map the ID it
// answered to the VM's and rewrite it in every later event and Clear; it
// does not: the prediction is made only where libjdwp's numbering is
// exact, so a mismatch means the VM numbers otherwise than learned, and
// every event kind's layout would have to be rewritten correctly for a
// case that should not occur. Ending the session is exact and simple.
// Its effects on facts are those of the forwarded command (applyEffect,
// and the reply's effects when the VM's reply comes).

// wbOp is a state-setting command write-behind knows.
type wbOp uint8

const (
	wbSet wbOp = iota + 1
	wbClear
	wbVMResume
	wbThreadResume
)

// inMoment says whether a command of op, written behind, may go to the VM
// in a moment held open (session.stopMoment) without closing it: an event
// request set or cleared while no thread runs takes effect as at any
// instant of the moment, and changes nothing its reads read; a resume
// must run after the moment's own resume, as the debugger sent it.
func (op wbOp) inMoment() bool { return op == wbSet || op == wbClear }

var wbOpCmds = [...]jdwp.Cmd{wbSet: jdwp.CmdEventRequestSet, wbClear: jdwp.CmdEventRequestClear,
	wbVMResume: jdwp.CmdVirtualMachineResume, wbThreadResume: jdwp.CmdThreadReferenceResume}

// maxShapeMods bounds the modifiers of a request write-behind considers;
// malformed is the shape size of a Set it could not read (forwarded, and
// not learned from).
const (
	maxShapeMods = 14
	malformed    = 0xFF
)

// shape is what the VM checks of a request's structure: its event kind,
// suspend policy and modifier kinds, in order.
type shape struct {
	n uint8
	b [2 + maxShapeMods]byte
}

// wbCmd is a state-setting command awaiting its reply (forwarded or
// written behind), kept with it in cmdData.
type wbCmd struct {
	op      wbOp
	written bool // answered at once: the VM's reply is checked, not relayed
	id      int32
	kind    jdwp.EventKind
	shape   shape
	mods    []jdwp.Modifier // Set's modifiers (patterns dropped)
	thread  jdwp.ThreadID   // ThreadReference.Resume's thread
}

// request is an event request this session created and has not cleared.
type request struct {
	kind   jdwp.EventKind
	step   jdwp.ThreadID // a step request's thread
	count  bool          // has a Count modifier: the VM deletes it once it fires
	active bool          // a step request counted in steps
	watch  bool          // a CLASS_UNLOAD request without modifiers: counted in unloadWatch
}

type fieldKey struct {
	class jdwp.ClassID
	field jdwp.FieldID
}

// writeBehind is the write-behind part (parts.go): it reacts to the
// debugger's state-setting commands (command: decides; answer: answers
// the ones it proved, after their effect), to the replies to them
// (settle), to the replies that prove IDs and code ranges and to the
// VM's capabilities (replied), to each composite event (seen, taken), and
// takes and leaves its share of the profile. Guarded by session.mu.
//
// Invariants: last is the VM's latest request ID (predictions included)
// while seqExact; steps counts, per thread, the step requests the VM may
// still have active on it; requests, threads, classes, locations and
// fields only ever hold what the VM created, accepted or handed out in
// this session and has not invalidated since; threads only hold threads
// proven alive and suspended since facts.suspLost was epoch, and, while
// unloadWatch is 0, classes, locations, ranges, fields and excClasses
// only what was learned while the whole VM was suspended in that epoch.
type writeBehind struct {
	*core
	on      bool // Config.WriteBehind, until stopped
	stopped bool // VM death or a failure: nothing more is written behind

	shapes      map[shape]struct{}
	requests    map[int32]request
	steps       map[jdwp.ThreadID]int
	threads     map[jdwp.ThreadID]struct{} // alive and suspended since epoch
	reachable   map[uint64]struct{}        // this of a frame of a thread in threads, read since epoch (thisObject)
	epoch       uint64                     // facts.suspLost when threads (and, unwatched, classes...) were last valid
	unloadWatch int                        // active CLASS_UNLOAD requests without modifiers: unloads are seen
	classes     map[jdwp.ClassID]struct{}
	locations   map[jdwp.Location]struct{}
	fields      map[fieldKey]struct{}
	ranges      map[methodKey]codeRange // Method.LineTable replies, by class and method (not exact): writebehind_learn.go read
	excClasses  map[jdwp.ClassID]struct{}
	vmResumeOK  bool
	thResumeOK  bool
	last        int32
	seqExact    bool       // last is exact: no Set failed since
	seqBack     bool       // two Sets' replies were consecutive, back to back
	seqStop     bool       // ... with events in between
	sinceEvents bool       // events arrived since the last Set's reply
	seqKind     bool       // the profile says this kind of VM numbers Sets back to back (writebehind_profile.go)
	seqWrong    bool       // a Set's reply in this session was not numbered last+1
	hotspot     bool       // the VM's Version reply names HotSpot with the reference libjdwp
	kindsFwd    [4]uint64  // event kinds of which a forwarded Set succeeded in this session
	stopSeen    bool       // an event other than VM_START suspended threads: the attach is over
	filtered    bool       // the debugger sent a Set with a modifier: any link measurement is behind it
	imported    bool       // the profile was looked at
	setsFwd     int        // forwarded Sets awaiting replies
	caps        string     // hash of the VM's CapabilitiesNew reply body, "" until known
	prof        *wbProfile // the profile's, until imported (importFrom)
	bad         bool       // the composite being read could not be (seen)

	free    []*wbCmd
	ansBuf  []byte
	sendBuf []byte
}

func newWriteBehind(c *core, on bool) writeBehind {
	return writeBehind{core: c, on: on, shapes: map[shape]struct{}{}, requests: map[int32]request{},
		steps: map[jdwp.ThreadID]int{}, threads: map[jdwp.ThreadID]struct{}{}, reachable: map[uint64]struct{}{},
		classes: map[jdwp.ClassID]struct{}{}, locations: map[jdwp.Location]struct{}{},
		fields: map[fieldKey]struct{}{}, ranges: map[methodKey]codeRange{}, excClasses: map[jdwp.ClassID]struct{}{}}
}

func (w *writeBehind) get(op wbOp) *wbCmd {
	var c *wbCmd
	if n := len(w.free); n > 0 {
		c, w.free = w.free[n-1], w.free[:n-1]
	} else {
		c = new(wbCmd)
	}
	mods := c.mods[:0]
	*c = wbCmd{op: op, mods: mods}
	return c
}

func (w *writeBehind) put(c *wbCmd) {
	if len(w.free) < maxFreeData {
		w.free = append(w.free, c)
	}
}

// command looks at a debugger command that is not answered from the
// cache, before its effects are applied (they read the suspension): it
// keeps write-behind's state current and keeps, for a state-setting
// command, what to remember until its reply (x.d.wb), with written set
// when it is to be answered at once (answer).
func (w *writeBehind) command(x *command) bool {
	x.d.wb = w.decide(x, &w.facts)
	return false
}

// decide is command's decision.
func (w *writeBehind) decide(x *command, f *facts) *wbCmd {
	if !w.on {
		return nil
	}
	w.sync(f)
	p, sizes := x.f.Packet, x.sizes
	body := p.Body()
	switch p.Cmd() {
	case jdwp.CmdEventRequestSet:
		c := w.set(&x.set, f)
		if !c.written {
			w.setsFwd++ // its request ID is unknown until the reply
		}
		return c
	case jdwp.CmdEventRequestClear:
		c := w.get(wbClear)
		r := jdwp.NewBodyReader(body, sizes)
		c.kind, c.id = jdwp.EventKind(r.Uint8()), r.Int32()
		req, ok := w.requests[c.id]
		if r.Err() == nil && r.Remaining() == 0 && ok && req.kind == c.kind && !w.stopped {
			c.written = true
			w.cleared(c.id)
		}
		return c
	case jdwp.CmdEventRequestClearAllBreakpoints:
		for id, req := range w.requests {
			if req.kind == jdwp.EventBreakpoint {
				delete(w.requests, id)
			}
		}
	case jdwp.CmdVirtualMachineResume:
		c := w.get(wbVMResume)
		c.written = (w.vmResumeOK || w.hotspot && w.kindsFwd != [4]uint64{}) && len(body) == 0 && !w.stopped
		return c
	case jdwp.CmdThreadReferenceResume:
		c := w.get(wbThreadResume)
		r := jdwp.NewBodyReader(body, sizes)
		c.thread = r.Thread()
		c.written = w.thResumeOK && r.Err() == nil && r.Remaining() == 0 && f.resumesInFlight == 0 &&
			f.suspendedNow(c.thread) && w.threadKnown(c.thread) && !w.stopped
		return c
	case jdwp.CmdVirtualMachineDisposeObjects:
		r := jdwp.NewBodyReader(body, sizes)
		n := r.Count(sizes.ObjectID + 4)
		for i := 0; i < n && r.Err() == nil; i++ {
			id := r.ObjectID()
			r.Int32()
			delete(w.threads, jdwp.ThreadID(id))
			delete(w.reachable, id) // alive, but its ID no longer valid
			_, class := w.classes[jdwp.ClassID(id)]
			_, exc := w.excClasses[jdwp.ClassID(id)]
			if class || exc { // its locations and fields name it
				delete(w.classes, jdwp.ClassID(id))
				delete(w.excClasses, jdwp.ClassID(id))
				clear(w.locations)
				clear(w.ranges)
				clear(w.fields)
			}
		}
		if r.Err() != nil {
			w.forgetIDs()
		}
	case jdwp.CmdStackFramePopFrames, jdwp.CmdStackFrameSetValues:
		// The frame that held a ThisObject's object may be gone, or its
		// slot overwritten: the object may be collected with the thread
		// still suspended (thisObject).
		clear(w.reachable)
	case jdwp.CmdVirtualMachineRedefineClasses:
		clear(w.locations)
		clear(w.ranges)
		clear(w.fields)
	}
	return nil
}

// set decides whether the reply to an EventRequest.Set (read once, for
// every part) is proven.
func (w *writeBehind) set(set *eventRequest, f *facts) *wbCmd {
	c := w.get(wbSet)
	c.kind = set.kind
	if set.n < 0 || set.n > maxShapeMods || !set.whole {
		c.shape.n = malformed
		return c
	}
	c.shape.b[0], c.shape.b[1], c.shape.n = byte(c.kind), byte(set.policy), uint8(set.n)
	w.filtered = w.filtered || set.n > 0
	for i, m := range set.mods {
		m.Pattern = nil
		c.mods = append(c.mods, m)
		c.shape.b[2+i] = byte(m.Kind)
	}
	if w.stopped || !w.proven(c, f) {
		return c
	}
	w.last++
	c.id, c.written = w.last, true
	w.accepted(c)
	return c
}

// proven says whether a well-formed Set's success and request ID are
// proven.
func (w *writeBehind) proven(c *wbCmd, f *facts) bool {
	if !w.stopSeen && !w.filtered && !w.kindForwarded(c.kind) {
		return false // at attach, the first of its kind goes to the VM (timing, above)
	}
	if _, ok := w.shapes[c.shape]; !ok && !(w.hotspot && provableShape(c)) {
		return false
	}
	suspended := f.allSuspended && f.resumesInFlight == 0
	// seqKind, from an earlier session on this kind of VM, stands in for
	// seqBack only: see writebehind_profile.go for why that is proven.
	seqHotSpot := w.hotspot && !w.seqWrong
	if !w.seqExact || w.setsFwd != 0 || !(w.seqStop || seqHotSpot || (w.seqBack || w.seqKind) && suspended) || w.last == 1<<31-1 {
		return false
	}
	for i := range c.mods {
		m := &c.mods[i]
		switch m.Kind {
		case jdwp.ModCount:
			if m.Count <= 0 {
				return false
			}
		case jdwp.ModThreadOnly:
			if !w.threadKnown(jdwp.ThreadID(m.Thread)) {
				return false
			}
		case jdwp.ModClassOnly:
			_, ok := w.classes[jdwp.ClassID(m.Class)]
			_, named := f.idSig[jdwp.ClassID(m.Class)] // a reply or event named it
			if !ok && !(named && w.unloadWatch > 0) {
				return false
			}
		case jdwp.ModLocationOnly:
			if _, ok := w.locations[m.Location]; !ok && !w.inRange(m.Location) {
				return false
			}
		case jdwp.ModExceptionOnly:
			if _, ok := w.excClasses[jdwp.ClassID(m.Class)]; !ok && m.Class != 0 {
				return false
			}
		case jdwp.ModFieldOnly:
			if _, ok := w.fields[fieldKey{jdwp.ClassID(m.Class), jdwp.FieldID(m.Field)}]; !ok {
				return false
			}
		case jdwp.ModStep:
			t := jdwp.ThreadID(m.Thread)
			_, active := w.steps[t]
			if active || !w.threadKnown(t) || f.resumesInFlight != 0 || !f.suspendedNow(t) ||
				uint32(m.StepSize) > 1 || uint32(m.StepDepth) > 2 {
				return false
			}
		case jdwp.ModInstanceOnly:
			// Another object may have been collected, or its ID disposed.
			if _, ok := w.reachable[m.Object]; !ok || m.Object == 0 {
				return false
			}
		}
	}
	return true
}

// kindForwarded says whether a forwarded Set of event kind k succeeded
// in this session.
func (w *writeBehind) kindForwarded(k jdwp.EventKind) bool {
	return w.kindsFwd[uint8(k)/64]&(1<<(uint8(k)%64)) != 0
}

// threadKnown says whether t is proven alive and suspended since
// the threads last ran (w.sync must have been called since).
func (w *writeBehind) threadKnown(t jdwp.ThreadID) bool {
	_, ok := w.threads[t]
	return ok && t != 0
}

// sync forgets what threads may have invalidated by running since the
// last call: every thread (any may have died) and, unless unloads are
// watched, every class and what names one (any may have been unloaded).
func (w *writeBehind) sync(f *facts) {
	if w.epoch == f.suspLost {
		return
	}
	w.epoch = f.suspLost
	clear(w.threads)
	clear(w.reachable)
	if w.unloadWatch == 0 {
		w.forgetClasses()
	}
}

// classesLearnable says whether a class (or a location or field of one)
// the VM names now may be remembered: unloads are watched, or the whole
// VM is suspended, so that it stays valid until sync forgets it.
func (w *writeBehind) classesLearnable(f *facts) bool {
	return w.unloadWatch > 0 || f.stillAll()
}
