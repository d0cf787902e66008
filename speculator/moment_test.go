package speculator

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/retag"
)

// The moment's rules (moment.go), on facts alone: an answer of running
// state is never read earlier than one the debugger already got (reads it
// sent together may be answered in any order), a VM event starts afresh,
// an answer is served only while young, a far end serves none, and what a
// far end offers is placed after the event, in the order offered, until
// a read of running state was sent from here.
func TestMomentRules(t *testing.T) {
	f := newFacts(nil)
	f.suspended[thread1] = true // a stop of one thread: the others run
	if f.partialStop() {
		t.Fatal("the moment applies before the VM's agent is known to carry out commands in order")
	}
	f.inOrder = true // the reference agent's Version reply
	fields, _ := keyable.Describe(jdwp.CmdObjectReferenceGetValues)
	frames, _ := keyable.Describe(jdwp.CmdThreadReferenceFrames)
	obj := keyable.Subject{Object: 0x99}
	now := time.Now()

	if !f.partialStop() || !f.scopeOK(fields, obj) || !f.running(fields, obj) {
		t.Fatal("an object's fields at a stop of one thread: want fetchable, as running state")
	}
	if f.running(frames, keyable.Subject{Thread: thread1}) {
		t.Fatal("the stopped thread's frames taken for running state")
	}
	f.evented()
	early, late := f.nextPos(), f.nextPos()
	if !f.momentOK(fields, obj, early, now) || !f.answerable(fields, obj) {
		t.Fatal("replies fetched after the event refused")
	}
	f.deliver(fields, obj, late)
	if f.momentOK(fields, obj, early, now) {
		t.Fatal("after an answer read at a later position, an earlier one may still be served")
	}
	if !f.momentOK(fields, obj, late, now) {
		t.Fatal("the answer the debugger got may not be served again")
	}
	if f.momentOK(fields, obj, late, now.Add(-momentAge-time.Millisecond)) {
		t.Fatalf("a reply older than %v served", momentAge)
	}

	d := &cmdData{keyed: true, info: fields, subj: keyable.Subject{Object: 0x98}}
	fwd := f.nextPos()
	if !f.forwarded(jdwp.CmdObjectReferenceGetValues, d, fwd) {
		t.Fatal("a forwarded GetValues not taken for a read of running state")
	}
	if !f.momentOK(fields, obj, late, now) {
		t.Fatal("while a forwarded read's answer is on its way, a read sent with it was refused an earlier reply")
	}
	f.delivered(fwd)
	if f.momentOK(fields, obj, late, now) {
		t.Fatal("a reply fetched before the debugger's forwarded read served after its answer")
	}
	if f.forwarded(jdwp.CmdEventRequestSet, &cmdData{eff: keyable.EffectReadOnly}, f.nextPos()) {
		t.Fatal("an EventRequest.Set, which reads nothing of the program, taken for a read of running state")
	}

	f.evented()
	if f.momentOK(fields, obj, fwd, now) {
		t.Fatal("a reply fetched before a VM event served after it")
	}
	a, b := f.offerPos(0), f.offerPos(0)
	if a == 0 || b <= a || !f.momentOK(fields, obj, a, now) {
		t.Fatalf("offered replies placed at %d, %d after the event at %d", a, b, f.evFloor)
	}
	// A far end's replies read in one moment share its place; the next
	// moment's come after.
	if m1, m2, m3 := f.offerPos(4), f.offerPos(4), f.offerPos(5); m1 <= b || m2 != m1 || m3 <= m1 {
		t.Fatalf("replies of moments 4, 4, 5 placed at %d, %d, %d after %d", m1, m2, m3, b)
	}
	b = f.offerPos(0)
	if next := f.nextPos(); next <= b {
		t.Fatalf("a command sent after the offers placed at %d, before them (%d)", next, b)
	}
	f.forwarded(jdwp.CmdObjectReferenceGetValues, d, f.nextPos())
	if p := f.offerPos(0); p != 0 {
		t.Fatalf("a reply offered after a read was forwarded placed at %d, want 0 (never served)", p)
	}

	f.farEnd = true
	if f.answerable(fields, obj) {
		t.Fatal("a far end served running state")
	}
	f.allSuspended = true
	if f.running(fields, obj) || !f.answerable(fields, obj) {
		t.Fatal("with the whole VM suspended nothing is running state")
	}
}

