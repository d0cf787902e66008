package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/adbdevice"
	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/ddm"
	"github.com/jdwpaccel/jdwpaccel/ddmtap/fakevm"
	"github.com/jdwpaccel/jdwpaccel/internal/adbserver"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/rs/zerolog"
)

// These tests run the real adb (Debian's "adb" package): a real adb server
// on a private port, a fake device it connects to (adbdevice), and
// "jdwpaccel adb" in front of the server. Without adb they skip, except
// under CI=true.

func requireADB(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("adb"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("adb is missing and CI=true: apt-get install -y adb")
		}
		t.Skip("adb is not installed (apt-get install -y adb)")
	}
}

// adb runs the adb client against the server on port and returns its
// output. Its output goes to a file, not a pipe: "adb start-server" leaves
// a daemon behind that would hold a pipe open.
func adb(ctx context.Context, t *testing.T, port int, args ...string) (string, error) {
	t.Helper()
	out, err := os.CreateTemp(t.TempDir(), "adb")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd := exec.CommandContext(ctx, "adb", append([]string{"-P", strconv.Itoa(port)}, args...)...)
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "ANDROID_ADB_SERVER_PORT", "ADB_SERVER_SOCKET", "ANDROID_SERIAL", "ADB_VENDOR_KEYS":
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	cmd.Stdout, cmd.Stderr = out, out
	err = cmd.Run()
	b, rerr := os.ReadFile(out.Name())
	if rerr != nil {
		t.Fatal(rerr)
	}
	if err != nil {
		return string(b), fmt.Errorf("adb -P %d %s: %w: %s", port, strings.Join(args, " "), err, b)
	}
	return string(b), nil
}

func mustADB(ctx context.Context, t *testing.T, port int, args ...string) string {
	t.Helper()
	out, err := adb(ctx, t, port, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// startADBServer starts a real adb server on a port the kernel chose; it
// is stopped when the test ends.
func startADBServer(ctx context.Context, t *testing.T) int {
	t.Helper()
	srv, err := adbserver.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Errorf("adb server: %v: %s", err, srv.Output())
		}
	})
	return srv.Port
}

// startFakeDevice serves a fake device whose processes lead to addrs
// (PIDs from 4001); it returns the device's address.
func startFakeDevice(t *testing.T, addrs ...string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := adbdevice.Config{Logger: zerolog.Nop()}
	for i, a := range addrs {
		cfg.Processes = append(cfg.Processes, adbdevice.Process{PID: 4001 + i, Name: fmt.Sprintf("com.example.app%d", i), Addr: a})
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- adbdevice.New(cfg).Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("fake device: %v", err)
		}
	})
	return ln.Addr().String()
}

// startADB starts a fake DDM VM, a fake device whose first process leads to
// it (and the others to extra) and an adb server connected to the device;
// it returns the test's context, the VM's address, the device's address and
// the adb server's port.
func startADB(t *testing.T, extra ...string) (ctx context.Context, vm, dev string, up int) {
	t.Helper()
	requireADB(t)
	ctx = testCtx(t)
	vm = jdwptest.StartDDMVM(t, fakeDeviceVM).Addr()
	dev = startFakeDevice(t, append([]string{vm}, extra...)...)
	up = startADBServer(ctx, t)
	connectDevice(ctx, t, up, dev)
	return ctx, vm, dev, up
}

