package journal

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Report is what Check found in a journal.
type Report struct {
	Sessions   int
	Commands   int // debugger commands in the debugger view
	Replies    int // replies the debugger received
	Synthetic  int // the proxy's own commands
	Unanswered int // debugger commands still waiting at their session's end
	Dropped    uint64
	// Violations are the broken invariants, in journal order.
	Violations []string
}

// Err is nil when the journal is coherent, and otherwise lists (up to ten
// of) the violations.
func (r *Report) Err() error {
	if len(r.Violations) == 0 {
		return nil
	}
	v := r.Violations
	more := ""
	if len(v) > 10 {
		more = fmt.Sprintf("\n  … and %d more", len(v)-10)
		v = v[:10]
	}
	return fmt.Errorf("journal: %d invariant violations:\n  %s%s", len(r.Violations), strings.Join(v, "\n  "), more)
}

type checkPend struct {
	served string
	set    uint8
	cmd    uint8
}

// Check verifies a journal's invariants:
//   - every command the debugger sent has exactly one reply, with its ID,
//     after it, served the same way (forwarded, cache hit or belay), and
//     the debugger never receives a reply it did not ask for;
//   - no synthetic packet is in the debugger view, and every packet
//     forwarded or served is;
//   - every synthetic command has at most one reply;
//   - nothing was dropped, and no command is left without a reply when its
//     session ended (both counted, and reported as violations).
func Check(recs []Record) *Report {
	rep := &Report{}
	type sess struct {
		dbg, wire map[uint32]checkPend
		ended     bool
	}
	sessions := map[uint64]*sess{}
	get := func(id uint64) *sess {
		s, ok := sessions[id]
		if !ok {
			s = &sess{dbg: map[uint32]checkPend{}, wire: map[uint32]checkPend{}}
			sessions[id] = s
			rep.Sessions++
		}
		return s
	}
	bad := func(i int, r *Record, format string, args ...any) {
		rep.Violations = append(rep.Violations, fmt.Sprintf("record %d (session %d, t=%d, id %d): %s", i, r.Session, r.T, r.ID, fmt.Sprintf(format, args...)))
	}
	for i := range recs {
		r := &recs[i]
		switch r.Type {
		case TypeDropped:
			rep.Dropped += r.DroppedCount
			bad(i, r, "journal dropped %d records", r.DroppedCount)
			continue
		case TypeSessionStart:
			get(r.Session)
			continue
		case TypeClient:
			continue
		case TypeSessionEnd:
			s := get(r.Session)
			s.ended = true
			for id, p := range s.dbg {
				rep.Unanswered++
				bad(i, r, "debugger command id %d (%d/%d) has no reply at session end", id, p.set, p.cmd)
			}
			clear(s.dbg)
			continue
		case TypePacket:
		default:
			continue
		}
		s := get(r.Session)
		switch {
		case r.Served == ServedSynthetic && r.View != ViewWire:
			bad(i, r, "synthetic packet in the %s view", r.View)
		case r.Served == ServedForwarded && r.View != ViewBoth:
			bad(i, r, "forwarded packet only in the %s view", r.View)
		case (r.Served == ServedCacheHit || r.Served == ServedBelay || r.Served == ServedWriteBehind) && r.View != ViewDebugger:
			bad(i, r, "%s packet in the %s view", r.Served, r.View)
		}
		switch {
		case r.IsCommandFromDebugger():
			rep.Commands++
			if _, dup := s.dbg[r.ID]; dup {
				bad(i, r, "debugger command reuses id %d while it is outstanding", r.ID)
			}
			s.dbg[r.ID] = checkPend{served: r.Served, set: r.Set, cmd: r.Cmd}
		case r.IsReplyToDebugger():
			rep.Replies++
			p, ok := s.dbg[r.ID]
			if !ok {
				bad(i, r, "the debugger receives a reply (%s) to no command of its own", r.Served)
				break
			}
			delete(s.dbg, r.ID)
			if p.served != r.Served {
				bad(i, r, "command served %s but its reply %s", p.served, r.Served)
			}
			if r.Set != 0 && (r.Set != p.set || r.Cmd != p.cmd) {
				bad(i, r, "reply names %d/%d, its command was %d/%d", r.Set, r.Cmd, p.set, p.cmd)
			}
		case r.View == ViewWire && r.Kind == KindCommand && r.Dir == DirToVM:
			rep.Synthetic++
			s.wire[r.ID] = checkPend{served: r.Served, set: r.Set, cmd: r.Cmd}
		case r.View == ViewWire && r.Kind == KindReply:
			if _, ok := s.wire[r.ID]; !ok {
				bad(i, r, "synthetic reply to no synthetic command (or a second reply)")
			}
			delete(s.wire, r.ID)
		}
	}
	return rep
}

// DebuggerView returns the packet records of the debugger's conversation,
// in order.
func DebuggerView(recs []Record) []Record {
	var out []Record
	for i := range recs {
		if recs[i].InDebuggerView() {
			out = append(out, recs[i])
		}
	}
	return out
}

// ErrConversationsDiffer is returned by SameConversation.
var ErrConversationsDiffer = errors.New("journal: debugger conversations differ")

// SameConversation compares the debugger views of two journals modulo
// timing and how packets were served: direction, kind, ID, command, error,
// length, decoded thread and events, and the bytes where both journals
// kept them. Use it to show that a proxied session looks to the debugger
// exactly like a direct one.
func SameConversation(a, b []Record) error {
	da, db := DebuggerView(a), DebuggerView(b)
	for i := 0; i < min(len(da), len(db)); i++ {
		x, y := &da[i], &db[i]
		same := x.Session == y.Session && x.Dir == y.Dir && x.Kind == y.Kind && x.ID == y.ID &&
			x.Set == y.Set && x.Cmd == y.Cmd && x.Error == y.Error && x.Len == y.Len &&
			slices.Equal(x.Events, y.Events) && equalThread(x.Thread, y.Thread)
		if same && x.Bytes != nil && y.Bytes != nil {
			n := min(len(x.Bytes), len(y.Bytes))
			same = bytes.Equal(x.Bytes[:n], y.Bytes[:n])
		}
		if !same {
			return fmt.Errorf("%w at packet %d:\n  %v\n  %v", ErrConversationsDiffer, i, x, y)
		}
	}
	if len(da) != len(db) {
		return fmt.Errorf("%w: %d packets against %d", ErrConversationsDiffer, len(da), len(db))
	}
	return nil
}

func equalThread(a, b *Uint64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
