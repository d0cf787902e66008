package relay_test

import (
	"bytes"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
)

// TestEndWithUnreadBytesIsEOF: when the VM leaves while the proxy has not
// read everything the debugger sent (here it stopped reading at the
// outstanding bound), the debugger still gets every packet queued for it
// and then an orderly end of stream. Closing a socket with unread bytes
// would reset the connection instead, and a reset may destroy the last
// packets (here the VM_DEATH event) before the debugger reads them.
func TestEndWithUnreadBytesIsEOF(t *testing.T) {
	ends, ended := sessionEnds()
	r := newRig(t, nil, func(c *relay.Config) { c.MaxOutstanding = 2 }, ended)
	dbg, vm := r.connect()
	// Far more than the proxy reads before it stops at the bound.
	var burst []byte
	for id := range uint32(2000) {
		burst = jdwp.AppendCommand(burst, id+1, cmdVersion, make([]byte, 200))
	}
	go dbg.Write(burst)
	vr := jdwp.NewReader(vm, 0)
	for range 2 {
		if _, err := vr.Next(); err != nil {
			t.Fatal(err)
		}
	}
	vmDeath := jdwp.AppendCommand(nil, 9, jdwp.CmdComposite, []byte{0, 0, 0, 0, 1, byte(jdwp.EventVMDeath), 0, 0, 0, 0})
	vm.Write(vmDeath)
	vm.Close()

	dbg.SetReadDeadline(time.Now().Add(10 * time.Second))
	dr := jdwp.NewReader(dbg, 0)
	p, err := dr.Next()
	if err != nil || p.Cmd() != jdwp.CmdComposite {
		t.Fatalf("debugger got %v, %v; want the VM_DEATH event", p, err)
	}
	if _, err := dr.Next(); err != io.EOF {
		t.Fatalf("after the event the debugger got %v; want an orderly end of stream (EOF), not a reset", err)
	}
	closedBy(t, r, ends, "vm")
}

// TestClosedByNamesThePeer: the log line ending a session says whose
// connection ended it: the debugger's, the VM's, or the proxy's shutdown.
func TestClosedByNamesThePeer(t *testing.T) {
	ends, ended := sessionEnds()
	r := newRig(t, nil, ended)
	dbg, _ := r.connect()
	dbg.Close()
	closedBy(t, r, ends, "debugger")
	_, vm := r.connect()
	vm.Close()
	closedBy(t, r, ends, "vm")
	r.connect()
	r.cancel()
	closedBy(t, r, ends, "proxy")
}

// sessionEnds returns a rig option that adds an observer to each session
// and the channel it signals when a session has ended (after the session's
// closing log line).
func sessionEnds() (<-chan struct{}, func(*relay.Config)) {
	ends := make(chan struct{}, 4)
	return ends, func(c *relay.Config) {
		c.NewHooks = relay.ChainHooks(c.NewHooks, func(*relay.Session) relay.Hooks {
			return relay.Hooks{Observers: []relay.Observer{endObserver(ends)}}
		})
	}
}

type endObserver chan struct{}

func (endObserver) Observe(*relay.Session, *relay.Frame) {}
func (endObserver) SessionStart(*relay.Session)          {}
func (e endObserver) SessionEnd(*relay.Session, error)   { e <- struct{}{} }

// closedBy waits for the next session's end and checks that its log says
// the peer ended it.
func closedBy(t *testing.T, r *rig, ends <-chan struct{}, peer string) {
	t.Helper()
	select {
	case <-ends:
	case <-time.After(jdwptest.Timeout):
		t.Fatalf("no session ended within %v", jdwptest.Timeout)
	}
	if want := `"closed_by":"` + peer + `"`; !strings.Contains(r.logs.String(), want) {
		t.Errorf("no %s in the logs:\n%s", want, r.logs)
	}
}

// TestBigPacketsInOrder: packets above 1 MiB, which the relay queues
// without copying them, reach each peer intact and in order among small
// ones, in both directions at once.
func TestBigPacketsInOrder(t *testing.T) {
	r := newRig(t, nil, func(c *relay.Config) { c.MaxPacketSize = 8 << 20 })
	dbg, vm := r.connect()
	stream := func(fromVM bool) []byte {
		var b []byte
		for i, n := range []int{10, 2 << 20, 20, 30, 3 << 20, 5 << 20, 40} {
			body := bytes.Repeat([]byte{byte(i + 1)}, n)
			if fromVM {
				b = jdwp.AppendCommand(b, uint32(100+i), jdwp.CmdComposite, body)
			} else {
				b = jdwp.AppendCommand(b, uint32(i+1), cmdVersion, body)
			}
		}
		return b
	}
	toVM, toDbg := stream(false), stream(true)
	go dbg.Write(toVM)
	go vm.Write(toDbg)
	for _, c := range []struct {
		who  string
		conn net.Conn
		want []byte
	}{{"VM", vm, toVM}, {"debugger", dbg, toDbg}} {
		c.conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		got := make([]byte, len(c.want))
		if _, err := io.ReadFull(c.conn, got); err != nil {
			t.Fatalf("%s: %v", c.who, err)
		}
		if !bytes.Equal(got, c.want) {
			t.Fatalf("%s got different bytes", c.who)
		}
	}
}
