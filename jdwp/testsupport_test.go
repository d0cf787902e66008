package jdwp

// Test support: helpers that only the tests of this package use, kept out of
// the binary.

import (
	"cmp"
	"fmt"
	"slices"
)

// allCommands is every command of the table, sorted (AllCommands).
var allCommands = buildAllCommands()

func compareCmd(a, b Cmd) int {
	if c := cmp.Compare(a.Set, b.Set); c != 0 {
		return c
	}
	return cmp.Compare(a.Cmd, b.Cmd)
}

func buildAllCommands() []Cmd {
	s := make([]Cmd, len(commandTable))
	for i, e := range commandTable {
		s[i] = e.cmd
	}
	slices.SortFunc(s, compareCmd)
	return s
}

// AllCommands returns every command of the table, sorted by set then
// command. The slice is a fresh copy the caller owns.
func AllCommands() []Cmd { return slices.Clone(allCommands) }

// AllErrorCodes returns every error code of the specification, ascending.
// The slice is a fresh copy the caller owns.
func AllErrorCodes() []ErrorCode {
	s := make([]ErrorCode, len(errorTable))
	for i, e := range errorTable {
		s[i] = e.code
	}
	slices.Sort(s)
	return s
}

func (s ThreadStatus) String() string { return name(threadStatusNames, s, "ThreadStatus") }

// CompositeKinds returns the event kinds an Event.Composite may carry.
func CompositeKinds() []EventKind { return append([]EventKind(nil), compositeKinds[:]...) }

// EventRequestSet is the body of an EventRequest.Set command. Decode
// reuses Modifiers' backing array, and the modifiers' patterns alias the
// body, so one EventRequestSet can decode command after command without
// allocating once its array has grown.
type EventRequestSet struct {
	EventKind     EventKind
	SuspendPolicy SuspendPolicy
	Modifiers     []Modifier
}

// minModifierSize is the smallest wire size of a modifier (kind alone).
const minModifierSize = 1

// Decode parses an EventRequest.Set command body. The event kind is not
// checked against the known kinds (a VM answers INVALID_EVENT_TYPE); an
// undefined modifier kind fails with ErrUnknownModifier.
func (s *EventRequestSet) Decode(body []byte, sizes IDSizes) error {
	var r BodyReader
	r.Reset(body, sizes)
	s.Modifiers = s.Modifiers[:0]
	if !r.checkSizes() {
		return r.Err()
	}
	s.EventKind = EventKind(r.Uint8())
	s.SuspendPolicy = SuspendPolicy(r.Uint8())
	n := r.Count(minModifierSize)
	for i := 0; i < n && r.Err() == nil; i++ {
		m := r.Modifier()
		if r.Err() == nil {
			s.Modifiers = append(s.Modifiers, m)
		}
	}
	if r.Err() == nil && r.Remaining() != 0 {
		r.Fail(fmt.Errorf("%w: %d bytes", ErrTrailingData, r.Remaining()))
	}
	return r.Err()
}

// AppendEventRequestSet appends the body of an EventRequest.Set command.
func AppendEventRequestSet(dst []byte, sizes IDSizes, s *EventRequestSet) []byte {
	w := BodyWriter{Buf: dst, Sizes: sizes}
	w.Uint8(uint8(s.EventKind))
	w.Uint8(uint8(s.SuspendPolicy))
	w.Int32(int32(len(s.Modifiers)))
	for _, m := range s.Modifiers {
		w.Modifier(m)
	}
	return w.Buf
}

// AppendComposite appends the body of an Event.Composite command carrying
// c's events to dst. Wrap it with AppendCommand(dst, id, CmdComposite, body)
// to make the packet a VM would send.
func AppendComposite(dst []byte, sizes IDSizes, c *Composite) []byte {
	w := BodyWriter{Buf: dst, Sizes: sizes}
	w.Uint8(uint8(c.SuspendPolicy))
	w.Int32(int32(len(c.Events)))
	for i := range c.Events {
		c.Events[i].Append(&w)
	}
	return w.Buf
}