// TestMissWidensBehindTheDebuggersCommand: what a miss of running state
// makes the speculator ask (every thread's name, after the debugger asked
// one) reaches the VM after the debugger's own command, so that it may
// answer what the debugger asks once it has that command's answer; and
// it does.
func TestMissWidensBehindTheDebuggersCommand(t *testing.T) {
	r, fs := newStopRig(t)
	stopOfOneThread(r, fs, 0x52, 0x53)
	r.dbg.call(41, jdwp.CmdThreadReferenceName, threadBody(0x53)) // a miss: widened to the other threads
	r.vm.waitAsked("the widened names", jdwp.CmdThreadReferenceName, threadBody(0x52))
	before := r.sp.Stats()
	r.dbg.call(42, jdwp.CmdThreadReferenceName, threadBody(0x52))
	if st := r.sp.Stats().Since(before); st.Hits+st.Belays != 1 {
		t.Fatalf("the name of 0x52, asked after the answer for 0x53: %+v, want it served", st)
	}
	own, spec := -1, -1
	for i, p := range r.vm.commands() {
		if p.Cmd() != jdwp.CmdThreadReferenceName {
			continue
		}
		switch th := jdwp.NewBodyReader(p.Body(), sizes8).ObjectID(); {
		case th == 0x53 && p.ID() == 41:
			own = i
		case th == 0x52 && retag.InRange(p.ID()) && spec < 0:
			spec = i
		}
	}
	if own < 0 || spec < 0 || spec < own {
		t.Fatalf("the VM got the debugger's Name at %d and the proxy's at %d: want the proxy's after", own, spec)
	}
}

// TestMissReasksTheStopsSpeculation: a miss of running state re-asks,
// behind the debugger's command, the stop's speculation of running state
// that came back unused before it (every thread's name, fetched after an
// earlier miss widened), so that the debugger's later reads, asked once
// it has the miss's answer, are served from the new replies rather than
// going to the VM one by one.
func TestMissReasksTheStopsSpeculation(t *testing.T) {
	r, fs := newStopRig(t)
	stopOfOneThread(r, fs, 0x52, 0x53, 0x54)
	r.dbg.call(41, jdwp.CmdThreadReferenceName, threadBody(0x53)) // a miss: widened to the other threads
	r.vm.waitAsked("the widened names", jdwp.CmdThreadReferenceName, threadBody(0x52))
	r.barrier()                                                     // the widened names came back, unused
	r.dbg.call(43, jdwp.CmdThreadReferenceStatus, threadBody(0x53)) // another miss: the names are asked again
	r.vm.waitNames(0x52, 2)
	before := r.sp.Stats()
	r.dbg.call(44, jdwp.CmdThreadReferenceName, threadBody(0x52))
	if st := r.sp.Stats().Since(before); st.Hits+st.Belays != 1 {
		t.Fatalf("the name of 0x52, asked after the answer to a later miss: %+v, want it served", st)
	}
	status, again := -1, -1
	names := 0
	for i, p := range r.vm.commands() {
		switch {
		case p.Cmd() == jdwp.CmdThreadReferenceStatus && p.ID() == 43:
			status = i
		case p.Cmd() == jdwp.CmdThreadReferenceName && jdwp.NewBodyReader(p.Body(), sizes8).ObjectID() == 0x52:
			if names++; names == 2 {
				again = i
			}
		}
	}
	if status < 0 || again < status {
		t.Fatalf("the VM got the debugger's Status at %d and the name of 0x52 again at %d: want it asked again, after", status, again)
	}
}

// stopOfOneThread makes r's VM list thread1 and others, stops thread1
// alone at a breakpoint, and has the debugger list the threads.
func stopOfOneThread(r *rig, fs *frameState, others ...uint64) {
	fs.mu.Lock()
	fs.threads = append([]uint64{thread1}, others...)
	fs.mu.Unlock()
	r.event(jdwp.SuspendEventThread, bpEvent(thread1))
	r.expectEvent()
	r.dbg.call(40, jdwp.CmdVirtualMachineAllThreads, nil)
}

// names is how many times the VM was asked the name of thread t.
// waitNames waits until the VM was asked the name of thread t n times.
func (vm *fakeVM) waitNames(t uint64, n int) {
	vm.t.Helper()
	jdwptest.Await(vm.t, "the VM to be asked a name again", vm.vm.Changed, func() (bool, string) {
		got := vm.askedOf(jdwp.CmdThreadReferenceName, t)
		return got >= n, fmt.Sprintf("asked %d times", got)
	})
}

