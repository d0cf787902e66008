package journal

import (
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// Filter selects records. The zero Filter selects every packet of the
// debugger view and the session records.
type Filter struct {
	// View is "debugger" (default), "wire" or "all".
	View string
	// Sets, if not empty, keeps packets of these command sets.
	Sets []uint8
	// Names, if not empty, keeps packets whose command name contains one
	// of these (case-insensitive), e.g. "Frames" or "ThreadReference.".
	Names []string
	// Threads, if not empty, keeps packets about one of these threads.
	Threads []uint64
	// Sessions, if not empty, keeps these sessions.
	Sessions []uint64
	// Served, if not empty, keeps packets served one of these ways.
	Served []string
	// Since and Until bound the time since the journal's start; Until 0
	// means no bound.
	Since, Until time.Duration
}

// ErrBadFilter is returned by ParseSets and ParseThreads.
var ErrBadFilter = errors.New("journal: bad filter")

// ParseSets parses a comma-separated list of command set names
// (ThreadReference) or numbers (11).
func ParseSets(s string) ([]uint8, error) {
	var out []uint8
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if n, err := strconv.ParseUint(f, 10, 8); err == nil {
			out = append(out, uint8(n))
			continue
		}
		found := false
		for i := range 256 {
			if cs := jdwp.CommandSet(i); cs.Known() && strings.EqualFold(cs.String(), f) {
				out = append(out, uint8(i))
				found = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("%w: unknown command set %q", ErrBadFilter, f)
		}
	}
	return out, nil
}

// ParseThreads parses a comma-separated list of thread IDs, decimal or
// 0x-prefixed hexadecimal.
func ParseThreads(s string) ([]uint64, error) {
	var out []uint64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.ParseUint(f, 0, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: bad thread ID %q", ErrBadFilter, f)
		}
		out = append(out, n)
	}
	return out, nil
}

