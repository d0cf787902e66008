package relay_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/rs/zerolog"
)

// TestServeWithVM: a session given its VM connection relays over it (the
// handshake included) without dialling, and closes both connections when
// the debugger leaves.
func TestServeWithVM(t *testing.T) {
	dbgEnd, proxyDbg := net.Pipe()
	proxyVM, vmEnd := net.Pipe()
	vm := jdwptest.NewVM(jdwptest.Script{Default: jdwptest.Body([]byte("given"))})
	vmDone := make(chan error, 1)
	go func() { vmDone <- vm.Serve(vmEnd) }()
	srv := relay.NewServer(relay.Config{
		DialVM: func(context.Context) (relay.VMConn, error) {
			t.Error("DialVM called")
			return relay.VMConn{}, net.ErrClosed
		},
		HandshakeTimeout: 5 * time.Second,
		Logger:           zerolog.Nop(),
	})
	done := make(chan error, 1)
	go func() { done <- srv.ServeWithVM(context.Background(), proxyDbg, relay.VMConn{Conn: proxyVM}) }()
	d, err := jdwptest.AttachConn(dbgEnd)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := d.Call(jdwp.CmdVirtualMachineVersion, nil); err != nil || string(p.Body()) != "given" {
		t.Fatalf("reply %v, %v", p, err)
	}
	d.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ServeWithVM: %v", err)
		}
	case <-time.After(jdwptest.Timeout):
		t.Fatal("ServeWithVM did not return after the debugger left")
	}
	if err := <-vmDone; err != nil {
		t.Errorf("VM: %v", err)
	}
	if got := len(vm.Commands()); got != 1 {
		t.Errorf("VM saw %d commands, want 1", got)
	}
}

// TestServeWithVMClosesOnBadHandshake: a debugger that fails its
// handshake still closes the given VM connection.
func TestServeWithVMClosesOnBadHandshake(t *testing.T) {
	dbgEnd, proxyDbg := net.Pipe()
	proxyVM, vmEnd := net.Pipe()
	srv := relay.NewServer(relay.Config{HandshakeTimeout: 5 * time.Second, Logger: zerolog.Nop()})
	done := make(chan error, 1)
	go func() { done <- srv.ServeWithVM(context.Background(), proxyDbg, relay.VMConn{Conn: proxyVM}) }()
	dbgEnd.Write([]byte("not-a-handshake"))
	dbgEnd.Close()
	if err := <-done; err == nil {
		t.Error("ServeWithVM accepted a bad handshake")
	}
	vmEnd.SetReadDeadline(time.Now().Add(jdwptest.Timeout))
	if _, err := vmEnd.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Errorf("the VM connection is still open: %v", err)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
