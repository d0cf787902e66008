package speculator

import (
	"slices"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
	"github.com/jdwpaccel/jdwpaccel/retag"
)

// ownCommands is how many commands the VM received from the proxy itself
// (IDs in the synthetic range), by command.
func ownCommands(r *rig) map[jdwp.Cmd]int {
	n := map[jdwp.Cmd]int{}
	for _, p := range r.vm.commands() {
		if retag.InRange(p.ID()) {
			n[p.Cmd()]++
		}
	}
	return n
}

// firstReadOf is what the reads of sp's kept session's first stop said of
// its profile (rigModes: ModeAdaptive or ModeAlways).
func firstReadOf(sp *Speculator) firstState {
	v, _ := rigSessions.Load(sp)
	ss := v.(*Session).ss
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.learn.firstRead
}

// setupOf is the setup of sp's kept session so far (rigModes).
func setupOf(sp *Speculator) []jdwp.EventKind {
	v, _ := rigSessions.Load(sp)
	ss := v.(*Session).ss
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.lrn.sets.setupKinds()
}

// TestFirstReadConfirmsTheProfile: a session that took another session's
// profile (the made-up client's: it reads its top frames first at a
// stop) speculates nothing at its first stop until its debugger's first
// read; a debugger that reads first what the profile's did gets the
// profile's stop replayed (the frame's values), one that reads otherwise
// (its thread list, then a frame's values: another debugger with the same
// attach) gets none of it, nor at its next stop. Fails with the stop
// speculated at the event (session.awaitFirst), or with a refuted profile
// replayed (learnedRules.confirm).
func TestFirstReadConfirmsTheProfile(t *testing.T) {
	for _, same := range []bool{true, false} {
		sp := newTestSpeculator(Config{})
		id := uint32(100)
		learnMadeUp(t, sp, &id)
		rigModes.Store(sp, ModeAdaptive) // its Session kept
		r, m := attachMadeUp(t, sp)
		before := ownCommands(r)
		madeUpStop(r, m)
		r.barrier()
		if at := ownCommands(r); len(at) != len(before) || at[jdwp.CmdThreadReferenceFrames] != before[jdwp.CmdThreadReferenceFrames] {
			t.Fatalf("same=%v: the proxy sent %v at the event, before the debugger's first read (before it: %v)", same, at, before)
		}
		if same {
			r.dbg.call(nextID(), jdwp.CmdThreadReferenceFrames, body(func(w *jdwp.BodyWriter) { w.ObjectID(thread1); w.Int32(0); w.Int32(2) }))
		} else {
			// Its thread list, which the profile's debugger reads too
			// (later), decides nothing; its own read of the stack does.
			r.dbg.call(nextID(), jdwp.CmdVirtualMachineAllThreads, nil)
			r.dbg.call(nextID(), jdwp.CmdStackFrameGetValues, body(func(w *jdwp.BodyWriter) {
				w.ObjectID(thread1)
				w.FrameID(0x999)
				w.Int32(1)
				w.Int32(0)
				w.Uint8(uint8(jdwp.TagInt))
			}))
		}
		r.barrier()
		r.barrier()
		values := ownCommands(r)[jdwp.CmdStackFrameGetValues]
		if same && values == 0 {
			t.Error("a debugger that read first what the profile's did: the frame's values were not speculated")
		}
		if !same && values != 0 {
			t.Errorf("a debugger that read first its thread list: the profile's frame values were speculated %d times", values)
		}
		if state, want := firstReadOf(sp), map[bool]firstState{true: firstConfirmed, false: firstRefuted}[same]; state != want {
			t.Errorf("same=%v: the first stop said %d of the profile, want %d", same, state, want)
		}
		if same {
			r.dbg.quiet()
			continue
		}
		r.dbg.call(nextID(), jdwp.CmdVirtualMachineResume, nil)
		madeUpStop(r, m)
		r.dbg.call(nextID(), jdwp.CmdVirtualMachineAllThreads, nil)
		r.barrier()
		r.barrier()
		if n := ownCommands(r)[jdwp.CmdStackFrameGetValues]; n != 0 {
			t.Errorf("at the refuted profile's next stop, its frame values were speculated %d times", n)
		}
		r.dbg.quiet()
	}
}