// TestPeerSpeculationAtAStopWidensNothing: at a stop, a command in the
// proxies' ID range (a near end asking again what its far end offered)
// is not the debugger's: it is not learned, and a miss of it widens
// nothing (here: no other thread's name is asked), where the debugger's
// own miss widens (TestMissWidensBehindTheDebuggersCommand).
func TestPeerSpeculationAtAStopWidensNothing(t *testing.T) {
	r, fs := newStopRig(t)
	stopOfOneThread(r, fs, 0x52, 0x53)
	before := r.sp.Stats()
	r.dbg.call(41, jdwp.CmdThreadReferenceName, threadBody(thread1)) // the debugger reads names
	if st := r.sp.Stats().Since(before); st.Misses != 0 {
		t.Fatalf("the stopped thread's name: %+v, want it served (a miss would widen)", st)
	}
	r.dbg.call(retag.SyntheticBase+7, jdwp.CmdThreadReferenceName, threadBody(0x53))
	r.barrier()
	if n := r.vm.askedOf(jdwp.CmdThreadReferenceName, 0x52); n != 0 {
		t.Fatalf("a near end's own read widened to the name of 0x52 (asked %d times)", n)
	}
}

// TestFarEndWidensNoMissOfRunningState: a far end widens nothing on a
// read of running state its near end forwarded (the names of the other
// threads, which the proxy of TestMissWidensBehindTheDebuggersCommand
// asks): its near end would give what it pushed after that read no place.
// It still learns the read. Fails with the far end widening (session.go).
func TestFarEndWidensNoMissOfRunningState(t *testing.T) {
	ss := farEndAfterNearRead(t)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for _, s := range ss.learn.ep.specs {
		if s.key.Cmd() == jdwp.CmdThreadReferenceName && jdwp.NewBodyReader(s.key.Params(), sizes8).ObjectID() == 0x52 {
			t.Fatal("the far end speculated the name of 0x52 on its near end's miss of running state")
		}
	}
	if !ss.learn.ep.asked[jdwp.CmdThreadReferenceName] {
		t.Fatal("the far end did not learn the name read")
	}
}

// farEndAfterNearRead is a far end's session at a stop of one thread,
// once its near end forwarded the debugger's read of a running thread's
// name (on a VM whose agent is the reference one: the moment applies).
func farEndAfterNearRead(t *testing.T) *session {
	r, fs := keptRig(t, ModeAlways)
	stopOfOneThread(r, fs, 0x52, 0x53)
	r.dbg.call(41, jdwp.CmdThreadReferenceName, threadBody(0x53))
	v, _ := rigSessions.Load(r.sp)
	return v.(*Session).ss
}

// TestFarEndSendsNoRunningStateAfterItsNearEndsRead: once its near end
// forwarded a read of running state at a stop, a far end sends no
// speculation of running state at that stop (its near end would place
// none of it: every such reply would be wasted), but still what is
// about the stopped thread. Fails without the unplaced gate (admit).
func TestFarEndSendsNoRunningStateAfterItsNearEndsRead(t *testing.T) {
	ss := farEndAfterNearRead(t)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	has := func(c jdwp.Cmd, thread uint64) bool {
		for _, s := range ss.learn.ep.specs {
			if s.key.Cmd() == c && jdwp.NewBodyReader(s.key.Params(), sizes8).ObjectID() == thread {
				return true
			}
		}
		return false
	}
	ss.disp.holding = true // nothing goes out from here (no turn): kept in ep.specs
	defer func() { ss.disp.holding, ss.disp.held = false, nil }()
	ss.specParams(sizes8, jdwp.CmdThreadReferenceName, threadBody(0x52), kThreadName, nil, 0)
	if has(jdwp.CmdThreadReferenceName, 0x52) {
		t.Error("the far end speculated a running thread's name after its near end read running state")
	}
	ss.specParams(sizes8, jdwp.CmdThreadReferenceName, threadBody(thread1), kThreadName, nil, 0)
	if !has(jdwp.CmdThreadReferenceName, thread1) {
		t.Error("the far end did not speculate the stopped thread's name")
	}
}

