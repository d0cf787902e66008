package relay_test

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
)

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestDialRetriesUntilVMListens: a VM that is not listening when the
// debugger arrives (HotSpot between two debuggers, a VM starting) but
// listens a moment later gets the session.
func TestDialRetriesUntilVMListens(t *testing.T) {
	vmAddr := freeAddr(t)
	refused := make(chan struct{})
	var once sync.Once
	dial := relay.TCP(vmAddr)
	r := newRig(t, nil, func(c *relay.Config) {
		c.DialRetry = 10 * time.Second // far more than needed: the test opens the listener at once
		c.DialVM = relay.Plain(func(ctx context.Context) (net.Conn, error) {
			conn, err := dial(ctx)
			if err != nil {
				once.Do(func() { close(refused) })
			}
			return conn, err
		})
	})
	dbg := r.dial()
	if err := jdwp.WriteHandshake(dbg); err != nil {
		t.Fatal(err)
	}
	<-refused
	ln, err := net.Listen("tcp", vmAddr)
	if err != nil {
		t.Skipf("cannot listen on %s again: %v", vmAddr, err)
	}
	defer ln.Close()
	r.vmLn = ln
	vm := r.acceptVM()
	dbg.SetReadDeadline(time.Now().Add(10 * time.Second))
	if err := jdwp.ReadHandshake(dbg); err != nil {
		t.Fatalf("debugger handshake: %v; want the session once the VM listens", err)
	}
	dbg.Write(jdwp.AppendCommand(nil, 1, cmdVersion, nil))
	if p, err := jdwp.NewReader(vm, 0).Next(); err != nil || p.ID() != 1 {
		t.Fatalf("VM got %v, %v", p, err)
	}
}

// TestDialGiveUpResets: when the VM cannot be reached within DialRetry,
// the debugger's connection is reset before the handshake reply, which a
// debugger reports as a refused (reset) connection rather than a
// handshake cut short; the log says the VM cannot be reached.
func TestDialGiveUpResets(t *testing.T) {
	vmAddr := freeAddr(t)
	r := newRig(t, nil, func(c *relay.Config) {
		c.DialVM = relay.DialTCP(vmAddr)
		c.DialRetry = 50 * time.Millisecond
	})
	dbg := r.dial()
	if err := jdwp.WriteHandshake(dbg); err != nil {
		t.Fatal(err)
	}
	dbg.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := io.ReadFull(dbg, make([]byte, len(jdwp.Handshake)))
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("debugger read: %v; want connection reset", err)
	}
	protocolErrors(t, r.reg, relay.ReasonDialVM, 1)
	if logs := r.logs.String(); !strings.Contains(logs, "cannot reach the VM") {
		t.Errorf("no 'cannot reach the VM' in:\n%s", logs)
	}
}

// TestSecondDebuggerVMBusy: while one debugger is attached, a VM that
// refuses a second one (as HotSpot does: it stops listening while a
// debugger is attached) is logged as exactly that, and the first session
// is unaffected.
func TestSecondDebuggerVMBusy(t *testing.T) {
	r := newRig(t, nil, func(c *relay.Config) { c.DialRetry = 50 * time.Millisecond })
	dbg1, vm1 := r.connect()
	r.vmLn.Close()

	dbg2 := r.dial()
	if err := jdwp.WriteHandshake(dbg2); err != nil {
		t.Fatal(err)
	}
	dbg2.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(dbg2, make([]byte, len(jdwp.Handshake))); err == nil {
		t.Fatal("second debugger got a handshake reply")
	}
	protocolErrors(t, r.reg, relay.ReasonVMBusy, 1)
	logs := r.logs.String()
	if !strings.Contains(logs, "second debugger") || strings.Contains(logs, "cannot reach the VM") {
		t.Errorf("want the refusal logged as a second debugger, not as an unreachable VM:\n%s", logs)
	}
	dbg1.Write(jdwp.AppendCommand(nil, 1, cmdVersion, nil))
	if p, err := jdwp.NewReader(vm1, 0).Next(); err != nil || p.ID() != 1 {
		t.Fatalf("first session: VM got %v, %v", p, err)
	}
}

// refusedErr is what dialing a port nothing listens on returns.
var refusedErr = &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}

// TestDialRetryWindow: on a fake clock, the proxy keeps dialing a VM that
// refuses for DialRetry (1 s by default), backing off between attempts, and
// takes a VM that starts listening within that time.
func TestDialRetryWindow(t *testing.T) {
	for _, tc := range []struct {
		name  string
		upAt  time.Duration // when the VM starts listening; 0 for never
		wantS bool          // whether the session starts
	}{
		{"never", 0, false},
		{"starts within the window", 600 * time.Millisecond, true},
		{"starts too late", 1500 * time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				var attempts []time.Duration
				pr := newPipeRig(t, relay.Config{})
				dial := pr.dialVM
				pr.setDial(func(ctx context.Context) (net.Conn, error) {
					at := time.Since(start)
					attempts = append(attempts, at)
					if tc.upAt == 0 || at < tc.upAt {
						return nil, refusedErr
					}
					return dial(ctx)
				})
				dbg, proxySide := net.Pipe()
				defer dbg.Close()
				served := make(chan error, 1)
				go func() { served <- pr.srv.ServeConn(pr.ctx, proxySide) }()
				jdwp.WriteHandshake(dbg)
				if tc.wantS {
					vm := <-pr.vms
					defer vm.Close()
					jdwp.ReadHandshake(vm)
					jdwp.WriteHandshake(vm)
					if err := jdwp.ReadHandshake(dbg); err != nil {
						t.Fatalf("debugger handshake: %v", err)
					}
					if at := attempts[len(attempts)-1]; at < tc.upAt || at > tc.upAt+150*time.Millisecond {
						t.Errorf("connected at %v, want soon after the VM listens at %v", at, tc.upAt)
					}
					dbg.Close()
					<-served
					return
				}
				err := <-served
				if !errors.Is(err, syscall.ECONNREFUSED) {
					t.Errorf("ServeConn: %v, want the refusal", err)
				}
				if last := attempts[len(attempts)-1]; last < 900*time.Millisecond || last > time.Second {
					t.Errorf("last attempt at %v, want at the end of the 1 s window", last)
				}
				if n := len(attempts); n < 5 || n > 40 {
					t.Errorf("%d attempts in the window, want a few with backoff", n)
				}
				if _, err := dbg.Read(make([]byte, 1)); err != io.EOF {
					t.Errorf("debugger read: %v, want its connection closed", err)
				}
			})
		})
	}
}
