package discover

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/rs/zerolog"
)

// fakeVM is a JDWP "VM" that answers every command with a reply whose
// body is its name.
type fakeVM struct {
	name string
	ln   net.Listener

	mu    sync.Mutex // guards conns
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

func startFakeVM(t testing.TB, name string) *fakeVM {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	v := &fakeVM{name: name, ln: ln, conns: map[net.Conn]bool{}}
	v.wg.Add(1)
	go func() {
		defer v.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			v.mu.Lock()
			v.conns[c] = true
			v.mu.Unlock()
			v.wg.Add(1)
			go func() {
				defer v.wg.Done()
				v.serve(c)
				c.Close()
				v.mu.Lock()
				delete(v.conns, c)
				v.mu.Unlock()
			}()
		}
	}()
	t.Cleanup(v.stop)
	return v
}

func (v *fakeVM) addr() string { return v.ln.Addr().String() }

func (v *fakeVM) serve(c net.Conn) {
	br := bufio.NewReader(c)
	if jdwp.ReadHandshake(br) != nil || jdwp.WriteHandshake(c) != nil {
		return
	}
	r := jdwp.NewReader(br, 0)
	var out []byte
	for {
		p, err := r.Next()
		if err != nil {
			return
		}
		if p.IsReply() {
			continue
		}
		out = jdwp.AppendReply(out[:0], p.ID(), 0, []byte(v.name))
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

func (v *fakeVM) stop() {
	v.ln.Close()
	v.mu.Lock()
	for c := range v.conns {
		c.Close()
	}
	v.mu.Unlock()
	v.wg.Wait()
}

func (v *fakeVM) vm(key string) VM {
	return VM{Key: key, Kind: KindStatic, Name: v.name, Addr: v.addr(), Dial: dialTCP(v.addr())}
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

// debugger is a minimal JDWP client.
type debugger struct {
	c  net.Conn
	r  *jdwp.Reader
	id uint32
}

// attach connects and exchanges the handshake.
func attach(addr string) (*debugger, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	if err := jdwp.WriteHandshake(c); err != nil {
		c.Close()
		return nil, err
	}
	if err := jdwp.ReadHandshake(br); err != nil {
		c.Close()
		return nil, err
	}
	return &debugger{c: c, r: jdwp.NewReader(br, 0)}, nil
}

// ask sends VirtualMachine.Version and returns the reply body (the fake
// VM's name).
func (d *debugger) ask() (string, error) {
	d.id++
	d.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := d.c.Write(jdwp.AppendCommand(nil, d.id, jdwp.Cmd{Set: 1, Cmd: 1}, nil)); err != nil {
		return "", err
	}
	for {
		p, err := d.r.Next()
		if err != nil {
			return "", err
		}
		if p.IsReply() && p.ID() == d.id {
			return string(p.Body()), nil
		}
	}
}

func (d *debugger) close() { d.c.Close() }

// waitClosed waits for the proxy to close the session (the fake VMs send
// nothing unasked) and says what happened instead if it does not.
func (d *debugger) waitClosed() error {
	d.c.SetDeadline(time.Now().Add(10 * time.Second))
	p, err := d.r.Next()
	switch {
	case err == nil:
		return fmt.Errorf("got a packet %v instead of the session's end", p)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return errors.New("the session was not closed")
	}
	return nil
}

// askVia attaches to addr, asks once and detaches.
func askVia(addr string) (string, error) {
	d, err := attach(addr)
	if err != nil {
		return "", err
	}
	defer d.close()
	return d.ask()
}

// waitState waits until cond holds for m's snapshot.
func waitState(t testing.TB, m *Manager, what string, cond func(Snapshot) bool) Snapshot {
	t.Helper()
	deadline := time.NewTimer(15 * time.Second)
	defer deadline.Stop()
	for {
		ch := m.Changed()
		s := m.List()
		if cond(s) {
			return s
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s; state: %+v", what, s)
		}
	}
}

// freePortBase returns a port with (probably) free ports after it.
func freePortBase(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	if p > 65000 {
		p -= 500
	}
	return p
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
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := f()
		if got <= want {
			return
		}
		if time.Now().After(deadline) {
			if what == "goroutines" {
				buf := make([]byte, 1<<20)
				t.Logf("%s", buf[:runtime.Stack(buf, true)])
			}
			t.Fatalf("%s: %d, want <= %d", what, got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func portOf(addr string) int {
	_, p, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(p)
	return n
}
