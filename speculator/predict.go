package speculator

import (
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
)

// The prediction rules: at a stop (speculateStop) and from each reply
// valid in the stop (chain), decide what the debugger will ask next, and
// hand it to the dispatcher through specParams, which applies the gates
// every speculation passes. The rules read the learner and the replies;
// they hold no state of their own. They run under session.mu.

// speculateStop sends the first wave at a suspending event: the commands
// whose replies feed later waves first, then the replayed templates.
func (ss *session) speculateStop(sizes jdwp.IDSizes) {
	t := ss.learn.ep.thread
	if len(ss.learn.templates) == 0 {
		ss.specThread(sizes, jdwp.CmdThreadReferenceFrameCount, t, kDefault)
		ss.specFrames(sizes, t, 0, -1, kDefault)
		ss.specParams(sizes, jdwp.CmdVirtualMachineAllThreads, nil, kDefault, nil, 0)
		ss.specThread(sizes, jdwp.CmdThreadReferenceName, t, kDefault)
		ss.specThread(sizes, jdwp.CmdThreadReferenceStatus, t, kDefault)
		return
	}
	for pass := 0; pass < 2; pass++ {
		for _, tp := range ss.learn.templates {
			if tp.removed {
				continue
			}
			c := tp.key.Cmd()
			feeds := c == jdwp.CmdThreadReferenceFrames || c == jdwp.CmdThreadReferenceFrameCount ||
				c == jdwp.CmdVirtualMachineAllThreads
			if feeds != (pass == 0) {
				continue
			}
			params := tp.key.Params()
			if tp.rel {
				ss.pbuf = replaceThread(ss.pbuf[:0], params, t, sizes)
				params = ss.pbuf
			}
			ss.specParams(sizes, c, params, kTemplate, tp, 0)
		}
		if pass == 0 {
			// Right behind the Frames that will confirm them.
			ss.specPredicted(sizes)
			ss.specKnownThreads(sizes)
		}
	}
}

// specKnownThreads speculates the name and status of the threads the last
// AllThreads reply listed, with the stop's own AllThreads rather than
// chained on its reply: at the first stop no template names them yet.
// (A thread that ended since answers with an error, which is what the
// debugger would get; the chained rule covers threads started since.)
func (ss *session) specKnownThreads(sizes jdwp.IDSizes) {
	for _, t := range ss.learn.threads {
		if t != ss.learn.ep.thread {
			ss.specThread(sizes, jdwp.CmdThreadReferenceName, t, kThreadName)
			ss.specThread(sizes, jdwp.CmdThreadReferenceStatus, t, kThreadStatus)
		}
	}
}

// writer returns a BodyWriter over the session's parameter scratch.
func (ss *session) writer(sizes jdwp.IDSizes) jdwp.BodyWriter {
	return jdwp.BodyWriter{Buf: ss.pbuf[:0], Sizes: sizes}
}

func (ss *session) specThread(sizes jdwp.IDSizes, c jdwp.Cmd, thread jdwp.ThreadID, k kind) {
	w := ss.writer(sizes)
	w.Thread(thread)
	ss.pbuf = w.Buf
	ss.specParams(sizes, c, ss.pbuf, k, nil, 0)
}

func (ss *session) specFrames(sizes jdwp.IDSizes, thread jdwp.ThreadID, start, n int32, k kind) {
	w := ss.writer(sizes)
	w.Thread(thread)
	w.Int32(start)
	w.Int32(n)
	ss.pbuf = w.Buf
	ss.specParams(sizes, jdwp.CmdThreadReferenceFrames, ss.pbuf, k, nil, 0)
}

// specParams speculates command c with the given parameters unless the
// answer is cached or in flight, the rule is gated, the scope is not
// suspended, the IDs are not shown safe, or the stop's budget is spent.
func (ss *session) specParams(sizes jdwp.IDSizes, c jdwp.Cmd, params []byte, k kind, tp *template, level uint8) {
	ss.submitSpec(sizes, &spec{kind: k, tmpl: tp, level: level}, c, params)
}

