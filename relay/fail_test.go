package relay_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
)

// failer answers the debugger's first command itself and, on the VM's
// reply to the second, ends the session with Fail.
type failer struct{ n int }

func (fl *failer) FromDebugger(_ *relay.Session, f *relay.Frame) relay.Action {
	if f.Kind != relay.KindCommand {
		return relay.Forward
	}
	fl.n++
	if fl.n == 1 {
		f.Answer = jdwp.AppendReply(nil, f.ID, 0, nil)
		f.Origin = relay.WriteBehind
		return relay.Consume
	}
	return relay.Forward
}

func (fl *failer) FromVM(s *relay.Session, f *relay.Frame) relay.Action {
	if f.Kind == relay.KindReply {
		s.Fail(relay.ReasonWriteBehindFailed, errors.New("the VM disagreed"))
	}
	return relay.Forward
}

func (fl *failer) Close(*relay.Session) {}

// TestFailEndsSession: after a hook's Fail, both connections are closed,
// the reason is logged at error and counted.
func TestFailEndsSession(t *testing.T) {
	r := newRig(t, func(*relay.Session) relay.Hooks { return relay.Hooks{Interceptors: []relay.Interceptor{&failer{}}} })
	dbg, vm := r.connect()
	dbg.Write(jdwp.AppendCommand(nil, 1, cmdVersion, nil))
	dr := jdwp.NewReader(dbg, 0)
	if p, err := dr.Next(); err != nil || p.ID() != 1 || !p.IsReply() {
		t.Fatalf("answer: %v %v", p, err)
	}
	dbg.Write(jdwp.AppendCommand(nil, 2, cmdVersion, nil))
	p, err := jdwp.NewReader(vm, 0).Next()
	if err != nil || p.ID() != 2 {
		t.Fatalf("VM got %v %v", p, err)
	}
	vm.Write(jdwp.AppendReply(nil, 2, 0, nil))
	expectClosed(t, dbg)
	expectClosed(t, vm)
	jdwptest.Eventually(t, "the write-behind failure counted", func() (bool, string) {
		n := counter(t, r.reg, "jdwpaccel_protocol_errors_total", string(relay.ReasonWriteBehindFailed))
		return n == 1, fmt.Sprint(n)
	})
	if logs := r.logs.String(); !strings.Contains(logs, `"reason":"write_behind_failed"`) || !strings.Contains(logs, "the VM disagreed") {
		t.Errorf("logs lack the reason and cause:\n%s", logs)
	}
}
