package split

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/bench/link"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/rs/zerolog"
)

// startNearRetrying serves a near end as jdwpaccel does (the relay retries
// reaching the far end for relay.DefaultDialRetry) and logs to log.
func startNearRetrying(t *testing.T, cfg NearConfig, log *jdwptest.Buffer) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger = zerolog.New(log) // as jdwpaccel does: the same logger
	srv := relay.NewServer(relay.Config{DialVM: Dialer(cfg), Logger: zerolog.New(log)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ctx, ln) }() //nolint:errcheck // nil after cancel
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

// TestFarDownBehindTunnel: a tunnel that accepts and closes at once (its
// far end is down) is reported once per attach, at error, saying what is
// known: the far end or the tunnel closed the connection.
func TestFarDownBehindTunnel(t *testing.T) {
	tunnel, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tunnel.Close()
	go func() {
		for {
			c, err := tunnel.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	var log jdwptest.Buffer
	near := startNearRetrying(t, NearConfig{Addr: tunnel.Addr().String()}, &log)
	if _, err := jdwptest.Attach(near); err == nil {
		t.Fatal("attached through a tunnel to nothing")
	}
	// The relay's line ends the attach: any line of each try is before it.
	jdwptest.Await(t, "the near end's refusal", log.Changed, func() (bool, string) {
		return strings.Contains(log.String(), "refused the debugger"), log.String()
	})
	if !strings.Contains(log.String(), "or the tunnel to it, closed the connection") {
		t.Errorf("the line does not say the far end or the tunnel closed the connection:\n%s", log.String())
	}
	if n := strings.Count(log.String(), "\n"); n != 1 {
		t.Errorf("%d log lines for one attach, want 1:\n%s", n, log.String())
	}
	if strings.Contains(log.String(), "a far end with TLS closes plain connections") {
		t.Errorf("the line asserts TLS is the cause:\n%s", log.String())
	}
}

// TestPlainToTLSOnceEach: a near end without TLS meeting a far end with
// TLS logs one line per attach, and the far end one line (per host per
// minute), however often the near end retried.
func TestPlainToTLSOnceEach(t *testing.T) {
	v := newVMSide(t)
	farCert, _ := selfSigned(t, "far")
	f := startFar(t, v, "127.0.0.1:0", FarConfig{TLS: ServerTLS(farCert, nil)})
	var log jdwptest.Buffer
	near := startNearRetrying(t, NearConfig{Addr: f.addr}, &log)
	for range 2 {
		if _, err := jdwptest.Attach(near); err == nil {
			t.Fatal("attached without TLS to a TLS far end")
		}
	}
	jdwptest.Await(t, "the near end's refusals", log.Changed, func() (bool, string) {
		return strings.Count(log.String(), "refused the debugger") == 2, log.String()
	})
	if n := strings.Count(log.String(), "\n"); n != 2 {
		t.Errorf("%d near-end log lines for two attaches, want 2:\n%s", n, log.String())
	}
	if f.count(OutcomeTLS) < 2 {
		t.Fatalf("the far end counted %v TLS failures, want one per try", f.count(OutcomeTLS))
	}
	if n := strings.Count(f.log.String(), "\n"); n != 1 {
		t.Errorf("%d far-end log lines for %v refused connections, want 1:\n%s", n, f.count(OutcomeTLS), f.log)
	}
}

// TestLinkLostAtWarn: a link that drops mid-session is not an ordinary
// "debugger session ended": both ends log it at warn.
func TestLinkLostAtWarn(t *testing.T) {
	v := newVMSide(t)
	f := startFar(t, v, "127.0.0.1:0", FarConfig{})
	lk, err := link.Listen(context.Background(), "127.0.0.1:0", f.addr, link.Config{}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	var log jdwptest.Buffer
	near := startNearRetrying(t, NearConfig{Addr: lk.Addr().String()}, &log)
	d, err := jdwptest.Attach(near)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Call(jdwp.CmdVirtualMachineVersion, nil); err != nil {
		t.Fatal(err)
	}
	lk.Close() // the link drops
	if err := d.WaitClosed(); err != nil {
		t.Errorf("the debugger's connection: %v", err)
	}
	ended := func(l *jdwptest.Buffer) func() (bool, string) {
		return func() (bool, string) { return strings.Contains(l.String(), "ended"), l.String() }
	}
	jdwptest.Await(t, "the near end's session end", log.Changed, ended(&log))
	jdwptest.Await(t, "the far end's session end", f.log.Changed, ended(f.log))
	for end, l := range map[string]string{"near": log.String(), "far": f.log.String()} {
		if strings.Contains(l, "debugger session ended") || !strings.Contains(l, `"level":"warn"`) {
			t.Errorf("the %s end logged a lost link as an ordinary end, or not at warn:\n%s", end, l)
		}
	}
}