// TestProfileFirstStopCommandsWait: the attach's replay of what the
// profile's debugger asked of a class at its first stop (not at the
// attach) waits for the first stop's first read: sent once it confirms
// the profile, never once it refutes it. Fails with them replayed at the
// attach (attach.replay).
func TestProfileFirstStopCommandsWait(t *testing.T) {
	s := &session{}
	s.core.learn = newLearner()
	a := &attach{core: &s.core}
	params := body(func(w *jdwp.BodyWriter) { w.ReferenceTypeID(0x70) })
	fields := jdwp.CmdReferenceTypeFields
	a.replay(sizes8, fields, params, true)
	if len(a.deferred) != 1 {
		t.Fatalf("a first-stop command replayed before the first read: %d deferred, want 1", len(a.deferred))
	}
	a.learn.firstRead = firstRefuted
	a.release(sizes8)
	if len(a.deferred) != 0 {
		t.Fatalf("%d deferred after a refuted first read, want none", len(a.deferred))
	}
	a.replay(sizes8, fields, params, true)
	if len(a.deferred) != 0 {
		t.Fatal("a first-stop command of a refuted profile kept")
	}
}

// TestAnswerAboveUnreadReasks: at a stop of one thread, an answer of
// running state read at a later position than replies the stop's
// speculation fetched and the debugger has not read (the names a miss
// widened to) makes those out of place: they are asked again at once,
// the first counted as wasted. Fails without session.deliver's reread.
func TestAnswerAboveUnreadReasks(t *testing.T) {
	r := widenedNames(t)
	v, _ := rigSessions.Load(r.sp)
	ss := v.(*Session).ss
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.disp.holding = true // nothing goes out from here (no turn): kept in ep.specs
	defer func() { ss.disp.holding, ss.disp.held = false, nil }()
	again := func() int {
		n := 0
		for _, s := range ss.learn.ep.specs {
			if s.again && s.key.Cmd() == jdwp.CmdThreadReferenceName {
				n++
			}
		}
		return n
	}
	name, _ := keyable.Describe(jdwp.CmdThreadReferenceName)
	was := again()
	ss.deliver(name, keyable.Subject{Thread: 0x53}, ss.facts.floor) // no higher: nothing out of place
	if n := again() - was; n != 0 {
		t.Fatalf("an answer at the floor asked %d names again", n)
	}
	ss.deliver(name, keyable.Subject{Thread: 0x53}, ss.facts.nextPos()) // read after the names
	if n := again() - was; n != 2 {
		t.Fatalf("an answer read after the unread names of 0x52 and 0x54 asked %d again, want 2", n)
	}
}

// TestKnownThreadsNamedAtOnce: at a stop of one thread, the names a
// profile's debugger read of every listed thread are asked, once this
// debugger asks for the list, of the threads the session already knows,
// without waiting for the list's reply (a round trip); a profile holds no
// thread ID, so nothing else names them. Fails without
// learnedRules.feedKnownThreads.
func TestKnownThreadsNamedAtOnce(t *testing.T) {
	sp := newTestSpeculator(Config{})
	id := uint32(100)
	learnMadeUp(t, sp, &id) // its client names every thread at each stop
	r, m := attachMadeUp(t, sp)
	r.dbg.call(nextID(), jdwp.CmdVirtualMachineAllThreads, nil) // the session knows the VM's threads
	m.mu.Lock()
	m.stop++
	m.mu.Unlock()
	r.event(jdwp.SuspendEventThread, bpEvent(thread1))
	r.expectEvent()
	r.vm.hold() // no reply from here: the stop's AllThreads reply never comes
	defer r.vm.release()
	asked := r.vm.askedOf(jdwp.CmdThreadReferenceName, 0x54)
	// The first read, as the profile's debugger's: the stop's speculation
	// goes (its thread list among it); then the debugger asks the list.
	r.dbg.send(nextID(), jdwp.CmdThreadReferenceFrames, body(func(w *jdwp.BodyWriter) { w.ObjectID(thread1); w.Int32(0); w.Int32(2) }))
	r.dbg.send(nextID(), jdwp.CmdVirtualMachineAllThreads, nil)
	r.vm.waitNames(0x54, asked+1)
}

