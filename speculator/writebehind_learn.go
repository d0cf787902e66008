package speculator

import (
	"errors"
	"fmt"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
	"github.com/jdwpaccel/jdwpaccel/relay"
)

// What write-behind learns from the VM's replies and events, how it checks
// the replies to what it answered, and its glue to the session (the rules
// are in writebehind.go).

// accepted records a request the VM accepted (or will: written behind)
// under c.id: its shape, its IDs, and it as active.
func (w *writeBehind) accepted(c *wbCmd) {
	if len(w.requests) >= maxInvalMap || len(w.locations) >= maxInvalMap || len(w.fields) >= maxInvalMap {
		// Bounded: a session this large writes nothing more behind
		// (forgetting active step requests could not be proven safe).
		w.stopped = true
		w.forgetIDs()
		clear(w.requests)
		return
	}
	w.shapes[c.shape] = struct{}{}
	req := request{kind: c.kind}
	if c.kind == jdwp.EventClassUnload && len(c.mods) == 0 {
		req.watch = true
		w.unloadWatch++
	}
	// A thread the VM accepted may have run since (a forwarded Set's
	// reply comes after the command): threads are learned only from
	// events and AllThreads replies (learnEvent, read). Classes are
	// remembered from here only while unloads are watched.
	classes := w.unloadWatch > 0
	for i := range c.mods {
		m := &c.mods[i]
		switch m.Kind {
		case jdwp.ModCount:
			req.count = true
		case jdwp.ModClassOnly, jdwp.ModLocationOnly, jdwp.ModExceptionOnly, jdwp.ModFieldOnly:
			if classes {
				w.acceptedClass(m)
			}
		case jdwp.ModStep:
			req.step = jdwp.ThreadID(m.Thread)
			req.active = true
			w.steps[req.step]++
		}
	}
	w.requests[c.id] = req
}

// acceptedClass remembers the class, location or field of modifier m of
// an accepted request.
func (w *writeBehind) acceptedClass(m *jdwp.Modifier) {
	switch m.Kind {
	case jdwp.ModClassOnly:
		w.classes[jdwp.ClassID(m.Class)] = struct{}{}
	case jdwp.ModLocationOnly:
		w.locations[m.Location] = struct{}{}
		w.classes[m.Location.ClassID()] = struct{}{}
	case jdwp.ModExceptionOnly:
		w.excClasses[jdwp.ClassID(m.Class)] = struct{}{}
	case jdwp.ModFieldOnly:
		w.fields[fieldKey{jdwp.ClassID(m.Class), jdwp.FieldID(m.Field)}] = struct{}{}
	}
}

// cleared forgets request id (the VM frees it).
func (w *writeBehind) cleared(id int32) {
	w.inactive(id)
	if req, ok := w.requests[id]; ok && req.watch {
		if w.unloadWatch--; w.unloadWatch == 0 {
			w.forgetClasses() // unloads go unseen from here
		}
	}
	delete(w.requests, id)
}

// inactive notes that step request id is no longer active at the VM.
func (w *writeBehind) inactive(id int32) {
	req, ok := w.requests[id]
	if !ok || !req.active {
		return
	}
	req.active = false
	w.requests[id] = req
	if w.steps[req.step]--; w.steps[req.step] <= 0 {
		delete(w.steps, req.step)
	}
}

// forgetIDs forgets every ID known valid (something may have invalidated
// any of them).
func (w *writeBehind) forgetIDs() {
	clear(w.threads)
	w.forgetClasses()
}

// forgetClasses forgets every class known valid, and what names one.
func (w *writeBehind) forgetClasses() {
	clear(w.classes)
	clear(w.locations)
	clear(w.ranges)
	clear(w.fields)
	clear(w.excClasses)
}

