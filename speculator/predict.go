package speculator

import (
	"slices"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
)

// stopRules are the rules of a stop at a location: its first waves (the
// replayed templates, or at a first stop the default guesses), the names
// and statuses of the threads the last AllThreads listed, the frame
// count's Frames, and what
// the debugger asks of each frame of the stopped thread (IsObsolete, the
// class and method metadata, ThisObject and GetValues at learned
// depths). They react to the stop's waves 0 and 2 (wave 1: the known
// threads), to each frame of a Frames reply, to AllThreads and FrameCount
// replies (chain), and to a miss that shows a rule no prediction covered
// (missed: expandSiblings). They read the learner and emit speculation
// through the core's gates (admit); they hold no state of their own.
type stopRules struct{ *core }

// wave sends a stop's waves: in wave 0 the commands whose replies feed
// later waves (the Frames, FrameCount and AllThreads templates, or at a
// first stop the default guesses), in wave 1 the known threads' names and
// statuses (behind the predicted frames' reads), in wave 2 the other
// replayed templates.
func (sr *stopRules) wave(w int, sizes jdwp.IDSizes) {
	t := sr.learn.ep.thread
	if len(sr.learn.templates) == 0 {
		if w == 0 {
			all := !sr.guessesLearned()
			if all {
				sr.specThread(sizes, jdwp.CmdThreadReferenceFrameCount, t, kDefault)
			}
			sr.specFrames(sizes, t, 0, -1, kDefault)
			if all {
				sr.specParams(sizes, jdwp.CmdVirtualMachineAllThreads, nil, kDefault, nil, 0)
			}
			sr.specThread(sizes, jdwp.CmdThreadReferenceName, t, kDefault)
			if all {
				sr.specThread(sizes, jdwp.CmdThreadReferenceStatus, t, kDefault)
			}
		}
		return
	}
	if w == 1 {
		sr.specKnownThreads(sizes)
		return
	}
	for _, tp := range sr.learn.templates {
		if tp.removed {
			continue
		}
		c := tp.key.Cmd()
		feeds := c == jdwp.CmdThreadReferenceFrames || c == jdwp.CmdThreadReferenceFrameCount ||
			c == jdwp.CmdVirtualMachineAllThreads
		if feeds != (w == 0) {
			continue
		}
		if info, _ := keyable.Describe(c); info.Scope == keyable.ScopeVM && sr.learn.ep.partial && tp.stops < 2 {
			// A read of the running program asked at one stop only (the
			// first stop's thread list, say): not replayed until asked at
			// a second.
			continue
		}
		params := tp.key.Params()
		if tp.rel {
			sr.pbuf = replaceThread(sr.pbuf[:0], params, t, sizes)
			params = sr.pbuf
			if c == jdwp.CmdThreadReferenceFrames {
				allFrames(params, &sr.facts, sizes)
			}
		}
		sr.specParams(sizes, c, params, kTemplate, tp, 0)
	}
}

// specKnownThreads speculates the name and status of the threads the last
// AllThreads reply listed, with the stop's own AllThreads rather than
// chained on its reply: at the first stop no template names them yet.
// Only what the debugger asked of threads other than the stopped one at
// its last stop (jdb names only the thread that stopped).
// (A thread that ended since answers with an error, which is what the
// debugger would get; the learned rules cover threads started since.)
//
// Not at a stop that left other threads running: their names are read
// there only by a debugger that lists its threads at each stop, which its
// templates and the learned rules replay, and the miss widens
// (expandSiblings).
func (sr *stopRules) specKnownThreads(sizes jdwp.IDSizes) {
	if sr.learn.ep.partial {
		return
	}
	others := sr.learn.others
	for _, t := range sr.learn.threads {
		if t == sr.learn.ep.thread {
			continue
		}
		if others.names {
			sr.specThread(sizes, jdwp.CmdThreadReferenceName, t, kThreadName)
		}
		if others.statuses {
			sr.specThread(sizes, jdwp.CmdThreadReferenceStatus, t, kThreadStatus)
		}
	}
}

func (sr *stopRules) specThread(sizes jdwp.IDSizes, c jdwp.Cmd, thread jdwp.ThreadID, k kind) {
	w := sr.writer(sizes)
	w.Thread(thread)
	sr.pbuf = w.Buf
	sr.specParams(sizes, c, sr.pbuf, k, nil, 0)
}

// allFramesAsked says whether every frame of thread was asked (allFrames):
// its reply answers the frames sized by the count.
func (sr *stopRules) allFramesAsked(thread jdwp.ThreadID, sizes jdwp.IDSizes) bool {
	var k keyable.Key
	return everyFrameKey(&k, thread, sizes) && (sr.cache.has(&k) || sr.disp.pending(&k) != nil)
}

