package speculator

import (
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
)

// liveness answers ObjectReference.IsCollected of a thread the session
// knows suspended, without a round trip. Eclipse's JDI asks it of a step
// request's thread filter before each step (java-debug steps so), and
// the command is not a cacheable read (an object may be collected at any
// time the VM runs). The answer is proven, not cached: a thread is
// believed suspended (facts.suspended) only after an event that suspended
// it or the reply to a successful suspend of it, and until anything that
// may resume it is sent; a suspended thread is alive, and a live thread's
// object is reachable from the VM's list of threads, so it cannot have
// been collected: the VM answers false. Anything else goes to the VM.
type liveness struct {
	*core
	buf []byte // the answer, reused: the relay copies it before the next
}

// command answers an IsCollected of a suspended thread.
func (l *liveness) command(x *command) bool {
	f := x.f
	if f.Packet.Cmd() != jdwp.CmdObjectReferenceIsCollected {
		return false
	}
	r := jdwp.NewBodyReader(f.Packet.Body(), x.sizes)
	obj := r.ObjectID()
	if r.Err() != nil || r.Remaining() != 0 || obj == 0 || !l.facts.suspended[jdwp.ThreadID(obj)] {
		return false
	}
	l.buf = jdwp.AppendReply(l.buf[:0], f.ID, jdwp.ErrorNone, []byte{0})
	f.Answer = l.buf
	f.Origin = relay.CacheHit
	l.sp.countRequest(resultHit)
	return true
}
