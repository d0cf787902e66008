package speculator

import (
	"strings"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// Frame-ID prediction: the values of a frame can be asked in the same
// burst as the Frames reply that names the frame, instead of one round
// trip after it.
//
// How HotSpot's libjdwp builds frame IDs (FrameID.c, threadControl.c, as
// of JDK 17; confirmed against the JDK here by TestPredictedFramesRealVM):
// a frame ID is the thread's frame generation shifted left by 16 bits,
// or'ed with the frame's depth. The generation is per thread and grows by
// one on every hard resume of that thread (its debugger suspend count
// going from one to zero: ThreadReference.Resume, VirtualMachine.Resume,
// and the resumes an invoke does), and StackFrame commands first check it
// (validateFrameID): an ID of an older or a later generation gets
// INVALID_FRAMEID and nothing else happens. So a thread's frame IDs move
// by the same amount at each resume as long as the debugger suspends and
// resumes it the same way, and a wrong guess costs one read-only command
// answered with an error.
//
// The predictor does not rely on the bit layout: it learns, per thread,
// the base of the frame IDs (ID minus depth, the same for every frame of
// a Frames reply, or the VM is not one it understands) and the step per
// resume of the thread (the debugger's VirtualMachine.Resume, its
// ThreadReference.Resume of that thread, and invokes, which resume it
// too), and predicts base + step × the resumes since the base was seen.
// A speculation on a predicted frame (predFrame) is never served until a
// Frames reply of the same stop confirms its ID at its depth (see
// confirmFrame and safeToSend); a refuted prediction makes the thread
// need more evidence (and after maxPredFails, stops predicting on it).

// Bounds of the prediction.
const (
	maxPredFails   = 2   // refuted predictions after which a thread is no longer predicted
	maxPredThreads = 256 // threads whose frame generations are tracked
	// firstStep is the step per resume assumed before one is seen (until
	// a prediction is refuted): one generation (FrameID.c: generation <<
	// 16 | depth).
	firstStep jdwp.FrameID = 1 << 16
	// maxPredResumes bounds the resumes a prediction spans.
	maxPredResumes = 8
)

// predState is where a speculation on a predicted frame ID stands.
type predState uint8

const (
	predPending   predState = iota // no Frames reply of this stop listed its depth yet
	predConfirmed                  // a Frames reply listed the predicted ID at its depth, slots live there
	predRefuted                    // a Frames reply listed another ID, or the slots are not live there
)

// predFrame is the prediction a StackFrame speculation was sent on.
type predFrame struct {
	thread jdwp.ThreadID
	depth  int
	frame  jdwp.FrameID
	// loc is where the frame is believed to be: the stop event's location
	// for the top frame (exact), the previous stop's for a deeper one (a
	// guess, checked against the Frames reply before anything is served).
	loc   jdwp.Location
	state predState
	held  jdwp.Packet // the VM's reply, when it came before the confirmation
}

// threadGen is what a thread's Frames replies showed of its frame IDs.
type threadGen struct {
	base    jdwp.FrameID // frame ID minus depth at stop serial
	serial  uint64
	resumes uint64       // the thread's resumes (framePredictor.resumesOf) when base was seen
	step    jdwp.FrameID // base change per resume (0: unknown)
	streak  int          // consecutive observations that moved the base by step, after the first
	fails   int          // refuted predictions
	locs    []jdwp.Location
	known   uint64 // depths (bit set) whose loc is known at serial
}

// framePredictor holds the frame generations of the VM's threads. Part
// of facts, guarded by session.mu.
type framePredictor struct {
	// hotspot says the VM's VirtualMachine.Version reply names HotSpot
	// with the reference libjdwp: only there are frame IDs predicted.
	hotspot bool
	threads map[jdwp.ThreadID]*threadGen
	// allResumes counts the debugger's resumes of every thread (VM resumes,
	// invokes), threadResumes its ThreadReference.Resume of each thread.
	allResumes    uint64
	threadResumes map[jdwp.ThreadID]uint64
}

// resumed counts a resume-like command c with body (keyable's
// EffectResume or EffectInvoke): a ThreadReference.Resume resumes its
// thread, anything else counts for all (an invoke that resumes only its
// own thread is over-counted for the others: a wrong prediction then, not
// a wrong answer).
func (fp *framePredictor) resumed(c jdwp.Cmd, body []byte, sizes jdwp.IDSizes) {
	if c == jdwp.CmdThreadReferenceResume {
		r := jdwp.NewBodyReader(body, sizes)
		if fp.threadResumes == nil {
			fp.threadResumes = map[jdwp.ThreadID]uint64{}
		}
		t := r.Thread()
		if _, known := fp.threadResumes[t]; r.Err() == nil && (known || len(fp.threadResumes) < maxPredThreads) {
			fp.threadResumes[t]++
			return
		}
	}
	fp.allResumes++
}

// resumesOf is how many times the debugger resumed thread t.
func (fp *framePredictor) resumesOf(t jdwp.ThreadID) uint64 {
	return fp.allResumes + fp.threadResumes[t]
}

// referenceAgent says whether a VirtualMachine.Version reply comes from
// the reference JDWP agent (libjdwp: HotSpot's, OpenJ9's, ART's since
// Android 9), whose one debug loop carries out a connection's commands
// one at a time, in the order they arrive.
func referenceAgent(p jdwp.Packet) bool {
	if len(p) < jdwp.HeaderSize || p.ErrorCode() != jdwp.ErrorNone {
		return false
	}
	desc := jdwp.NewBodyReader(p.Body(), jdwp.IDSizes{}).String()
	return strings.HasPrefix(desc, "Java Debug Wire Protocol (Reference Implementation)")
}

// hotSpotVersion says whether a VirtualMachine.Version reply names a
// HotSpot VM with the reference libjdwp. Other VMs are never sent a
// predicted frame ID: Android's runtimes have their own frame IDs and
// older ART does not obviously validate them, and OpenJ9 (libjdwp, but its
// own JVMTI) has not been checked for slot validation.
func hotSpotVersion(p jdwp.Packet) bool {
	if !referenceAgent(p) {
		return false
	}
	name := vmName(p.Body())
	return strings.Contains(name, "HotSpot") ||
		strings.HasPrefix(name, "OpenJDK ") && strings.HasSuffix(name, " VM") && !strings.Contains(name, "J9")
}

// learnVM records what the VM's reply to command c says of the VM.
func (fp *framePredictor) learnVM(c jdwp.Cmd, p jdwp.Packet) {
	if c == jdwp.CmdVirtualMachineVersion {
		fp.hotspot = hotSpotVersion(p)
	}
}

// observe records that at stop serial, a Frames reply of thread listed
// frame fr at depth d, at loc (first: the reply's first frame). A later
// reply of the same stop may show a newer generation (an invoke resumed
// the thread): the newest is what the next stop's step counts from.
func (fp *framePredictor) observe(thread jdwp.ThreadID, d int, fr jdwp.FrameID, loc jdwp.Location, serial uint64, first bool) {
	if fp.threads == nil {
		fp.threads = map[jdwp.ThreadID]*threadGen{}
	}
	tg := fp.threads[thread]
	if tg == nil {
		if len(fp.threads) >= maxPredThreads {
			clear(fp.threads)
		}
		tg = &threadGen{locs: make([]jdwp.Location, maxDepth)}
		fp.threads[thread] = tg
	}
	base, now := fr-jdwp.FrameID(d), fp.resumesOf(thread)
	switch {
	case tg.serial == serial && !first:
		if base != tg.base { // not base+depth: a VM whose IDs we do not understand
			tg.fails = maxPredFails
		}
	case tg.serial != 0 && now == tg.resumes && base == tg.base:
		// The same frames again (another Frames of the stop).
		if tg.serial != serial {
			tg.serial, tg.known = serial, 0
		}
	case tg.serial != 0 && now > tg.resumes && now-tg.resumes <= maxPredResumes:
		// A sample of the step: the base moved over n resumes (an
		// invoke's resume within a stop included).
		n := jdwp.FrameID(now - tg.resumes)
		if delta := base - tg.base; delta%n != 0 {
			tg.step, tg.streak = 0, 0
		} else if step := delta / n; step == tg.step {
			tg.streak++
		} else {
			tg.step, tg.streak = step, 0
		}
		tg.base, tg.serial, tg.resumes, tg.known = base, serial, now, 0
	default: // first seen, or moved with no resume known, or long ago: learn again
		tg.base, tg.serial, tg.resumes, tg.step, tg.streak, tg.known = base, serial, now, 0, 0, 0
	}
	if d < maxDepth {
		tg.locs[d] = loc
		tg.known |= 1 << d
	}
}

// predict returns what thread's Frames replies showed when last seen,
// and the base its frame IDs are predicted to have now, after the resumes
// since: only on HotSpot, for a thread resumed at most maxPredResumes
// times since, and (after a refuted prediction) once it has shown its step
// again as many times as predictions were refuted; before any step is
// seen, firstStep.
func (fp *framePredictor) predict(thread jdwp.ThreadID, sizes jdwp.IDSizes) (*threadGen, jdwp.FrameID, bool) {
	if !fp.hotspot || sizes.FrameID != 8 {
		return nil, 0, false
	}
	tg := fp.threads[thread]
	if tg == nil || tg.fails >= maxPredFails {
		return nil, 0, false
	}
	n := fp.resumesOf(thread) - tg.resumes
	if n == 0 || n > maxPredResumes {
		return nil, 0, false
	}
	switch {
	case tg.step != 0 && tg.streak >= tg.fails:
		return tg, tg.base + jdwp.FrameID(n)*tg.step, true
	case tg.step == 0 && tg.fails == 0:
		return tg, tg.base + jdwp.FrameID(n)*firstStep, true
	}
	return nil, 0, false
}

// refuted records a wrong prediction on thread.
func (fp *framePredictor) refuted(thread jdwp.ThreadID) {
	if tg := fp.threads[thread]; tg != nil {
		tg.fails++
		tg.streak = 0
	}
}

// framePrediction is the rule that speculates StackFrame reads on the
// frame IDs predicted for a stop (the predictor, framePredictor, is part
// of facts): it reacts to a stop's wave 1 (right behind the replayed
// Frames that will confirm them), to each frame of a Frames reply of the
// stop (confirming or refuting its predictions, releasing the replies
// held for them) and to the replies to its speculation (held until
// confirmed). It keeps no state of its own: the stop's predictions are
// the learner's (episode.predicted).
type framePrediction struct{ *core }

// wave speculates, at a stop, ThisObject and GetValues of the stopped
// thread's frames at the depths the debugger asked them at the previous
// stops, on the frame IDs predicted for this stop: in wave 1, behind the
// replayed templates' Frames (at a first stop, with no template, nothing
// confirms a prediction).
func (fp *framePrediction) wave(w int, sizes jdwp.IDSizes) {
	ep := &fp.learn.ep
	if w != 1 || len(fp.learn.templates) == 0 {
		return
	}
	tg, base, ok := fp.facts.frames.predict(ep.thread, sizes)
	if !ok {
		return
	}
	for d := 0; d < maxDepth; d++ {
		this, vals := fp.learn.thisDepth&(1<<d) != 0, fp.learn.valueDepth&(1<<d) != 0
		if !this && !vals {
			continue
		}
		p := predFrame{thread: ep.thread, depth: d, frame: base + jdwp.FrameID(d)}
		known := tg.known&(1<<d) != 0
		if d == 0 && ep.loc != (jdwp.Location{}) {
			p.loc, known = ep.loc, true
		} else if known {
			p.loc = tg.locs[d]
		}
		if this {
			w := fp.writer(sizes)
			w.Thread(p.thread)
			w.Frame(p.frame)
			fp.pbuf = w.Buf
			pc := p
			fp.submitNew(sizes, spec{kind: kPredThis, pred: &pc}, jdwp.CmdStackFrameThisObject, fp.pbuf)
		}
		if !vals || !known {
			continue
		}
		lists, ok := fp.frameSlots(p.loc)
		if !ok {
			continue
		}
		for _, tail := range lists {
			w := fp.writer(sizes)
			w.Thread(p.thread)
			w.Frame(p.frame)
			w.Buf = append(w.Buf, tail...)
			fp.pbuf = w.Buf
			pc := p
			fp.submitNew(sizes, spec{kind: kPredValues, pred: &pc}, jdwp.CmdStackFrameGetValues, fp.pbuf)
		}
	}
}

// frame settles the predictions on depth x.depth of the stopped thread
// now that a Frames reply of this stop lists frame x.frame there, at
// x.loc: confirmed when the ID is the predicted one and (GetValues) every
// slot asked is live with its tag at loc, refuted otherwise. A reply held
// for the confirmation is then released (x.released: the router stores
// and chains on it), or dropped as wasted.
func (fp *framePrediction) frame(x *frameSeen) {
	ep := &fp.learn.ep
	if !x.speculating || x.thread != ep.thread {
		return
	}
	thread, d, fr, loc := x.thread, x.depth, x.frame, x.loc
	fp.facts.frames.observe(thread, d, fr, loc, ep.serial, x.first)
	confirmed, refuted := 0, 0
	for _, s := range ep.predicted {
		p := s.pred
		if p.state != predPending || p.thread != thread || p.depth != d || !fp.facts.valid(s.info, s.subj, s.gen) {
			// Settled, another frame, or invalidated since it was sent
			// (an invoke moves the generation): left to be wasted.
			continue
		}
		if p.frame != fr || !fp.facts.predictedSlotsLive(s, loc, x.sizes) {
			p.state = predRefuted
			refuted++
			if s.sent {
				fp.disp.forget(s)
			} else {
				fp.disp.cancel(s)
			}
			if p.held != nil {
				p.held = nil
				fp.wasted(s)
			}
			continue
		}
		p.state, p.loc = predConfirmed, loc
		confirmed++
		if held := p.held; held != nil {
			p.held = nil
			x.released = append(x.released, heldReply{s: s, p: held})
		}
	}
	if refuted > 0 {
		fp.facts.frames.refuted(thread)
	}
	fp.sp.countFramePredictions(confirmed, refuted)
}

// hold takes the VM's reply to a speculation on a predicted frame before
// it is stored: it reports whether the reply was taken (held until the
// Frames reply confirms the prediction, or dropped because it was
// refuted) rather than left to the usual path (confirmed).
func (fp *framePrediction) hold(s *spec, p jdwp.Packet) bool {
	if s.pred == nil {
		return false
	}
	switch s.pred.state {
	case predConfirmed:
		return false
	case predRefuted:
		fp.wasted(s)
	default:
		s.pred.held = append(jdwp.Packet(nil), p...)
	}
	return true
}

// servable says whether a debugger command may be answered from
// speculation s: a prediction only once confirmed.
func (s *spec) servable() bool { return s.pred == nil || s.pred.state == predConfirmed }

// learnFromVM records the facts in a successful reply to command c with
// parameters params, the debugger's or a speculation's: the class facts
// that safeToSend checks IDs against, and what the VM is.
func (f *facts) learnFromVM(c jdwp.Cmd, params []byte, p jdwp.Packet, sizes jdwp.IDSizes) {
	f.classes.learn(c, params, p, sizes)
	f.frames.learnVM(c, p)
	if c == jdwp.CmdVirtualMachineVersion {
		f.inOrder = referenceAgent(p) // moment.go
	}
}
