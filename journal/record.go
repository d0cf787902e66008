// Package journal owns jdwpaccel's JDWP journal: a coherent, tagged record
// of every packet of every session, written off the relay's hot path.
//
// A Journal is a relay.Observer. It keeps two views apart and tags every
// record with the view it belongs to: the debugger view is the conversation
// as the debugger experienced it (every command it sent with exactly one
// reply, cache hits and belays included, under the IDs it used); the wire
// view is what the proxy exchanged with the VM (forwarded packets and the
// proxy's own synthetic traffic: speculation and DDM of its own). Forwarded
// packets belong to both.
//
// Observe copies what it needs into a bounded ring and never blocks; a
// writer goroutine encodes the ring into one or more files, each in one of
// three formats (JSON Lines with the schema in SCHEMA.md, a Perfetto /
// Chrome trace, or a pcapng of the debugger view that Wireshark's JDWP
// dissector decodes), rotating each file by size. When the ring is full, records are dropped, counted, logged
// and marked in the journal itself: never silently. The journal pairs no
// commands with replies itself: what it records about a command rides in
// the relay's entry for it (a relay.Slot) and comes back with its answer,
// cache hits and belays included (pairing.go).
//
// The package also reads JSON Lines journals back (Decoder, ReadFiles),
// filters and renders them (Filter, FormatRecord), summarises them
// (ComputeStats) and finds each step's critical path, its serial round
// trips (ComputeSteps, steps.go) for "jdwpaccel journal". Its tests check the invariants
// of the journals it writes (Check, in check_test.go).
package journal

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// SchemaVersion is the version of the JSON Lines schema (SCHEMA.md). It
// changes when a field changes meaning or disappears; added fields do not
// change it.
const SchemaVersion = 1

// Record types (the "type" field).
const (
	TypeHeader       = "header"
	TypeSessionStart = "session_start"
	TypeSessionEnd   = "session_end"
	TypePacket       = "packet"
	TypeIDSizes      = "id_sizes"
	TypeDropped      = "dropped"
	// TypeClient is a client of a shared VM attaching or leaving (package
	// share): several may use one session's VM connection at once.
	TypeClient = "client"
)

// Views (the "view" field of packets).
const (
	// ViewDebugger is a packet only the debugger saw: a command served by
	// the proxy (cache hit or belay) and the proxy's answer to it.
	ViewDebugger = "debugger"
	// ViewWire is a packet only the VM saw: the proxy's own traffic.
	ViewWire = "wire"
	// ViewBoth is a forwarded packet: both peers saw it.
	ViewBoth = "both"
)

// Served values (the "served" field), the names of relay.Origin.
const (
	ServedForwarded = "forwarded"
	ServedCacheHit  = "cache_hit"
	ServedBelay     = "belay"
	ServedSynthetic = "synthetic"
	// ServedWriteBehind is a state-setting command the proxy answered at
	// once and sent to the VM as its own (a synthetic command in the wire
	// view), and that answer.
	ServedWriteBehind = "write_behind"
)

// Kinds (the "kind" field), the names of relay.Kind.
const (
	KindCommand       = "command"
	KindReply         = "reply"
	KindEvent         = "event"
	KindDDM           = "ddm"
	KindVMCommand     = "vm_command"
	KindDebuggerReply = "debugger_reply"
)

// Directions (the "dir" field), the names of relay.Direction.
const (
	DirToVM       = "to_vm"
	DirToDebugger = "to_debugger"
)

// Uint64 is a uint64 that JSON carries as a string of decimal digits when
// it does not fit a double exactly (object IDs may use all 64 bits); it
// accepts both a number and a string.
type Uint64 uint64

// MarshalJSON writes a number when it is exact in a double, else a string.
func (u Uint64) MarshalJSON() ([]byte, error) {
	return appendUint64JSON(nil, uint64(u)), nil
}

func appendUint64JSON(dst []byte, u uint64) []byte {
	if u < 1<<53 {
		return strconv.AppendUint(dst, u, 10)
	}
	dst = append(dst, '"')
	dst = strconv.AppendUint(dst, u, 10)
	return append(dst, '"')
}

// UnmarshalJSON accepts a JSON number or a string of digits.
func (u *Uint64) UnmarshalJSON(b []byte) error {
	s := string(b)
	if len(s) >= 2 && s[0] == '"' {
		s = s[1 : len(s)-1]
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return fmt.Errorf("journal: bad unsigned integer %q", b)
	}
	*u = Uint64(v)
	return nil
}