func (sr *stopRules) specFrames(sizes jdwp.IDSizes, thread jdwp.ThreadID, start, n int32, k kind) {
	w := sr.writer(sizes)
	w.Thread(thread)
	w.Int32(start)
	w.Int32(n)
	sr.pbuf = w.Buf
	sr.specParams(sizes, jdwp.CmdThreadReferenceFrames, sr.pbuf, k, nil, 0)
}

// chain records the threads of an AllThreads reply and speculates from
// the stopped thread's FrameCount (its Frames, sized by the learned rule).
func (sr *stopRules) chain(x *chained) {
	ep := &sr.learn.ep
	sizes := x.sizes
	r := jdwp.NewBodyReader(x.p.Body(), sizes)
	params := jdwp.NewBodyReader(x.key.Params(), sizes)
	switch x.key.Cmd() {
	case jdwp.CmdMethodVariableTable, jdwp.CmdMethodVariableTableWithGeneric:
		// A method's table came after its frames: the values of those
		// frames, by the slots JDI shows there (frameSlots).
		mk := methodKey{class: params.Class(), method: params.Method()}
		for fr, fi := range ep.frames {
			if fi.thread == ep.thread && methodOf(fi.loc) == mk {
				sr.specFrameValues(sizes, fr, fi)
			}
		}
	case jdwp.CmdVirtualMachineAllThreads:
		// The threads listed, for expandSiblings. (What the debugger
		// asks of each is the learned rules': learned.go.)
		n := r.Count(sizes.ObjectID)
		ep.threads = ep.threads[:0]
		for i := 0; i < n && r.Err() == nil && len(ep.threads) < maxSpecPerStop; i++ {
			ep.threads = append(ep.threads, r.Thread())
		}
	case jdwp.CmdThreadReferenceFrameCount:
		// The debugger sizes its frames request by the count: when the
		// count changed since the last stop, the replayed template asks
		// the wrong number of frames.
		thread := params.Thread()
		n := r.Int32()
		if r.Err() != nil || thread != ep.thread || n <= 0 {
			return
		}
		ep.frameCount = n
		if rule := sr.learn.framesRule; rule != 0 && !sr.allFramesAsked(thread, sizes) {
			if rule > 0 {
				n = min(n, rule)
			}
			sr.specFrames(sizes, thread, 0, n, kFrames)
		}
	}
}

// frame records one frame of a Frames reply for the stop (what the
// debugger asks of it is learned by depth) and, while speculating, for
// the stopped thread, speculates what the debugger asks of a frame: the
// class metadata, this and the values at learned depths. (Method.IsObsolete
// of each frame, which the debugger asks of all of them or none, is the
// learned rules' from the second stop, expandSiblings' at the first.)
func (sr *stopRules) frame(x *frameSeen) {
	ep := &sr.learn.ep
	sizes, thread, fr, loc, d := x.sizes, x.thread, x.frame, x.loc, x.depth
	if !x.speculating {
		if len(ep.frames) < maxSpecPerStop {
			ep.frames[fr] = frameInfo{depth: d, thread: thread, loc: loc}
		}
		return
	}
	ep.frames[fr] = frameInfo{depth: d, thread: thread, loc: loc}
	if thread != ep.thread {
		return
	}
	sr.specClassMeta(x)
	if d >= maxDepth {
		return
	}
	if sr.learn.thisDepth&(1<<d) != 0 {
		w := sr.writer(sizes)
		w.Thread(thread)
		w.Frame(fr)
		sr.pbuf = w.Buf
		sr.specParams(sizes, jdwp.CmdStackFrameThisObject, sr.pbuf, kThis, nil, 0)
	}
	sr.specFrameValues(sizes, fr, frameInfo{depth: d, thread: thread, loc: loc})
}

// specFrameValues speculates the values of frame fr (fi) of the stopped
// thread at a depth whose values the debugger shows, by frameSlots.
func (sr *stopRules) specFrameValues(sizes jdwp.IDSizes, fr jdwp.FrameID, fi frameInfo) {
	if fi.depth >= maxDepth || sr.learn.valueDepth&(1<<fi.depth) == 0 {
		return
	}
	lists, ok := sr.frameSlots(fi.loc)
	if !ok {
		return
	}
	for _, tail := range lists {
		w := sr.writer(sizes)
		w.Thread(fi.thread)
		w.Frame(fr)
		w.Buf = append(w.Buf, tail...)
		sr.pbuf = w.Buf
		sr.specParams(sizes, jdwp.CmdStackFrameGetValues, sr.pbuf, kFrameValues, nil, 0)
	}
}

