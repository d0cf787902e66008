package jdwp

import "encoding/binary"

// The one answer to "what does an event of this kind mean for the
// debugger?", asked by the speculator (does a stop begin an episode?), the
// live page and its conversation view (is this a step?), the journal (did
// the VM suspend?) and the relay and the far end (does the VM's connection
// end?).
//
// Monitor events are steps. A suspending MONITOR_CONTENDED_ENTER,
// MONITOR_CONTENDED_ENTERED, MONITOR_WAIT or MONITOR_WAITED stops its
// thread at a location (the specification gives each a Location), and a
// debugger that asked for it shows that thread's stack there, exactly as
// after a breakpoint: the user sees a stop, and the speculator reads the
// same state ahead of time. So they are locatable like breakpoints and
// single steps, and the page counts them as steps.

// kindFacts are the properties of one event kind.
type kindFacts uint8

const (
	// locatable: the event stops a thread at a location the debugger
	// shows (when its composite's suspend policy is not NONE): a step.
	locatable kindFacts = 1 << iota
	// suspends: debuggers ask for it with a suspending policy, so a
	// composite of this kind whose policy byte is unknown is taken to
	// have suspended (the locatable kinds, FRAME_POP, and VM_START, which
	// suspends when the VM waits for its debugger).
	suspends
	// endsVM: the VM's connection ends right after it.
	endsVM
)

// eventKindFacts is the table. A kind not listed (THREAD_START,
// CLASS_PREPARE, ...) is none of the three.
var eventKindFacts = map[EventKind]kindFacts{
	EventSingleStep:                locatable | suspends,
	EventBreakpoint:                locatable | suspends,
	EventFramePop:                  suspends,
	EventException:                 locatable | suspends,
	EventFieldAccess:               locatable | suspends,
	EventFieldModification:         locatable | suspends,
	EventMethodEntry:               locatable | suspends,
	EventMethodExit:                locatable | suspends,
	EventMethodExitWithReturnValue: locatable | suspends,
	EventMonitorContendedEnter:     locatable | suspends,
	EventMonitorContendedEntered:   locatable | suspends,
	EventMonitorWait:               locatable | suspends,
	EventMonitorWaited:             locatable | suspends,
	EventVMStart:                   suspends,
	EventVMDeath:                   endsVM,
}

// Locatable reports whether an event of kind k stops its thread at a
// location the debugger shows: a step, when its composite suspends.
func (k EventKind) Locatable() bool { return eventKindFacts[k]&locatable != 0 }

// Suspends reports whether debuggers ask for events of kind k with a
// suspending policy: what a composite suspended when its policy byte is
// not known.
func (k EventKind) Suspends() bool { return eventKindFacts[k]&suspends != 0 }

// EndsVM reports whether the VM's connection ends after an event of kind k.
func (k EventKind) EndsVM() bool { return eventKindFacts[k]&endsVM != 0 }

// ParseEventKind is the kind of the specification's name s ("BREAKPOINT").
func ParseEventKind(s string) (EventKind, bool) {
	for k, n := range eventKindNames {
		if n == s {
			return k, true
		}
	}
	return 0, false
}

// IsStop reports whether the composite is a step: a suspend policy other
// than NONE and a locatable event. Stop is its first locatable event.
func (c *Composite) IsStop() bool {
	_, ok := c.Stop()
	return ok
}

// Stop is the composite's first locatable event when its suspend policy
// is not NONE.
func (c *Composite) Stop() (*Event, bool) {
	if c.SuspendPolicy == SuspendNone {
		return nil, false
	}
	for i := range c.Events {
		if c.Events[i].Kind.Locatable() {
			return &c.Events[i], true
		}
	}
	return nil, false
}

// CompositeHead reads an Event.Composite body's suspend policy and its
// first event's kind, which need no ID sizes (suspendPolicy byte, event
// count int, then the first event's kind byte); false for a body too short
// or with no event.
func CompositeHead(body []byte) (SuspendPolicy, EventKind, bool) {
	if len(body) < 6 || binary.BigEndian.Uint32(body[1:]) == 0 {
		return 0, 0, false
	}
	return SuspendPolicy(body[0]), EventKind(body[5]), true
}

// StartsWithVMDeath reports whether an Event.Composite body's first event
// is VM_DEATH: the VM's connection ends right after it.
func StartsWithVMDeath(body []byte) bool {
	_, k, ok := CompositeHead(body)
	return ok && k.EndsVM()
}