// TestTemplateOfTheEventIsARoot: a template whose parameters all come
// from the event (the variable table of the event's method) reads from
// no reply, whatever reply the debugger asked it after: it is replayed at
// the event. Fails without readFrom.
func TestTemplateOfTheEventIsARoot(t *testing.T) {
	frames := &lnode{cmd: jdwp.CmdThreadReferenceFrames, shape: "frames"}
	ps := []lparam{{src: srcClass}, {src: srcMethod}}
	if got := readFrom(ps, frames); got != nil {
		t.Errorf("a template of the event's class and method reads from %v, want none", got.cmd)
	}
	ps = []lparam{{src: srcThread}, {src: srcReply, path: pFrame}, {src: srcSlots}}
	if got := readFrom(ps, frames); got != frames {
		t.Errorf("a template of a frame of the Frames reply reads from %v, want the Frames template", got)
	}
	var lr learnedRules
	lr.graphs = map[jdwp.EventKind]*lgraph{}
	lr.importLearned(&profile{Learned: []learnedTmpl{
		{Kind: jdwp.EventBreakpoint, Set: jdwp.CmdThreadReferenceFrames.Set, Cmd: jdwp.CmdThreadReferenceFrames.Cmd, From: -1,
			Params: []learnedParam{{Src: srcThread}, {Src: srcConst, Raw: []byte{0, 0, 0, 0}}, {Src: srcConst, Raw: []byte{0xff, 0xff, 0xff, 0xff}}}},
		{Kind: jdwp.EventBreakpoint, Set: jdwp.CmdMethodVariableTable.Set, Cmd: jdwp.CmdMethodVariableTable.Cmd, From: 0,
			Params: []learnedParam{{Src: srcClass}, {Src: srcMethod}}},
	}})
	for _, n := range lr.graphs[jdwp.EventBreakpoint].nodes {
		if n.cmd == jdwp.CmdMethodVariableTable && n.from != nil {
			t.Error("a profile's template of the event's method kept reading from the Frames template")
		}
	}
}

// TestRestedTemplatesNotHandedOn: a profile's template this session's
// debugger never asked and whose replay went unused here is not left in
// the next session's profile (another debugger's, with the same attach),
// unless a template below it is. Fails without lnode.kept.
func TestRestedTemplatesNotHandedOn(t *testing.T) {
	rested := &lnode{imported: true, unused: 2}
	asked := &lnode{imported: true, unused: 2, seen: 3}
	fresh := &lnode{imported: true, unused: 1}
	parent := &lnode{imported: true, unused: 2, children: []*lnode{asked}}
	for _, c := range []struct {
		n    *lnode
		want bool
	}{{rested, false}, {asked, true}, {fresh, true}, {parent, true}, {&lnode{}, true}} {
		if got := c.n.kept(); got != c.want {
			t.Errorf("kept(%+v) = %v, want %v", *c.n, got, c.want)
		}
	}
}

// TestProfileTakenAfterTheFirstSets: a VM_START read once the ID sizes
// are known (a far end asks them itself, for its near end's prefetch)
// comes before JDI's first Sets, which say which profile's stop
// templates fit: taking at that stop took none (the far end of a split
// session then gathered nothing of its debugger's first stop, one
// session in six). Fails with learnedRules.stopped taking before the
// first Sets are known.
func TestProfileTakenAfterTheFirstSets(t *testing.T) {
	sets := []jdwp.EventKind{jdwp.EventClassUnload, jdwp.EventVMDeath}
	sp := newTestSpeculator(Config{})
	id := uint32(100)
	learnMadeUp(t, sp, &id, sets...)
	m := &madeUpVM{fields: 3, threads: []uint64{thread1, 0x52, 0x53, 0x54}}
	rigModes.Store(sp, ModeAdaptive) // its Session kept
	r := startRigWith(t, sp, m.handler)
	r.dbg.call(1, jdwp.CmdIDSizes, nil)
	r.event(jdwp.SuspendAll, jdwp.Event{Kind: jdwp.EventVMStart, Thread: thread1})
	r.expectEvent()
	for _, k := range sets {
		r.dbg.call(nextID(), jdwp.CmdEventRequestSet, body(func(w *jdwp.BodyWriter) { w.Uint8(uint8(k)); w.Uint8(0); w.Int32(0) }))
	}
	for i := uint32(2); i < 5; i++ {
		r.dbg.call(i, jdwp.CmdVirtualMachineVersion, nil)
	}
	r.dbg.call(nextID(), jdwp.CmdVirtualMachineResume, nil)
	madeUpStop(r, m)
	r.dbg.call(nextID(), jdwp.CmdThreadReferenceFrames, body(func(w *jdwp.BodyWriter) { w.ObjectID(thread1); w.Int32(0); w.Int32(2) }))
	r.barrier()
	v, _ := rigSessions.Load(sp)
	ss := v.(*Session).ss
	ss.mu.Lock()
	took := ss.lrn.took != nil
	ss.mu.Unlock()
	if !took {
		t.Error("the profile's stop templates were not taken: decided before the first Sets")
	}
	r.dbg.quiet()
}