// forwarded learns from the VM's reply to a forwarded state-setting command.
func (w *writeBehind) forwarded(c *wbCmd, p jdwp.Packet) {
	ok := p.ErrorCode() == jdwp.ErrorNone
	switch c.op {
	case wbSet:
		w.setsFwd = max(0, w.setsFwd-1)
		if !ok {
			w.seqExact = false // a failed install may have used a request ID
			return
		}
		r := jdwp.NewBodyReader(p.Body(), jdwp.IDSizes{})
		id := r.Int32()
		if r.Err() != nil {
			w.seqExact = false
			return
		}
		if w.seqExact && w.last != 1<<31-1 && id == w.last+1 {
			if w.sinceEvents {
				w.seqStop = true
			} else {
				w.seqBack = true
			}
		} else if w.seqExact {
			w.seqBack, w.seqStop, w.seqKind, w.seqWrong = false, false, false, true // not numbered as learned
		}
		w.last, w.seqExact, w.sinceEvents = id, true, false
		w.kindsFwd[uint8(c.kind)/64] |= 1 << (uint8(c.kind) % 64)
		if c.shape.n != malformed {
			c.id = id
			w.accepted(c)
		}
	case wbClear:
		if ok {
			w.cleared(c.id)
		}
	case wbVMResume:
		w.vmResumeOK = w.vmResumeOK || ok
	case wbThreadResume:
		w.thResumeOK = w.thResumeOK || ok
	}
}

// check checks the VM's reply to a written-behind command against the
// answer the debugger got, and returns an error when they differ.
func (w *writeBehind) check(c *wbCmd, p jdwp.Packet) error {
	if code := p.ErrorCode(); code != jdwp.ErrorNone {
		return code
	}
	if c.op != wbSet {
		return nil
	}
	w.sinceEvents = false
	r := jdwp.NewBodyReader(p.Body(), jdwp.IDSizes{})
	if id := r.Int32(); r.Err() != nil || r.Remaining() != 0 || id != c.id {
		return fmt.Errorf("%w: the VM assigned request ID %d, the debugger was answered %d", errRequestID, id, c.id)
	}
	return nil
}

var errRequestID = errors.New("request ID differs from the answer")

// seen learns from an Event.Composite the VM sent (event), or forgets
// every ID known valid if it could not be read: it may hide anything.
func (w *writeBehind) seen(comp *jdwp.Composite, err error) {
	w.bad = err != nil
	if w.bad {
		w.forgetIDs()
		return
	}
	w.event(comp)
}

// taken learns from a composite read whole once the session has taken in
// the suspension it brings (learnEvent).
func (w *writeBehind) taken(comp *jdwp.Composite) {
	if !w.bad {
		w.learnEvent(comp, &w.facts)
	}
}

// event learns from an Event.Composite the VM sent: threads and classes it
// names, threads that died, classes unloaded, count-filtered requests the
// VM deleted as they fired, the VM's death.
func (w *writeBehind) event(comp *jdwp.Composite) {
	if !w.on {
		return
	}
	w.sinceEvents = true
	for i := range comp.Events {
		e := &comp.Events[i]
		if comp.SuspendPolicy != jdwp.SuspendNone && e.Kind != jdwp.EventVMStart {
			w.stopSeen = true
		}
		if req, ok := w.requests[e.RequestID]; ok && req.count {
			w.inactive(e.RequestID) // fired: the VM deleted it (Clear still answers NONE)
		}
		switch e.Kind {
		case jdwp.EventThreadDeath:
			delete(w.threads, e.ThreadID()) // its step requests stay counted: conservative
			continue
		case jdwp.EventClassUnload:
			clear(w.classes)
			clear(w.locations)
			clear(w.ranges)
			clear(w.fields)
			clear(w.excClasses)
			continue
		case jdwp.EventVMDeath:
			w.stopped = true
			continue
		}
	}
}

// learnEvent learns, once the session has taken in the suspension comp
// brings, the threads it proves alive (named by it and suspended now)
// and the classes it names that may be remembered (classesLearnable).
func (w *writeBehind) learnEvent(comp *jdwp.Composite, f *facts) {
	if !w.on {
		return
	}
	w.sync(f)
	classes := w.classesLearnable(f)
	for i := range comp.Events {
		e := &comp.Events[i]
		switch e.Kind {
		case jdwp.EventThreadDeath, jdwp.EventClassUnload, jdwp.EventVMDeath:
			continue
		case jdwp.EventClassPrepare:
			if classes && len(w.classes) < maxClasses {
				w.classes[e.ClassID()] = struct{}{}
			}
		}
		w.provenAlive(e.ThreadID(), f)
	}
}