// missed widens a miss (expandSiblings): the debugger asked a thread's name or
// status, or a frame method's IsObsolete, that no rule predicted (the
// first time it asks it, typically at the first stop); it will ask the
// same of every thread listed, or every frame, so those are speculated now
// (sent ahead of the debugger's own command).
func (sr *stopRules) missed(key *keyable.Key, sizes jdwp.IDSizes) {
	ep := &sr.learn.ep
	if !ep.active || !sr.speculating() {
		return
	}
	c := key.Cmd()
	params := jdwp.NewBodyReader(key.Params(), sizes)
	switch c {
	case jdwp.CmdThreadReferenceName, jdwp.CmdThreadReferenceStatus:
		k := kThreadName
		if c == jdwp.CmdThreadReferenceStatus {
			k = kThreadStatus
		}
		own := params.Thread()
		if ep.expanded[k] || !slices.Contains(ep.threads, own) {
			return
		}
		ep.expanded[k] = true
		for _, t := range ep.threads {
			if t != own {
				sr.specThread(sizes, c, t, k)
			}
		}
	case jdwp.CmdMethodIsObsolete:
		m := methodKey{class: params.Class(), method: params.Method()}
		if ep.expanded[kObsolete] {
			return
		}
		found := false
		for _, fi := range ep.frames {
			if methodOf(fi.loc) == m {
				found = true
				break
			}
		}
		if !found {
			return
		}
		ep.expanded[kObsolete] = true
		for _, fi := range ep.frames {
			if methodOf(fi.loc) == m {
				continue
			}
			w := sr.writer(sizes)
			w.Class(fi.loc.ClassID())
			w.Method(fi.loc.MethodID())
			sr.pbuf = w.Buf
			sr.specParams(sizes, c, sr.pbuf, kObsolete, nil, 0)
		}
	}
}

// classMetaCmds are the class-lifetime facts the debugger may ask about a
// frame's class when it first meets it, with the rule that predicts each.
var classMetaCmds = [...]struct {
	c jdwp.Cmd
	k kind
}{
	{jdwp.CmdReferenceTypeSourceFile, kClassSource},
	{jdwp.CmdReferenceTypeSourceDebugExtension, kClassSource},
	{jdwp.CmdReferenceTypeMethodsWithGeneric, kClassMembers},
	{jdwp.CmdReferenceTypeMethods, kClassMembers},
}

// specClassMeta speculates the class metadata of a frame's class and
// method that the debugger asked for classes before (already cached for a
// class seen before, so this sends nothing for it): class-lifetime facts,
// valid until the class is unloaded or redefined. What the reply's frames
// before x put up for the same class or method is not put up again (a
// recursion's frames share both): the gates would refuse it, at a cost.
func (sr *stopRules) specClassMeta(x *frameSeen) {
	sizes, loc, depth := x.sizes, x.loc, x.depth
	m := methodOf(loc)
	if !slices.Contains(x.classesSeen, m.class) {
		x.classesSeen = append(x.classesSeen, m.class)
		for _, mc := range classMetaCmds {
			if sr.learn.asked[mc.c] == 0 {
				continue
			}
			w := sr.writer(sizes)
			w.Class(loc.ClassID())
			sr.pbuf = w.Buf
			sr.specParams(sizes, mc.c, sr.pbuf, mc.k, nil, 0)
		}
	}
	lines := !slices.Contains(x.methodsSeen, m)
	vars := depth < maxDepth && sr.learn.valueDepth&(1<<depth) != 0 && !slices.Contains(x.varsSeen, m)
	if !lines && !vars {
		return
	}
	w := sr.writer(sizes)
	w.Class(loc.ClassID())
	w.Method(loc.MethodID())
	sr.pbuf = w.Buf
	if lines {
		x.methodsSeen = append(x.methodsSeen, m)
		if sr.learn.asked[jdwp.CmdMethodLineTable] != 0 {
			sr.specParams(sizes, jdwp.CmdMethodLineTable, sr.pbuf, kLineTable, nil, 0)
		}
	}
	if vars {
		x.varsSeen = append(x.varsSeen, m)
		for _, c := range [...]jdwp.Cmd{jdwp.CmdMethodVariableTableWithGeneric, jdwp.CmdMethodVariableTable} {
			if sr.learn.asked[c] != 0 {
				sr.specParams(sizes, c, sr.pbuf, kVarTable, nil, 0)
			}
		}
	}
}
