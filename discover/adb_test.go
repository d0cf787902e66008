package discover

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/adbserver"
	"github.com/jdwpaccel/jdwpaccel/internal/adbtest"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/rs/zerolog"
)

func startADB(t *testing.T) *adbtest.Server {
	t.Helper()
	s, err := adbtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		for _, err := range s.Errors() {
			t.Errorf("adb framing: %v", err)
		}
	})
	return s
}

// fakeProc is a process of a fake device backed by a fake VM.
func fakeProc(t *testing.T, pid int, name string) adbtest.Proc {
	v := startFakeVM(t, "vm-"+name)
	return adbtest.Proc{PID: pid, Name: name, Dial: func() (net.Conn, error) { return net.Dial("tcp", v.Addr()) }}
}

// The client's requests, byte for byte as the reference (§6) frames
// them: 4 uppercase hex digits of length, then the request.
func TestADBClientFraming(t *testing.T) {
	s := startADB(t)
	s.AddDevice("emu-1", "device")
	s.AddProcess("emu-1", fakeProc(t, 101, "com.example.a"))
	c := &ADBClient{Addr: s.Addr()}
	ctx := context.Background()

	if v, err := c.Version(ctx); err != nil || v != 41 {
		t.Fatalf("Version: %d, %v", v, err)
	}
	ds, err := c.Devices(ctx)
	if err != nil || len(ds) != 1 || ds[0] != (ADBDevice{"emu-1", "device"}) {
		t.Fatalf("Devices: %+v, %v", ds, err)
	}
	conn, err := c.DialJDWP(ctx, "emu-1", 101)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	d, err := jdwptest.AttachConn(conn)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ask(d); err != nil || got != "vm-com.example.a" {
		t.Fatalf("reply %q, %v", got, err)
	}
	name, err := c.Shell(ctx, "emu-1", "cat /proc/101/cmdline")
	if err != nil || string(name) != "com.example.a\x00" {
		t.Fatalf("Shell: %q, %v", name, err)
	}
	want := []string{
		"000chost:version",
		"000chost:devices",
		"0014host:transport:emu-1", "000atrack-jdwp", // DialJDWP's check
		"0014host:transport:emu-1", "0008jdwp:101",
		"0014host:transport:emu-1", "001bshell:cat /proc/101/cmdline",
	}
	if got := s.Requests(); !slices.Equal(got, want) {
		t.Errorf("requests:\n%q\nwant\n%q", got, want)
	}
}

func TestADBClientErrors(t *testing.T) {
	s := startADB(t)
	c := &ADBClient{Addr: s.Addr()}
	ctx := context.Background()
	_, err := c.DialJDWP(ctx, "", 1)
	if err == nil || !strings.Contains(err.Error(), "no Android device or emulator") {
		t.Errorf("no device: %v", err)
	}
	s.AddDevice("emu-1", "device")
	s.AddDevice("emu-2", "device")
	s.AddProcess("emu-1", fakeProc(t, 101, "a"))
	if _, err := c.DialJDWP(ctx, "", 101); err == nil || !strings.Contains(err.Error(), "several devices") {
		t.Errorf("two devices, no serial: %v", err)
	}
	var ae *ADBError
	if _, err := c.DialJDWP(ctx, "nosuch", 101); err == nil || !strings.Contains(err.Error(), `device "nosuch" is not connected`) || !errors.As(err, &ae) {
		t.Errorf("unknown serial: %v", err)
	}
	if _, err := c.DialJDWP(ctx, "emu-1", 999); !errors.Is(err, ErrNotDebuggable) || !strings.Contains(err.Error(), "999") {
		t.Errorf("dead pid: %v", err)
	}
	s.AddDevice("emu-2", "offline")
	if _, err := c.DialJDWP(ctx, "emu-2", 1); err == nil || !strings.Contains(err.Error(), "offline") {
		t.Errorf("offline: %v", err)
	}
	ln := listenLocal(t)
	addr := ln.Addr().String()
	ln.Close()
	if _, err := (&ADBClient{Addr: addr}).Devices(ctx); !errors.Is(err, ErrNoADBServer) {
		t.Errorf("no server: %v", err)
	}
}

