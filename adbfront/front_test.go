package adbfront

import (
	"bufio"
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/adbtest"
	"github.com/jdwpaccel/jdwpaccel/internal/adbwire"
	"github.com/rs/zerolog"
)

// echoProc is a process whose JDWP stream echoes what it receives.
func echoProc(pid int) adbtest.Proc {
	return adbtest.Proc{PID: pid, Name: "echo", Dial: func() (net.Conn, error) {
		a, b := net.Pipe()
		go func() {
			io.Copy(b, b) //nolint:errcheck
			b.Close()
		}()
		return a, nil
	}}
}

// startFront serves a Front in front of upstream until the test ends.
func startFront(t *testing.T, upstream string, jdwpFn JDWPFunc) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := New(Config{Upstream: upstream, JDWP: jdwpFn, Timeout: 5 * time.Second, Logger: zerolog.Nop()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

func dialFront(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c, bufio.NewReader(c)
}

func readN(t *testing.T, r io.Reader, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		t.Fatalf("reading %d bytes: %v", n, err)
	}
	return string(b)
}

// TestFrontJDWPStream: a client pipelines host:transport, jdwp:PID and its
// first JDWP bytes; the front answers both requests and hands the stream
// to its JDWP function with the device and pid, losing no byte.
func TestFrontJDWPStream(t *testing.T) {
	up, err := adbtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	up.AddDevice("emu-1", "device")
	up.AddProcess("emu-1", echoProc(77))
	targets := make(chan Target, 1)
	addr := startFront(t, up.Addr(), func(ctx context.Context, client, vm net.Conn, tg Target) error {
		targets <- tg
		go func() {
			io.Copy(vm, client) //nolint:errcheck
			vm.Close()
		}()
		io.Copy(client, vm) //nolint:errcheck
		return client.Close()
	})
	c, r := dialFront(t, addr)
	c.Write(append(adbwire.AppendMessage(adbwire.AppendMessage(nil, "host:transport:emu-1"), "jdwp:77"), "JDWP-Handshake"...))
	if got := readN(t, r, 8); got != "OKAYOKAY" {
		t.Fatalf("answers %q", got)
	}
	if got := readN(t, r, 14); got != "JDWP-Handshake" {
		t.Fatalf("echo %q", got)
	}
	c.Write([]byte("more"))
	if got := readN(t, r, 4); got != "more" {
		t.Fatalf("echo %q", got)
	}
	if tg := <-targets; tg != (Target{Serial: "emu-1", PID: 77}) {
		t.Errorf("target %+v", tg)
	}
	if got := up.Requests(); strings.Join(got, ",") != "0014host:transport:emu-1,0007jdwp:77" {
		t.Errorf("the adb server saw %q", got)
	}
}

// TestFrontSplices: other requests reach the adb server unchanged and
// their streams flow both ways (track-devices updates, a FAIL answer).
func TestFrontSplices(t *testing.T) {
	up, err := adbtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	addr := startFront(t, up.Addr(), nil)
	c, r := dialFront(t, addr)
	c.Write(adbwire.AppendMessage(nil, "host:track-devices"))
	if got := readN(t, r, 8); got != "OKAY0000" {
		t.Fatalf("track-devices began %q", got)
	}
	up.AddDevice("emu-2", "device")
	if got := readN(t, r, 4+len("emu-2\tdevice\n")); got != "000demu-2\tdevice\n" {
		t.Fatalf("track-devices update %q", got)
	}
	c2, r2 := dialFront(t, addr)
	c2.Write(adbwire.AppendMessage(nil, "host:transport:nope"))
	if got, err := io.ReadAll(r2); err != nil || got == nil || !strings.HasPrefix(string(got), "FAIL") || !strings.Contains(string(got), "device 'nope' not found") {
		t.Fatalf("transport to a missing device: %q, %v", got, err)
	}
}

// TestFrontBadInput: a request that is not 4 hex digits and a payload
// closes that client's connection only; the front serves the next.
func TestFrontBadInput(t *testing.T) {
	up, err := adbtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	addr := startFront(t, up.Addr(), nil)
	for _, bad := range []string{"zzzzhost:version", "0000", "0010host-serial:nope"} {
		c, r := dialFront(t, addr)
		c.Write([]byte(bad))
		got, err := io.ReadAll(r)
		if err != nil || (len(got) > 0 && !strings.HasPrefix(string(got), "FAIL")) {
			t.Errorf("%q: the front answered %q, %v; want FAIL or a plain close", bad, got, err)
		}
	}
	c, r := dialFront(t, addr)
	c.Write(adbwire.AppendMessage(nil, "host:version"))
	if got := readN(t, r, 12); got != "OKAY00040029" {
		t.Fatalf("host:version after bad clients: %q", got)
	}
	if len(up.Errors()) != 0 {
		t.Errorf("the adb server saw framing errors: %v", up.Errors())
	}
}

// TestFrontNoUpstream: with no adb server behind it the front answers FAIL
// and says where it looked.
func TestFrontNoUpstream(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	addr := startFront(t, dead, nil)
	c, r := dialFront(t, addr)
	c.Write(adbwire.AppendMessage(nil, "host:devices"))
	got, _ := io.ReadAll(r)
	if !strings.HasPrefix(string(got), "FAIL") || !strings.Contains(string(got), dead) {
		t.Fatalf("answer %q", got)
	}
}