// connectDevice makes the adb server on port connect to the fake device
// and waits until adb says it is a "device".
func connectDevice(ctx context.Context, t *testing.T, port int, dev string) {
	t.Helper()
	out := mustADB(ctx, t, port, "connect", dev)
	if !strings.Contains(out, "connected to") {
		t.Fatalf("adb connect %s: %s", dev, out)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	mustADB(wctx, t, port, "-s", dev, "wait-for-device")
}

// startFront runs "jdwpaccel adb" in-process in front of the adb server on
// upstream; it returns the front's port, its live page URL, its log, and
// a function that stops it (also called when the test ends).
func startFront(t *testing.T, upstream int, extra ...string) (port int, url string, logs *jdwptest.Buffer, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	logs = &jdwptest.Buffer{}
	args := append([]string{"adb", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:" + strconv.Itoa(upstream),
		"--http-addr", "127.0.0.1:0", "--log-format", "json", "--log-level", "debug"}, extra...)
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, args, &env{stdout: io.Discard, stderr: pw})
		pw.Close()
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if code := <-done; code != exitOK {
				t.Errorf("adb front exited %d after cancel; log:\n%s", code, logs)
			}
		})
	}
	t.Cleanup(stop)
	found := make(chan string, 1)
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			logs.Write(append(sc.Bytes(), '\n'))
			var rec map[string]any
			if json.Unmarshal(sc.Bytes(), &rec) != nil {
				continue
			}
			switch rec["message"] {
			case "live monitor":
				urls <- rec["url"].(string)
			case "adb front listening; point adb clients here":
				found <- rec["listen"].(string)
			}
		}
		io.Copy(io.Discard, pr) //nolint:errcheck // drain after a scanner error
	}()
	select {
	case url = <-urls:
	case <-time.After(10 * time.Second):
		t.Fatalf("the front did not log its page's URL; log:\n%s", logs)
	}
	var addr string
	select {
	case addr = <-found:
	case <-time.After(10 * time.Second):
		t.Fatalf("the front did not log its listen address; log:\n%s", logs)
	}
	_, p, _ := net.SplitHostPort(addr)
	port, _ = strconv.Atoi(p)
	return port, url, logs, stop
}

// sameOutput runs the same adb command against both servers.
// fakeDeviceVM is the fake DDM VM (ART profile) of the fake device's
// first process: its DDM pid is 4001.
var fakeDeviceVM = fakevm.Config{Profile: fakevm.ART, PID: 4001, Logger: zerolog.Nop()}

func sameOutput(ctx context.Context, t *testing.T, direct, front int, args ...string) string {
	t.Helper()
	d := mustADB(ctx, t, direct, args...)
	f := mustADB(ctx, t, front, args...)
	if d != f {
		t.Errorf("adb %s differs through the front:\n--- direct\n%s\n--- front\n%s", strings.Join(args, " "), d, f)
	}
	return f
}

// helloThroughForward attaches to a forward's port as a DDM client would:
// JDWP handshake, then a DDM HELO; it returns the application name the VM
// reported.
func helloThroughForward(t *testing.T, port string) string {
	t.Helper()
	c, app := attachHello(t, port)
	c.Close()
	return app
}

