package speculator

// The moment: what the cache may serve of state that running threads can
// change, while a stop has suspended only some threads.
//
// A debugger that stops with SUSPEND_EVENT_THREAD (VS Code's Java
// debugger by default) reads, at each stop, state the program's other
// threads may change at any moment: the thread list, thread names, fields
// and elements of shared objects, static fields (the ScopeVM facts of
// keyable's table). A reply to such a read fetched before the debugger
// asked is still one the VM could have given, if two things hold:
//
//   - Order. The VM carries out a connection's commands one at a time, in
//     the order it receives them: the reference agent (libjdwp: HotSpot's,
//     OpenJ9's, ART's since Android 9) does, and the rule applies only to
//     a VM whose Version reply names it (facts.inOrder).
//     So every command the proxy sends has a position on that wire. A
//     debugger that sends a read after it got the answer to another knows
//     the VM read the second after the first; reads it sends without
//     waiting for each other's answers may be carried out in any order
//     (JDWP promises none). The proxy serves a reply of such state only if
//     its position is at least the position of every such answer the
//     debugger already got (the floor): an answer raises the floor to its
//     position when it goes to the debugger, served from the cache,
//     belayed or forwarded.
//   - Nothing the debugger knows is later. A VM event tells the debugger
//     that the VM got that far: after any event (or VM-originated
//     command) the floor rises past every command already sent, so only
//     what the proxy asks after the event can answer reads after it.
//
// Served this way, the debugger's answers are those of a run in which the
// other threads made no progress between the reads the proxy made and the
// ones the debugger made: a schedule the VM may always choose (a thread
// may be descheduled for any time). To keep that from outliving the burst
// of reads that follows a stop, a reply of running state is served only
// until momentAge after it came: a debugger that looks again later gets
// the VM's answer of then. State the debugger changes (SetValues, invokes,
// a resume) invalidates as before, through the generations.
//
// Moments: the floor serves replies only in the order they were read, and
// a debugger's reads come in its own. So what a turn reads ahead of running
// state, and no suspension changes (frozenRead), goes between a
// VirtualMachine.Suspend and Resume of the proxy's own, back to back on the
// wire (dispatcher.openPending, closeMoment): one instant of the program,
// whose replies share one position and answer the debugger in any order.
// A far end numbers each pushed reply's moment; the near end places a
// moment's replies at one position (offerPos).
//
// Split mode: the far end gathers such state at the stop and pushes it,
// but never serves it itself (a near end's forwarded read must reach the
// VM, since the far end cannot tell what the near end served); the near
// end places the replies offered for a stop right after the stop's event,
// in the order they came (the far end's order), and only while the
// debugger has had no forwarded read of running state since the event.
//
// The facts fields it uses (pos, floor, evFloor, offered, sentRunning) are guarded by
// session.mu with the rest of facts.

import (
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
)

// momentAge is how long after it came a reply of state that running
// threads may change is served (the burst of reads after a stop).
const momentAge = 500 * time.Millisecond

// posStep separates the positions of commands sent: the positions in
// between place replies offered by a far end (after the event they came
// with, before anything sent after it).
const posStep = 1 << 16

// running reports whether a fact described by info and subj is about
// state a running thread may change now: a stop-state fact while the VM
// is not wholly suspended, other than one about a suspended thread.
func (f *facts) running(info keyable.Info, subj keyable.Subject) bool {
	if info.Tier != keyable.TierStop || f.allSuspended {
		return false
	}
	return info.Scope != keyable.ScopeThread || !f.suspended[subj.Thread]
}

// partialStop reports whether some threads are suspended but not the
// whole VM: where the moment lets ScopeVM facts be fetched and served.
func (f *facts) partialStop() bool {
	return f.inOrder && !f.allSuspended && len(f.suspended) > 0 && f.resumesInFlight == 0
}

// nextPos is the position of a command about to be sent to the VM.
func (f *facts) nextPos() uint64 {
	f.pos += posStep
	return f.pos
}

// evented: a VM event (or VM-originated command) came. The debugger will
// know the VM got that far: nothing sent before may answer its reads of
// running state.
func (f *facts) evented() {
	f.floor = f.nextPos()
	f.evFloor, f.offered, f.offMoment, f.sentRunning = f.floor, 0, 0, false
}