// submitSpec is specParams for a speculation s already described (kind,
// template, level, predicted frame).
func (ss *session) submitSpec(sizes jdwp.IDSizes, s *spec, c jdwp.Cmd, params []byte) {
	ep := &ss.learn.ep
	if !ep.active || len(ep.specs) >= maxSpecPerStop || !ss.learn.kindAllowed(s.kind, c) {
		return
	}
	info, ok := keyable.Fill(&s.key, c, params, sizes)
	if !ok {
		return
	}
	s.info = info
	s.subj = s.key.Subject(info, sizes)
	if !ss.facts.scopeOK(info, s.subj) {
		return
	}
	if ss.cache.has(&s.key) {
		return
	}
	if old := ss.disp.pending(&s.key); old != nil && !old.cancelled && ss.facts.valid(old.info, old.subj, old.gen) {
		return
	}
	if ss.learn.shadowed(s.kind, &s.key) {
		return
	}
	if !ss.facts.safeToSend(s, ep.frames, sizes) {
		ss.sp.countSpec(outcomeWithheld, 1)
		return
	}
	s.gen = ss.facts.gen
	ep.specs = append(ep.specs, s)
	if s.pred != nil {
		ep.predicted = append(ep.predicted, s)
	}
	ss.disp.submit(ss.out, s)
}

