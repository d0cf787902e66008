package adbfront

import (
	"context"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/ddmtap"
	"github.com/jdwpaccel/jdwpaccel/internal/adbtest"
	"github.com/jdwpaccel/jdwpaccel/internal/adbwire"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// TestRelayForgetsEndedProcesses checks that a device process's relay
// server lives exactly while it has JDWP streams and that only the last
// keptEnded ended processes keep their DDM monitor, so that a long-running
// front does not keep one of each per app restart.
func TestRelayForgetsEndedProcesses(t *testing.T) {
	reg := prometheus.NewRegistry()
	fr := NewRelay(relay.Config{Logger: zerolog.Nop(), Metrics: relay.NewMetrics(reg)}, ddmtap.NewMetrics(reg))
	a, b := Target{Serial: "emu", PID: 1}, Target{Serial: "emu", PID: 2}
	check := func(when string, servers, monitors int) {
		t.Helper()
		fr.mu.Lock()
		n := len(fr.servers)
		fr.mu.Unlock()
		if n != servers || len(fr.Monitors().List()) != monitors {
			t.Errorf("%s: %d servers and %d monitors, want %d and %d", when, n, len(fr.Monitors().List()), servers, monitors)
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
		t := Target{Serial: "emu", PID: pid}
		fr.acquire(t)
		fr.release(t)
	}
	check("many processes later", 0, keptEnded)

	// A whole stream: the client hangs up before its handshake; both
	// connections are closed.
	client, front := net.Pipe()
	vm, vmEnd := net.Pipe()
	defer vmEnd.Close()
	client.Close()
	if err := fr.Serve(context.Background(), front, vm, a); err == nil {
		t.Error("a stream whose client hung up ended without an error")
	}
	check("after a whole stream", 0, keptEnded)
	if _, err := vmEnd.Read(make([]byte, 1)); err == nil {
		t.Error("the stream's VM connection is still open")
	}
}

// TestRelayWithoutDDM: without DDM decoding no monitor is kept.
func TestRelayWithoutDDM(t *testing.T) {
	fr := NewRelay(relay.Config{Logger: zerolog.Nop()}, nil)
	tg := Target{Serial: "emu", PID: 1}
	fr.acquire(tg)
	fr.release(tg)
	if n := len(fr.Monitors().List()); n != 0 {
		t.Errorf("%d monitors without DDM decoding", n)
	}
}

// TestRelayRetriesStreamAfterRestart: a JDWP stream whose VM closes
// before its handshake (the app or the device just restarted) is tried
// again on a new stream to the same process, within the relay's dial
// retry, and the debugger attaches as if the first had worked.
func TestRelayRetriesStreamAfterRestart(t *testing.T) {
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
	fr := NewRelay(relay.Config{Logger: zerolog.Nop(), Metrics: relay.NewMetrics(prometheus.NewRegistry())}, nil)
	front := New(Config{Upstream: up.Addr(), JDWP: fr.Serve, Logger: zerolog.Nop()})
	fr.SetRedial(front.DialJDWP)
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
	c.Write(adbwire.AppendMessage(adbwire.AppendMessage(nil, "host:transport:emu-1"), "jdwp:77"))
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