// TestMissReasksOnceAStop: what a miss asked again is not asked a third
// time by a later miss at the stop, and the speculation a re-ask
// superseded counts as wasted (it went to the VM and answered nothing).
// Fails with re-asks asked again (refetch's again flag), or with the
// superseded speculation left uncounted.
func TestMissReasksOnceAStop(t *testing.T) {
	r := widenedNames(t)
	before := r.sp.Stats()
	r.dbg.call(43, jdwp.CmdThreadReferenceStatus, threadBody(0x53)) // another miss: the names are asked again
	r.vm.waitNames(0x52, 2)
	if st := r.sp.Stats().Since(before); st.SpecWasted < 2 {
		t.Errorf("the superseded names of 0x52 and 0x54: %+v, want them counted as wasted", st)
	}
	r.dbg.call(45, jdwp.CmdThreadReferenceStatus, threadBody(0x54)) // a third miss: nothing asked again
	v, _ := rigSessions.Load(r.sp)
	ss := v.(*Session).ss
	ss.mu.Lock()
	defer ss.mu.Unlock()
	n := 0
	for _, s := range ss.learn.ep.specs { // held speculation too
		if s.key.Cmd() == jdwp.CmdThreadReferenceName && jdwp.NewBodyReader(s.key.Params(), sizes8).ObjectID() == 0x52 {
			n++
		}
	}
	if n != 2 {
		t.Errorf("the name of 0x52 speculated %d times at the stop, want twice (widened, asked again once)", n)
	}
}

// TestUsageReportCountsAReplyNoLongerServable: a near end's usage report
// marks used the speculation whose pushed reply it served, even once the
// reply could no longer answer here (a user who read a variable slowly:
// older than the moment). Fails with the report looking the reply up as
// an answer would (cache.peek drops it unserved).
func TestUsageReportCountsAReplyNoLongerServable(t *testing.T) {
	rs, s, ic := quietSession()
	stopAt(rs, ic, jdwp.SuspendEventThread)
	ss := s.ss
	params := threadBody(0x52) // another thread's name: running state
	ss.mu.Lock()
	ss.cache.pause(false) // as a far end's that pushes (ModeAlways), without sending
	rec := &spec{kind: kThreadName, sent: true}
	info, _ := keyable.Fill(&rec.key, jdwp.CmdThreadReferenceName, params, sizes8)
	rec.info, rec.subj = info, rec.key.Subject(info, sizes8)
	ss.learn.ep.specs = append(ss.learn.ep.specs, rec)
	ss.cache.store(&rec.key, info, rec.subj, ss.facts.gen, ss.facts.nextPos(), jdwp.AppendReply(nil, 1, 0, sigBody("w")), rec, sizes8)
	e, ok := ss.cache.lru.Peek(rec.key)
	if !ok {
		ss.mu.Unlock()
		t.Fatal("the reply was not stored")
	}
	e.at = time.Now().Add(-2 * momentAge)
	ss.mu.Unlock()
	s.Asked(nil, jdwp.CmdThreadReferenceName, params, sizes8)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if !rec.used {
		t.Error("the near end served the pushed name, but its speculation is not counted used")
	}
}

// TestFirstStopAsksNoOfferAgain: at a near end's first stop of a
// session, a miss of running state asks no offer of its far end again,
// from nothing or from a learned profile (nothing tells which offers the
// debugger reads; TestNearReasksOffersAfterAMiss, push, for later stops).
// Fails with the first stop asking every unread offer again.
func TestFirstStopAsksNoOfferAgain(t *testing.T) {
	sp := newTestSpeculator(Config{})
	session := func() (reasked bool) {
		r, s := nearPartialStop(t, sp, 0x52, 0x53, 0x54)
		defer r.stop()
		offerNames(t, s, 0x52, 0x53)
		r.dbg.call(41, jdwp.CmdThreadReferenceName, threadBody(0x53)) // offered: a hit
		r.dbg.call(42, jdwp.CmdThreadReferenceName, threadBody(0x54)) // a miss of running state
		s.ss.mu.Lock()
		defer s.ss.mu.Unlock()
		for _, sp := range s.ss.learn.ep.specs { // held speculation too
			if sp.key.Cmd() == jdwp.CmdThreadReferenceName && jdwp.NewBodyReader(sp.key.Params(), sizes8).ObjectID() == 0x52 {
				return true
			}
		}
		return false
	}
	if session() {
		t.Error("a session from nothing asked an unread offer again at its first stop")
	}
	if session() {
		t.Error("a session from a learned profile asked an unread offer again at its first stop")
	}
}

