// Package trigger owns the dispatch of a VM's composite events by kind:
// it decodes an Event.Composite once and calls the handlers subscribed to
// each event's kind, in the order they subscribed, with the composite's
// suspend policy. The speculator's parts (facts, the attach, the prepare
// rule) subscribe through it at construction.
//
// Commands and replies need no such table: the relay pairs each reply
// with its command and hands back the data a hook kept with it
// (relay.Frame.Data), and the speculator routes both to its parts itself.
//
// A Manager is not safe for concurrent use: its owner serialises calls
// (the speculator calls it in the relay's turn, under its session lock).
package trigger

import "github.com/jdwpaccel/jdwpaccel/jdwp"

// EventHandler sees one event of a composite, with the composite's
// suspend policy.
type EventHandler func(policy jdwp.SuspendPolicy, e *jdwp.Event)

// Manager dispatches events to subscribers.
type Manager struct {
	onEvent   [256][]EventHandler
	composite jdwp.Composite // reused for decoding events
}

// New returns a Manager with no subscriptions.
func New() *Manager { return &Manager{} }

// OnEvent subscribes h to events of kind k.
func (m *Manager) OnEvent(k jdwp.EventKind, h EventHandler) {
	m.onEvent[k] = append(m.onEvent[k], h)
}

// Events decodes an Event.Composite body and fires the handlers of each
// event's kind, in order. It returns the decoded composite (valid until
// the next call; signatures alias body) and the decoding error, if any;
// events decoded before an error still fire.
func (m *Manager) Events(body []byte, sizes jdwp.IDSizes) (*jdwp.Composite, error) {
	err := m.composite.Decode(body, sizes)
	for i := range m.composite.Events {
		e := &m.composite.Events[i]
		for _, h := range m.onEvent[e.Kind] {
			h(m.composite.SuspendPolicy, e)
		}
	}
	return &m.composite, err
}
