package relay_test

import (
	"context"
	"io"
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
	go func() { done <- srv.ServeWithVM(context.Background(), proxyDbg, relay.VMConn{Conn: proxyVM}, nil) }()
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
	go func() { done <- srv.ServeWithVM(context.Background(), proxyDbg, relay.VMConn{Conn: proxyVM}, nil) }()
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

// TestServeWithVMRedials: a given VM connection that closes before its
// handshake is replaced by redial's, and the debugger attaches as if the
// first had worked; without redial there is no second attempt.
func TestServeWithVMRedials(t *testing.T) {
	for _, withRedial := range []bool{true, false} {
		dbgEnd, proxyDbg := net.Pipe()
		first, gone := net.Pipe()
		go func() { // the app restarted: the stream ends before the handshake's answer
			io.ReadFull(gone, make([]byte, len("JDWP-Handshake"))) //nolint:errcheck // closing anyway
			gone.Close()
		}()
		vm := jdwptest.NewVM(jdwptest.Script{Default: jdwptest.Body([]byte("again"))})
		redials := 0
		var redial relay.Dialer
		if withRedial {
			redial = func(context.Context) (relay.VMConn, error) {
				redials++
				proxyVM, vmEnd := net.Pipe()
				go vm.Serve(vmEnd) //nolint:errcheck // ends with the test
				return relay.VMConn{Conn: proxyVM}, nil
			}
		}
		srv := relay.NewServer(relay.Config{HandshakeTimeout: 5 * time.Second, DialRetry: jdwptest.Timeout, Logger: zerolog.Nop()})
		done := make(chan error, 1)
		go func() { done <- srv.ServeWithVM(context.Background(), proxyDbg, relay.VMConn{Conn: first}, redial) }()
		d, err := jdwptest.AttachConn(dbgEnd)
		if !withRedial {
			if err == nil {
				t.Error("without redial, a debugger attached to a VM whose stream closed")
			}
			if err := <-done; err == nil {
				t.Error("ServeWithVM without redial returned nil after its VM connection closed")
			}
			continue
		}
		if err != nil {
			t.Fatalf("attach: %v", err)
		}
		if p, err := d.Call(jdwp.CmdVirtualMachineVersion, nil); err != nil || string(p.Body()) != "again" {
			t.Fatalf("reply %v, %v", p, err)
		}
		d.Close()
		<-done
		if redials != 1 {
			t.Errorf("%d redials, want 1", redials)
		}
	}
}
