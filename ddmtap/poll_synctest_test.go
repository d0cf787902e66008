package ddmtap

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jdwpaccel/jdwpaccel/ddm"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/retag"
)

// pollRig is a link to a scripted VM inside a synctest bubble: what the
// proxy sends is recorded with the bubble's (fake) time, and the test
// answers it through fromVM as the VM would.
type pollRig struct {
	t *testing.T
	l *link

	mu   sync.Mutex // guards sent and at
	sent []jdwp.Packet
	at   []time.Duration // since start, per sent packet
}

const (
	testPoll    = 4 * time.Second
	testTimeout = 5 * time.Second
)

// newPollRig starts a link to a VM known to speak DDM; it sends HELO at
// once. The link is closed at the end of the bubble.
func newPollRig(t *testing.T) *pollRig {
	mon := NewMonitor("vm", nopLog, nil)
	r := &pollRig{t: t, l: newLink(mon, nopLog, Options{PollInterval: testPoll, ReplyTimeout: testTimeout}, retag.NewTable(), true)}
	start := time.Now()
	r.l.setSend(func(p jdwp.Packet) error {
		r.mu.Lock()
		r.sent = append(r.sent, p.Clone())
		r.at = append(r.at, time.Since(start))
		r.mu.Unlock()
		return nil
	})
	r.l.begin()
	t.Cleanup(r.l.close)
	return r
}

// requests are the chunk types the proxy sent, with when.
func (r *pollRig) requests(t ddm.Type) []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []time.Duration
	for i, p := range r.sent {
		if firstType(p) == t {
			out = append(out, r.at[i])
		}
	}
	return out
}

// answer replies to every request of type t sent so far (and not
// answered yet) with ps.
func (r *pollRig) answer(t ddm.Type, answered map[uint32]bool, ps ...ddm.Payload) {
	r.mu.Lock()
	var ids []uint32
	for _, p := range r.sent {
		if firstType(p) == t && !answered[p.ID()] {
			ids = append(ids, p.ID())
			answered[p.ID()] = true
		}
	}
	r.mu.Unlock()
	for _, id := range ids {
		if ours, _ := r.l.fromVM(ddm.AppendReply(nil, id, ps...)); !ours {
			r.t.Fatalf("the reply to %v %#x was not taken as the proxy's", t, id)
		}
	}
}

func firstType(p jdwp.Packet) ddm.Type {
	it := ddm.NewChunks(p.Body())
	c, _ := it.Next()
	return c.Type
}

var pollHello = ddm.Hello{ClientVersion: 1, PID: 7, VMIdent: "V", AppName: "app"}

// TestPollTHSTEveryInterval: once the VM has answered HELO, THST goes out
// at once and then again every PollInterval (the link's ticker, a quarter
// of the shorter of PollInterval and ReplyTimeout, may add up to one tick),
// while the VM keeps answering it. Time is the bubble's: no real waiting.
func TestPollTHSTEveryInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newPollRig(t)
		answered := map[uint32]bool{}
		synctest.Wait()
		if got := r.requests(ddm.TypeHELO); len(got) != 1 || got[0] != 0 {
			t.Fatalf("HELO sent at %v, want once at once", got)
		}
		if got := r.requests(ddm.TypeTHST); len(got) != 0 {
			t.Fatalf("THST before HELO was answered: %v", got)
		}
		r.answer(ddm.TypeHELO, answered, pollHello)
		status := ddm.ThreadStatus{Threads: []ddm.ThreadStat{{ID: 1, Status: 1, TID: 42}}}
		const polls = 5
		for range polls * 5 { // a second at a time, for polls×5 s
			r.answer(ddm.TypeTHST, answered, status)
			time.Sleep(time.Second)
			synctest.Wait()
		}
		at := r.requests(ddm.TypeTHST)
		if len(at) < polls {
			t.Fatalf("THST sent at %v, want at least %d times in %d s", at, polls, polls*5)
		}
		if at[0] != 0 {
			t.Errorf("first THST at %v, want at once after HELO's reply", at[0])
		}
		tick := min(testPoll, testTimeout) / 4
		for i := 1; i < len(at); i++ {
			if gap := at[i] - at[i-1]; gap < testPoll || gap > testPoll+tick {
				t.Errorf("THST %d came %v after the previous one, want %v to %v", i, gap, testPoll, testPoll+tick)
			}
		}
		if s := r.l.mon.supportOf(FeatThreadStatus); s != Supported {
			t.Errorf("thread status support = %v, want supported", s)
		}
		if n := len(r.l.mon.Snapshot().Threads); n != 1 {
			t.Errorf("%d threads from THST, want 1", n)
		}
	})
}

// TestUnansweredTHSTStopsPolling: a VM that answers HELO but never THST
// has thread status marked unsupported once ReplyTimeout has passed (plus
// at most a tick), and is polled no more after that.
func TestUnansweredTHSTStopsPolling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newPollRig(t)
		synctest.Wait()
		r.answer(ddm.TypeHELO, map[uint32]bool{}, pollHello)
		synctest.Wait()
		if got := r.requests(ddm.TypeTHST); len(got) != 1 {
			t.Fatalf("THST sent at %v, want once after HELO's reply", got)
		}
		time.Sleep(testTimeout - time.Millisecond)
		synctest.Wait()
		if s := r.l.mon.supportOf(FeatThreadStatus); s == Unsupported {
			t.Fatalf("thread status unsupported before the reply timeout")
		}
		tick := min(testPoll, testTimeout) / 4
		time.Sleep(tick + 2*time.Millisecond)
		synctest.Wait()
		if s := r.l.mon.supportOf(FeatThreadStatus); s != Unsupported {
			t.Fatalf("thread status support = %v after the reply timeout, want unsupported", s)
		}
		before := r.requests(ddm.TypeTHST)
		time.Sleep(10 * testPoll)
		synctest.Wait()
		if got := r.requests(ddm.TypeTHST); len(got) != len(before) {
			t.Errorf("THST sent at %v, want no polls after it was marked unsupported (at %v)", got, before)
		}
	})
}

// TestHolderRedialBackoff: a holder of a VM known to speak DDM that cannot
// reach it dials at once, then again after 1 s, doubling the pause up to
// 30 s; it stops when its context ends. Time is the bubble's.
func TestHolderRedialBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var mu sync.Mutex
		var at []time.Duration
		h := NewHolder(HolderConfig{Addr: "vm", Logger: nopLog, KnownDDM: true, Dial: func(context.Context) (net.Conn, error) {
			mu.Lock()
			at = append(at, time.Since(start))
			mu.Unlock()
			return nil, errors.New("connection refused")
		}})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- h.Run(ctx) }()
		time.Sleep(100 * time.Second)
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		want := []time.Duration{0, 1, 3, 7, 15, 31, 61, 91}
		for i := range want {
			want[i] *= time.Second
		}
		if !slices.Equal(at, want) {
			t.Fatalf("dialled at %v, want %v", at, want)
		}
	})
}
