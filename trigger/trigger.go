// Package trigger lets the speculator subscribe to a command, a reply or an
// event kind without tracking command/reply pairs itself.
//
// JDWP replies carry no command set or command: a reply is typed through
// the pending-ID map, which the Manager fills as commands go out (Command
// for the debugger's commands, which also fires command handlers; Track
// for the proxy's own) and drains as replies come back (Reply). Each
// pending entry carries a caller-defined value T (the speculator keeps a
// command's cache key and validity generation there), so the pending map
// is the only per-command table.
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

// MaxPending bounds the pending map: commands whose replies never come
// (VirtualMachine.Dispose, a dead VM) must not grow it forever. When full,
// the map is emptied (replies then arrive untyped, which only loses
// speculation opportunities).
const MaxPending = 1 << 16

type pending[T any] struct {
	cmd  jdwp.Cmd
	data T
}

// Manager dispatches commands, replies and events to subscribers.
type Manager[T any] struct {
	onCommand map[jdwp.Cmd][]CommandHandler
	onReply   map[jdwp.Cmd][]ReplyHandler[T]
	onEvent   [256][]EventHandler
	pending   map[uint32]pending[T]
	composite jdwp.Composite // reused for decoding events
}

// New returns a Manager with no subscriptions.
func New[T any]() *Manager[T] {
	return &Manager[T]{
		onCommand: map[jdwp.Cmd][]CommandHandler{},
		onReply:   map[jdwp.Cmd][]ReplyHandler[T]{},
		pending:   make(map[uint32]pending[T], 64),
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

// Command records a command going to the VM under the ID it carries on the
// wire, with data, and fires the command's handlers.
func (m *Manager[T]) Command(p jdwp.Packet, data T) {
	c := p.Cmd()
	m.Track(p.ID(), c, data)
	for _, h := range m.onCommand[c] {
		h(p)
	}
}

// Track records a command in flight without firing handlers.
func (m *Manager[T]) Track(id uint32, c jdwp.Cmd, data T) {
	if len(m.pending) >= MaxPending {
		clear(m.pending)
	}
	m.pending[id] = pending[T]{cmd: c, data: data}
}

// Reply types a reply through the pending map, forgets the command, fires
// the reply handlers and returns the command and its data. ok is false for
// a reply to no recorded command (nothing fires).
func (m *Manager[T]) Reply(p jdwp.Packet) (c jdwp.Cmd, data T, ok bool) {
	pc, ok := m.pending[p.ID()]
	if !ok {
		return jdwp.Cmd{}, data, false
	}
	delete(m.pending, p.ID())
	for _, h := range m.onReply[pc.cmd] {
		h(pc.cmd, p, &pc.data)
	}
	return pc.cmd, pc.data, true
}

// Peek returns the pending command and data for id without forgetting it.
func (m *Manager[T]) Peek(id uint32) (jdwp.Cmd, T, bool) {
	pc, ok := m.pending[id]
	return pc.cmd, pc.data, ok
}

// Forget drops a pending command.
func (m *Manager[T]) Forget(id uint32) { delete(m.pending, id) }

// Pending is the number of commands awaiting replies.
func (m *Manager[T]) Pending() int { return len(m.pending) }

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