// attachHello is helloThroughForward keeping the connection open.
func attachHello(t *testing.T, port string) (net.Conn, string) {
	t.Helper()
	d, err := jdwptest.Attach(net.JoinHostPort("127.0.0.1", port))
	if err != nil {
		t.Fatalf("handshake through the forward: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	p, err := d.Call(jdwp.CmdDDMChunk, ddm.AppendPayload(nil, ddm.Hello{ClientVersion: 1}))
	if err != nil {
		t.Fatalf("waiting for the HELO reply: %v", err)
	}
	it := ddm.NewChunks(p.Body())
	ch, ok := it.Next()
	if !ok {
		t.Fatalf("empty HELO reply")
	}
	pl, err := ddm.Decode(ddm.VMToHost, ch)
	if err != nil {
		t.Fatal(err)
	}
	h, ok := pl.(ddm.Hello)
	if !ok {
		t.Fatalf("HELO answered with %T", pl)
	}
	return d.Conn(), h.AppName
}

// TestADBFrontRealServer: through the front, a real adb client sees the
// same devices, JDWP processes and shell answers as from the adb server
// itself; "forward tcp:0 jdwp:PID" is executed by the front (listed with
// the server's own forwards, removable), and its stream reaches the VM
// behind the fake device through the relay, with the device and pid in
// the log and the DDM traffic on the page.
func TestADBFrontRealServer(t *testing.T) {
	ctx, _, dev, up := startADB(t, "127.0.0.1:1")
	front, url, logs, _ := startFront(t, up)
	url = strings.TrimSuffix(url, "/")

	devs := sameOutput(ctx, t, up, front, "devices", "-l")
	if !strings.Contains(devs, dev) || !strings.Contains(devs, "model:jdwpaccel_fake") {
		t.Errorf("adb devices -l through the front:\n%s", devs)
	}
	if got := sameOutput(ctx, t, up, front, "jdwp"); got != "4001\n4002\n" {
		t.Errorf("adb jdwp through the front = %q, want the fake device's pids", got)
	}
	if got := sameOutput(ctx, t, up, front, "shell", "getprop", "ro.build.version.sdk"); strings.TrimSpace(got) != "30" {
		t.Errorf("getprop ro.build.version.sdk = %q", got)
	}
	sameOutput(ctx, t, up, front, "-s", dev, "shell", "pidof", "com.example.app0")
	sameOutput(ctx, t, up, front, "get-serialno")

	// A forward that is not JDWP goes to the adb server; a JDWP one is the
	// front's.
	plain := strings.TrimSpace(mustADB(ctx, t, front, "forward", "tcp:0", "tcp:7777"))
	port := strings.TrimSpace(mustADB(ctx, t, front, "forward", "tcp:0", "jdwp:4001"))
	if _, err := strconv.Atoi(port); err != nil {
		t.Fatalf("forward tcp:0 jdwp:4001 printed %q", port)
	}
	if direct := mustADB(ctx, t, up, "forward", "--list"); strings.Contains(direct, "jdwp:4001") || !strings.Contains(direct, "tcp:"+plain+" tcp:7777") {
		t.Errorf("the adb server's own forwards:\n%s", direct)
	}
	list := mustADB(ctx, t, front, "forward", "--list")
	for _, want := range []string{dev + " tcp:" + plain + " tcp:7777\n", dev + " tcp:" + port + " jdwp:4001\n"} {
		if !strings.Contains(list, want) {
			t.Errorf("forward --list through the front lacks %q:\n%s", want, list)
		}
	}
	if _, err := adb(ctx, t, front, "forward", "--no-rebind", "tcp:"+port, "jdwp:4002"); err == nil {
		t.Error("forward --no-rebind over the front's forward succeeded")
	}
	if out, err := adb(ctx, t, front, "-s", "no-such-device", "forward", "tcp:0", "jdwp:4001"); err == nil || !strings.Contains(out, "not found") {
		t.Errorf("forward to a missing device: %v\n%s", err, out)
	}
	// Rebinding moves the forward to another process, and back.
	mustADB(ctx, t, front, "forward", "tcp:"+port, "jdwp:4002")
	if list := mustADB(ctx, t, front, "forward", "--list"); !strings.Contains(list, "tcp:"+port+" jdwp:4002\n") {
		t.Errorf("after rebinding to jdwp:4002:\n%s", list)
	}
	mustADB(ctx, t, front, "forward", "tcp:"+port, "jdwp:4001")

	c, app := attachHello(t, port)
	if app != "com.example.fake" {
		t.Errorf("HELO through the forward named %q", app)
	}
	jdwptest.Eventually(t, "the page showing adb:"+dev+":4001 connected, with its debugger", func() (bool, string) {
		vms, _ := pageVMs(t, url, false)
		v, ok := vms["adb:"+dev+":4001"]
		return ok && v.App == "com.example.fake" && v.DDM && len(v.Debuggers) == 1 && !strings.Contains(v.Status, "not connected"), fmt.Sprintf("%+v", vms)
	})
	c.Close()
	jdwptest.Eventually(t, "the relay's session log with device and pid", func() (bool, string) {
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, `"debugger session started"`) && strings.Contains(line, `"device":"`+dev+`"`) && strings.Contains(line, `"pid":4001`) {
				return true, ""
			}
		}
		return false, logs.String()
	})
	jdwptest.Eventually(t, "the DDM monitor of adb:"+dev+":4001 on the page", func() (bool, string) {
		vms, _ := pageVMs(t, url, false)
		v, ok := vms["adb:"+dev+":4001"]
		return ok && strings.Contains(fmt.Sprint(v), "com.example.fake"), fmt.Sprint(vms)
	})

	// A forward to a process whose VM is gone: the debugger's connection
	// is closed, and the front says why.
	dead := strings.TrimSpace(mustADB(ctx, t, front, "forward", "tcp:0", "jdwp:4002"))
	dc, err := net.DialTimeout("tcp", "127.0.0.1:"+dead, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	dc.SetDeadline(time.Now().Add(20 * time.Second))
	jdwp.WriteHandshake(dc) //nolint:errcheck // the front may close first
	if err := jdwp.ReadHandshake(dc); err == nil {
		t.Error("a handshake came back from a process whose VM is gone")
	}
	dc.Close()
	jdwptest.Eventually(t, "the front logging the failed stream", func() (bool, string) {
		return strings.Contains(logs.String(), "cannot open the JDWP stream for a forwarded debugger"), ""
	})

	mustADB(ctx, t, front, "forward", "--remove", "tcp:"+port)
	if list := mustADB(ctx, t, front, "forward", "--list"); strings.Contains(list, "jdwp:4001") {
		t.Errorf("forward --remove left it listed:\n%s", list)
	}
	if c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second); err == nil {
		c.Close()
		t.Error("the removed forward still accepts connections")
	}
	mustADB(ctx, t, front, "forward", "--remove-all")
	if direct := mustADB(ctx, t, up, "forward", "--list"); strings.TrimSpace(direct) != "" {
		t.Errorf("forward --remove-all through the front left the server's forwards:\n%s", direct)
	}
}

