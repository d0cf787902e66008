package jdwp

import (
	"errors"
	"fmt"
)

// ErrUnknownEventKind is an event kind that an Event.Composite body may not
// carry (the specification lists which); the rest of the body cannot be
// decoded because the event's length is unknown.
var ErrUnknownEventKind = errors.New("jdwp: unknown event kind in composite")

// Event is one event of an Event.Composite command. Kind says which fields
// are meaningful (the specification's Event.Composite layouts):
//
//	VM_START                                   RequestID, Thread
//	SINGLE_STEP, BREAKPOINT, METHOD_ENTRY,
//	METHOD_EXIT                                RequestID, Thread, Location
//	METHOD_EXIT_WITH_RETURN_VALUE              RequestID, Thread, Location, Value (return value)
//	MONITOR_CONTENDED_ENTER, _ENTERED          RequestID, Thread, Object (monitor), Location
//	MONITOR_WAIT                               RequestID, Thread, Object, Location, Timeout
//	MONITOR_WAITED                             RequestID, Thread, Object, Location, TimedOut
//	EXCEPTION                                  RequestID, Thread, Location, Object (exception), CatchLocation
//	THREAD_START, THREAD_DEATH                 RequestID, Thread
//	CLASS_PREPARE                              RequestID, Thread, RefTypeTag, TypeID, Signature, Status
//	CLASS_UNLOAD                               RequestID, Signature
//	FIELD_ACCESS                               RequestID, Thread, Location, RefTypeTag, TypeID, Field, Object
//	FIELD_MODIFICATION                         ... as FIELD_ACCESS, and Value (value to be)
//	VM_DEATH                                   RequestID
//
// Signature aliases the decoded body: it is valid only as long as the
// body's bytes are. An Event holds no other pointers.
type Event struct {
	Kind          EventKind
	RequestID     int32
	Thread        uint64
	Location      Location
	Object        Value // tagged objectID: exception, monitor or field's object
	CatchLocation Location
	RefTypeTag    TypeTag
	TypeID        uint64
	Signature     []byte
	Status        ClassStatus
	Field         uint64
	Value         Value // return value or value to be
	Timeout       int64 // milliseconds
	TimedOut      bool
}

// compositeKinds are the event kinds an Event.Composite may carry, in the
// specification's order.
var compositeKinds = [...]EventKind{
	EventVMStart, EventSingleStep, EventBreakpoint, EventMethodEntry, EventMethodExit,
	EventMethodExitWithReturnValue, EventMonitorContendedEnter, EventMonitorContendedEntered,
	EventMonitorWait, EventMonitorWaited, EventException, EventThreadStart, EventThreadDeath,
	EventClassPrepare, EventClassUnload, EventFieldAccess, EventFieldModification, EventVMDeath,
}

// Composite is the body of an Event.Composite command. Decode reuses the
// backing array of Events, and signatures alias the body, so one Composite
// can decode packet after packet without allocating once its array has
// grown to the largest event count seen.
type Composite struct {
	SuspendPolicy SuspendPolicy
	Events        []Event
}

// minEventSize is the smallest wire size of an event (kind, requestID).
const minEventSize = 1 + 4

// Decode parses an Event.Composite body with the given ID sizes. On error
// Events holds the events decoded before the failure. Failures wrap
// ErrShortBody, ErrBadTag, ErrBadIDSize, ErrUnknownEventKind or
// ErrTrailingData.
func (c *Composite) Decode(body []byte, sizes IDSizes) error {
	var r BodyReader
	r.Reset(body, sizes)
	c.Events = c.Events[:0]
	if !r.checkSizes() {
		return r.Err()
	}
	c.SuspendPolicy = SuspendPolicy(r.Uint8())
	n := r.Count(minEventSize)
	for i := 0; i < n && r.Err() == nil; i++ {
		c.Events = append(c.Events, Event{})
		e := &c.Events[len(c.Events)-1]
		r.event(e)
		if r.Err() != nil {
			c.Events = c.Events[:len(c.Events)-1]
		}
	}
	if r.Err() == nil && r.Remaining() != 0 {
		r.Fail(fmt.Errorf("%w: %d bytes", ErrTrailingData, r.Remaining()))
	}
	return r.Err()
}

