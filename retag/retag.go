// Package retag owns every packet ID that crosses the proxy towards the VM.
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

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// SyntheticBase is the first ID of the proxy's range; the range runs to
// 0xFFFFFFFF.
const SyntheticBase uint32 = 0xA0000000

// InRange reports whether id lies in the proxy's range.
func InRange(id uint32) bool { return id >= SyntheticBase }

// Owner says whose command a proxy ID belongs to.
type Owner uint8

const (
	// NotOurs: the ID is a debugger ID forwarded unchanged.
	NotOurs Owner = iota
	// Synthetic: the proxy's own command; its reply is absorbed.
	Synthetic
	// Remapped: a debugger command whose ID was in the proxy's range.
	Remapped
)

// Table allocates proxy IDs and remembers the ones in flight.
type Table struct {
	mu       sync.Mutex        // guards next and inflight
	next     uint32            // next candidate ID (always in range)
	inflight map[uint32]uint32 // proxy ID -> debugger ID (Remapped) or SyntheticBase-1 marker (Synthetic)
}

// synthMark marks a synthetic entry (it is not in range, so no debugger ID
// that needed remapping can equal it).
const synthMark = SyntheticBase - 1

// NewTable returns an empty table.
func NewTable() *Table {
	return &Table{next: SyntheticBase, inflight: make(map[uint32]uint32, 64)}
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
// flight until Reply sees its answer (or Forget).
func (t *Table) NewSynthetic() uint32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	id := t.alloc()
	t.inflight[id] = synthMark
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
	t.inflight[nid] = id
	t.mu.Unlock()
	p.SetID(nid)
	return nid, true
}

// Reply classifies a reply from the VM. For a remapped command it restores
// the debugger's ID in place. For Synthetic the caller must absorb the
// reply. Any reply in the proxy's range that is not a remapped command is
// reported Synthetic, even if it is no longer (or never was) in flight, so
// it can never leak to the debugger.
func (t *Table) Reply(p jdwp.Packet) Owner {
	id := p.ID()
	if !InRange(id) {
		return NotOurs
	}
	t.mu.Lock()
	orig, ok := t.inflight[id]
	delete(t.inflight, id)
	t.mu.Unlock()
	if ok && orig != synthMark {
		p.SetID(orig)
		return Remapped
	}
	return Synthetic
}

// Peek classifies the ID of a reply from the VM like Reply, without
// forgetting it or restoring anything.
func (t *Table) Peek(id uint32) Owner {
	if !InRange(id) {
		return NotOurs
	}
	t.mu.Lock()
	orig, ok := t.inflight[id]
	t.mu.Unlock()
	if ok && orig != synthMark {
		return Remapped
	}
	return Synthetic
}

// Forget drops a proxy ID whose reply will never come.
func (t *Table) Forget(id uint32) {
	t.mu.Lock()
	delete(t.inflight, id)
	t.mu.Unlock()
}

// InFlight is the number of proxy IDs awaiting a reply.
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
