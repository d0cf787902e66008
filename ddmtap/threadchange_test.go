package ddmtap

import (
	"testing"

	"github.com/jdwpaccel/jdwpaccel/ddm"
	"github.com/rs/zerolog"
)

// TestOnThreadChange: the monitor tells of a thread created (THCR of a
// thread it did not know), renamed (THNM, or a THCR with another name)
// and dead (THDE, or not re-announced on a new connection), and of
// nothing else; a THNM or THDE of an unknown thread is no change.
func TestOnThreadChange(t *testing.T) {
	m := NewMonitor("vm", zerolog.Nop(), nil)
	var got []ThreadChange
	m.OnThreadChange(func(c ThreadChange) { got = append(got, c) })
	for _, p := range []ddm.Payload{
		ddm.ThreadName{T: ddm.TypeTHCR, ID: 1, Name: "main"},
		ddm.ThreadName{T: ddm.TypeTHCR, ID: 1, Name: "main"}, // re-announced: no change
		ddm.ThreadName{T: ddm.TypeTHNM, ID: 1, Name: "ui"},
		ddm.ThreadName{T: ddm.TypeTHNM, ID: 7, Name: "ghost"},
		ddm.ThreadName{T: ddm.TypeTHCR, ID: 2, Name: "worker"},
		ddm.ThreadName{T: ddm.TypeTHCR, ID: 3, Name: "pool"},
		ddm.U4{T: ddm.TypeTHDE, V: 2},
		ddm.U4{T: ddm.TypeTHDE, V: 8},
		ddm.U4{T: ddm.TypeHPST, V: 1},
	} {
		m.apply(p)
	}
	// A new connection re-announces thread 1 alone: 3 died meanwhile.
	m.mu.Lock()
	m.epoch++
	epoch := m.epoch
	m.mu.Unlock()
	m.apply(ddm.ThreadName{T: ddm.TypeTHCR, ID: 1, Name: "ui"})
	m.sweepThreads(epoch)
	want := []ThreadChange{
		{Kind: ThreadCreated, ID: 1, Name: "main"},
		{Kind: ThreadRenamed, ID: 1, Name: "ui"},
		{Kind: ThreadCreated, ID: 2, Name: "worker"},
		{Kind: ThreadCreated, ID: 3, Name: "pool"},
		{Kind: ThreadDied, ID: 2, Name: "worker"},
		{Kind: ThreadDied, ID: 3, Name: "pool"},
	}
	if len(got) != len(want) {
		t.Fatalf("changes %+v, want %+v", got, want)
	}
	for i := range want {
		g := got[i]
		if g.Time.IsZero() {
			t.Errorf("change %d has no time", i)
		}
		g.Time = want[i].Time
		if g != want[i] {
			t.Errorf("change %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	m.OnThreadChange(nil)
	m.apply(ddm.ThreadName{T: ddm.TypeTHCR, ID: 4, Name: "late"})
	if len(got) != len(want) {
		t.Fatal("told after OnThreadChange(nil)")
	}
}
