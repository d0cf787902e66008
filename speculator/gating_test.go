package speculator

import (
	"sync/atomic"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// gatingStop is one stop of the gating tests: the debugger asks the
// threads and the stopped thread's name, then ask, then a forwarded
// command the VM answers after any speculation of the stop (the VM
// answers in arrival order), and resumes.
func gatingStop(r *rig, id *uint32, ask func(call func(c jdwp.Cmd, b []byte))) {
	call := func(c jdwp.Cmd, b []byte) { *id++; r.dbg.call(*id, c, b) }
	r.event(jdwp.SuspendAll, bpEvent(thread1))
	r.expectEvent()
	call(jdwp.CmdVirtualMachineAllThreads, nil)
	call(jdwp.CmdThreadReferenceName, threadBody(thread1))
	ask(call)
	call(jdwp.CmdThreadReferenceFrameCount, threadBody(0x99))
	call(jdwp.CmdVirtualMachineResume, nil)
}

// gatingRig is a stop rig whose VM has a second thread (other) and
// counts the statuses asked of it, which only the thread-status rule
// predicts (the debugger's replayed commands name thread1).
func gatingRig(t *testing.T) (*rig, *atomic.Int32) {
	r, fs := newStopRig(t)
	var n atomic.Int32
	r.vm.setHandler(func(p jdwp.Packet) (jdwp.ErrorCode, []byte) {
		switch p.Cmd() {
		case jdwp.CmdVirtualMachineAllThreads:
			return 0, body(func(w *jdwp.BodyWriter) { w.Int32(2); w.ObjectID(thread1); w.ObjectID(otherThread) })
		case jdwp.CmdThreadReferenceStatus:
			if jdwp.NewBodyReader(p.Body(), sizes8).Thread() == otherThread {
				n.Add(1)
			}
		}
		return fs.handler(p)
	})
	return r, &n
}

const otherThread = 0x97

// TestUnaskedRuleDroppedAtOnce: the debugger asked thread statuses once,
// then stops asking them. The rule predicting them (a status per thread
// of AllThreads) is wasted at one stop and sends nothing at the next: at
// low RTT every unused speculation costs the VM time.
func TestUnaskedRuleDroppedAtOnce(t *testing.T) {
	r, other := gatingRig(t)
	id := uint32(10)
	status := func(call func(jdwp.Cmd, []byte)) { call(jdwp.CmdThreadReferenceStatus, threadBody(thread1)) }
	none := func(func(jdwp.Cmd, []byte)) {}
	gatingStop(r, &id, status)
	gatingStop(r, &id, status)
	gatingStop(r, &id, none) // the status speculated is wasted
	before := other.Load()
	gatingStop(r, &id, none)
	gatingStop(r, &id, none)
	if n := other.Load() - before; n != 0 {
		t.Errorf("%d thread statuses speculated after the debugger stopped asking them, want 0", n)
	}
	// Asked again, the rule comes back at the next stop.
	gatingStop(r, &id, status)
	saved := r.sp.Stats().RoundTripsSaved
	gatingStop(r, &id, status)
	if got := r.sp.Stats().RoundTripsSaved - saved; got < 3 {
		t.Errorf("%d round trips saved at the stop after statuses were asked again, want 3 (threads, name, status)", got)
	}

}

// TestGatedRuleRevivedByShadow: the thread-status rule's speculation goes
// unused for stops (the debugger asks another thread's status), so the
// rule is held back; when the debugger then asks what the rule would have
// sent, the rule comes back at the next stop, without waiting for a probe.
func TestGatedRuleRevivedByShadow(t *testing.T) {
	r, other := gatingRig(t)
	id := uint32(10)
	mine := func(call func(jdwp.Cmd, []byte)) { call(jdwp.CmdThreadReferenceStatus, threadBody(thread1)) }
	both := func(call func(jdwp.Cmd, []byte)) {
		mine(call)
		call(jdwp.CmdThreadReferenceStatus, threadBody(otherThread))
	}
	gatingStop(r, &id, mine)
	// otherThread's status wasted: the rule falls under minRatio. Stops
	// 2 to 7, so that the last stops (9, 10) are past the old every-8th
	// probe, which would have revived the rule by chance.
	for range 6 {
		gatingStop(r, &id, mine)
	}
	before := other.Load()
	gatingStop(r, &id, mine)
	if n := other.Load() - before; n != 0 {
		t.Fatalf("VM saw %d statuses of the other thread at a stop with the rule held back, want 0", n)
	}
	gatingStop(r, &id, both) // a miss, scored for the held-back rule
	before = other.Load()
	gatingStop(r, &id, mine)
	if n := other.Load() - before; n != 1 {
		t.Errorf("VM saw %d statuses of the other thread after the debugger asked it, want 1: the rule did not come back", n)
	}
}
