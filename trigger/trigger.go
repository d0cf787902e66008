// Package trigger lets the speculator subscribe to a command, a reply or an
// event kind without tracking command/reply pairs itself.
//
// JDWP replies carry no command set or command. The relay pairs each
// reply with its command (relay.Frame.Cmd) and hands back the data a hook
// kept with the command (relay.Frame.Data): the relay's pending entry is
// the only per-command table, and the Manager keeps none. Command fires
// the handlers of a command going out; Reply fires those of a reply, with
// the command it answers and the caller-defined value T kept with it (the
// speculator keeps a command's cache key and validity generation there).
//
// A Manager is not safe for concurrent use: its owner serialises calls
// (the speculator calls it under its session lock).
package trigger

import "github.com/jdwpaccel/jdwpaccel/jdwp"

// CommandHandler sees a command before it goes to the VM.
type CommandHandler func(p jdwp.Packet)

// ReplyHandler sees a reply with the command it answers and the value
// recorded for that command. Error replies are delivered too.
type ReplyHandler[T any] func(c jdwp.Cmd, reply jdwp.Packet, data *T)

// EventHandler sees one event of a composite, with the composite's
// suspend policy.
type EventHandler func(policy jdwp.SuspendPolicy, e *jdwp.Event)

// Manager dispatches commands, replies and events to subscribers.
type Manager[T any] struct {
	onCommand map[jdwp.Cmd][]CommandHandler
	onReply   map[jdwp.Cmd][]ReplyHandler[T]
	onEvent   [256][]EventHandler
	composite jdwp.Composite // reused for decoding events
}

// New returns a Manager with no subscriptions.
func New[T any]() *Manager[T] {
	return &Manager[T]{
		onCommand: map[jdwp.Cmd][]CommandHandler{},
		onReply:   map[jdwp.Cmd][]ReplyHandler[T]{},
	}
}

// OnCommand subscribes h to commands c.
func (m *Manager[T]) OnCommand(c jdwp.Cmd, h CommandHandler) {
	m.onCommand[c] = append(m.onCommand[c], h)
}

// OnReply subscribes h to replies to commands c.
func (m *Manager[T]) OnReply(c jdwp.Cmd, h ReplyHandler[T]) {
	m.onReply[c] = append(m.onReply[c], h)
}

// OnEvent subscribes h to events of kind k.
func (m *Manager[T]) OnEvent(k jdwp.EventKind, h EventHandler) {
	m.onEvent[k] = append(m.onEvent[k], h)
}

// Command fires the handlers of a command going to the VM.
func (m *Manager[T]) Command(p jdwp.Packet) {
	for _, h := range m.onCommand[p.Cmd()] {
		h(p)
	}
}

// Reply fires the handlers of a reply to command c, with the data kept
// with that command.
func (m *Manager[T]) Reply(c jdwp.Cmd, p jdwp.Packet, data *T) {
	for _, h := range m.onReply[c] {
		h(c, p, data)
	}
}

// Events decodes an Event.Composite body and fires the handlers of each
// event's kind, in order. It returns the decoded composite (valid until
// the next call; signatures alias body) and the decoding error, if any;
// events decoded before an error still fire.
func (m *Manager[T]) Events(body []byte, sizes jdwp.IDSizes) (*jdwp.Composite, error) {
	err := m.composite.Decode(body, sizes)
	for i := range m.composite.Events {
		e := &m.composite.Events[i]
		for _, h := range m.onEvent[e.Kind] {
			h(m.composite.SuspendPolicy, e)
		}
	}
	return &m.composite, err
}
