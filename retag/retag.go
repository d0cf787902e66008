// Package retag owns every packet ID that crosses the proxy towards the VM,
// and the one table of commands in flight towards it.
//
// The debugger and the proxy share one ID space at the VM: the VM answers
// each command with the command's ID. Every command the proxy sends on its
// own (speculation, DDM) takes its ID from the VM connection's one Table,
// from SyntheticBase upward, never reusing an ID still in flight; no other
// code makes up packet IDs towards the VM.
// A debugger command whose ID falls in that range is remapped to a fresh
// proxy ID before it is forwarded (the relay does it for every session),
// and its reply is given the debugger's ID back, so the two kinds can never
// be confused. A reply carrying a proxy ID
// that is not a remapped debugger command is synthetic and must never reach
// the debugger. A reply served from the cache is retagged with the ID of
// the debugger command it answers (Retag).
//
// The Table is also where each command towards the VM, the debugger's and
// the proxy's, is paired with its reply: Sent records it under the ID the
// VM sees, with what is known about it (a Command: its command, when it
// went out, whose it is, and each hook's data in its slot), and Take hands
// that back for the reply. The relay records every command it sends; the
// DDM client records its own while it holds a connection with no session.
// No other package keeps a table of commands in flight towards the VM.
//
// One Table serves one VM connection for its whole life, across the
// sessions it serves: ddmtap's Holder creates it when it dials a connection
// it holds before any debugger (its DDM client sends with it at once) and
// hands it over with the connection (relay.VMConn.IDs); for any other
// connection the relay creates it with the session. So IDs still in
// flight from the holding phase are never reused in the session.
//
// A Table is safe for concurrent use.
package retag

import (
	"encoding/binary"
	"sync"
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// SyntheticBase is the first ID of the proxy's range; the range runs to
// 0xFFFFFFFF.
const SyntheticBase uint32 = 0xA0000000

// InRange reports whether id lies in the proxy's range.
func InRange(id uint32) bool { return id >= SyntheticBase }

// ObserverBase is the first ID of the range the shared-VM hub (package
// share) gives the commands of observers, the clients that only look; the
// range runs to SyntheticBase. Hooks that learn from the debugger
// (the speculator) skip them: learning follows the controller.
const ObserverBase uint32 = 0x80000000

// FromObserver reports whether id is an observer's command's, as the
// shared-VM hub numbers them.
func FromObserver(id uint32) bool { return id >= ObserverBase && id < SyntheticBase }

// Owner says whose command an ID in flight belongs to.
type Owner uint8

const (
	// NotOurs: a debugger's command, under the debugger's own ID.
	NotOurs Owner = iota
	// Synthetic: the proxy's own command; its reply is absorbed.
	Synthetic
	// Remapped: a debugger command whose ID was in the proxy's range.
	Remapped
)

// NumSlots is how many hooks may keep data with a command (relay.NewSlot):
// the journal, the speculator, the DDM client, the conversation watcher and
// the session tracker. A Command must stay within 128 bytes, which the
// table's map keeps in place: a larger one costs an allocation per command.
const NumSlots = 5

// Command is what is known about one command in flight towards the VM.
type Command struct {
	Cmd  jdwp.Cmd
	Sent time.Time // when it went out (zero until Sent)
	// Owner says whose it is; Debugger is the debugger's ID of a
	// debugger's command (the wire ID unless Remapped).
	Owner    Owner
	Debugger uint32
	// Data holds each hook's data in its slot (relay.Slot), from the
	// command to its reply.
	Data [NumSlots]any
}

// Table allocates proxy IDs and holds the commands in flight.
type Table struct {
	mu       sync.Mutex         // guards next and inflight
	next     uint32             // next candidate ID (always in range)
	inflight map[uint32]Command // by the ID the VM sees
}

// NewTable returns an empty table.
func NewTable() *Table {
	return &Table{next: SyntheticBase, inflight: make(map[uint32]Command, 64)}
}

// alloc returns a free proxy ID; t.mu is held. The range holds 1.6 billion
// IDs, so a free one is found at once unless as many are in flight.
func (t *Table) alloc() uint32 {
	for {
		id := t.next
		t.next++
		if t.next == 0 { // wrapped past 0xFFFFFFFF
			t.next = SyntheticBase
		}
		if _, busy := t.inflight[id]; !busy {
			return id
		}
	}
}

// NewSynthetic allocates an ID for a synthetic command and records it in
// flight until Take sees its answer (or Forget).
func (t *Table) NewSynthetic() uint32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	id := t.alloc()
	t.inflight[id] = Command{Owner: Synthetic, Debugger: id}
	return id
}

