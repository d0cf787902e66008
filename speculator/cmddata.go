package speculator

import (
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
	"github.com/jdwpaccel/jdwpaccel/relay"
)

// cmdData is what the session remembers about a command in flight; it
// rides in the relay's pending entry for the command (slot) and comes
// back with the reply.
type cmdData struct {
	key    keyable.Key
	info   keyable.Info
	subj   keyable.Subject // what the key's validity hangs on
	keyed  bool
	gen    generation     // invalidation generation when the command was sent
	pos    uint64         // its place on the wire to the VM (moment.go)
	reads  bool           // it reads running state (moment.go)
	eff    keyable.Effect // the effect applied when it was sent (not keyed)
	thread jdwp.ThreadID  // the thread a ThreadReference.Suspend suspends, or an invoke runs on
	spec   *spec          // non-nil for a speculative command
	wb     *wbCmd         // non-nil for a state-setting command (writebehind.go)
	snap   *suspSnap      // suspension before an invoke
	mark   uint64         // suspChanges right after an invoke was sent
	sig    string         // ClassesBySignature's signature
	lookup bool           // the attach's own ClassesBySignature (attach.go)
	// peer: a lookup by name a proxy in front sent on its own (its ID in
	// the proxies' range, retag.InRange: split mode's near end), whose
	// reply the debugger does not see.
	peer bool
	// snapshot: the attach's own AllClassesWithGeneric (snapshot.go)
	snapshot bool
	// moment: the proxy's own VirtualMachine.Suspend or Resume around a
	// moment's reads (dispatcher.openPending)
	moment bool
}

// slot is where the speculator keeps a command's cmdData in the relay's
// pending entry, from the command to its reply: the relay pairs them.
var slot = relay.NewSlot()

// dataPool recycles the cmdData kept with commands in flight, so that a
// forwarded command costs no allocation. Guarded by session.mu.
type dataPool struct{ free []*cmdData }

// get returns a *cmdData holding d.
func (dp *dataPool) get(d *cmdData) *cmdData {
	var c *cmdData
	if n := len(dp.free); n > 0 {
		c, dp.free = dp.free[n-1], dp.free[:n-1]
	} else {
		c = new(cmdData)
	}
	*c = *d
	return c
}

// put recycles c once its reply was handled (nothing keeps c).
func (dp *dataPool) put(c *cmdData) {
	*c = cmdData{}
	if len(dp.free) < maxFreeData {
		dp.free = append(dp.free, c)
	}
}

// maxFreeData bounds the recycled cmdData (a burst of commands in flight
// must not be kept for the session's life).
const maxFreeData = 256

// suspSnap is the suspension state saved across an invoke.
type suspSnap struct {
	all     bool
	threads []jdwp.ThreadID
}
