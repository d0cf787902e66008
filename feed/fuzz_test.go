package feed

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
)

// FuzzParseCursor: a cursor parses to the decimal number it is, or fails;
// it never panics.
func FuzzParseCursor(f *testing.F) {
	for _, s := range []string{"", "0", "17", "now", "18446744073709551615", "18446744073709551616", "-1", " 5 ", "0x1"} {
		f.Add(s, "")
		f.Add("", s)
	}
	f.Fuzz(func(t *testing.T, header, after string) {
		c, now, err := ParseCursor(header, after)
		if err != nil || now {
			if now && c != 0 {
				t.Fatalf("now with cursor %d", c)
			}
			return
		}
		s := strings.TrimSpace(header)
		if s == "" {
			s = strings.TrimSpace(after)
		}
		if s == "" {
			s = "0"
		}
		if v, perr := strconv.ParseUint(s, 10, 64); perr != nil || v != c {
			t.Fatalf("ParseCursor(%q, %q) = %d; ParseUint: %d, %v", header, after, c, v, perr)
		}
	})
}

// FuzzObserve feeds event bodies of any bytes, before and after the ID
// sizes are known: the feed never panics, IDs stay in sequence, and the
// history never holds more than its size.
func FuzzObserve(f *testing.F) {
	c := jdwp.Composite{SuspendPolicy: jdwp.SuspendAll, Events: []jdwp.Event{
		{Kind: jdwp.EventBreakpoint, Thread: 1, Location: jdwp.Location{TypeTag: jdwp.TypeTagClass, Class: 2, Method: 3, Index: 4}},
		{Kind: jdwp.EventClassPrepare, Thread: 1, RefTypeTag: jdwp.TypeTagClass, TypeID: 2, Signature: []byte("LA;")},
	}}
	f.Add(jdwptest.AppendComposite(nil, sizes8, &c), true)
	f.Add(jdwptest.AppendComposite(nil, sizes8, &c), false)
	f.Add([]byte{2, 0, 0, 0, 1, 90}, false)
	f.Fuzz(func(t *testing.T, body []byte, sized bool) {
		fd := New(Config{Size: 8, VMOf: func(*relay.Session) string { return "vm" }})
		s := &relay.Session{ID: 1}
		if sized {
			s.SetIDSizes(sizes8)
		}
		fd.SessionStart(s)
		fr := &relay.Frame{Kind: relay.KindEvent, Packet: jdwp.AppendCommand(nil, 1, jdwp.CmdEventComposite, body), Time: time.Now()}
		fd.Observe(s, fr)
		fd.Observe(s, fr)
		fd.SessionEnd(s, nil)
		evs, reset := fd.Read("vm", 0, nil, 100)
		if reset != nil || len(evs) > 8 || len(evs) < 2 {
			t.Fatalf("%d events, reset %+v", len(evs), reset)
		}
		for i := 1; i < len(evs); i++ {
			if evs[i].ID != evs[i-1].ID+1 {
				t.Fatalf("IDs %d then %d", evs[i-1].ID, evs[i].ID)
			}
		}
		if evs[len(evs)-1].Kind != KindSessionEnd {
			t.Fatalf("last %v", evs[len(evs)-1].Kind)
		}
	})
}
