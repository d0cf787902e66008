package feed

import (
	"errors"
	"strconv"
	"strings"
)

// maxCursorLen bounds the text of a cursor: a uint64 has at most 20
// digits.
const maxCursorLen = 20

// ErrBadCursor is a cursor that is not an event ID.
var ErrBadCursor = errors.New("feed: a cursor is an event ID (decimal digits), 0, or \"now\"")

// ParseCursor reads a reader's cursor from an HTTP request: the
// Last-Event-ID header an EventSource sends when it reconnects, else the
// after query parameter (the header is the newer of the two when both are
// present: the page's URL keeps its first after). Both absent or empty is
// cursor 0 (from the oldest event kept). after may be "now": only events
// from now on (now is true, cursor 0).
func ParseCursor(lastEventID, after string) (cursor uint64, now bool, err error) {
	s := strings.TrimSpace(lastEventID)
	if s == "" {
		s = strings.TrimSpace(after)
		if s == "now" {
			return 0, true, nil
		}
	}
	if s == "" {
		return 0, false, nil
	}
	if len(s) > maxCursorLen {
		return 0, false, ErrBadCursor
	}
	// In base 10, ParseUint takes decimal digits alone: no sign, prefix or
	// underscore.
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, false, ErrBadCursor
	}
	return v, false, nil
}

// Newest is the ID of vm's newest event (the ID before the next one when
// none is kept): the cursor that reads from now on.
func (f *Feed) Newest(vm string) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.historyLocked(vm).next - 1
}
