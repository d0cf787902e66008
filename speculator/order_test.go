package speculator

import (
	"slices"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/stat"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
)

// TestAnswersInTheVMsOrder: at a stop that left threads running, the
// names a far end offered (read in that order) answer a burst of the
// debugger's reads sent in another order without waiting for each
// other's answers (java-debug's threads read them): the answers go in the
// VM's order, each in place, and none of the reads goes to the VM. Then a
// read sent after the debugger had those answers, of a name read before
// them, is not answered from the cache. Fails with each answer sent at
// once (session.wait): the second read is out of place and goes to the
// VM.
func TestAnswersInTheVMsOrder(t *testing.T) {
	r, s := nearPartialStop(t, nil, 0x52, 0x53, 0x54, 0x55)
	offerNames(t, s, 0x52, 0x53, 0x54) // 0x55's is not offered
	slowLink(s)
	names := r.vm.count(jdwp.CmdThreadReferenceName)
	burst := []uint64{0x54, 0x52, 0x53}
	for i, th := range burst {
		r.dbg.send(uint32(10+i), jdwp.CmdThreadReferenceName, threadBody(th))
	}
	for range burst {
		if p := r.dbg.read(); p.ErrorCode() != 0 {
			t.Fatalf("a name read answered %v", p.ErrorCode())
		}
	}
	if n := r.vm.count(jdwp.CmdThreadReferenceName) - names; n != 0 {
		t.Fatalf("%d of the burst's reads went to the VM, want none: all answered from the offers, in the VM's order", n)
	}
	// The debugger has all three answers: the name of 0x52, read before
	// 0x54's, answers no read sent now.
	r.dbg.call(20, jdwp.CmdThreadReferenceName, threadBody(0x52))
	if n := r.vm.askedOf(jdwp.CmdThreadReferenceName, 0x52); n != 1 {
		t.Errorf("a read of 0x52's name sent after the burst's answers reached the VM %d times, want once", n)
	}
	r.dbg.quiet()
}

// TestAnswerWaitsNoLongerThanTheReads: an answer waiting for a lower
// reply that the debugger does not read goes once its reads stop coming
// (orderWait), from the cache, and answers of that command wait no more
// in the session (a debugger reading one at a time). Fails with the
// waiting answer never sent (session.flushHeld), or the command not
// noted (session.timedOut).
func TestAnswerWaitsNoLongerThanTheReads(t *testing.T) {
	r, s := nearPartialStop(t, nil, 0x52, 0x53)
	offerNames(t, s, 0x52, 0x53)
	slowLink(s)
	if p := r.dbg.call(10, jdwp.CmdThreadReferenceName, threadBody(0x53)); p.ErrorCode() != 0 {
		t.Fatalf("the name read answered %v", p.ErrorCode())
	}
	if n := r.vm.count(jdwp.CmdThreadReferenceName); n != 0 {
		t.Errorf("the read went to the VM (%d names asked), want it answered from the offer", n)
	}
	s.ss.mu.Lock()
	late := slices.Contains(s.ss.ord.late, jdwp.CmdThreadReferenceName)
	s.ss.mu.Unlock()
	if !late {
		t.Error("after an answer waited in vain, answers of its command still wait")
	}
	r.dbg.quiet()
}

// nearPartialStop starts a near end's session of sp (a new one if sp is
// nil) on a VM whose threads are thread1 and others, lists them, and
// brings thread1 to a stop that leaves the others running.
func nearPartialStop(t *testing.T, sp *Speculator, others ...uint64) (*rig, *Session) {
	t.Helper()
	if sp == nil {
		sp = newTestSpeculator(Config{})
	}
	rigModes.Store(sp, ModeNear)
	fs := &frameState{count: 3, values: 10, threads: append([]uint64{thread1}, others...)}
	r := startRigWith(t, sp, fs.handler)
	r.dbg.call(1, jdwp.CmdIDSizes, nil)
	r.dbg.call(2, jdwp.CmdVirtualMachineVersion, nil)
	r.dbg.call(3, jdwp.CmdVirtualMachineAllThreads, nil) // the threads, before the stop
	r.event(jdwp.SuspendEventThread, bpEvent(thread1))
	r.expectEvent()
	v, _ := rigSessions.Load(sp)
	return r, v.(*Session)
}

// slowLink makes the session's round trip estimate 30 ms, as over a slow
// link (the rig's is microseconds): no reply comes in the tests that use
// it to lower it.
func slowLink(s *Session) {
	s.ss.mu.Lock()
	defer s.ss.mu.Unlock()
	for range stat.MaxWindow {
		s.ss.disp.rtt.sample(30 * time.Millisecond)
	}
}

