package push

import (
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/rs/zerolog"
)

// TestFarTimerPanicEndsSession: a panic in the far end's hold timer,
// which runs on a goroutine of its own, is recovered in the relay's turn
// (relay.Session.Do), logged, and ends the session (split mode's hooks
// must not go on as pass-through) instead of the process.
func TestFarTimerPanicEndsSession(t *testing.T) {
	vm := jdwptest.StartVM(t, jdwptest.Script{Replies: vmScript()})
	logs := &jdwptest.Buffer{}
	fars := make(chan *far, 1)
	hooks := FarHooks(newSpec(), Config{MaxHold: time.Minute})
	addr := serve(t, relay.Config{DialVM: relay.DialTCP(vm.Addr()), Logger: zerolog.New(logs).Level(zerolog.DebugLevel), NewHooks: func(rs *relay.Session) relay.Hooks {
		h := hooks(rs)
		fars <- h.Interceptors[0].(*far)
		return h
	}})
	d, err := jdwptest.Attach(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Call(jdwp.CmdIDSizes, nil); err != nil {
		t.Fatal(err)
	}
	f := <-fars
	f.mu.Lock()
	// A hold of a stop the speculator never reports, so that nothing but
	// the timer can release it (its Idle after the attach prefetch's
	// replies flushed a hold of stop 0 first, now and then).
	f.stop = ^uint64(0)
	f.holding = true
	f.holdSeq++
	f.cfg.Counters = nil // expire counts the expiry first: a nil pointer
	f.startTimer(0)
	f.mu.Unlock()
	if p, err := d.Next(); err == nil {
		t.Fatalf("debugger got %v; want its connection closed", p)
	}
	if s := logs.String(); !strings.Contains(s, `"hook":"do"`) || !strings.Contains(s, "nil pointer") {
		t.Errorf("no log line naming the recovered panic in:\n%s", s)
	}
}

// TestFarHoldFollowsLinkRTT: a stop event is held MaxHold, or up to the
// near end's reported link round trip when longer (bounded).
func TestFarHoldFollowsLinkRTT(t *testing.T) {
	f := &far{cfg: Config{MaxHold: 50 * time.Millisecond}}
	for _, tc := range []struct{ rtt, want time.Duration }{
		{0, 50 * time.Millisecond},
		{10 * time.Millisecond, 50 * time.Millisecond},
		{120 * time.Millisecond, 120 * time.Millisecond},
		{time.Second, maxLinkHold},
	} {
		f.rtt = tc.rtt
		if got := f.holdFor(); got != tc.want {
			t.Errorf("link RTT %v: hold %v, want %v", tc.rtt, got, tc.want)
		}
	}
}
