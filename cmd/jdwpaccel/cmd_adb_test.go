package main

import (
	"context"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/adbfront"
	"github.com/jdwpaccel/jdwpaccel/discover/adbtest"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/web"
	"github.com/rs/zerolog"
)

func TestADBAndFakeDeviceUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"adb", "-h"}, exitOK, "Use existing manually managed server"},
		{[]string{"fakedevice", "-h"}, exitOK, "adb connect"},
		{[]string{"adb", "--listen", "127.0.0.1:5038", "--upstream", "127.0.0.1:5038"}, exitUsage, "the front's own --listen"},
		{[]string{"adb", "--upstream", "nonsense"}, exitUsage, "bad --upstream"},
		{[]string{"adb", "--listen", "0.0.0.0:0"}, exitUsage, "--allow-remote"},
		{[]string{"fakedevice", "--process", "noaddress"}, exitUsage, "want NAME=HOST:PORT"},
		{[]string{"fakedevice", "--process", "a=127.0.0.1:1", "--prop", "x"}, exitUsage, "want KEY=VALUE"},
		{[]string{"fakedevice", "--listen", "0.0.0.0:0", "--process", "a=127.0.0.1:1"}, exitUsage, "not a loopback address"},
	} {
		code, stdout, stderr := runCapture(c.args...)
		if code != c.code || !strings.Contains(stdout+stderr, c.want) {
			t.Errorf("jdwpaccel %s: exit %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", strings.Join(c.args, " "), code, c.code, c.want, stdout, stderr)
		}
	}
}

func TestDialStreamVMOnce(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	ctx := withStreamVM(context.Background(), a, nil)
	if c, err := dialStreamVM(ctx); err != nil || c.Conn != a {
		t.Fatalf("first dial: %v, %v", c, err)
	}
	if _, err := dialStreamVM(ctx); err == nil {
		t.Error("second dial of the same stream succeeded")
	}
	// With a way to open another stream, a later dial opens one.
	ctx = withStreamVM(context.Background(), a, func(context.Context) (net.Conn, error) { return b, nil })
	dialStreamVM(ctx) //nolint:errcheck // the client's stream
	if c, err := dialStreamVM(ctx); err != nil || c.Conn != b {
		t.Fatalf("second dial with a redial: %v, %v; want the new stream", c, err)
	}
	if _, err := dialStreamVM(context.Background()); err == nil {
		t.Error("dial without a stream succeeded")
	}
}

// TestFrontRelayForgetsEndedProcesses checks that a device process's relay
// server lives exactly while it has JDWP streams and that only the last
// keptEnded ended processes keep their DDM monitor, so that a long-running
// front does not keep one of each per app restart.
func TestFrontRelayForgetsEndedProcesses(t *testing.T) {
	reg := newRegistry()
	st := &stack{reg: reg, tracker: web.NewSessionTracker(), cfg: relay.Config{Logger: zerolog.Nop(), Metrics: relay.NewMetrics(reg)}}
	fr := newFrontRelay(st, true)
	a, b := adbfront.Target{Serial: "emu", PID: 1}, adbfront.Target{Serial: "emu", PID: 2}
	check := func(when string, servers, monitors int) {
		t.Helper()
		fr.mu.Lock()
		n := len(fr.servers)
		fr.mu.Unlock()
		if n != servers || len(fr.mons.List()) != monitors {
			t.Errorf("%s: %d servers and %d monitors, want %d and %d", when, n, len(fr.mons.List()), servers, monitors)
		}
	}
	if s1, s2 := fr.acquire(a), fr.acquire(a); s1 != s2 {
		t.Error("two streams of one process got different servers")
	}
	fr.acquire(b)
	check("three streams of two processes", 2, 2)
	fr.release(a)
	check("one of a's two streams ended", 2, 2)
	fr.release(a)
	check("a's streams ended", 1, 2)
	fr.release(b)
	check("all streams ended", 0, 2)
	for pid := 3; pid < 3+keptEnded; pid++ {
		t := adbfront.Target{Serial: "emu", PID: pid}
		fr.acquire(t)
		fr.release(t)
	}
	check("many processes later", 0, keptEnded)

	// A whole stream: the client hangs up before its handshake.
	client, front := net.Pipe()
	vm, vmEnd := net.Pipe()
	defer vmEnd.Close()
	client.Close()
	if err := fr.serve(context.Background(), front, vm, a); err == nil {
		t.Error("a stream whose client hung up ended without an error")
	}
	check("after a whole stream", 0, keptEnded)
}

// TestFrontStreamRetriesAfterRestart: a JDWP stream whose VM closes
// before its handshake (the app or the device just restarted) is tried
// again on a new stream to the same process, within the relay's dial
// retry, and the debugger attaches as if the first had worked.
func TestFrontStreamRetriesAfterRestart(t *testing.T) {
	vm := jdwptest.StartVM(t, jdwptest.Script{})
	up, err := adbtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	up.AddDevice("emu-1", "device")
	var dials atomic.Int32
	up.AddProcess("emu-1", adbtest.Proc{PID: 77, Name: "app", Dial: func() (net.Conn, error) {
		if dials.Add(1) == 1 {
			a, b := net.Pipe() // not ready yet: closes at once
			b.Close()
			return a, nil
		}
		return net.Dial("tcp", vm.Addr())
	}})
	reg := newRegistry()
	st := &stack{reg: reg, tracker: web.NewSessionTracker(), cfg: relay.Config{Logger: zerolog.Nop(), Metrics: relay.NewMetrics(reg)}}
	fr := newFrontRelay(st, false)
	front := adbfront.New(adbfront.Config{Upstream: up.Addr(), JDWP: fr.serve, Logger: zerolog.Nop()})
	fr.dialJDWP = front.DialJDWP
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- front.Serve(ctx, ln) }()
	defer func() { cancel(); <-done }()

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(jdwptest.Timeout))
	c.Write(adbfront.AppendRequest(adbfront.AppendRequest(nil, "host:transport:emu-1"), "jdwp:77"))
	ok := make([]byte, 8)
	if _, err := io.ReadFull(c, ok); err != nil || string(ok) != "OKAYOKAY" {
		t.Fatalf("answers %q, %v", ok, err)
	}
	d, err := jdwptest.AttachConn(c)
	if err != nil {
		t.Fatalf("attach after the first stream closed: %v (%d streams opened)", err, dials.Load())
	}
	if _, err := d.Call(jdwp.CmdVirtualMachineVersion, nil); err != nil {
		t.Fatal(err)
	}
	if n := dials.Load(); n != 2 {
		t.Errorf("%d streams opened to the process, want 2", n)
	}
}