// event decodes one event into e, which the caller has zeroed.
func (r *BodyReader) event(e *Event) {
	e.Kind = EventKind(r.Uint8())
	if r.err != nil {
		return
	}
	if !isCompositeKind(e.Kind) {
		r.Fail(fmt.Errorf("%w: %d at offset %d", ErrUnknownEventKind, uint8(e.Kind), r.off-1))
		return
	}
	e.RequestID = r.Int32()
	switch e.Kind {
	case EventVMDeath:
		return
	case EventClassUnload:
		e.Signature = r.StringBytes()
		return
	}
	e.Thread = r.ObjectID()
	switch e.Kind {
	case EventSingleStep, EventBreakpoint, EventMethodEntry, EventMethodExit:
		e.Location = r.Location()
	case EventMethodExitWithReturnValue:
		e.Location = r.Location()
		e.Value = r.Value()
	case EventMonitorContendedEnter, EventMonitorContendedEntered:
		e.Object = r.TaggedObjectID()
		e.Location = r.Location()
	case EventMonitorWait:
		e.Object = r.TaggedObjectID()
		e.Location = r.Location()
		e.Timeout = r.Int64()
	case EventMonitorWaited:
		e.Object = r.TaggedObjectID()
		e.Location = r.Location()
		e.TimedOut = r.Bool()
	case EventException:
		e.Location = r.Location()
		e.Object = r.TaggedObjectID()
		e.CatchLocation = r.Location()
	case EventClassPrepare:
		e.RefTypeTag = TypeTag(r.Uint8())
		e.TypeID = r.ReferenceTypeID()
		e.Signature = r.StringBytes()
		e.Status = ClassStatus(r.Int32())
	case EventFieldAccess, EventFieldModification:
		e.Location = r.Location()
		e.RefTypeTag = TypeTag(r.Uint8())
		e.TypeID = r.ReferenceTypeID()
		e.Field = r.FieldID()
		e.Object = r.TaggedObjectID()
		if e.Kind == EventFieldModification {
			e.Value = r.Value()
		}
	}
	// VM_START, THREAD_START, THREAD_DEATH: thread only.
}

func isCompositeKind(k EventKind) bool {
	for _, c := range compositeKinds {
		if c == k {
			return true
		}
	}
	return false
}

// Append appends the event's wire form (the fields its Kind uses; see
// Event). An event of a kind a composite may not carry is written as its
// kind and request ID alone, which Decode rejects.
func (e *Event) Append(w *BodyWriter) {
	w.Uint8(uint8(e.Kind))
	w.Int32(e.RequestID)
	switch e.Kind {
	case EventVMDeath:
		return
	case EventClassUnload:
		w.StringBytes(e.Signature)
		return
	}
	if !isCompositeKind(e.Kind) {
		return
	}
	w.ObjectID(e.Thread)
	switch e.Kind {
	case EventSingleStep, EventBreakpoint, EventMethodEntry, EventMethodExit:
		w.Location(e.Location)
	case EventMethodExitWithReturnValue:
		w.Location(e.Location)
		w.Value(e.Value)
	case EventMonitorContendedEnter, EventMonitorContendedEntered:
		w.TaggedObjectID(e.Object)
		w.Location(e.Location)
	case EventMonitorWait:
		w.TaggedObjectID(e.Object)
		w.Location(e.Location)
		w.Int64(e.Timeout)
	case EventMonitorWaited:
		w.TaggedObjectID(e.Object)
		w.Location(e.Location)
		w.Bool(e.TimedOut)
	case EventException:
		w.Location(e.Location)
		w.TaggedObjectID(e.Object)
		w.Location(e.CatchLocation)
	case EventClassPrepare:
		w.Uint8(uint8(e.RefTypeTag))
		w.ReferenceTypeID(e.TypeID)
		w.StringBytes(e.Signature)
		w.Int32(int32(e.Status))
	case EventFieldAccess, EventFieldModification:
		w.Location(e.Location)
		w.Uint8(uint8(e.RefTypeTag))
		w.ReferenceTypeID(e.TypeID)
		w.FieldID(e.Field)
		w.TaggedObjectID(e.Object)
		if e.Kind == EventFieldModification {
			w.Value(e.Value)
		}
	}
}