// ---- session glue -----------------------------------------------------------

// answer answers the debugger's command f, which command proved (d.wb
// written), at once and sends it to the VM as the proxy's own, with d
// (and its wbCmd) kept until the reply (a moment open closed first, or
// not, as session.FromDebugger decided: wbOp.inMoment).
func (w *writeBehind) answer(f *relay.Frame, d *cmdData) relay.Action {
	c := d.wb
	id := w.disp.ids.NewSynthetic()
	w.sendBuf = append(w.sendBuf[:0], f.Packet...)
	jdwp.Packet(w.sendBuf).SetID(id)
	w.out.SendToVMData(w.sendBuf, relay.Synthetic, slot, w.data.get(d))
	var body []byte
	if c.op == wbSet {
		body = []byte{byte(c.id >> 24), byte(c.id >> 16), byte(c.id >> 8), byte(c.id)}
	}
	f.Answer = jdwp.AppendReply(w.ansBuf[:0], f.ID, jdwp.ErrorNone, body)
	w.ansBuf = f.Answer[:0]
	f.Origin = relay.WriteBehind
	w.sp.countWriteBehind(false)
	return relay.Consume
}

// settle handles the VM's reply to a state-setting command (c): it
// learns from a forwarded one and checks a written-behind one, ending the
// session if the VM's answer differs from the debugger's.
func (w *writeBehind) settle(rs *relay.Session, c *wbCmd, p jdwp.Packet) {
	defer w.put(c)
	if !c.written {
		w.forwarded(c, p)
		return
	}
	err := w.check(c, p)
	if err == nil {
		return
	}
	w.stopped = true
	w.sp.countWriteBehind(true)
	var code jdwp.ErrorCode
	errors.As(err, &code)
	w.log.Error().Stringer(relay.LogCmd, wbOpCmds[c.op]).Stringer(relay.LogErrorCode, code).Err(err).
		Msg("the VM did not confirm a command the proxy had already answered (write-behind); ending the debugger's session")
	rs.Fail(relay.ReasonWriteBehindFailed, fmt.Errorf("write-behind %v: %w", wbOpCmds[c.op], err))
}

// codeRange is a method's code indexes, first and last, from the VM's
// Method.LineTable reply.
type codeRange struct{ start, end int64 }

// read learns from the VM's successful reply p to a read-only command c
// with params, one valid now (its facts were not invalidated since it was
// sent): a LineTable's code range proves the class and method valid and
// which code indexes a breakpoint may name. HotSpot's SetBreakpoint
// checks the method, then only that 0 <= index < the method's code size
// (its LineTable's end is the code size less one); libjdwp checks the
// class is one (the LineTable reply just did) and ignores the type tag.
// The range is forgotten with the locations (class unload, redefinition,
// disposal, an unreadable event).
func (w *writeBehind) read(c jdwp.Cmd, params []byte, p jdwp.Packet, sizes jdwp.IDSizes, f *facts) {
	if !w.on {
		return
	}
	w.sync(f)
	switch c {
	case jdwp.CmdVirtualMachineAllThreads:
		w.allThreads(p, sizes, f)
		return
	case jdwp.CmdStackFrameThisObject:
		w.thisObject(params, p, sizes, f)
		return
	}
	if c != jdwp.CmdMethodLineTable || len(w.ranges) >= maxInvalMap || !w.classesLearnable(f) {
		return
	}
	pr := jdwp.NewBodyReader(params, sizes)
	k := methodKey{class: pr.Class(), method: pr.Method()}
	r := jdwp.NewBodyReader(p.Body(), sizes)
	cr := codeRange{r.Int64(), r.Int64()}
	if pr.Err() != nil || pr.Remaining() != 0 || r.Err() != nil || cr.start < 0 || cr.end < cr.start {
		return // a native method's is -1, -1: it takes no breakpoint
	}
	w.ranges[k] = cr
}