// FromDebugger remaps a debugger command in place if its ID is in the
// proxy's range, and reports the ID it now carries. Replies and IDs below
// the range pass unchanged.
func (t *Table) FromDebugger(p jdwp.Packet) (id uint32, remapped bool) {
	id = p.ID()
	if !InRange(id) || p.IsReply() {
		return id, false
	}
	t.mu.Lock()
	nid := t.alloc()
	t.inflight[nid] = Command{Owner: Remapped, Debugger: id}
	t.mu.Unlock()
	p.SetID(nid)
	return nid, true
}

// Sent records c as sent under id, the ID the VM sees, and reports
// whether a command had already been sent under id and not answered (a
// duplicate, which c replaces). For an ID handed out by NewSynthetic or
// FromDebugger, the entry keeps its Owner and Debugger; any other ID is
// recorded with c's. Data slots c leaves nil keep what they held, so a
// hook may record its data before the relay records the command.
func (t *Table) Sent(id uint32, c Command) (dup bool) {
	t.mu.Lock()
	old, ok := t.inflight[id]
	if ok {
		dup = !old.Sent.IsZero()
		c.Owner, c.Debugger = old.Owner, old.Debugger
		for i, v := range c.Data {
			if v == nil {
				c.Data[i] = old.Data[i]
			}
		}
	}
	t.inflight[id] = c
	t.mu.Unlock()
	return dup
}

// Take removes the command in flight under the ID of a reply from the VM
// and returns it. Without one (never sent, expired, or answered already),
// owner is Synthetic for an ID in the proxy's range, which must then never
// reach the debugger, and NotOurs otherwise.
func (t *Table) Take(id uint32) (c Command, owner Owner, ok bool) {
	t.mu.Lock()
	c, ok = t.inflight[id]
	delete(t.inflight, id)
	t.mu.Unlock()
	switch {
	case ok:
		return c, c.Owner, true
	case InRange(id):
		return c, Synthetic, false
	}
	return c, NotOurs, false
}

// Reply is Take for a reply packet that also restores the debugger's ID
// in place for a remapped command.
func (t *Table) Reply(p jdwp.Packet) (Command, Owner) {
	c, owner, _ := t.Take(p.ID())
	if owner == Remapped {
		p.SetID(c.Debugger)
	}
	return c, owner
}

// Forget drops an ID whose reply will never come.
func (t *Table) Forget(id uint32) {
	t.mu.Lock()
	delete(t.inflight, id)
	t.mu.Unlock()
}

// Sweep calls fn, under the table's lock, for each command in flight that
// holds data in slot; fn must not call the table. The commands for which
// fn returns true are dropped, as by Forget.
func (t *Table) Sweep(slot int, fn func(id uint32, c *Command) (drop bool)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, c := range t.inflight {
		if c.Data[slot] != nil && fn(id, &c) {
			delete(t.inflight, id)
		}
	}
}

// InFlight is the number of commands awaiting a reply.
func (t *Table) InFlight() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.inflight)
}

// Retag appends a copy of reply to dst with its ID replaced by id, and
// returns it. The copy is dst's; reply is not modified.
func Retag(dst []byte, reply jdwp.Packet, id uint32) jdwp.Packet {
	n := len(dst)
	dst = append(dst, reply...)
	if len(reply) >= 8 {
		binary.BigEndian.PutUint32(dst[n+4:], id)
	}
	return dst[n:]
}