// The adb source behind the Manager: processes and devices come and go.
func TestADBSource(t *testing.T) {
	s := startADB(t)
	s.AddDevice("emu-1", "device")
	s.AddProcess("emu-1", fakeProc(t, 101, "com.example.a"))
	s.AddProcess("emu-1", fakeProc(t, 102, "com.example.b"))
	p201 := fakeProc(t, 201, "com.example.c") // for later; counted in the baseline
	sel := listenLocal(t)
	g0, f0 := runtime.NumGoroutine(), countFDs(t)
	src := &ADB{Client: &ADBClient{Addr: s.Addr()}, Retry: 50 * time.Millisecond, Logger: zerolog.Nop()}
	m, stop := startManager(t, Config{Source: src, Selected: sel, PortBase: PortAuto})
	st := waitState(t, m, "two processes", func(s Snapshot) bool { return len(s.VMs) == 2 })
	a, ok := statusOf(st, "adb:emu-1:101")
	if !ok || a.Name != "com.example.a" || a.PID != 101 || a.Serial != "emu-1" || a.Kind != KindADB {
		t.Fatalf("%+v", st)
	}
	if _, err := m.Select("com.example.a"); err != nil {
		t.Fatal(err)
	}
	d, err := jdwptest.Attach(sel.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if got, err := ask(d); err != nil || got != "vm-com.example.a" {
		t.Fatalf("%q, %v", got, err)
	}
	if got, err := askVia(a.Listen); err != nil || got != "vm-com.example.a" {
		t.Fatalf("per-VM port: %q, %v", got, err)
	}

	// The process exits: its VM and session go.
	s.RemoveProcess("emu-1", 101)
	waitState(t, m, "101 gone", func(s Snapshot) bool { _, ok := statusOf(s, "adb:emu-1:101"); return !ok })
	if err := d.WaitClosed(); err != nil {
		t.Fatalf("session to a vanished VM: %v", err)
	}
	// A device is plugged in, then unplugged.
	s.AddDevice("emu-2", "device")
	s.AddProcess("emu-2", p201)
	waitState(t, m, "emu-2", func(s Snapshot) bool { _, ok := statusOf(s, "adb:emu-2:201"); return ok })
	s.RemoveDevice("emu-2")
	waitState(t, m, "emu-2 gone", func(s Snapshot) bool { return len(s.VMs) == 1 })
	d.Close()
	stop()
	// sel was open before and is closed by the Manager.
	waitCount(t, "goroutines", g0, runtime.NumGoroutine)
	waitCount(t, "fds", f0-1, func() int { return countFDs(t) })
}

// One process of one device.
func TestADBSourceOnePID(t *testing.T) {
	s := startADB(t)
	s.AddDevice("emu-1", "device")
	s.AddProcess("emu-1", fakeProc(t, 101, "a"))
	s.AddProcess("emu-1", fakeProc(t, 102, "b"))
	src, err := ParseSpec("adb:emu-1:102", SpecOptions{ADBAddr: s.Addr(), ScanInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	vms, err := Discover(context.Background(), src, 500*time.Millisecond)
	if err != nil || len(vms) != 1 || vms[0].Key != "adb:emu-1:102" || vms[0].Name != "b" {
		t.Fatalf("%+v, %v", vms, err)
	}
}

// Error paths against Debian's real adb server on a private port.
func TestRealADBServerErrors(t *testing.T) {
	adb, err := exec.LookPath("adb")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("adb not found and CI=true (apt-get install adb)")
		}
		t.Skip("adb not found")
	}
	srv, err := adbserver.Start()
	if err != nil {
		t.Fatalf("%s: %v", adb, err)
	}
	t.Cleanup(func() { srv.Stop() }) //nolint:errcheck // its output is shown on failure
	c := &ADBClient{Addr: srv.Addr()}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if v, err := c.Version(ctx); err != nil || v <= 0 {
		t.Fatalf("Version: %d, %v", v, err)
	}
	ds, err := c.Devices(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) > 0 {
		t.Skipf("a device is connected here: %+v", ds)
	}
	if _, err := c.DialJDWP(ctx, "", 1234); err == nil || !strings.Contains(err.Error(), "no Android device or emulator is connected") {
		t.Errorf("no device: %v", err)
	}
	if _, err := c.DialJDWP(ctx, "nosuch", 1234); err == nil || !strings.Contains(err.Error(), `device "nosuch" is not connected`) {
		t.Errorf("unknown serial: %v", err)
	}
	if err := c.TrackJDWP(ctx, "nosuch", func([]int) {}); err == nil || !strings.Contains(err.Error(), "nosuch") {
		t.Errorf("track-jdwp, unknown serial: %v", err)
	}
	// The source keeps retrying quietly and reports nothing.
	vms, err := Discover(ctx, &ADB{Client: c, Retry: 50 * time.Millisecond}, 300*time.Millisecond)
	if err != nil || len(vms) != 0 {
		t.Fatalf("%+v, %v", vms, err)
	}
}
