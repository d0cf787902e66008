package speculator

// Events: what the VM's composite events tell the session's parts (the
// suspension, the stop that begins an episode, the speculation it starts).

import (
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
)

func (ss *session) event(rs *relay.Session, f *relay.Frame) {
	sizes, known := rs.IDSizes()
	ss.lock(f.Out())
	defer ss.unlock()
	if !known {
		// Events before IDSizes can only be VM_START; without sizes nothing
		// is cached yet, so there is nothing to invalidate.
		ss.attachVMStart(rs, f.Packet.Body())
		return
	}
	ss.prep.pending = ss.prep.pending[:0]
	comp, err := ss.trig.Events(f.Packet.Body(), sizes)
	if err != nil {
		// A composite we cannot read may hide anything: forget it all.
		ss.wb.forgetIDs()
		ss.endEpisode()
		ss.facts.invalidateAll(reasonUnknownCommand)
		return
	}
	ss.wb.event(comp)
	defer ss.wb.learnEvent(comp, &ss.facts) // once the suspension below is taken in
	var thread jdwp.ThreadID
	var loc jdwp.Location
	stop := false
	for i := range comp.Events {
		e := &comp.Events[i]
		if thread == 0 && e.Thread != 0 {
			thread = e.ThreadID()
		}
		if e.Kind.Locatable() {
			stop = true
			thread, loc = e.ThreadID(), e.Location
			break
		}
	}
	if comp.SuspendPolicy == jdwp.SuspendNone {
		// An event from a thread shows that thread running.
		for i := range comp.Events {
			if t := comp.Events[i].ThreadID(); t != 0 && ss.facts.suspendedNow(t) {
				ss.endEpisode()
				ss.facts.clearSuspension()
				ss.facts.invalidateStop(reasonRunning)
				break
			}
		}
		return
	}
	ss.endEpisode()
	ss.facts.invalidateStop(reasonStop)
	if ss.facts.resumesInFlight > 0 && !ss.facts.overtakenBy() {
		// A resume may be overtaking this event in the VM: state unknown.
		ss.facts.clearSuspension()
		return
	}
	if comp.SuspendPolicy == jdwp.SuspendAll {
		ss.facts.allSuspended = true
	} else if thread != 0 {
		ss.facts.suspended[thread] = true
	}
	ss.facts.suspChanges++
	ss.prepareStop(sizes)
	if stop && thread != 0 {
		ss.learn.beginEpisode(thread, loc)
		ss.cache.tick(ss.learn.serial)
		if ss.speculating() {
			ss.speculateStop(sizes)
		}
	}
}