// TestFarEndConfirmsAtTheStopsEnd: a far end, told its near end's reads
// in reports in no debugger's order, holds the profile against the first
// stop as it ends: confirmed if the debugger asked the profile's first
// read at all there, in any order; refuted otherwise, and then the
// profile's stop is not gathered again at the next stop. Fails with the
// far end confirming on the first read it is told of, or never.
func TestFarEndConfirmsAtTheStopsEnd(t *testing.T) {
	top := body(func(w *jdwp.BodyWriter) { w.ObjectID(thread1); w.Int32(0); w.Int32(2) })
	for _, asksTop := range []bool{true, false} {
		sp := newTestSpeculator(Config{})
		id := uint32(100)
		learnMadeUp(t, sp, &id) // its debugger reads its top frames first
		rigModes.Store(sp, ModeAlways)
		r, m := attachMadeUp(t, sp)
		madeUpStop(r, m)
		r.dbg.call(nextID(), jdwp.CmdVirtualMachineAllThreads, nil) // another read first
		if asksTop {
			r.dbg.call(nextID(), jdwp.CmdThreadReferenceFrames, top)
		}
		r.dbg.call(nextID(), jdwp.CmdVirtualMachineResume, nil)
		before := ownCommands(r)[jdwp.CmdStackFrameGetValues]
		madeUpStop(r, m)
		r.barrier()
		r.barrier()
		state := firstReadOf(sp)
		values := ownCommands(r)[jdwp.CmdStackFrameGetValues] - before
		switch {
		case asksTop && state != firstConfirmed:
			t.Errorf("the profile's first read asked second: the far end's first stop said %d, want confirmed", state)
		case !asksTop && state != firstRefuted:
			t.Errorf("the profile's first read never asked: the far end's first stop said %d, want refuted", state)
		case !asksTop && values != 0:
			t.Errorf("a refuted profile's frame values gathered %d times at the next stop", values)
		}
		r.dbg.quiet()
	}
}