// TestMomentReadsOneInstant: at a stop that left threads running, the
// names the proxy reads ahead go to the VM between a VirtualMachine.Suspend
// and a Resume of its own, with nothing between them but reads that no
// suspension changes (never a suspension count): they read the program at
// one instant, so the debugger's reads of them, one at a time and in
// another order, are all answered from the cache. Fails without the moment
// (dispatcher.send): a name read after one fetched later than it is out
// of place and goes to the VM.
func TestMomentReadsOneInstant(t *testing.T) {
	m := &madeUpVM{fields: 3, threads: []uint64{thread1, 0x52, 0x53, 0x54}}
	r := newRigWith(t, Config{}, m.handler)
	partial := func() {
		r.event(jdwp.SuspendEventThread, bpEvent(thread1))
		r.expectEvent()
		r.dbg.call(nextID(), jdwp.CmdVirtualMachineAllThreads, nil)
	}
	// A debugger that names the threads it lists at each stop (OpenJDK's
	// JDI): the proxy reads them ahead from the third stop on.
	for range 2 {
		partial()
		for _, th := range m.threads {
			r.dbg.call(nextID(), jdwp.CmdThreadReferenceName, threadBody(th))
		}
		r.dbg.call(nextID(), jdwp.CmdThreadReferenceSuspendCount, threadBody(thread1))
		r.dbg.call(nextID(), jdwp.CmdThreadReferenceResume, threadBody(thread1))
	}
	from := len(r.vm.commands())
	partial()
	for _, th := range []uint64{0x54, 0x53, 0x52} {
		r.vm.waitAsked("the name read ahead", jdwp.CmdThreadReferenceName, threadBody(th))
	}
	// The suspension count the debugger read at each stop is read ahead
	// too, before the moment opens (dispatcher.openPending): decided with
	// the moment's reads, it does not wait for the moment to close.
	r.vm.waitCount(jdwp.CmdThreadReferenceSuspendCount, 3)
	third := r.vm.commands()[from:]
	count := slices.IndexFunc(third, func(p jdwp.Packet) bool { return p.Cmd() == jdwp.CmdThreadReferenceSuspendCount })
	suspend := slices.IndexFunc(third, func(p jdwp.Packet) bool { return p.Cmd() == jdwp.CmdVirtualMachineSuspend })
	if count < 0 || suspend < 0 || count > suspend {
		t.Errorf("at the third stop the suspension count went to the VM at %d, the moment's Suspend at %d: want the count first", count, suspend)
	}
	before := r.vm.count(jdwp.CmdThreadReferenceName)
	for _, th := range []uint64{0x54, 0x53, 0x52} {
		if p := r.dbg.call(nextID(), jdwp.CmdThreadReferenceName, threadBody(th)); p.ErrorCode() != 0 {
			t.Fatalf("the name of %#x answered %v", th, p.ErrorCode())
		}
	}
	if n := r.vm.count(jdwp.CmdThreadReferenceName) - before; n != 0 {
		t.Errorf("%d of the debugger's name reads went to the VM, want none: the names were read in one moment", n)
	}
	r.barrier()
	open := false
	suspends := 0
	for _, p := range r.vm.commands() {
		switch c := p.Cmd(); {
		case c == jdwp.CmdVirtualMachineSuspend:
			if open {
				t.Fatal("a moment opened inside another")
			}
			open = true
			suspends++
		case c == jdwp.CmdVirtualMachineResume:
			if !open {
				t.Fatal("the proxy resumed a moment it did not open")
			}
			open = false
		case open && (c == jdwp.CmdThreadReferenceSuspendCount || c == jdwp.CmdThreadReferenceResume ||
			(c == jdwp.CmdThreadReferenceStatus || c == jdwp.CmdThreadReferenceFrames) && jdwp.NewBodyReader(p.Body(), sizes8).ObjectID() != thread1):
			// (The stopped thread's status and frames are the same.)
			t.Errorf("%v went to the VM inside a moment", c)
		}
	}
	if open || suspends == 0 {
		t.Errorf("moments: %d opened, the last one closed: %v", suspends, !open)
	}
	r.dbg.quiet()
}

// widenedNames is a rig whose session is kept (the proxy's usual mode),
// at a stop of thread1 alone among 0x52, 0x53 and 0x54, once the
// debugger's read of 0x53's name missed and widened to the others, whose
// replies came back unread.
func widenedNames(t *testing.T) *rig {
	r, fs := keptRig(t, ModeAdaptive)
	stopOfOneThread(r, fs, 0x52, 0x53, 0x54)
	r.dbg.call(41, jdwp.CmdThreadReferenceName, threadBody(0x53)) // a miss: widened to the other threads
	r.vm.waitAsked("the widened names", jdwp.CmdThreadReferenceName, threadBody(0x52))
	r.barrier()
	return r
}