// TestADBFrontRealJDI attaches our JDI workload driver to a real OpenJDK
// VM behind the fake device, via "adb -P FRONT forward tcp:0 jdwp:PID":
// every stop's digest must equal a direct attach's.
func TestADBFrontRealJDI(t *testing.T) {
	requireADB(t)
	b := jdwptest.JavaBuild(t)
	ctx := testCtx(t)
	opts := javavm.DriverOptions{Profile: javavm.ProfileIdeaLike, Debuggee: javavm.Deep, Steps: 4, Warmup: 1, Dump: true}
	opts.Addr = jdwptest.StartJava(t, b, javavm.Deep).Addr()
	direct, err := javavm.RunDriver(ctx, b, opts)
	if err != nil {
		t.Fatal(err)
	}

	dev := startFakeDevice(t, jdwptest.StartJava(t, b, javavm.Deep).Addr(), jdwptest.StartJava(t, b, javavm.Deep).Addr())
	up := startADBServer(ctx, t)
	connectDevice(ctx, t, up, dev)
	front, _, logs, _ := startFront(t, up)

	// The adb server's own forward, for reference: no front.
	opts.Addr = "127.0.0.1:" + strings.TrimSpace(mustADB(ctx, t, up, "forward", "tcp:0", "jdwp:4002"))
	viaADB, err := javavm.RunDriver(ctx, b, opts)
	if err != nil {
		t.Fatal(err)
	}
	port := strings.TrimSpace(mustADB(ctx, t, front, "forward", "tcp:0", "jdwp:4001"))
	opts.Addr = "127.0.0.1:" + port
	viaFront, err := javavm.RunDriver(ctx, b, opts)
	if err != nil {
		t.Fatalf("%v\nfront log:\n%s", err, logs)
	}
	if len(direct.Stops) != len(viaFront.Stops) || len(direct.Stops) == 0 {
		t.Fatalf("direct saw %d stops, through adb and the front %d", len(direct.Stops), len(viaFront.Stops))
	}
	for i := range direct.Stops {
		if d, p := direct.Stops[i], viaFront.Stops[i]; d.Digest != p.Digest {
			t.Fatalf("stop %d differs:\n--- direct\n%s\n--- through adb and the front\n%s", i, d.Text, p.Text)
		}
	}
	if !strings.Contains(logs.String(), `"message":"debugger session started"`) {
		t.Errorf("the stream did not run through the relay; log:\n%s", logs)
	}
	for i := range direct.Stops {
		if d, p := direct.Stops[i], viaADB.Stops[i]; d.Digest != p.Digest {
			t.Fatalf("stop %d differs through the adb server's own forward:\n--- direct\n%s\n--- through adb\n%s", i, d.Text, p.Text)
		}
	}
	t.Logf("median step: direct %v, through the adb server's forward %v, through the adb server and the front %v",
		jdwptest.MedianStep(direct), jdwptest.MedianStep(viaADB), jdwptest.MedianStep(viaFront))
}