// Match reports whether f selects r.
func (f *Filter) Match(r *Record) bool {
	if len(f.Sessions) > 0 && !slices.Contains(f.Sessions, r.Session) {
		return false
	}
	if r.Type != TypePacket {
		// Session and drop records pass unless a packet-only filter is on.
		return len(f.Sets) == 0 && len(f.Names) == 0 && len(f.Threads) == 0 && len(f.Served) == 0 &&
			f.inTime(r) && r.Type != TypeHeader
	}
	switch f.View {
	case "", ViewDebugger:
		if !r.InDebuggerView() {
			return false
		}
	case ViewWire:
		if !r.InWireView() {
			return false
		}
	}
	if len(f.Sets) > 0 && !slices.Contains(f.Sets, r.Set) {
		return false
	}
	if len(f.Names) > 0 {
		ok := false
		for _, n := range f.Names {
			if strings.Contains(strings.ToLower(r.Name), strings.ToLower(n)) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	if len(f.Threads) > 0 && (r.Thread == nil || !slices.Contains(f.Threads, uint64(*r.Thread))) {
		return false
	}
	if len(f.Served) > 0 && !slices.Contains(f.Served, r.Served) {
		return false
	}
	return f.inTime(r)
}

func (f *Filter) inTime(r *Record) bool {
	t := time.Duration(r.T)
	return t >= f.Since && (f.Until == 0 || t <= f.Until)
}

// Apply returns the records f selects.
func (f *Filter) Apply(recs []Record) []Record {
	var out []Record
	for i := range recs {
		if f.Match(&recs[i]) {
			out = append(out, recs[i])
		}
	}
	return out
}

// FormatOptions control FormatRecord.
type FormatOptions struct {
	// Hex appends a hex dump of the kept bytes.
	Hex bool
}

// fmtT renders a record's time, seconds since the journal's start.
func fmtT(ns int64) string {
	return fmt.Sprintf("%13.6fs", float64(ns)/1e9)
}

// ShowLegend explains the columns of FormatRecord's packet lines.
const ShowLegend = `# seconds since the journal's start, session, direction (dbg: the debugger,
# vm: the VM, px: jdwpaccel), kind, packet ID, command, length, how it was served:
# forwarded (both saw it), cache_hit or belay (the proxy answered the
# debugger), write_behind (a state-setting command the proxy answered at once
# and sent on as its own, px→vm synthetic), synthetic (the proxy's own traffic,
# which the debugger never saw); then the reply's latency (and the VM's round
# trip), thread, events (the kinds in an event packet).`

// FormatRecord renders one record as a human-readable line (and, with
// Hex, a dump).
func FormatRecord(r *Record, o FormatOptions) string {
	var b strings.Builder
	b.WriteString(fmtT(r.T))
	fmt.Fprintf(&b, " s%-3d ", r.Session)
	switch r.Type {
	case TypeHeader:
		return fmt.Sprintf("journal schema %d, jdwpaccel %s, started %s", r.Schema, r.Version, r.Start)
	case TypeSessionStart:
		if r.Continued {
			b.WriteString("session continues from the previous file")
		} else {
			fmt.Fprintf(&b, "session start: debugger %s, VM %s", r.Debugger, r.VM)
			if r.User != "" {
				fmt.Fprintf(&b, ", user %s", r.User)
			}
		}
		return b.String()
	case TypeSessionEnd:
		fmt.Fprintf(&b, "session end: %d packets", r.PacketsLogged)
		if r.Unanswered > 0 {
			fmt.Fprintf(&b, ", %d commands without a reply", r.Unanswered)
		}
		if r.Err != "" {
			fmt.Fprintf(&b, ", error: %s", r.Err)
		}
		return b.String()
	case TypeIDSizes:
		if z := r.IDSizes; z != nil {
			fmt.Fprintf(&b, "ID sizes: object %d, reference type %d, method %d, field %d, frame %d", z.ObjectID, z.ReferenceTypeID, z.MethodID, z.FieldID, z.FrameID)
		}
		return b.String()
	case TypeDropped:
		fmt.Fprintf(&b, "!!! JOURNAL DROPPED %d RECORDS HERE (%d in all)", r.DroppedCount, r.DroppedTotal)
		return b.String()
	case TypeClient:
		fmt.Fprintf(&b, "client %d of %s (%s, %s) ", r.Client, r.VM, r.Debugger, r.Role)
		if r.Left != "" {
			fmt.Fprintf(&b, "left: %s", r.Left)
		} else {
			b.WriteString("attached")
		}
		return b.String()
	case TypePacket:
	default:
		fmt.Fprintf(&b, "record of unknown type %q", r.Type)
		return b.String()
	}
	// The proxy's own traffic (the wire view only) is between it and the VM.
	peer := "dbg"
	if r.View == ViewWire {
		peer = "px"
	}
	arrow := peer + "→vm"
	if r.Dir == DirToDebugger {
		arrow = "vm→" + peer
	}
	name := r.Name
	if name == "" {
		name = fmt.Sprintf("%d/%d", r.Set, r.Cmd)
	}
	if r.Chunk != "" {
		name += " " + r.Chunk
	}
	fmt.Fprintf(&b, "%s %-14s id=%-10d %-44s len=%-7d %s", arrow, r.Kind, r.ID, name, r.Len, r.Served)
	if r.Kind == KindReply || r.Kind == KindDebuggerReply {
		if r.Error != 0 {
			fmt.Fprintf(&b, " ERROR %s(%d)", r.ErrorName, r.Error)
		}
		if r.LatencyNs > 0 {
			fmt.Fprintf(&b, " %s", dur(time.Duration(r.LatencyNs)))
		}
		if r.VMLatencyNs > 0 {
			fmt.Fprintf(&b, " (vm %s)", dur(time.Duration(r.VMLatencyNs)))
		}
	}
	if r.WireID != nil {
		fmt.Fprintf(&b, " wire_id=%d", *r.WireID)
	}
	if r.Thread != nil {
		fmt.Fprintf(&b, " thread=0x%x", uint64(*r.Thread))
	}
	if len(r.Events) > 0 {
		fmt.Fprintf(&b, " events=%s", strings.Join(r.Events, ","))
	}
	if o.Hex && len(r.Bytes) > 0 {
		b.WriteByte('\n')
		b.WriteString(strings.TrimRight(hex.Dump(r.Bytes), "\n"))
		if r.Truncated {
			fmt.Fprintf(&b, "\n… %d more bytes not kept", r.Len-len(r.Bytes))
		}
	}
	return b.String()
}
