package speculator

import (
	"testing"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// TestThreadsNamedOnce: a debugger that names each thread once (Eclipse's
// JDI, as java-debug drives it) is not asked ahead for the names of the
// threads it named in this session, save the stopped thread's; once it
// asks a name again after a resume (OpenJDK's JDI, at each stop) every
// thread's is. Fails with the names not learned (learner.nameAsked) or
// not left out of the widening of a miss (stopRules.missed).
func TestThreadsNamedOnce(t *testing.T) {
	m := &madeUpVM{fields: 3, threads: []uint64{thread1, 0x52, 0x53, 0x54}}
	r := newRigWith(t, Config{}, m.handler)
	stop := func() {
		madeUpStop(r, m)
		r.dbg.call(nextID(), jdwp.CmdVirtualMachineAllThreads, nil)
	}
	// While the program runs, the debugger lists the threads and names
	// two of them (as a thread starts).
	r.dbg.call(nextID(), jdwp.CmdVirtualMachineAllThreads, nil)
	r.dbg.call(nextID(), jdwp.CmdThreadReferenceName, threadBody(0x52))
	r.dbg.call(nextID(), jdwp.CmdThreadReferenceName, threadBody(thread1))
	// At the stop it names a thread it never named: a miss, widened to
	// the threads it has not named and the stopped one.
	stop()
	r.dbg.call(nextID(), jdwp.CmdThreadReferenceName, threadBody(0x53))
	r.vm.waitAsked("the name of the thread never named", jdwp.CmdThreadReferenceName, threadBody(0x54))
	r.vm.waitAsked("the name of the stopped thread", jdwp.CmdThreadReferenceName, threadBody(thread1))
	r.barrier()
	if n := r.vm.askedOf(jdwp.CmdThreadReferenceName, 0x52); n != 1 {
		t.Fatalf("the VM was asked the name of a thread the debugger had named %d times, want once (its own)", n)
	}
	// It names that thread again: from now on every thread's name is
	// read ahead.
	r.dbg.call(nextID(), jdwp.CmdThreadReferenceName, threadBody(0x52))
	r.dbg.call(nextID(), jdwp.CmdVirtualMachineResume, nil)
	stop()
	r.dbg.call(nextID(), jdwp.CmdThreadReferenceName, threadBody(0x53))
	r.vm.waitAsked("the name of the thread named twice", jdwp.CmdThreadReferenceName, threadBody(0x52))
	r.dbg.quiet()
}

// TestNameKnown: the learner's record of the names asked.
func TestNameKnown(t *testing.T) {
	l := newLearner()
	l.nameAsked(0x52)
	l.nameAsked(0x52) // twice in the same stop: not a rename
	if !l.nameKnown(0x52) || l.nameKnown(0x53) {
		t.Fatalf("known: 0x52 %v 0x53 %v, want true false", l.nameKnown(0x52), l.nameKnown(0x53))
	}
	l.beginEpisode(0x52, jdwp.Location{})
	if l.nameKnown(0x52) {
		t.Error("the stopped thread's name is known")
	}
	l.beginEpisode(thread1, jdwp.Location{})
	l.nameAsked(0x52) // after a resume: a rename
	if l.nameKnown(0x52) {
		t.Error("a name is known after the debugger renamed")
	}
}

// TestNamesOfNewThreadsFollowTheList: a debugger that names each thread
// once names, at a stop, every listed thread it has not named; the
// learned template replays that on the whole list, so a thread started
// since is named ahead too. Fails with the threads named before not left
// out of what "every element" means (learnedRules.settleIndices).
func TestNamesOfNewThreadsFollowTheList(t *testing.T) {
	m := &madeUpVM{fields: 3, threads: []uint64{thread1, 0x52, 0x53, 0x54}}
	r := newRigWith(t, Config{}, m.handler)
	stop := func() { madeUpStop(r, m) }
	r.dbg.call(nextID(), jdwp.CmdVirtualMachineAllThreads, nil)
	r.dbg.call(nextID(), jdwp.CmdThreadReferenceName, threadBody(0x52))
	for _, th := range [][]uint64{{0x53, 0x54}, {0x55}} {
		stop()
		r.dbg.call(nextID(), jdwp.CmdVirtualMachineAllThreads, nil)
		for _, x := range th {
			r.dbg.call(nextID(), jdwp.CmdThreadReferenceName, threadBody(x))
		}
		r.dbg.call(nextID(), jdwp.CmdVirtualMachineResume, nil)
		m.mu.Lock()
		m.threads = append(m.threads, 0x55+uint64(len(m.threads))-4)
		m.mu.Unlock()
	}
	// Threads 0x55 and 0x56 started; the debugger has named all others.
	stop()
	r.dbg.call(nextID(), jdwp.CmdVirtualMachineAllThreads, nil)
	r.vm.waitAsked("the name of the thread started since", jdwp.CmdThreadReferenceName, threadBody(0x56))
	r.dbg.quiet()
}

// madeUpStop brings the made-up program to its next stop, at a
// breakpoint of thread1 that suspends it all.
func madeUpStop(r *rig, m *madeUpVM) {
	m.mu.Lock()
	m.stop++
	m.mu.Unlock()
	r.event(jdwp.SuspendAll, bpEvent(thread1))
	r.expectEvent()
}
