package speculator

// Events: the router's path of a composite event (session.event). The
// subscribed handlers (facts, the attach, the prepare rule) fire as it is
// read, the compositors see it, then the session takes in the suspension
// it brings (facts), and at a suspending stop the stoppers and, at a
// location, the wavers speculate; the tap is told where the stops stand.

import (
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
)

func (ss *session) event(rs *relay.Session, f *relay.Frame) {
	sizes, known := rs.IDSizes()
	ss.lock(f.Out())
	defer ss.unlock()
	ss.push.evented = true // the tap is told where the stops stand (tell)
	ss.disp.closeMoment()  // a moment reads after the event, or not at all
	ss.facts.evented()     // nothing sent before answers reads of running state (moment.go)
	if !known {
		// Events before IDSizes can only be VM_START; without sizes nothing
		// is cached yet, so there is nothing to invalidate.
		ss.att.vmStart(f.Packet.Body())
		return
	}
	comp, err := ss.trig.Events(f.Packet.Body(), sizes)
	for _, c := range ss.on.compositors {
		c.seen(comp, err)
		defer c.taken(comp) // once the suspension below is taken in
	}
	if err != nil {
		// A composite we cannot read may hide anything: forget it all.
		ss.endEpisode()
		ss.facts.invalidateAll(reasonUnknownCommand)
		return
	}
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
	ss.push.stop++ // a suspending stop taken (pushSeams.stop)
	for _, x := range ss.on.stoppers {
		x.stopped(sizes)
	}
	if stop && thread != 0 {
		ss.learn.beginEpisode(thread, loc)
		ss.reads.stopped()
		ss.release(true)
		ss.ord.stopped()
		ss.learn.ep.partial = !ss.facts.allSuspended
		ss.cache.tick(ss.learn.serial)
		if ss.speculating() {
			if ss.awaitFirst = ss.lrn.firstReadDecides(); !ss.awaitFirst {
				ss.waves(sizes)
			}
		}
	}
}

// afterFirst speculates the stop whose speculation waited for the
// debugger's first read (awaitFirst) once a read confirmed or refuted the
// profile (asked).
func (ss *session) afterFirst(sizes jdwp.IDSizes) {
	if ss.awaitFirst && ss.learn.ep.active && !ss.lrn.unconfirmed() {
		ss.awaitFirst = false
		ss.waves(sizes)
	}
}

// waves speculates a stop at a location: each waver, wave by wave.
func (ss *session) waves(sizes jdwp.IDSizes) {
	for w := range waves {
		for _, x := range ss.on.wavers {
			x.wave(w, sizes)
		}
	}
}