// keptRig is a rig of a fresh speculator in mode m, whose Session is kept
// (rigSessions), once the debugger asked the ID sizes and the Version
// (on the reference agent: the moment applies).
func keptRig(t *testing.T, m Mode) (*rig, *frameState) {
	fs := &frameState{count: 3, values: 10}
	sp := newTestSpeculator(Config{})
	rigModes.Store(sp, m)
	r := startRigWith(t, sp, fs.handler)
	r.dbg.call(1, jdwp.CmdIDSizes, nil)
	r.dbg.call(2, jdwp.CmdVirtualMachineVersion, nil)
	return r, fs
}

// TestUsageReportCountsWhatTheNearEndSliced: a near end answers a range of
// a thread's frames from the pushed list of every frame, and an object's
// fields in one order from their pushed read in another
// (session.FromDebugger); its report names what the debugger asked, and
// the speculation credited is the one whose reply served it, not one
// that fetched the same range before the stop's invoke (Eclipse's JDI
// reads the top frame again after one). Fails with the report crediting
// only a reply to the very command it names.
func TestUsageReportCountsWhatTheNearEndSliced(t *testing.T) {
	rs, s, ic := quietSession()
	stopAt(rs, ic, jdwp.SuspendAll)
	ss := s.ss
	ss.mu.Lock()
	ss.cache.pause(false) // as a far end's that pushes (ModeAlways), without sending
	ss.facts.frames.hotspot = true
	store := func(c jdwp.Cmd, params []byte) *spec {
		rec := &spec{kind: kTemplate, sent: true}
		info, _ := keyable.Fill(&rec.key, c, params, sizes8)
		rec.info, rec.subj = info, rec.key.Subject(info, sizes8)
		ss.learn.ep.specs = append(ss.learn.ep.specs, rec)
		ss.cache.store(&rec.key, info, rec.subj, ss.facts.gen, ss.facts.nextPos(), jdwp.AppendReply(nil, 1, 0, nil), rec, sizes8)
		return rec
	}
	frames := func(start, n int32) []byte {
		return body(func(w *jdwp.BodyWriter) { w.Thread(thread1); w.Int32(start); w.Int32(n) })
	}
	fields := func(ids ...uint64) []byte {
		return body(func(w *jdwp.BodyWriter) {
			w.ObjectID(0x55)
			w.Int32(int32(len(ids)))
			for _, id := range ids {
				w.FieldID(id)
			}
		})
	}
	before := store(jdwp.CmdThreadReferenceFrames, frames(0, 1))
	ss.facts.invalidateStop(reasonInvoke)
	all := store(jdwp.CmdThreadReferenceFrames, frames(0, -1))
	swapped := store(jdwp.CmdObjectReferenceGetValues, fields(0x62, 0x61))
	ss.mu.Unlock()
	s.Asked(nil, jdwp.CmdThreadReferenceFrames, frames(0, 1), sizes8)
	s.Asked(nil, jdwp.CmdObjectReferenceGetValues, fields(0x61, 0x62), sizes8)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if !all.used {
		t.Error("the near end sliced the top frame from the pushed list of every frame, whose speculation is not counted used")
	}
	if before.used {
		t.Error("the report credited the read of the top frame from before the invoke")
	}
	if !swapped.used {
		t.Error("the near end answered the fields from their pushed read in another order, whose speculation is not counted used")
	}
}

// chainOn is a part that, on the reply to the command keyed at, submits
// a read of thread next's name: a read one level further that a reply
// leads to, as the rules' are.
type chainOn struct {
	ss   *session
	at   map[uint64]*spec // by the thread whose name's reply leads on
	made []*spec
}

func (c *chainOn) replied(r *reply) {
	th := jdwp.NewBodyReader(r.params, sizes8).ObjectID()
	if s := c.at[th]; s != nil {
		c.made = append(c.made, s)
		c.ss.disp.submit(c.ss.out, s)
	}
}

// nameSpec is a speculative read of thread th's name, a read of running
// state at a stop of thread1 alone.
func nameSpec(ss *session, th uint64) *spec {
	s := &spec{kind: kThreadName, gen: ss.facts.gen}
	info, _ := keyable.Fill(&s.key, jdwp.CmdThreadReferenceName, threadBody(th), sizes8)
	s.info, s.subj = info, s.key.Subject(info, sizes8)
	return s
}

