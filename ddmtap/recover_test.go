package ddmtap

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/retag"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"
)

// TestLinkLoopPanicRecovered: a panic in the link's own loop (here, a
// request in the connection's table whose data is not the link's), with
// no session owning the connection, is recovered, logged and counted; the
// loop ends and the link still closes.
func TestLinkLoopPanicRecovered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &jdwptest.Buffer{}
		reg := prometheus.NewRegistry()
		m := NewMetrics(reg)
		mon := NewMonitor("vm", zerolog.New(logs), m)
		l := newLink(mon, zerolog.New(logs), Options{PollInterval: testPoll, ReplyTimeout: testTimeout}, retag.NewTable(), false)
		l.setSend(func(jdwp.Packet) error { return nil })
		l.begin()
		c := retag.Command{Cmd: jdwp.CmdDDMChunk, Sent: time.Now(), Owner: retag.Synthetic}
		c.Data[slot] = "not a request of the link's"
		l.ids.Sent(l.newID(), c)
		<-l.done // the loop's next sweep panics; the loop ends
		l.close()
		if s := logs.String(); !strings.Contains(s, "panicked") || !strings.Contains(s, `"hook":"link loop"`) {
			t.Errorf("no log line naming the panic in:\n%s", s)
		}
		if n := testutil.ToFloat64(m.errors[ReasonPanic]); n != 1 {
			t.Errorf("panics counted = %v, want 1", n)
		}
	})
}
