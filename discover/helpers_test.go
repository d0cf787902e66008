package discover

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/rs/zerolog"
)

// fakeVM is a scripted VM that answers every command with a reply whose
// body is its name.
type fakeVM struct {
	*jdwptest.VM
	name string
}

func startFakeVM(t testing.TB, name string) *fakeVM {
	t.Helper()
	return &fakeVM{VM: jdwptest.StartVM(t, jdwptest.Script{Default: jdwptest.Body([]byte(name))}), name: name}
}

func (v *fakeVM) vm(key string) VM {
	return VM{Key: key, Kind: KindStatic, Name: v.name, Addr: v.Addr(), Dial: dialTCP(v.Addr())}
}

// testSource reports whatever the test sets.
type testSource struct {
	mu     sync.Mutex // guards report, vms
	report func([]VM)
	vms    []VM
	ready  chan struct{} // closed when Run started
}

func newTestSource() *testSource { return &testSource{ready: make(chan struct{})} }

func (s *testSource) Run(ctx context.Context, report func([]VM)) error {
	s.mu.Lock()
	s.report = report
	report(s.vms)
	s.mu.Unlock()
	close(s.ready)
	<-ctx.Done()
	s.mu.Lock()
	s.report = nil
	s.mu.Unlock()
	return nil
}

func (s *testSource) set(vms ...VM) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.vms = vms
	if s.report != nil {
		s.report(vms)
	}
}

// relayServe is the ServeFunc the proxy uses, minus its hooks.
func relayServe(ctx context.Context, vm VM, dial DialFunc, ln net.Listener) error {
	return relay.NewServer(relay.Config{DialVM: relay.Plain(dial), Logger: zerolog.Nop(), HandshakeTimeout: 5 * time.Second}).Serve(ctx, ln)
}

// ask sends VirtualMachine.Version and returns the reply body (the fake
// VM's name).
func ask(d *jdwptest.Debugger) (string, error) {
	p, err := d.Call(jdwp.CmdVirtualMachineVersion, nil)
	if err != nil {
		return "", err
	}
	return string(p.Body()), nil
}

// askVia attaches to addr, asks once and detaches.
func askVia(addr string) (string, error) {
	d, err := jdwptest.Attach(addr)
	if err != nil {
		return "", err
	}
	defer d.Close()
	return ask(d)
}

// waitState waits until cond holds for m's snapshot.
func waitState(t testing.TB, m *Manager, what string, cond func(Snapshot) bool) Snapshot {
	t.Helper()
	var s Snapshot
	jdwptest.Await(t, what, m.Changed, func() (bool, string) {
		s = m.List()
		return cond(s), fmt.Sprintf("%+v", s)
	})
	return s
}

// startManager runs a Manager until the test ends.
func startManager(t testing.TB, cfg Config) (*Manager, func()) {
	t.Helper()
	if cfg.Serve == nil {
		cfg.Serve = relayServe
	}
	cfg.Logger = zerolog.Nop()
	m, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return m, stop
}

func listenLocal(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// countFDs counts this process's open sockets. (Other fds come and go on
// their own: io.Copy between TCP connections splices through pipes that a
// pool keeps.)
func countFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(l, "socket:") {
			n++
		}
	}
	return n
}

// waitCount waits until f() <= want or fails after a deadline, polling:
// goroutine and fd counts have no change signal.
func waitCount(t testing.TB, what string, want int, f func() int) {
	t.Helper()
	jdwptest.Eventually(t, fmt.Sprintf("%s <= %d", what, want), func() (bool, string) {
		got := f()
		if got <= want {
			return true, ""
		}
		state := fmt.Sprintf("%s: %d", what, got)
		if what == "goroutines" {
			buf := make([]byte, 1<<20)
			state += "\n" + string(buf[:runtime.Stack(buf, true)])
		}
		return false, state
	})
}

func portOf(addr string) int {
	_, p, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(p)
	return n
}
