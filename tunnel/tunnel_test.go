package tunnel

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/logsink"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"
)

func TestSplit(t *testing.T) {
	for line, want := range map[string][]string{
		"kubectl port-forward pod/app 8720:8720":              {"kubectl", "port-forward", "pod/app", "8720:8720"},
		"  ssh  -N\t-L 8720:127.0.0.1:8720 host ":             {"ssh", "-N", "-L", "8720:127.0.0.1:8720", "host"},
		`sh -c 'exec kubectl port-forward "$POD" 8720 | cat'`: {"sh", "-c", `exec kubectl port-forward "$POD" 8720 | cat`},
		`a "b c" d\ e "x\"y\\z\n" ''`:                         {"a", "b c", "d e", `x"y\z\n`, ""},
		`ssh -o 'ProxyCommand=nc %h %p' host`:                 {"ssh", "-o", "ProxyCommand=nc %h %p", "host"},
		`pre'quoted'post "$"HOME \$x`:                         {"prequotedpost", "$HOME", "$x"},
	} {
		got, err := Split(line)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("Split(%q) = %q, %v; want %q", line, got, err, want)
		}
	}
	for _, line := range []string{"", "   ", "a 'b", `a "b`, `a\`, "a | b", "a; b", "a && b", "echo $HOME", "a `b`", "a > f", "a < f", "(a)", "a &"} {
		if got, err := Split(line); err == nil {
			t.Errorf("Split(%q) = %q; want an error", line, got)
		}
	}
}

var msg = logsink.Message

// buildFwd builds the test tunnel (testdata/fwd) into a temporary
// directory.
func buildFwd(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fwd")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/fwd").CombinedOutput(); err != nil {
		t.Fatalf("go build fwd: %v\n%s", err, out)
	}
	return bin
}

// echoServer answers each connection with what it reads: the far end, as
// far as a tunnel can tell.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }() //nolint:errcheck // ends with the test
		}
	}()
	return ln.Addr().String()
}

// tunnelPort is a port for the tunnel command to bind, again at each
// restart, as kubectl port-forward binds its local port: the command,
// not the test, must bind it, so the test cannot hand it a listener.
func tunnelPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// echoThrough sends a line through the tunnel at addr and reads it back.
func echoThrough(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "ping\n"); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "ping\n" {
		return errors.New("echoed " + strconv.Quote(line))
	}
	return nil
}

func run(t *testing.T, cfg Config) (*Tunnel, *logsink.Sink) {
	t.Helper()
	s := logsink.New()
	cfg.Logger = zerolog.New(s)
	tun := New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); tun.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return tun, s
}

// TestRestartsOnExit: a tunnel command that dies every second is
// restarted each time; once it is up again, connections through it work;
// its output is logged, stderr at warn, a line it repeats only once.
func TestRestartsOnExit(t *testing.T) {
	fwd, target, addr := buildFwd(t), echoServer(t), tunnelPort(t)
	m := NewMetrics(prometheus.NewRegistry())
	tun, logs := run(t, Config{Argv: []string{fwd, "-listen", addr, "-to", target, "-die", "1s"}, Addr: addr, MinBackoff: 50 * time.Millisecond, Metrics: m})
	for i := range 3 {
		if err := tun.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := echoThrough(addr); err != nil {
			t.Errorf("through the tunnel, start %d: %v", i+1, err)
		}
		logs.Wait(t, "of the command's exit", i+1, 10*time.Second, msg("the tunnel command exited"))
	}
	logs.Wait(t, "of the 3rd start up", 3, 10*time.Second, msg("tunnel up: the far end answers through it"))
	said := func(stream, prefix, level string) func(map[string]any) bool {
		return func(r map[string]any) bool {
			out, _ := r[LogOutput].(string)
			return r[LogStream] == stream && strings.HasPrefix(out, prefix) && r["level"] == level
		}
	}
	if n := logs.Count(said("stderr", "fwd: lost connection to pod", "warn")); n != 1 {
		t.Errorf("the command's repeated stderr line logged %d times, want once (then thinned); log:\n%s", n, logs)
	}
	if n := logs.Count(said("stdout", "Forwarding from", "info")); n != 1 {
		t.Errorf("the command's repeated stdout line logged %d times, want once; log:\n%s", n, logs)
	}
	if starts, exits := testutil.ToFloat64(m.starts), testutil.ToFloat64(m.ends[EndExited]); starts < 3 || exits < 2 || starts > exits+1 {
		t.Errorf("metrics: %v starts, %v exits; want at least 3 and 2, and at most one start not ended", starts, exits)
	}
	// It was up each time before it died: the backoff stayed at its least.
	if n := logs.Count(func(r map[string]any) bool {
		return r["message"] == "restarting the tunnel command" && r[LogBackoff] != 50.0
	}); n != 0 {
		t.Errorf("%d restarts after a longer backoff; log:\n%s", n, logs)
	}
}

// TestRestartsWhenFarEndGone: a tunnel command that keeps running but no
// longer leads to the far end is stopped, with what it started (its
// process group: here a shell's background child, which holds the port),
// and started again.
func TestRestartsWhenFarEndGone(t *testing.T) {
	fwd, target, addr := buildFwd(t), echoServer(t), tunnelPort(t)
	var broken atomic.Bool
	check := func(context.Context) error {
		if broken.Load() {
			return errors.New("no far end")
		}
		return echoThrough(addr)
	}
	tun, logs := run(t, Config{Argv: []string{"sh", "-c", fwd + " -listen " + addr + " -to " + target + " & wait"}, Addr: addr,
		Check: check, CheckEvery: 50 * time.Millisecond, MinBackoff: 50 * time.Millisecond})
	if err := tun.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	broken.Store(true)
	logs.Wait(t, "of the stop", 1, 10*time.Second, func(r map[string]any) bool {
		m, _ := r["message"].(string)
		return strings.HasPrefix(m, "tunnel command stopped: the far end did not answer through it 2 times")
	})
	if tun.Up() {
		t.Error("the tunnel is up while the far end does not answer")
	}
	broken.Store(false)
	// Up again only if the new command could bind the port: the old
	// one's child is gone.
	logs.Wait(t, "of the 2nd start up", 2, 10*time.Second, msg("tunnel up: the far end answers through it"))
	if err := echoThrough(addr); err != nil {
		t.Errorf("through the restarted tunnel: %v", err)
	}
}

// TestBackoff: a command that never comes up is restarted after waits
// that double, up to MaxBackoff.
func TestBackoff(t *testing.T) {
	_, logs := run(t, Config{Argv: []string{"sh", "-c", "echo no such pod >&2; exit 1"}, Addr: "127.0.0.1:1",
		MinBackoff: 10 * time.Millisecond, MaxBackoff: 40 * time.Millisecond})
	restart := msg("restarting the tunnel command")
	logs.Wait(t, "of restarts", 5, 10*time.Second, restart)
	var got []float64
	for _, r := range logs.Where(restart)[:5] {
		got = append(got, r[LogBackoff].(float64))
	}
	if want := []float64{10, 20, 40, 40, 40}; !reflect.DeepEqual(got, want) {
		t.Errorf("backoffs %v ms, want %v", got, want)
	}
}
