package relay

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/retag"
)

// Direction is the way a packet travels through the proxy.
type Direction uint8

const (
	// ToVM is debugger (or proxy) to VM.
	ToVM Direction = iota
	// ToDebugger is VM (or proxy) to debugger.
	ToDebugger
)

func (d Direction) String() string {
	if d == ToVM {
		return "to_vm"
	}
	return "to_debugger"
}

// Kind classifies a packet.
type Kind uint8

const (
	// KindCommand is a command sent towards the VM (by the debugger, or by
	// the proxy itself when Origin is Synthetic).
	KindCommand Kind = iota
	// KindReply is the VM's reply to a command.
	KindReply
	// KindEvent is a VM-originated Event.Composite.
	KindEvent
	// KindDDM is a VM-originated DDM chunk packet (199/1).
	KindDDM
	// KindVMCommand is any other VM-originated command.
	KindVMCommand
	// KindDebuggerReply is the debugger's reply to a VM-originated command.
	KindDebuggerReply

	numKinds
)

var kindNames = [numKinds]string{"command", "reply", "event", "ddm", "vm_command", "debugger_reply"}

func (k Kind) String() string {
	if k < numKinds {
		return kindNames[k]
	}
	return "unknown"
}

// Origin says how a packet came to be on the wire, or how a debugger
// command was served.
type Origin uint8

const (
	// Forwarded is an organic packet relayed from one peer to the other.
	Forwarded Origin = iota
	// CacheHit is a debugger command answered from the cache, and that
	// answer.
	CacheHit
	// Belay is a debugger command held for a speculation in flight, and the
	// reply served to it when the speculation's reply arrived.
	Belay
	// Synthetic is the proxy's own traffic: speculative commands, DDM of its
	// own, and the VM's replies and chunks for them. Never seen by the
	// debugger.
	Synthetic
	// WriteBehind is a debugger command that changes VM state, answered at
	// once with the reply the VM will give (the proxy sends the command to
	// the VM as its own, Synthetic, and checks the VM's reply), and that
	// answer.
	WriteBehind

	numOrigins
)

var originNames = [numOrigins]string{"forwarded", "cache_hit", "belay", "synthetic", "write_behind"}

func (o Origin) String() string {
	if o < numOrigins {
		return originNames[o]
	}
	return "unknown"
}

// Frame is one packet as the relay classified it. The relay reuses one
// Frame per reader: a Frame and its Packet are valid only during the hook
// call that receives them; hooks that keep anything must copy it
// (Packet.Clone).
type Frame struct {
	Dir    Direction
	Kind   Kind
	Origin Origin
	// Packet is the whole packet. Interceptors may rewrite it in place
	// (same length), e.g. its ID.
	Packet jdwp.Packet
	// ID is the packet's ID on the debugger's side of the proxy: for
	// packets from the debugger, the ID it sent; for packets to it, the ID
	// it receives (already when interceptors see a VM's reply whose ID the
	// relay gives back afterwards: a copy an interceptor holds and sends
	// later carries f.ID). For synthetic traffic, the proxy's own ID.
	ID uint32
	// Cmd is the command of a command packet, or for a reply the command
	// it answers (zero when the command was not seen).
	Cmd jdwp.Cmd
	// Time is when the relay read or injected the packet.
	Time time.Time
	// Latency is, for a reply, the time since its command went out.
	Latency time.Duration

	// Answer may be set by an interceptor that returns Consume for a
	// debugger command: the relay sends it to the debugger, with Origin,
	// after observers have seen the command. The relay does not retain it.
	Answer jdwp.Packet

	// data is the per-hook data of a command (SetData) and, on its
	// reply, the same data back (Data).
	data [NumSlots]any
	// out is the session's outbox during the hook call (Out).
	out *Outbox
}

// NumSlots is how many hooks may keep data with a command (NewSlot).
const NumSlots = retag.NumSlots

// A Slot is one hook's place in the data the relay keeps with each
// command until its answer: the relay is the one place where commands
// and replies are paired (for commands towards the VM, in the VM
// connection's retag.Table), and a hook that needs its own per-command
// data (the speculator's cache key and validity generation, the
// journal's record of the command, the DDM client's request) keeps it
// there instead of in a pending map of its own.
type Slot uint8

var slots atomic.Uint32

