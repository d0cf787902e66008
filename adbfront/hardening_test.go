package adbfront

import (
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/adbtest"
	"github.com/jdwpaccel/jdwpaccel/internal/adbwire"
	"github.com/rs/zerolog"
)

// TestFrontIdleTimeout: a client that sends nothing, or half a request,
// is closed after the idle timeout; one that keeps sending requests is
// served.
func TestFrontIdleTimeout(t *testing.T) {
	up, err := adbtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := New(Config{Upstream: up.Addr(), IdleTimeout: 200 * time.Millisecond, Logger: zerolog.Nop()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Serve(ctx, ln) }()
	defer func() { cancel(); <-done }()
	addr := ln.Addr().String()

	for _, sent := range []string{"", "00", "000chost:ver"} {
		c, r := dialFront(t, addr) // 10 s deadline: far more than the idle timeout
		c.Write([]byte(sent))
		start := time.Now()
		if got, err := io.ReadAll(r); err != nil || len(got) != 0 {
			t.Fatalf("client that sent %q: read %q, %v; want the front to close it", sent, got, err)
		}
		if d := time.Since(start); d < 100*time.Millisecond {
			t.Errorf("client that sent %q closed after %v, before the idle timeout", sent, d)
		}
	}
	// A request that completes in time is answered.
	c, r := dialFront(t, addr)
	c.Write(adbwire.AppendMessage(nil, "host:version"))
	if got := readN(t, r, 12); got != "OKAY00040029" {
		t.Fatalf("host:version: %q", got)
	}
}

// startForward runs one of the front's forwards to t (as addForward makes
// it) and returns its address.
func startForward(t *testing.T, f *Front, tg Target) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.mu.Lock()
	f.ctx = ctx
	fw := &forward{local: "tcp:0", ln: ln, target: tg}
	f.forwards[fw.local] = fw
	f.mu.Unlock()
	f.wg.Go(func() { f.serveForward(ctx, fw) })
	t.Cleanup(func() { cancel(); ln.Close(); f.wg.Wait() })
	return ln.Addr().String()
}

// attachRead connects a debugger to addr, sends the JDWP handshake and
// returns what it reads until the connection ends, and the error.
func attachRead(t *testing.T, addr string) (string, error) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	c.Write([]byte("JDWP-Handshake"))
	b, err := io.ReadAll(c)
	return string(b), err
}

// TestForwardRefusesWithoutServer: a debugger attaching to one of the
// front's forwards while the adb server is down gets its connection reset
// (a refused connection), not an end of stream in its handshake.
func TestForwardRefusesWithoutServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	f := New(Config{Upstream: dead, DialRetry: 50 * time.Millisecond, Logger: zerolog.Nop()})
	addr := startForward(t, f, Target{Serial: "emu-1", PID: 77})
	got, err := attachRead(t, addr)
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("the debugger read %q, %v; want its connection reset", got, err)
	}
}

// TestForwardRetriesAfterDeviceRestart: a debugger attaching while the
// device is still offline after a restart gets its stream once the device
// is back within DialRetry, instead of a failure on the first try.
func TestForwardRetriesAfterDeviceRestart(t *testing.T) {
	up, err := adbtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	up.AddDevice("emu-1", "offline")
	up.AddProcess("emu-1", echoProc(77))
	f := New(Config{Upstream: up.Addr(), DialRetry: 10 * time.Second, Logger: zerolog.Nop()})
	addr := startForward(t, f, Target{Serial: "emu-1", PID: 77})
	// The device comes back once the front has been told it is offline.
	go func() {
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if slices.Contains(up.Requests(), "0014host:transport:emu-1") {
				up.AddDevice("emu-1", "device")
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	c.Write([]byte("JDWP-Handshake"))
	if got := readN(t, c, 14); got != "JDWP-Handshake" {
		t.Fatalf("echo %q", got)
	}
	if n := strings.Count(strings.Join(up.Requests(), ","), "host:transport:emu-1"); n < 2 {
		t.Errorf("the front opened the stream in %d tries; want a retry after the offline answer", n)
	}
}