// allThreads learns the threads of an AllThreads reply as alive when the
// whole VM is suspended: they stay alive until threads run again (sync).
func (w *writeBehind) allThreads(p jdwp.Packet, sizes jdwp.IDSizes, f *facts) {
	if !f.stillAll() {
		return
	}
	r := jdwp.NewBodyReader(p.Body(), sizes)
	n := r.Count(sizes.ObjectID)
	for i := 0; i < n && r.Err() == nil && len(w.threads) < maxInvalMap; i++ {
		if t := r.Thread(); r.Err() == nil && t != 0 {
			w.threads[t] = struct{}{}
		}
	}
}

// invoked learns, from the successful reply to an invoke the debugger
// ran on thread t, that t is alive: its method returned (or threw) on it,
// and the VM suspended it again as it was before (facts.invokeReplied
// has restored that). The other threads ran meanwhile: sync forgets
// them first, as it would at the next command.
func (w *writeBehind) invoked(t jdwp.ThreadID, f *facts) {
	if !w.on {
		return
	}
	w.sync(f)
	w.provenAlive(t, f)
}

// provenAlive notes thread t, which a reply or event just proved alive,
// as alive and suspended if it is suspended now (w.sync called since the
// threads last ran).
func (w *writeBehind) provenAlive(t jdwp.ThreadID, f *facts) {
	if t != 0 && f.resumesInFlight == 0 && f.suspendedNow(t) && len(w.threads) < maxInvalMap {
		w.threads[t] = struct{}{}
	}
}

// thisObject learns the object of a ThisObject reply (valid now) as
// reachable, for an InstanceOnly modifier: while its thread stays
// suspended (a thread in threads: alive and suspended since epoch, which
// sync clears with it), the frame holds the object, so it cannot be
// collected; the VM handed its ID out in this reply, and only the
// debugger's DisposeObjects could make the ID invalid (decide forgets it
// then). HotSpot checks an InstanceOnly's object by its ID alone
// (INVALID_OBJECT for a collected or disposed one).
func (w *writeBehind) thisObject(params []byte, p jdwp.Packet, sizes jdwp.IDSizes, f *facts) {
	pr := jdwp.NewBodyReader(params, sizes)
	t := pr.Thread()
	r := jdwp.NewBodyReader(p.Body(), sizes)
	v := r.TaggedObjectID()
	if pr.Err() != nil || r.Err() != nil || r.Remaining() != 0 || v.Bits == 0 || !w.threadKnown(t) ||
		f.resumesInFlight != 0 || !f.suspendedNow(t) || len(w.reachable) >= maxInvalMap {
		return
	}
	w.reachable[v.Bits] = struct{}{}
}

// inRange says whether a LineTable reply proved l valid for a breakpoint.
func (w *writeBehind) inRange(l jdwp.Location) bool {
	cr, ok := w.ranges[methodKey{class: l.ClassID(), method: l.MethodID()}]
	return ok && l.Index <= 1<<63-1 && int64(l.Index) >= cr.start && int64(l.Index) <= cr.end
}

// replied takes the reply to a state-setting command (settle) and, from
// a successful reply, the VM's capabilities (which the profile's shapes
// are taken under, writebehind_profile.go), and what a reply still valid
// proves (read).
func (w *writeBehind) replied(r *reply) {
	if r.d != nil && r.d.wb != nil {
		w.settle(r.rs, r.d.wb, r.p)
	}
	if !r.ok {
		return
	}
	if r.d != nil && r.d.eff == keyable.EffectInvoke {
		w.invoked(r.d.thread, &w.facts)
	}
	if r.c == jdwp.CmdVirtualMachineCapabilitiesNew && !r.offered {
		w.capsKnown(r.p)
	}
	if r.c == jdwp.CmdVirtualMachineVersion {
		w.hotspot = hotSpotVersion(r.p)
	}
	if r.valid {
		w.read(r.c, r.params, r.p, r.sizes, &w.facts)
	}
}