// burstRig is a session through a link stopped with threads left
// running, whose three name reads (one turn, one moment) each lead to a
// read of another thread's name (chainOn), made into c.made.
func burstRig(t *testing.T) (ss *session, first []*spec, c *chainOn) {
	rs, s, ic := quietSession()
	stopAt(rs, ic, jdwp.SuspendEventThread)
	ss = s.ss
	ss.mu.Lock()
	ss.facts.inOrder = true  // the reference agent's Version reply
	ss.facts.nearEnd = false // a session through a link (ModeAdaptive)
	ss.cache.pause(false)
	ss.disp.ids = retag.NewTable() // the relay's, which this session has none of
	ss.mu.Unlock()
	c = &chainOn{ss: ss, at: map[uint64]*spec{0x52: nameSpec(ss, 0x62), 0x53: nameSpec(ss, 0x63)}}
	ss.on.repliers = append(ss.on.repliers, c)
	first = []*spec{nameSpec(ss, 0x52), nameSpec(ss, 0x53), nameSpec(ss, 0x54)}
	return ss, first, c
}

// submitInOneTurn submits specs to ss's dispatcher in one turn, as a
// stop's event does.
func submitInOneTurn(ss *session, specs []*spec) {
	var out relay.Outbox
	ss.lock(&out)
	for _, x := range specs {
		ss.disp.submit(ss.out, x)
	}
	ss.unlock()
}

// replyInTurn hands ss the VM's reply p to x in a turn of its own.
func replyInTurn(ss *session, x *spec, p jdwp.Packet) {
	var out relay.Outbox
	ss.lock(&out)
	ss.specReply(x, p, sizes8)
	ss.unlock()
}

// sentOf counts the specs of made that went to the VM.
func sentOf(made []*spec) (n int) {
	for _, y := range made {
		if y.sent {
			n++
		}
	}
	return n
}

// TestChainedReadsShareTheStopsMoment: at a stop that left threads
// running, the moment the stop's first reads of running state opened
// stays open while they are out (session.stopMoment), and what their
// replies lead to goes to the VM at once, in it: one position, which the
// debugger may read in any order. Fails with a moment of one turn.
func TestChainedReadsShareTheStopsMoment(t *testing.T) {
	ss, first, c := burstRig(t)
	submitInOneTurn(ss, first)
	if ss.disp.frozen == 0 {
		t.Fatal("the stop's moment closed with its reads still out")
	}
	name := jdwp.AppendReply(nil, 1, 0, body(func(w *jdwp.BodyWriter) { w.String("w") }))
	for i, x := range first {
		replyInTurn(ss, x, name)
		if want := min(i+1, 2); sentOf(c.made) != want {
			t.Fatalf("after reply %d of 3, %d of the reads it led to went to the VM, want %d", i+1, sentOf(c.made), want)
		}
	}
	for _, y := range c.made {
		if !y.moment || y.pos != first[0].pos {
			t.Errorf("a read a reply led to: in a moment %v at position %d; want the stop's moment, at %d", y.moment, y.pos, first[0].pos)
		}
	}
	if ss.disp.frozen == 0 {
		t.Fatal("the moment closed with the reads it led to out")
	}
	for _, y := range c.made {
		replyInTurn(ss, y, name)
	}
	if ss.disp.frozen != 0 {
		t.Error("the moment stayed open with nothing of the stop out")
	}
}

// TestReadsOfOneBurstShareAMoment: on a link too slow for the stop's
// moment to be held for the next reply (stopMoment), the reads the replies of one turn's speculation
// lead to go to the VM in one moment, once the last of those replies
// came, however many replies led to them: they share one position (one
// read from an earlier moment than another the debugger already got would
// be out of place: asked again, a round trip lost). Fails with each
// reply's reads sent in a moment of their own (dispatcher.deferred).
func TestReadsOfOneBurstShareAMoment(t *testing.T) {
	ss, first, c := burstRig(t)
	ss.disp.rtt.sample(maxHeldMoment) // a round trip as long as a moment may be held
	submitInOneTurn(ss, first)
	if !first[0].moment || first[0].pos != first[2].pos {
		t.Fatal("the first reads did not go in one moment")
	}
	if ss.disp.frozen != 0 {
		t.Fatal("the moment stayed open with a round trip of maxHeldMoment")
	}
	name := jdwp.AppendReply(nil, 1, 0, body(func(w *jdwp.BodyWriter) { w.String("w") }))
	var out relay.Outbox
	for i, x := range first { // their replies, one turn each, in order
		ss.lock(&out)
		ss.specReply(x, name, sizes8)
		sent := sentOf(c.made)
		ss.unlock()
		if last := i == len(first)-1; !last && sent > 0 {
			t.Fatalf("after reply %d of 3, %d of the reads it led to went to the VM, want none before the last", i+1, sent)
		}
	}
	if len(c.made) != 2 {
		t.Fatalf("%d reads led to, want 2", len(c.made))
	}
	a, b := c.made[0], c.made[1]
	if !a.sent || !b.sent || !a.moment || !b.moment || a.pos != b.pos {
		t.Errorf("the reads two replies of one turn led to: sent %v %v, in a moment %v %v, at positions %d and %d; want one moment",
			a.sent, b.sent, a.moment, b.moment, a.pos, b.pos)
	}
	if a.pos <= first[0].pos {
		t.Errorf("the reads led to placed at %d, not after the moment that led to them (%d)", a.pos, first[0].pos)
	}
}