// IDSizesRecord are a session's ID sizes, as the VM stated them.
type IDSizesRecord struct {
	FieldID         int `json:"field_id"`
	MethodID        int `json:"method_id"`
	ObjectID        int `json:"object_id"`
	ReferenceTypeID int `json:"reference_type_id"`
	FrameID         int `json:"frame_id"`
}

// Record is one line of a JSON Lines journal. Which fields are set depends
// on Type; SCHEMA.md is the reference.
type Record struct {
	Type string `json:"type"`

	// Header.
	Schema    int    `json:"schema,omitempty"`
	Version   string `json:"version,omitempty"`
	Start     string `json:"start,omitempty"` // RFC 3339, nanoseconds
	Format    string `json:"format,omitempty"`
	RawLimit  int    `json:"raw_limit,omitempty"`
	FileIndex int    `json:"file_index,omitempty"` // rotation generation, 0 first

	// Every record but the header.
	Session uint64 `json:"session,omitempty"`
	T       int64  `json:"t,omitempty"` // nanoseconds since Start

	// Session start and end.
	Debugger string `json:"debugger,omitempty"`
	VM       string `json:"vm,omitempty"`
	User     string `json:"user,omitempty"` // split mode's far end: the near end's user
	Err      string `json:"err,omitempty"`

	// ID sizes, on id_sizes records and on session_start when known.
	IDSizes *IDSizesRecord `json:"id_sizes,omitempty"`

	// Packets.
	View        string   `json:"view,omitempty"`
	Dir         string   `json:"dir,omitempty"`
	Kind        string   `json:"kind,omitempty"`
	ID          uint32   `json:"id,omitempty"`
	WireID      *uint32  `json:"wire_id,omitempty"`
	Name        string   `json:"name,omitempty"`
	Set         uint8    `json:"set,omitempty"`
	Cmd         uint8    `json:"cmd,omitempty"`
	Error       uint16   `json:"error,omitempty"`
	ErrorName   string   `json:"error_name,omitempty"`
	Len         int      `json:"len,omitempty"`
	Served      string   `json:"served,omitempty"`
	LatencyNs   int64    `json:"latency_ns,omitempty"`
	VMLatencyNs int64    `json:"vm_latency_ns,omitempty"`
	Thread      *Uint64  `json:"thread,omitempty"`
	Events      []string `json:"events,omitempty"`
	Bytes       []byte   `json:"bytes,omitempty"` // base64 in JSON
	Truncated   bool     `json:"truncated,omitempty"`
	Chunk       string   `json:"chunk,omitempty"`

	// Session start: Continued marks a session re-announced at the top of
	// a rotated file (it started in an earlier file).
	Continued bool `json:"continued,omitempty"`
	// Session end: packets journaled and debugger commands left without a
	// reply.
	PacketsLogged uint64 `json:"packets,omitempty"`
	Unanswered    int    `json:"unanswered,omitempty"`

	// Client: the client's number on its VM (in attach order), its role
	// (controller or observer), and, when it leaves, how (dispose, closed,
	// dropped, refused); Debugger is its address and VM the VM's name.
	Client uint64 `json:"client,omitempty"`
	Role   string `json:"role,omitempty"`
	Left   string `json:"left,omitempty"`

	// Dropped: records lost since the previous dropped record, and in all.
	DroppedCount uint64 `json:"count,omitempty"`
	DroppedTotal uint64 `json:"total,omitempty"`
}

// InDebuggerView reports whether a packet record is part of the debugger's
// conversation.
func (r *Record) InDebuggerView() bool {
	return r.Type == TypePacket && (r.View == ViewDebugger || r.View == ViewBoth)
}

// InWireView reports whether a packet record went over the wire to or from
// the VM.
func (r *Record) InWireView() bool {
	return r.Type == TypePacket && (r.View == ViewWire || r.View == ViewBoth)
}

// IsCommandFromDebugger reports whether r is a command the debugger sent.
func (r *Record) IsCommandFromDebugger() bool {
	return r.InDebuggerView() && r.Kind == KindCommand && r.Dir == DirToVM
}

// IsReplyToDebugger reports whether r is a reply the debugger received.
func (r *Record) IsReplyToDebugger() bool {
	return r.InDebuggerView() && r.Kind == KindReply && r.Dir == DirToDebugger
}

// String renders a record compactly for test failures.
func (r Record) String() string {
	b, _ := json.Marshal(r)
	return string(b)
}
