package speculator

import (
	"testing"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// TestEventOvertakingResume: HotSpot often sends the next stop's event
// before the reply to the resume that led to it. When the resume was sent
// while the whole VM was suspended, the event shows the state after it:
// the stop is speculated on at once, and its replies are served.
func TestEventOvertakingResume(t *testing.T) {
	r, fs := newStopRig(t)
	r.event(jdwp.SuspendAll, bpEvent(thread1))
	r.expectEvent()
	r.vm.waitFor(jdwp.CmdThreadReferenceFrameCount)
	askFirstStop(t, r)

	r.vm.hold() // the resume's reply comes after the next event
	r.dbg.send(40, jdwp.CmdVirtualMachineResume, nil)
	r.vm.waitFor(jdwp.CmdVirtualMachineResume)
	fs.set(5, 12) // the VM ran to the next stop
	r.event(jdwp.SuspendAll, bpEvent(thread1))
	r.expectEvent()
	r.vm.release()
	if p := r.dbg.read(); p.ID() != 40 {
		t.Fatalf("resume reply: %v", p)
	}
	// The new stop was speculated on although the resume's reply came
	// after its event, and what is served is the new state.
	r.vm.waitFor(jdwp.CmdThreadReferenceFrameCount)
	p := r.dbg.call(41, jdwp.CmdThreadReferenceFrameCount, threadBody(thread1))
	if got := be32(p.Body()); got != 5 {
		t.Fatalf("FrameCount at the overtaking stop = %d, want 5", got)
	}
	if n := r.vm.count(jdwp.CmdThreadReferenceFrameCount); n != 2 {
		t.Fatalf("VM saw FrameCount %d times, want 2 (one speculation per stop, the debugger's served)", n)
	}
	r.dbg.quiet()
}

// TestEventOvertakingUnsureResume: a resume sent while not everything was
// suspended (after a SUSPEND_EVENT_THREAD stop other threads run and may
// report events the resume then undoes) leaves an event arriving before
// its reply unbelieved: nothing is speculated, the debugger's command is
// forwarded.
func TestEventOvertakingUnsureResume(t *testing.T) {
	r, fs := newStopRig(t)
	r.event(jdwp.SuspendEventThread, bpEvent(thread1))
	r.expectEvent()
	r.vm.waitFor(jdwp.CmdThreadReferenceFrameCount)
	askFirstStop(t, r)

	r.vm.hold()
	r.dbg.send(50, jdwp.CmdThreadReferenceResume, threadBody(thread1))
	r.vm.waitFor(jdwp.CmdThreadReferenceResume)
	fs.set(6, 13)
	r.event(jdwp.SuspendEventThread, bpEvent(thread1))
	r.expectEvent()
	r.vm.release()
	if p := r.dbg.read(); p.ID() != 50 {
		t.Fatalf("resume reply: %v", p)
	}
	before := r.sp.Stats()
	p := r.dbg.call(51, jdwp.CmdThreadReferenceFrameCount, threadBody(thread1))
	if got := be32(p.Body()); got != 6 {
		t.Fatalf("FrameCount = %d, want 6", got)
	}
	if st := r.sp.Stats(); st.Misses-before.Misses != 1 || st.Hits+st.Belays != before.Hits+before.Belays {
		t.Fatalf("the debugger's FrameCount at the unbelieved stop: %d misses, %d hits or belays; want it forwarded",
			st.Misses-before.Misses, st.Hits+st.Belays-before.Hits-before.Belays)
	}
	r.dbg.quiet()
}

// askFirstStop asks at a first stop what the speculator predicts there,
// so that its speculation counts as used (and is not paused as waste).
func askFirstStop(t *testing.T, r *rig) {
	t.Helper()
	if p := r.dbg.call(nextID(), jdwp.CmdThreadReferenceFrameCount, threadBody(thread1)); be32(p.Body()) != 3 {
		t.Fatal("FrameCount at the first stop")
	}
	r.dbg.call(nextID(), jdwp.CmdThreadReferenceFrames, body(func(w *jdwp.BodyWriter) { w.ObjectID(thread1); w.Int32(0); w.Int32(-1) }))
	r.dbg.call(nextID(), jdwp.CmdVirtualMachineAllThreads, nil)
	r.dbg.call(nextID(), jdwp.CmdThreadReferenceName, threadBody(thread1))
	r.dbg.call(nextID(), jdwp.CmdThreadReferenceStatus, threadBody(thread1))
}