// chain speculates the next wave from a reply (speculative or organic)
// valid in the current stop.
func (ss *session) chain(key *keyable.Key, gen generation, p jdwp.Packet, sizes jdwp.IDSizes, level uint8) {
	ep := &ss.learn.ep
	if !ep.active || gen < ss.facts.stopInval {
		return
	}
	r := jdwp.NewBodyReader(p.Body(), sizes)
	params := jdwp.NewBodyReader(key.Params(), sizes)
	if !ss.speculating() {
		if key.Cmd() == jdwp.CmdThreadReferenceFrames {
			ss.recordFrames(r, params, sizes) // what the debugger asks of them is learned by depth
		}
		return
	}
	switch key.Cmd() {
	case jdwp.CmdVirtualMachineAllThreads:
		n := r.Count(sizes.ObjectID)
		ep.threads = ep.threads[:0]
		for i := 0; i < n && r.Err() == nil; i++ {
			t := r.Thread()
			if len(ep.threads) < maxSpecPerStop {
				ep.threads = append(ep.threads, t)
			}
			ss.specThread(sizes, jdwp.CmdThreadReferenceName, t, kThreadName)
			ss.specThread(sizes, jdwp.CmdThreadReferenceStatus, t, kThreadStatus)
		}
	case jdwp.CmdThreadReferenceFrames:
		thread, start := params.Thread(), int(params.Int32())
		n := r.Count(sizes.FrameID + 1 + sizes.ReferenceTypeID + sizes.MethodID + 8)
		for i := 0; i < n && r.Err() == nil; i++ {
			fr := r.Frame()
			loc := r.Location()
			if r.Err() != nil {
				break
			}
			ss.confirmFrame(sizes, thread, start+i, fr, loc, i == 0)
			ss.chainFrame(sizes, thread, fr, loc, start+i)
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
		if rule := ss.learn.framesRule; rule != 0 {
			if rule > 0 {
				n = min(n, rule)
			}
			ss.specFrames(sizes, thread, 0, n, kFrames)
		}
	case jdwp.CmdStackFrameThisObject:
		v := r.TaggedObjectID()
		if r.Err() == nil {
			ss.values(sizes, 0, v)
		}
	case jdwp.CmdStackFrameGetValues, jdwp.CmdObjectReferenceGetValues:
		lvl := uint8(0)
		if key.Cmd() == jdwp.CmdObjectReferenceGetValues {
			lvl = level + 1
		}
		n := r.Count(1)
		for i := 0; i < n && r.Err() == nil; i++ {
			v := r.Value()
			if r.Err() == nil {
				ss.values(sizes, lvl, v)
			}
		}
	case jdwp.CmdArrayReferenceGetValues:
		tag := jdwp.Tag(r.Uint8())
		if !tag.IsObject() {
			return
		}
		n := r.Count(1)
		for i := 0; i < n && r.Err() == nil; i++ {
			v := r.Value()
			if r.Err() == nil {
				ss.values(sizes, level+1, v)
			}
		}
	case jdwp.CmdObjectReferenceReferenceType:
		obj := params.Object()
		r.Uint8()
		t := r.Class()
		if r.Err() != nil {
			return
		}
		ss.facts.setObjType(obj, t)
		ss.specTypeSig(sizes, t)
		ss.specTypeInfo(sizes, t)
		if lvl, ok := ep.wantFields[obj]; ok {
			delete(ep.wantFields, obj)
			ss.specFields(sizes, obj, t, lvl)
		}
	case jdwp.CmdClassTypeSuperclass:
		sup := r.Class()
		if r.Err() == nil {
			ss.specTypeInfo(sizes, sup)
			ss.retryFields(sizes)
		}
	case jdwp.CmdReferenceTypeFields, jdwp.CmdReferenceTypeFieldsWithGeneric:
		ss.retryFields(sizes)
	case jdwp.CmdArrayReferenceLength:
		arr := params.Object()
		n := r.Int32()
		if r.Err() == nil && ep.wantArray[arr] {
			delete(ep.wantArray, arr)
			ss.specArrayValues(sizes, arr, n, level)
		}
	}
}

// recordFrames records the frames of a Frames reply (r) for the stop
// without speculating on them.
func (ss *session) recordFrames(r, params *jdwp.BodyReader, sizes jdwp.IDSizes) {
	thread, start := params.Thread(), int(params.Int32())
	n := r.Count(sizes.FrameID + 1 + sizes.ReferenceTypeID + sizes.MethodID + 8)
	for i := 0; i < n && r.Err() == nil && len(ss.learn.ep.frames) < maxSpecPerStop; i++ {
		fr, loc := r.Frame(), r.Location()
		if r.Err() == nil {
			ss.learn.ep.frames[fr] = frameInfo{depth: start + i, thread: thread, loc: loc}
		}
	}
}

// chainFrame records one frame of a Frames reply for the stop and, for
// the stopped thread, speculates what the debugger asks of a frame.
func (ss *session) chainFrame(sizes jdwp.IDSizes, thread jdwp.ThreadID, fr jdwp.FrameID, loc jdwp.Location, d int) {
	ep := &ss.learn.ep
	ep.frames[fr] = frameInfo{depth: d, thread: thread, loc: loc}
	if thread != ep.thread {
		return
	}
	w := ss.writer(sizes)
	w.Class(loc.ClassID())
	w.Method(loc.MethodID())
	ss.pbuf = w.Buf
	ss.specParams(sizes, jdwp.CmdMethodIsObsolete, ss.pbuf, kObsolete, nil, 0)
	ss.specClassMeta(sizes, loc, d)
	if d >= maxDepth {
		return
	}
	if ss.learn.thisDepth&(1<<d) != 0 {
		w := ss.writer(sizes)
		w.Thread(thread)
		w.Frame(fr)
		ss.pbuf = w.Buf
		ss.specParams(sizes, jdwp.CmdStackFrameThisObject, ss.pbuf, kThis, nil, 0)
	}
	if ss.learn.valueDepth&(1<<d) != 0 {
		mk := methodOf(loc)
		mk.index, mk.exact = loc.Index, true
		tail, ok := ss.learn.slots[mk]
		if !ok {
			tail, ok = ss.learn.slots[methodOf(loc)]
		}
		if ok {
			w := ss.writer(sizes)
			w.Thread(thread)
			w.Frame(fr)
			w.Buf = append(w.Buf, tail...)
			ss.pbuf = w.Buf
			ss.specParams(sizes, jdwp.CmdStackFrameGetValues, ss.pbuf, kFrameValues, nil, 0)
		}
	}
}