// forwarded: the debugger's command d goes to the VM at position pos. It
// reports whether it reads running state: then the floor rises to pos
// once its answer reached the debugger (delivered), and no far end's
// reply offered after it is placed before it (offerPos).
func (f *facts) forwarded(c jdwp.Cmd, d *cmdData, pos uint64) bool {
	if f.allSuspended {
		return false
	}
	if d.keyed && f.running(d.info, d.subj) || !d.keyed && d.eff == keyable.EffectReadOnly && readsProgram(c) {
		f.sentRunning = true
		return true
	}
	return false
}

// momentFailed: the VM refused the proxy's own suspension of a moment
// (dispatcher.openPending), whose reads may then have read the program at
// different moments: nothing read before now answers a read of running
// state.
func (f *facts) momentFailed() { f.floor = f.nextPos() }

// delivered: an answer of running state read at position pos goes to the
// debugger; whatever it asks after reading it must be read no earlier.
func (f *facts) delivered(pos uint64) { f.floor = max(f.floor, pos) }

// readsProgram says whether a read-only command that is not cached
// answers from the program's state (classes loaded, objects, instances)
// rather than only from the debugger's own requests and holds.
func readsProgram(c jdwp.Cmd) bool {
	switch c {
	case jdwp.CmdEventRequestSet, jdwp.CmdEventRequestClear, jdwp.CmdEventRequestClearAllBreakpoints,
		jdwp.CmdVirtualMachineHoldEvents, jdwp.CmdVirtualMachineReleaseEvents,
		jdwp.CmdObjectReferenceDisableCollection:
		return false
	}
	return true
}

// inPlace reports whether a reply of info fetched at position pos is not
// read earlier than an answer of running state the debugger already got.
func (f *facts) inPlace(info keyable.Info, subj keyable.Subject, pos uint64) bool {
	return pos >= f.floor || !f.running(info, subj)
}

// momentOK reports whether a cached reply of info fetched at position pos
// (that came at time at, set for a reply of running state) is still
// true: in place, and young enough (valid by generation checked apart).
func (f *facts) momentOK(info keyable.Info, subj keyable.Subject, pos uint64, at time.Time) bool {
	return f.inPlace(info, subj, pos) && (at.IsZero() || time.Since(at) <= momentAge)
}

// answerable reports whether a reply of info may answer the debugger
// here: a far end never answers with running state.
func (f *facts) answerable(info keyable.Info, subj keyable.Subject) bool {
	return !f.farEnd || !f.running(info, subj)
}

// deliver: the debugger gets a reply of info read at position pos
// (delivered, if it is of running state).
func (f *facts) deliver(info keyable.Info, subj keyable.Subject, pos uint64) {
	if f.running(info, subj) {
		f.delivered(pos)
	}
}

// offerPos is the position of a reply a far end offers now: right after
// the last event, in the order offered, if nothing sent from here since
// read running state (otherwise 0: never served while threads run; the
// far end may have read it after such a command).
func (f *facts) offerPos(moment uint16) uint64 {
	if f.sentRunning || f.offered >= posStep-1 {
		return 0
	}
	if moment == 0 || moment != f.offMoment {
		f.offered++
		f.offMoment = moment
	}
	return f.evFloor + f.offered
}

// unqueueRunning: at a far end, a read of running state from the near end
// (the debugger's miss there) means the near end places nothing of running
// state it receives from now on (offerPos): the stop's speculation of
// running state not yet sent to the VM is dropped (neither used nor
// wasted: it cost nothing), and none is asked again or sent anew at this
// stop (admit).
func (c *core) unqueueRunning(ep *episode) {
	ep.unplaced = true
	for _, s := range ep.specs {
		if !s.sent && !s.cancelled && c.facts.running(s.info, s.subj) {
			s.done = true
			c.disp.cancel(s)
		}
	}
}

// offerReads is the replies of running state a far end offered at this
// stop (a near end's), in the order offered, and which of them the
// debugger read, at this stop and the last: what a miss asks again
// (refetch). Bounded by maxSpecPerStop keys a stop; guarded by
// session.mu.
type offerReads struct {
	placed []keyable.Key            // offered at this stop and not asked again yet, in order
	now    map[keyable.Key]bool     // offered at this stop: read
	last   map[keyable.Key]struct{} // read at the last stop
}

// offered notes a reply of running state offered at this stop, placed
// (offerPos).
func (o *offerReads) offered(k *keyable.Key) {
	if o.now == nil {
		o.now, o.last = map[keyable.Key]bool{}, map[keyable.Key]struct{}{}
	}
	if _, ok := o.now[*k]; !ok && len(o.now) < maxSpecPerStop {
		o.now[*k] = false
		o.placed = append(o.placed, *k)
	}
}