// TestPendingMomentReadsStayInPlace: a moment's reads decided in a turn
// are placed as they go on the wire (dispatcher.openPending); an answer
// that raises the floor in the same turn (the debugger's hit) does not
// find them out of place and ask them again: they go after it. Fails with
// unplaced reads taken for reads below the floor.
func TestPendingMomentReadsStayInPlace(t *testing.T) {
	ss, first, _ := burstRig(t)
	var out relay.Outbox
	ss.lock(&out)
	for _, x := range first {
		ss.disp.submit(ss.out, x)
		ss.learn.ep.specs = append(ss.learn.ep.specs, x) // the stop's speculation
	}
	ss.facts.delivered(ss.facts.nextPos()) // an answer given in this turn raised the floor
	ss.reread(sizes8)
	floor := ss.facts.floor
	ss.unlock()
	for _, x := range first {
		if x.done || x.pos < floor {
			t.Errorf("a read of the turn's moment: asked again %v, at %d below the floor %d", x.done, x.pos, floor)
		}
	}
}

// TestYieldClosesAHeldMoment: a command the session's hooks never see
// (the DDM tap's own, sent from Do work after relay.Session.Yield) finds
// the program as it left it: the stop's moment, held open while its
// speculation is out, is closed first, its Resume on the wire before the
// command. Fails without session.Yield: the command goes inside the
// proxy's suspension.
func TestYieldClosesAHeldMoment(t *testing.T) {
	v := &reqVM{fs: &frameState{count: 3, values: 10}, next: 40}
	r := newRigWith(t, Config{}, func(p jdwp.Packet) (jdwp.ErrorCode, []byte) {
		switch p.Cmd() {
		case jdwp.CmdVirtualMachineVersion:
			return 0, jdwptestVersion("OpenJDK 64-Bit Server VM")
		case jdwp.CmdDDMChunk:
			return 0, nil
		}
		return v.handler(p)
	})
	r.dbg.call(nextID(), jdwp.CmdVirtualMachineVersion, nil)
	step := func() {
		r.dbg.call(nextID(), jdwp.CmdVirtualMachineAllThreads, nil)
		r.dbg.call(nextID(), jdwp.CmdThreadReferenceResume, threadBody(thread1))
		r.vm.waitFor(jdwp.CmdThreadReferenceResume)
		r.barrier()
	}
	r.event(jdwp.SuspendEventThread, bpEvent(thread1))
	r.expectEvent()
	for range 2 { // the thread list learned
		step()
		r.event(jdwp.SuspendEventThread, bpEvent(thread1))
		r.expectEvent()
	}
	step()
	from := len(r.vm.commands())
	r.vm.hold() // the thread list read ahead stays out: the moment stays open
	r.event(jdwp.SuspendEventThread, bpEvent(thread1))
	r.expectEvent()
	r.vm.waitFor(jdwp.CmdVirtualMachineAllThreads)
	rs := r.rs.Load()
	chunk := jdwp.AppendCommand(nil, rs.IDs().NewSynthetic(), jdwp.CmdDDMChunk, []byte("THEN\x00\x00\x00\x01\x01"))
	if err := rs.Do(func(out *relay.Outbox) {
		rs.Yield(out)
		out.SendToVM(chunk, relay.Synthetic)
	}); err != nil {
		t.Fatal(err)
	}
	r.vm.waitFor(jdwp.CmdDDMChunk)
	r.vm.release()
	r.barrier()
	got := r.vm.commandsOf(from, jdwp.CmdVirtualMachineSuspend, jdwp.CmdVirtualMachineResume, jdwp.CmdDDMChunk)
	want := []jdwp.Cmd{jdwp.CmdVirtualMachineSuspend, jdwp.CmdVirtualMachineResume, jdwp.CmdDDMChunk}
	if !slices.Equal(got, want) {
		t.Errorf("the VM received %v, want %v", got, want)
	}
	r.dbg.quiet()
}
