package feed

import (
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// DefaultHistory is how many events each VM's history keeps when
// Config.Size is 0.
const DefaultHistory = 4096

// MaxSignature is how many bytes of a class signature an event keeps; a
// longer one is cut there (Event.SignatureCut).
const MaxSignature = 512

// record is one event in a history's ring. The ring owns each record and
// its sig buffer, which the next event in the slot reuses; the name
// strings are shared with Names, which never modifies them.
type record struct {
	id      uint64
	at      time.Time
	kind    Kind
	session uint64
	ev      jdwp.EventKind
	policy  jdwp.SuspendPolicy
	req     int32
	thread  uint64
	hasLoc  bool
	loc     jdwp.Location
	tag     jdwp.TypeTag
	typeID  uint64
	status  jdwp.ClassStatus
	sig     []byte
	sigCut  bool
	names   Resolved
	ddmID   uint32
	ddmName string
	note    string
}

// history is one VM's events: a ring of at most cap(recs) records, the
// oldest at start. Guarded by the Feed's mu.
type history struct {
	recs  []record // grows to its capacity, then wraps
	start int      // index of the oldest record once full
	// base is the ID before the first this history gave; next the ID of
	// the next event.
	base, next uint64
	subs       []*Sub
}

func newHistory(size int, now time.Time) *history {
	base := uint64(max(now.UnixMicro(), 0))
	return &history{recs: make([]record, 0, size), base: base, next: base + 1}
}

// add returns the record for the next event, with its ID and time set and
// the rest as the slot's previous event left it (the caller sets every
// field it uses through reset).
func (h *history) add(at time.Time) *record {
	var r *record
	if len(h.recs) < cap(h.recs) {
		h.recs = h.recs[:len(h.recs)+1]
		r = &h.recs[len(h.recs)-1]
	} else {
		r = &h.recs[h.start]
		h.start = (h.start + 1) % len(h.recs)
	}
	sig := r.sig[:0]
	*r = record{id: h.next, at: at, sig: sig}
	h.next++
	return r
}

// wake tells every subscriber that events were added.
func (h *history) wake() {
	for _, s := range h.subs {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// oldest is the ID of the oldest event kept (next when none is).
func (h *history) oldest() uint64 {
	if len(h.recs) == 0 {
		return h.next
	}
	return h.recs[h.start].id
}

// Reset says that a reader's cursor did not lead to the next event kept:
// the events it returns start from the oldest kept instead.
type Reset struct {
	// Reason is ReasonLost, ReasonUnknown or ReasonAhead.
	Reason string `json:"reason"`
	// After is the reader's cursor; Oldest the ID of the oldest event kept
	// (the next event's, when none is).
	After  uint64 `json:"after"`
	Oldest uint64 `json:"oldest"`
	// Lost is how many events after the cursor are no longer kept (with
	// ReasonLost).
	Lost uint64 `json:"lost,omitempty"`
}

// Reasons of a Reset.
const (
	// ReasonLost: the events after the cursor were dropped from the
	// history (it holds the newest Size).
	ReasonLost = "lost"
	// ReasonUnknown: the cursor is older than this history (an earlier
	// run of the proxy, or another VM's).
	ReasonUnknown = "unknown_cursor"
	// ReasonAhead: the cursor is beyond the newest event (another VM's, or
	// a later run's).
	ReasonAhead = "cursor_ahead"
)

// read appends to buf at most limit events after the cursor after (0:
// from the oldest kept), and says whether the cursor was reset.
func (h *history) read(after uint64, buf []Event, limit int) ([]Event, *Reset) {
	oldest := h.oldest()
	var reset *Reset
	switch {
	case after == 0:
	case after >= h.next:
		reset = &Reset{Reason: ReasonAhead, After: after, Oldest: oldest}
	case after < h.base:
		reset = &Reset{Reason: ReasonUnknown, After: after, Oldest: oldest}
	case after+1 < oldest:
		reset = &Reset{Reason: ReasonLost, After: after, Oldest: oldest, Lost: oldest - after - 1}
	}
	first := oldest
	if reset == nil && after >= oldest {
		first = after + 1
	}
	for id := first; id < h.next && limit > 0; id++ {
		buf = append(buf, h.recs[(h.start+int(id-oldest))%len(h.recs)].event())
		limit--
	}
	return buf, reset
}
