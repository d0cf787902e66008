package speculator

import (
	"testing"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// TestIsCollectedOfSuspendedThread: IsCollected of the thread an event
// suspended is answered false without the VM; of any other object, or of
// the thread once a resume of it was sent, it goes to the VM (whose answer
// the debugger gets).
func TestIsCollectedOfSuspendedThread(t *testing.T) {
	const other = 0x99
	r := newRigWith(t, Config{}, func(p jdwp.Packet) (jdwp.ErrorCode, []byte) {
		if p.Cmd() == jdwp.CmdObjectReferenceIsCollected {
			return 0, []byte{1} // the VM's answer, told apart from the proof's
		}
		return 0, nil
	})
	r.event(jdwp.SuspendEventThread, bpEvent(thread1))
	r.expectEvent()
	if p := r.dbg.call(10, jdwp.CmdObjectReferenceIsCollected, threadBody(thread1)); p.ErrorCode() != 0 || string(p.Body()) != "\x00" {
		t.Fatalf("IsCollected of the suspended thread: %v %x, want false", p.ErrorCode(), p.Body())
	}
	if n := r.vm.count(jdwp.CmdObjectReferenceIsCollected); n != 0 {
		t.Fatalf("the VM was asked %d times", n)
	}
	if p := r.dbg.call(11, jdwp.CmdObjectReferenceIsCollected, threadBody(other)); string(p.Body()) != "\x01" {
		t.Fatalf("IsCollected of another object: %x, want the VM's answer", p.Body())
	}
	if p := r.dbg.call(12, jdwp.CmdThreadReferenceResume, threadBody(thread1)); p.ErrorCode() != 0 {
		t.Fatal("resume failed")
	}
	if p := r.dbg.call(13, jdwp.CmdObjectReferenceIsCollected, threadBody(thread1)); string(p.Body()) != "\x01" {
		t.Fatalf("IsCollected of the resumed thread: %x, want the VM's answer", p.Body())
	}
	if n := r.vm.count(jdwp.CmdObjectReferenceIsCollected); n != 2 {
		t.Fatalf("the VM was asked %d times, want 2", n)
	}
}