// offerNames has the session's far end offer the names of threads, in
// that order.
func offerNames(t *testing.T, s *Session, threads ...uint64) {
	t.Helper()
	for _, th := range threads {
		if res := s.Offer(jdwp.CmdThreadReferenceName, threadBody(th), jdwp.AppendReply(nil, 1, 0, sigBody("w")), MarkNow(), sizes8); res != OfferStored {
			t.Fatalf("offer of the name of %#x: %v", th, res)
		}
	}
}

// TestNoWaitOnAFastLink: on a link whose round trip is under 2×orderWait
// (the rig's), answers do not wait for the VM's order: a miss costs less
// there than the wait. Fails with the RTT not checked (session.wait).
func TestNoWaitOnAFastLink(t *testing.T) {
	r, s := nearPartialStop(t, nil, 0x52, 0x53)
	offerNames(t, s, 0x52, 0x53)
	r.dbg.call(10, jdwp.CmdThreadReferenceName, threadBody(0x53))
	s.ss.mu.Lock()
	waited := len(s.ss.ord.late) > 0
	s.ss.mu.Unlock()
	if waited {
		t.Error("an answer waited for the VM's order on a fast link")
	}
	r.dbg.call(11, jdwp.CmdThreadReferenceName, threadBody(0x52)) // out of place now: to the VM
	if n := r.vm.askedOf(jdwp.CmdThreadReferenceName, 0x52); n != 1 {
		t.Errorf("the read below the one answered reached the VM %d times, want once (out of place)", n)
	}
	r.dbg.quiet()
}

// TestOffersOfOneMoment: names a far end read in one moment (its VM
// suspended around them: Record.Moment) answer the debugger's reads one
// at a time in any order, from the cache, without waiting; names read in
// two moments do not (the later moment's answer puts the earlier's out
// of place). Fails with the moment not given to the offers' positions
// (facts.offerPos).
func TestOffersOfOneMoment(t *testing.T) {
	r, s := nearPartialStop(t, nil, 0x52, 0x53, 0x54)
	slowLink(s)
	for i, th := range []uint64{0x52, 0x53, 0x54} {
		moment := uint16(1)
		if i == 2 {
			moment = 2
		}
		if res := s.Offer(jdwp.CmdThreadReferenceName, threadBody(th), jdwp.AppendReply(nil, 1, 0, sigBody("w")), MarkNow().InMoment(moment), sizes8); res != OfferStored {
			t.Fatalf("offer of the name of %#x: %v", th, res)
		}
	}
	for _, th := range []uint64{0x53, 0x52} {
		r.dbg.call(nextID(), jdwp.CmdThreadReferenceName, threadBody(th))
	}
	if n := r.vm.count(jdwp.CmdThreadReferenceName); n != 0 {
		t.Errorf("%d reads of names read in one moment went to the VM, want none", n)
	}
	s.ss.mu.Lock()
	waited := len(s.ss.ord.late) > 0
	s.ss.mu.Unlock()
	if waited {
		t.Error("an answer of a moment waited for another of the same moment")
	}
	r.dbg.call(nextID(), jdwp.CmdThreadReferenceName, threadBody(0x54)) // the later moment: in place
	r.dbg.call(nextID(), jdwp.CmdThreadReferenceName, threadBody(0x52)) // read again after it: out of place
	if n := r.vm.askedOf(jdwp.CmdThreadReferenceName, 0x52); n != 1 || r.vm.askedOf(jdwp.CmdThreadReferenceName, 0x54) != 0 {
		t.Errorf("after the later moment's answer, the VM was asked the earlier moment's name %d times (want once) and the later's %d (want none)",
			n, r.vm.askedOf(jdwp.CmdThreadReferenceName, 0x54))
	}
	r.dbg.quiet()
}

// TestNearEndOpensNoMoment: a near end's own read of running state (a
// miss's re-ask) goes to its far end in no moment: its VirtualMachine
// commands would be its debugger's there, which the far end takes as a
// suspension and a resume of the stop. Fails with the near end's
// speculation frozen as a proxy's next to the VM (dispatcher.send).
func TestNearEndOpensNoMoment(t *testing.T) {
	r, s := nearPartialStop(t, nil, 0x52, 0x53)
	if err := s.ss.rs.Do(func(out *relay.Outbox) {
		s.ss.lock(out)
		defer s.ss.unlock()
		s.ss.submitNew(sizes8, spec{kind: kTemplate, again: true}, jdwp.CmdThreadReferenceName, threadBody(0x53))
	}); err != nil {
		t.Fatal(err)
	}
	r.vm.waitAsked("the near end's read", jdwp.CmdThreadReferenceName, threadBody(0x53))
	r.barrier()
	if n := r.vm.count(jdwp.CmdVirtualMachineSuspend); n != 0 {
		t.Errorf("the near end suspended its far end's VM %d times", n)
	}
	r.dbg.quiet()
}