// NewSlot reserves a slot, once per hook type (at package
// initialisation). It panics beyond NumSlots: that is a build-time
// choice, not a run-time condition.
func NewSlot() Slot {
	n := slots.Add(1) - 1
	if n >= NumSlots {
		panic(fmt.Sprintf("relay: more than %d slots", NumSlots))
	}
	return Slot(n)
}

// SetData keeps v with the command f as slot's data until its answer,
// for an interceptor (FromDebugger) or an observer that sees the command:
// a debugger command, the proxy's own (Outbox.SendToVMData) or a
// VM-originated command the debugger answers. A debugger command an
// interceptor consumed keeps it until the proxy answers it (Frame.Answer
// or Outbox.SendToDebugger), whose Frame carries it. A pointer keeps the call free
// of allocation.
func (f *Frame) SetData(slot Slot, v any) { f.data[slot] = v }

// Data is, on an answer (a VM reply, the proxy's answer to a consumed
// command, the debugger's reply to a VM command), the data its command
// was given in slot (SetData, Outbox.SendToVMData), or nil.
func (f *Frame) Data(slot Slot) any { return f.data[slot] }

// Action is an interceptor's decision about a packet.
type Action uint8

const (
	// Forward relays the packet (possibly rewritten in place).
	Forward Action = iota
	// Consume stops the packet here: the interceptor has answered it
	// (Frame.Answer), will answer it later (Belay), or it was its own.
	Consume
)

// Interceptor may answer, drop or inject packets: the speculator and the
// DDM server are interceptors. Its methods are called in the session's
// turn (see the package doc), one packet at a time, on the reader
// goroutine of the packet's source; they must not block. What they send
// goes to the Frame's outbox (Frame.Out), which the relay applies when
// they return; hook code running on a goroutine of its own sends through
// Session.Do. Interceptors run in order; the first Consume wins and later
// interceptors do not see the packet. A panic in a hook is recovered: it
// is counted and logged, and the session goes on as plain pass-through
// without its hooks (or ends, Hooks.EndOnPanic).
type Interceptor interface {
	// FromDebugger sees each packet the debugger sends, before it is
	// forwarded. f.Origin may be set to CacheHit or Belay on Consume.
	FromDebugger(s *Session, f *Frame) Action
	// FromVM sees each packet the VM sends, before it is forwarded.
	// On Consume, f.Origin should be Synthetic; a VM command consumed
	// (one a peer proxy sent this one) awaits no debugger reply. A reply to a command of
	// the proxy's own comes with f.Origin Synthetic already (see
	// Session.IDs) and is absorbed whatever the interceptors decide.
	FromVM(s *Session, f *Frame) Action
	// Close is called once when the session ends, after both readers
	// stopped. Anything waiting on the interceptor must be released.
	Close(s *Session)
}

// Observer sees every packet after the interceptors decided, including
// packets injected by the proxy, each exactly once, in the session's turn
// (see the package doc): never concurrently with other hook code of the
// session, and under no hook's lock. It must be fast and non-blocking.
// Packets are observed in the order they are queued for their peer, and a
// debugger command before any answer to it.
type Observer interface {
	Observe(s *Session, f *Frame)
}

// A Gate is optionally implemented by an Interceptor that must hold the
// debugger's packets back until something arrives from the VM (split
// mode's near end awaits the far end's attach bundle). The debugger
// reader calls HoldDebugger before each of the debugger's packets, outside
// the session's turn, so that the VM's packets are handled meanwhile; it
// must return within a bounded time.
type Gate interface {
	HoldDebugger(s *Session)
}

// A Yielder is optionally implemented by an Interceptor that may keep the
// VM in a state of its own making from one turn to the next (the
// speculator holds a stop's moment open: a suspension of its own). Hook
// code that sends the VM a command the interceptors never saw (the DDM
// tap's own requests) calls Session.Yield first, in the same turn, so the
// command finds the VM as the program left it.
type Yielder interface {
	// Yield ends that state, sending what it takes through out.
	Yield(s *Session, out *Outbox)
}

// SessionObserver is optionally implemented by an Observer that wants to
// know when sessions start and end.
type SessionObserver interface {
	SessionStart(s *Session)
	SessionEnd(s *Session, err error)
}

// Hooks are the interceptors and observers of one session.
type Hooks struct {
	Interceptors []Interceptor
	Observers    []Observer
	// EndOnPanic ends the session when a hook panics, instead of going on
	// as plain pass-through: for hooks whose packets must never reach the
	// other peer unhandled (split mode's pushed-reply bundles).
	EndOnPanic bool
}