// TestServedReadLeavesTheProfileOpen: at the session's first stop, a read
// something here already serves (an asynchronous debugger's straggler,
// begun before the stop: here the VM's version, cached since the attach)
// neither confirms nor refutes the profile; the profile's own first read
// after it confirms it, and the profile's stop is replayed (the frame's
// values), and its first read stays the mark, at the next stop too. Fails
// with the first read alone deciding (java-debug's name read of a thread,
// sent as the event came, refuted its own profile, and its first stop
// through a fresh proxy took 40 serial round trips, not 17), or with the
// mark moved to it.
func TestServedReadLeavesTheProfileOpen(t *testing.T) {
	sp := newTestSpeculator(Config{})
	id := uint32(100)
	learnMadeUp(t, sp, &id)
	r, m := attachMadeUp(t, sp)
	madeUpStop(r, m)
	r.dbg.call(nextID(), jdwp.CmdVirtualMachineVersion, nil)
	r.barrier()
	if n := ownCommands(r)[jdwp.CmdStackFrameGetValues]; n != 0 {
		t.Fatalf("the frame's values speculated %d times after a served read alone", n)
	}
	r.dbg.call(nextID(), jdwp.CmdThreadReferenceFrames, body(func(w *jdwp.BodyWriter) { w.ObjectID(thread1); w.Int32(0); w.Int32(2) }))
	r.barrier()
	r.barrier()
	if ownCommands(r)[jdwp.CmdStackFrameGetValues] == 0 {
		t.Error("the profile's first read after a served one: the frame's values were not speculated")
	}
	r.dbg.call(nextID(), jdwp.CmdVirtualMachineResume, nil)
	madeUpStop(r, m) // a straggler first again
	r.dbg.call(nextID(), jdwp.CmdVirtualMachineVersion, nil)
	r.dbg.call(nextID(), jdwp.CmdThreadReferenceFrames, body(func(w *jdwp.BodyWriter) { w.ObjectID(thread1); w.Int32(0); w.Int32(2) }))
	r.dbg.quiet()
	r.stop()
	// The confirmed read stays the mark the next session holds its first
	// stop against, not the straggler before it.
	marks := 0
	for _, p := range sp.profiles.m {
		for _, tm := range p.Learned {
			if c := (jdwp.Cmd{Set: tm.Set, Cmd: tm.Cmd}); tm.First {
				marks++
				if c != jdwp.CmdThreadReferenceFrames {
					t.Errorf("the profile's mark moved to %v", c)
				}
			}
		}
	}
	if marks == 0 {
		t.Error("the profile kept no mark")
	}
}

// TestFarEndWaitsForAProfileSetUpOtherwise: a far end gathers a profile's
// first stop at once only for a debugger that set itself up as the
// profile's did (its bookkeeping requests before that stop: thread starts
// and deaths, the VM's death, class unloads); for another (jdb after an
// IDE, both on one JDI) it sends the stop's event at once, gathers
// nothing until the debugger's first read, and then replays the profile's
// stop if that read confirms it. Fails with the far end gathering at the
// event whatever the setup (session.awaitFirst, learnedRules.trusted), or
// never once the read came.
func TestFarEndWaitsForAProfileSetUpOtherwise(t *testing.T) {
	top := body(func(w *jdwp.BodyWriter) { w.ObjectID(thread1); w.Int32(0); w.Int32(2) })
	for _, sameSetup := range []bool{true, false} {
		sp := newTestSpeculator(Config{})
		id := uint32(100)
		learnMadeUp(t, sp, &id, jdwp.EventClassUnload, jdwp.EventVMDeath) // its debugger reads its top frames first
		rigModes.Store(sp, ModeAlways)
		sets := []jdwp.EventKind{jdwp.EventClassUnload, jdwp.EventVMDeath}
		if !sameSetup {
			sets = append(sets, jdwp.EventThreadStart, jdwp.EventThreadDeath)
		}
		r, m := attachMadeUp(t, sp, sets...)
		madeUpStop(r, m)
		if sameSetup {
			// Gathered at the event, reply by reply (the frame's values
			// after its frames): no read of the debugger's comes.
			r.vm.waitFor(jdwp.CmdStackFrameGetValues)
			// A bookkeeping request after the first stop is not setup.
			r.dbg.call(nextID(), jdwp.CmdEventRequestSet, body(func(w *jdwp.BodyWriter) {
				w.Uint8(uint8(jdwp.EventThreadStart))
				w.Uint8(0)
				w.Int32(0)
			}))
			if got := setupOf(sp); !slices.Equal(got, sets) {
				t.Errorf("setup %v after a thread start request at the first stop, want %v", got, sets)
			}
		} else {
			r.barrier()
			if n := ownCommands(r)[jdwp.CmdStackFrameGetValues] + ownCommands(r)[jdwp.CmdThreadReferenceFrames]; n != 0 {
				t.Errorf("a debugger set up otherwise than the profile's: the far end gathered %d frames and values before its first read", n)
			}
		}
		if !sameSetup {
			r.dbg.call(nextID(), jdwp.CmdThreadReferenceFrames, top)
			r.vm.waitFor(jdwp.CmdStackFrameGetValues) // the profile's stop, gathered once its first read came
			if state := firstReadOf(sp); state != firstConfirmed {
				t.Errorf("the profile's first read came first: the first stop said %d, want confirmed", state)
			}
		}
		r.dbg.quiet()
	}
}