// TestADBFrontSurvivesUpstreamRestart: the adb server is killed and
// started again (and the device reconnected); the front answers the next
// requests, and a forward it made before the restart still reaches the VM.
func TestADBFrontSurvivesUpstreamRestart(t *testing.T) {
	ctx, _, dev, up := startADB(t)
	front, _, logs, _ := startFront(t, up)
	port := strings.TrimSpace(mustADB(ctx, t, front, "forward", "tcp:0", "jdwp:4001"))
	if app := helloThroughForward(t, port); app != "com.example.fake" {
		t.Fatalf("HELO before the restart named %q", app)
	}

	mustADB(ctx, t, up, "kill-server")
	if out, err := adb(ctx, t, front, "devices"); err == nil {
		t.Errorf("adb devices through the front with no adb server behind it succeeded:\n%s", out)
	}
	// A debugger attaching to the forward meanwhile is refused (its
	// connection reset), not left with a handshake cut short.
	if c, err := net.Dial("tcp", "127.0.0.1:"+port); err == nil {
		c.SetDeadline(time.Now().Add(jdwptest.Timeout))
		c.Write([]byte(jdwp.Handshake))
		got, err := io.ReadAll(c)
		c.Close()
		if !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("a debugger attaching with no adb server read %q, %v; want its connection reset", got, err)
		}
	}
	mustADB(ctx, t, up, "start-server")
	connectDevice(ctx, t, up, dev)

	if got := sameOutput(ctx, t, up, front, "jdwp"); got != "4001\n" {
		t.Errorf("adb jdwp after the restart = %q", got)
	}
	if app := helloThroughForward(t, port); app != "com.example.fake" {
		t.Errorf("HELO after the restart named %q; log:\n%s", app, logs)
	}
}

// TestADBFrontJournal: a stream through the front is journaled like a
// proxy session.
func TestADBFrontJournal(t *testing.T) {
	ctx, _, _, up := startADB(t)
	path := filepath.Join(t.TempDir(), "front.jsonl")
	front, _, logs, stop := startFront(t, up, "--journal", path)
	port := strings.TrimSpace(mustADB(ctx, t, front, "forward", "tcp:0", "jdwp:4001"))
	if app := helloThroughForward(t, port); app != "com.example.fake" {
		t.Fatalf("HELO named %q", app)
	}
	stop()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"DDM.Chunk"`) {
		t.Errorf("the journal lacks the stream's DDM chunk:\n%s\nlog:\n%s", b, logs)
	}
}

// TestFakeDeviceCommand runs "jdwpaccel fakedevice" with a --prop and two
// processes: a real adb server connects to it and sees them.
func TestFakeDeviceCommand(t *testing.T) {
	requireADB(t)
	ctx := testCtx(t)
	var out, errOut jdwptest.Buffer
	dctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- run(dctx, []string{"fakedevice", "--listen", "127.0.0.1:0", "--process", "com.a=127.0.0.1:1", "--process", "com.b=127.0.0.1:2",
			"--prop", "ro.product.model=Pixel_Fake", "--pid-base", "700", "--log-format", "json"}, &env{stdout: &out, stderr: &errOut})
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != exitOK {
			t.Errorf("fakedevice exited %d; stderr:\n%s", code, errOut.String())
		}
	})
	var dev string
	jdwptest.Eventually(t, "fakedevice printing its address", func() (bool, string) {
		line, _, _ := strings.Cut(out.String(), "\n")
		f := strings.Fields(line)
		if len(f) < 5 || f[0] != "fake" {
			return false, out.String()
		}
		dev = f[4]
		return true, ""
	})
	up := startADBServer(ctx, t)
	connectDevice(ctx, t, up, dev)
	if got := mustADB(ctx, t, up, "-s", dev, "jdwp"); got != "700\n701\n" {
		t.Errorf("adb jdwp = %q", got)
	}
	if got := mustADB(ctx, t, up, "-s", dev, "shell", "getprop", "ro.product.model"); got != "Pixel_Fake\n" {
		t.Errorf("getprop ro.product.model = %q", got)
	}
	if got := mustADB(ctx, t, up, "-s", dev, "shell", "pidof", "com.b"); got != "701\n" {
		t.Errorf("pidof com.b = %q", got)
	}
	if got := mustADB(ctx, t, up, "-s", dev, "shell", "cat", "/proc/701/cmdline"); strings.TrimRight(got, "\x00\r\n") != "com.b" {
		t.Errorf("cat /proc/701/cmdline = %q, want com.b (discovery's name of the process)", got)
	}
	if got := mustADB(ctx, t, up, "devices", "-l"); !strings.Contains(got, "model:Pixel_Fake") {
		t.Errorf("devices -l:\n%s", got)
	}
}
