package relay_test

import (
	"io"
	"strings"
	"testing"
	"time"

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
	r := newRig(t, nil, func(c *relay.Config) { c.MaxOutstanding = 2 })
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
	waitFor(t, func() bool { return strings.Contains(r.logs.String(), `"closed_by":"vm"`) })
}

// TestClosedByNamesThePeer: the log line ending a session says whose
// connection ended it: the debugger's, the VM's, or the proxy's shutdown.
func TestClosedByNamesThePeer(t *testing.T) {
	r := newRig(t, nil)
	dbg, _ := r.connect()
	dbg.Close()
	waitFor(t, func() bool { return strings.Contains(r.logs.String(), `"closed_by":"debugger"`) })
	_, vm := r.connect()
	vm.Close()
	waitFor(t, func() bool { return strings.Contains(r.logs.String(), `"closed_by":"vm"`) })
	r.connect()
	r.cancel()
	waitFor(t, func() bool { return strings.Contains(r.logs.String(), `"closed_by":"proxy"`) })
}