// asked notes the debugger's command k.
func (o *offerReads) asked(k *keyable.Key) {
	if _, ok := o.now[*k]; ok {
		o.now[*k] = true
	}
}

// stopped: a new stop at a location begins.
func (o *offerReads) stopped() {
	clear(o.last)
	for k, read := range o.now {
		if read {
			o.last[k] = struct{}{}
		}
	}
	clear(o.now)
	o.placed = o.placed[:0]
}

// again says whether a miss at this stop asks the offer k again: the
// debugger has not read it, and read it at the last stop: a far end
// offers more than a debugger reads, and what it read it reads again at
// the next step. (At a session's first stop nothing tells: every offer
// asked again there was measured with java-debug to serve none from the
// prior and to save one serial round trip, for a tenth of the session's
// speculation wasted, from a learned profile.)
func (o *offerReads) again(k *keyable.Key) bool {
	if o.now[*k] {
		return false
	}
	_, read := o.last[*k]
	return read
}

// refetch: the debugger's read of running state goes to the VM (a miss),
// so nothing read of running state before it may answer the debugger's
// later reads, once it has that answer. What the stop's speculation read
// of running state and the debugger has not used yet is asked again,
// superseding the first (counted as wasted: it went to the VM and answers
// nothing), and so is each reply of running state a far end offered at
// this stop that offerReads.again names (a near end's). Each only once a
// stop: a re-ask is not asked again by a later miss, which would chase a
// debugger that reads running state on and on (DESIGN.md, Misses). The
// old replies and commands in flight are dropped first, so the new ones
// can go out (the cache and the dispatcher keep one per key); a read the
// debugger sent with the miss, without waiting for its answer, then waits
// for a new reply, which comes with the miss's. Called while the
// dispatcher holds (dispatcher.holding): the new ones go to the VM after
// the debugger's command.
func (c *core) refetch(sizes jdwp.IDSizes) {
	ep := &c.learn.ep
	if !ep.active {
		return
	}
	if c.facts.farEnd {
		c.unqueueRunning(ep)
		return
	}
	c.askRunningAgain(sizes, true)
	for i := range c.reads.placed {
		if k := &c.reads.placed[i]; c.reads.again(k) {
			c.cache.drop(k)
			c.submitNew(sizes, spec{kind: kTemplate, again: true}, k.Cmd(), k.Params())
		}
	}
	c.reads.placed = c.reads.placed[:0]
}

// reread: an answer of running state read at a higher position than the
// floor was raises it (facts.delivered), so the replies of running state
// this stop's speculation read below it, and the debugger has not used,
// can no longer answer its reads (out of place): a debugger that reads a
// stop's state level by level, each level read ahead in a moment of its
// own, and that reads an earlier level's reply after a later one's
// (java-debug: an array local's elements after the fields of an object
// local), would miss each, one round trip after another. They are asked
// again now, in place, superseding the first (counted as wasted), each
// once a stop, as a miss asks them again (refetch). Not at a far end,
// which never answers running state (answerable).
func (c *core) reread(sizes jdwp.IDSizes) {
	if c.learn.ep.active && !c.facts.farEnd {
		c.askRunningAgain(sizes, false)
	}
}

// askRunningAgain asks again the stop's speculation of running state
// that may be asked again (rereadable): all of it (a miss: refetch), or
// what is out of place (reread).
func (c *core) askRunningAgain(sizes jdwp.IDSizes, all bool) {
	c.disp.openPending() // this turn's moment placed: after every answer given
	ep := &c.learn.ep
	for i, n := 0, len(ep.specs); i < n; i++ {
		if s := ep.specs[i]; s.rereadable() && c.facts.running(s.info, s.subj) && (all || !c.facts.inPlace(s.info, s.subj, s.pos)) {
			c.askAgain(s, sizes)
		}
	}
}

// rereadable says whether speculation s is one a stop asks again when
// its reply can no longer answer (refetch, reread): sent, not used, not
// done, and not itself asked again.
func (s *spec) rereadable() bool { return s.sent && !s.used && !s.done && !s.cancelled && !s.again }

// askAgain asks speculation s again, superseding it (counted as wasted):
// its reply and its command in flight are dropped first, so the new one
// can go out (the cache and the dispatcher keep one per key).
func (c *core) askAgain(s *spec, sizes jdwp.IDSizes) {
	c.wasted(s)
	c.cache.drop(&s.key)
	c.disp.forget(s)
	c.submitNew(sizes, spec{kind: s.kind, tmpl: s.tmpl, lnode: s.lnode, level: s.level, again: true}, s.key.Cmd(), s.key.Params())
}
