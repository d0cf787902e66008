package split

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// testLinkTimeout is the link timeout of the silent-link tests: short, so
// that they run in seconds.
const testLinkTimeout = 2 * time.Second

// silentLink runs one session through a near end (dialling with nc) and a
// far end (serving farLn), both with testLinkTimeout. An idle session
// must outlive twice the link timeout (the heartbeat keeps it up). Then
// cut makes the link silent without a word, the debugger sends a command
// and the VM an event (so each end has data in flight that nothing
// acknowledges), and both ends must end the session within about the
// link timeout: the debugger's connection closes and the far end closes
// its VM connection (the VM then resumes, as after a detach).
func silentLink(t *testing.T, farLn net.Listener, nc NearConfig, cut func()) {
	v := newVMSide(t)
	f := serveFar(t, v, farLn, FarConfig{LinkTimeout: testLinkTimeout})
	nc.LinkTimeout, nc.Heartbeat = testLinkTimeout, true
	nc.Logger = zerolog.New(f.log)
	d, err := jdwptest.Attach(startNearHooks(t, nc, NearHeartbeat(testLinkTimeout, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Call(jdwp.CmdVirtualMachineVersion, nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * testLinkTimeout) // idle: only heartbeats cross the link
	if _, err := d.Call(jdwp.CmdVirtualMachineVersion, nil); err != nil {
		t.Fatalf("an idle session did not outlive twice the link timeout: %v; log:\n%s", err, f.log)
	}
	cut()
	start := time.Now()
	if _, err := d.Send(jdwp.CmdVirtualMachineVersion, nil); err != nil {
		t.Fatal(err)
	}
	if err := v.vm.Send(jdwp.AppendCommand(nil, 7, jdwp.CmdEventComposite, []byte{byte(jdwp.SuspendAll), 0, 0, 0, 0})); err != nil {
		t.Fatal(err)
	}
	// Each end notices at most a link timeout after the last beat it
	// received; the bound leaves a margin for a loaded machine, and is
	// far below what TCP alone takes (keepalive never fires with data in
	// flight, and Linux retransmits for about 15 minutes).
	bound := 2*testLinkTimeout + 2*time.Second
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-v.closed:
			t.Logf("the far end closed its VM connection %v after the cut", time.Since(start).Round(time.Millisecond))
		case <-time.After(bound):
			t.Errorf("the far end kept its VM connection %v after the link went silent", bound)
		}
	})
	p, err := d.NextWithin(bound)
	switch {
	case err == nil:
		t.Errorf("the debugger got %v over a silent link", p)
	case os.IsTimeout(err):
		t.Errorf("the near end kept the debugger's connection %v after the link went silent", bound)
	default:
		t.Logf("the near end closed the debugger's connection %v after the cut", time.Since(start).Round(time.Millisecond))
	}
	wg.Wait()
	if t.Failed() {
		t.Logf("log:\n%s", f.log)
	}
}

// TestLinkFrozen: a link that stops carrying anything, both ways, while
// its TCP connections stay open (a hop that hangs: it still acknowledges
// what it receives, so only the heartbeat can tell) ends its session on
// both ends within about the link timeout.
func TestLinkFrozen(t *testing.T) {
	farLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hop, freeze := freezingHop(t, farLn.Addr().String())
	silentLink(t, farLn, NearConfig{Addr: hop}, freeze)
}

// freezingHop relays one connection to target until freeze is called;
// from then on it forwards nothing either way and keeps both connections
// open until the test ends.
func freezingHop(t *testing.T, target string) (addr string, freeze func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	frozen, end := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() { close(end); ln.Close(); wg.Wait() })
	pipe := func(dst, src net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			select {
			case <-frozen:
				<-end
				return
			default:
			}
			if n > 0 {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}
	wg.Go(func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		u, err := net.Dial("tcp", target)
		if err != nil {
			return
		}
		defer u.Close()
		wg.Go(func() { pipe(u, c) })
		pipe(c, u)
	})
	var once sync.Once
	return ln.Addr().String(), func() { once.Do(func() { close(frozen) }) }
}

// TestLinkBlackholedInNetns: the near end and the far end in two network
// namespaces the test creates, joined by a veth pair; the link is
// blackholed by taking the far side's veth down (packets vanish, nothing
// is reset). Both ends must end the session within about the link
// timeout. Needs root (skipped without, failed under CI=true).
func TestLinkBlackholedInNetns(t *testing.T) {
	if testing.Short() {
		t.Skip("creates network namespaces")
	}
	_, ipErr := exec.LookPath("ip")
	if os.Geteuid() != 0 || ipErr != nil {
		msg := "needs root and ip(8) to create network namespaces"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v\n%s", args, err, out)
		}
	}
	id := os.Getpid() % 100000
	nsNear, nsFar := fmt.Sprintf("jdwpaccel-near-%d", id), fmt.Sprintf("jdwpaccel-far-%d", id)
	vethNear, vethFar := fmt.Sprintf("jdwpN%d", id), fmt.Sprintf("jdwpF%d", id)
	for _, ns := range []string{nsNear, nsFar} {
		ip("netns", "add", ns)
		t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() }) //nolint:errcheck // best effort
	}
	// Link-local addresses, inside the test's own namespaces only.
	const nearIP, farIP = "169.254.77.1", "169.254.77.2"
	ip("link", "add", vethNear, "netns", nsNear, "type", "veth", "peer", "name", vethFar, "netns", nsFar)
	for _, side := range [][3]string{{nsNear, vethNear, nearIP}, {nsFar, vethFar, farIP}} {
		ip("-n", side[0], "addr", "add", side[2]+"/30", "dev", side[1])
		ip("-n", side[0], "link", "set", side[1], "up")
		ip("-n", side[0], "link", "set", "lo", "up")
	}
	var farLn net.Listener
	if err := inNetns(nsFar, func() (err error) {
		farLn, err = net.Listen("tcp", net.JoinHostPort(farIP, "0"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	nc := NearConfig{Addr: farLn.Addr().String(), dial: func(ctx context.Context, addr string) (c net.Conn, err error) {
		err = inNetns(nsNear, func() error {
			c, err = (&net.Dialer{KeepAliveConfig: keepAlive}).DialContext(ctx, "tcp", addr)
			return err
		})
		return c, err
	}}
	silentLink(t, farLn, nc, func() { ip("-n", nsFar, "link", "set", vethFar, "down") })
}

// inNetns runs fn on an OS thread in network namespace name (sockets it
// creates belong to that namespace). The thread is never handed back to
// the runtime: it exits with fn's goroutine.
func inNetns(name string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked, see above
		f, err := os.Open(filepath.Join("/run/netns", name))
		if err != nil {
			errc <- err
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns %s: %w", name, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}
