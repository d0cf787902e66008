package discover

import (
	"context"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
)

func statusOf(s Snapshot, key string) (Status, bool) {
	for _, v := range s.VMs {
		if v.Key == key {
			return v, true
		}
	}
	return Status{}, false
}

func TestSelectedPortSwitch(t *testing.T) {
	a, b := startFakeVM(t, "vm-a"), startFakeVM(t, "vm-b")
	src := newTestSource()
	sel := listenLocal(t)
	m, _ := startManager(t, Config{Source: src, PortBase: PortAuto, Selected: sel})
	<-src.ready

	// One VM: selected automatically.
	src.set(a.vm("a"))
	s := waitState(t, m, "a", func(s Snapshot) bool { return s.Selected == "a" })
	stA, _ := statusOf(s, "a")
	if stA.Port <= 0 || stA.Listen != "127.0.0.1:"+strconv.Itoa(stA.Port) {
		t.Fatalf("a has no port of its own: %+v", stA)
	}
	if got, err := askVia(sel.Addr().String()); err != nil || got != "vm-a" {
		t.Fatalf("current-VM port reached %q, %v; want vm-a", got, err)
	}

	// Two VMs, no selection: the current-VM port refuses, per-VM ports work.
	src.set(a.vm("a"), b.vm("b"))
	s = waitState(t, m, "a and b", func(s Snapshot) bool { return len(s.VMs) == 2 })
	if s.Selected != "" || !strings.Contains(s.SelectedWhy, "2 VMs") {
		t.Fatalf("selected %q (%s) with two VMs and no selection", s.Selected, s.SelectedWhy)
	}
	if got, err := askVia(sel.Addr().String()); err == nil {
		t.Fatalf("current-VM port reached %q with no VM selected", got)
	}
	stB, _ := statusOf(s, "b")
	if stB.Port == stA.Port || stB.Port <= 0 {
		t.Fatalf("ports: a %d, b %d", stA.Port, stB.Port)
	}
	if got, err := askVia(stB.Listen); err != nil || got != "vm-b" {
		t.Fatalf("b's port reached %q, %v", got, err)
	}

	// Select a by name, then switch to b by key: new connections follow,
	// a session already open stays on its VM.
	if _, err := m.Select("vm-a"); err != nil {
		t.Fatal(err)
	}
	held, err := jdwptest.Attach(sel.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if got, err := ask(held); err != nil || got != "vm-a" {
		t.Fatalf("selected a, reached %q, %v", got, err)
	}
	if _, err := m.Select("b"); err != nil {
		t.Fatal(err)
	}
	if got, err := askVia(sel.Addr().String()); err != nil || got != "vm-b" {
		t.Fatalf("selected b, reached %q, %v", got, err)
	}
	if got, err := ask(held); err != nil || got != "vm-a" {
		t.Fatalf("held session moved: %q, %v", got, err)
	}
	waitState(t, m, "a's session counted", func(s Snapshot) bool { st, _ := statusOf(s, "a"); return st.Sessions == 1 })
	if _, err := m.Select("nope"); err == nil {
		t.Fatal("Select(nope) succeeded")
	}

	// a disappears: its session ends, its port closes.
	src.set(b.vm("b"))
	waitState(t, m, "a gone", func(s Snapshot) bool { _, ok := statusOf(s, "a"); return !ok })
	if err := held.WaitClosed(); err != nil {
		t.Fatalf("session to a vanished VM: %v", err)
	}
	if c, err := net.Dial("tcp", stA.Listen); err == nil {
		c.Close()
		t.Fatal("a's port still listens")
	}

	// b selected explicitly and still there.
	if got, err := askVia(sel.Addr().String()); err != nil || got != "vm-b" {
		t.Fatalf("reached %q, %v", got, err)
	}
	// Select a gone VM's key fails; automatic goes back to the only VM.
	if _, err := m.Select("a"); err == nil {
		t.Fatal("selected a gone VM")
	}
	// a comes back: same key, same port as before; and the selection of
	// b by name still stands.
	src.set(a.vm("a"), b.vm("b"))
	s = waitState(t, m, "a back", func(s Snapshot) bool { return len(s.VMs) == 2 })
	if st, _ := statusOf(s, "a"); st.Port != stA.Port {
		t.Errorf("a came back on port %d, had %d", st.Port, stA.Port)
	}
	if s.Selected != "b" {
		t.Errorf("selected %q, want b", s.Selected)
	}
	if _, err := m.Select(""); err != nil {
		t.Fatal(err)
	}
	src.set(a.vm("a"))
	waitState(t, m, "auto a", func(s Snapshot) bool { return s.Selected == "a" })
	if got, err := askVia(sel.Addr().String()); err != nil || got != "vm-a" {
		t.Fatalf("reached %q, %v", got, err)
	}
}

// A selection by name follows the app across a restart (new key).
func TestSelectionFollowsName(t *testing.T) {
	a, b := startFakeVM(t, "app"), startFakeVM(t, "other")
	src := newTestSource()
	sel := listenLocal(t)
	m, _ := startManager(t, Config{Source: src, Selected: sel})
	<-src.ready
	src.set(a.vm("local:1"), b.vm("local:2"))
	waitState(t, m, "two", func(s Snapshot) bool { return len(s.VMs) == 2 })
	if _, err := m.Select("local:1"); err != nil {
		t.Fatal(err)
	}
	a2 := startFakeVM(t, "app")
	src.set(a2.vm("local:3"), b.vm("local:2"))
	s := waitState(t, m, "restart", func(s Snapshot) bool { _, ok := statusOf(s, "local:3"); return ok })
	if s.Selected != "local:3" {
		t.Fatalf("selected %q (%s), want the restarted app", s.Selected, s.SelectedWhy)
	}
	if got, err := askVia(sel.Addr().String()); err != nil || got != "app" {
		t.Fatalf("reached %q, %v", got, err)
	}
}

// A VM reported by a connect probe stays while it has sessions (HotSpot
// stops listening while a debugger is attached) and goes after.
func TestKeepWhileInUse(t *testing.T) {
	a := startFakeVM(t, "a")
	src := newTestSource()
	sel := listenLocal(t)
	m, _ := startManager(t, Config{Source: src, Selected: sel})
	<-src.ready
	vm := a.vm("tcp:a")
	vm.keepWhileInUse = true
	src.set(vm)
	waitState(t, m, "a", func(s Snapshot) bool { return s.Selected == "tcp:a" })
	d, err := jdwptest.Attach(sel.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ask(d); err != nil {
		t.Fatal(err)
	}
	src.set()
	s := waitState(t, m, "busy", func(s Snapshot) bool { st, ok := statusOf(s, "tcp:a"); return ok && st.Busy })
	if len(s.VMs) != 1 {
		t.Fatal(s)
	}
	if _, err := ask(d); err != nil {
		t.Fatalf("session cut while the VM is in use: %v", err)
	}
	d.Close()
	waitState(t, m, "gone", func(s Snapshot) bool { return len(s.VMs) == 0 })
}

// Many VMs with sessions come and go without leaking goroutines or fds.
func TestManyVMsNoLeaks(t *testing.T) {
	const n = 40
	vms := make([]*fakeVM, n)
	for i := range vms {
		vms[i] = startFakeVM(t, "vm")
	}
	// Warm up lazily started runtime goroutines and pools.
	runtime.GC()
	g0, f0 := runtime.NumGoroutine(), countFDs(t)

	src := newTestSource()
	sel := listenLocal(t)
	m, stop := startManager(t, Config{Source: src, Selected: sel, PortBase: PortAuto})
	<-src.ready
	list := make([]VM, n)
	for i, v := range vms {
		list[i] = v.vm("vm" + string(rune('A'+i)))
	}
	for round := 0; round < 2; round++ {
		src.set(list...)
		s := waitState(t, m, "all", func(s Snapshot) bool { return len(s.VMs) == n })
		var ds []*jdwptest.Debugger
		for _, st := range s.VMs {
			if st.Listen == "" {
				t.Fatalf("%s has no port", st.Key)
			}
			d, err := jdwptest.Attach(st.Listen)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ask(d); err != nil {
				t.Fatal(err)
			}
			ds = append(ds, d)
		}
		src.set()
		waitState(t, m, "none", func(s Snapshot) bool { return len(s.VMs) == 0 })
		for _, d := range ds {
			if err := d.WaitClosed(); err != nil {
				t.Fatalf("session to a vanished VM: %v", err)
			}
			d.Close()
		}
	}
	stop()
	waitCount(t, "goroutines", g0, runtime.NumGoroutine)
	waitCount(t, "fds", f0, func() int { return countFDs(t) })
}

func TestManagerConfig(t *testing.T) {
	if _, err := NewManager(Config{}); err == nil {
		t.Fatal("empty config accepted")
	}
	if _, err := NewManager(Config{Source: Static{Addr: "x:1"}, Serve: relayServe, PortBase: 70000}); err == nil {
		t.Fatal("bad port base accepted")
	}
	m, err := NewManager(Config{Source: Static{Addr: "127.0.0.1:1"}, Serve: relayServe})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(ctx); err == nil {
		t.Fatal("second Run accepted")
	}
}

// A per-VM port range whose ports are all taken leaves the VM without a
// port of its own (reachable through the current-VM port), never on a
// port outside the range.
func TestPortBaseAllTaken(t *testing.T) {
	a := startFakeVM(t, "vm-a")
	busy := listenLocal(t) // holds the range's one port for the whole test
	base := busy.Addr().(*net.TCPAddr).Port
	src := newTestSource()
	sel := listenLocal(t)
	m, _ := startManager(t, Config{Source: src, PortBase: base, PortSpan: 1, Selected: sel})
	<-src.ready
	src.set(a.vm("a"))
	s := waitState(t, m, "a", func(s Snapshot) bool { return s.Selected == "a" })
	if st, _ := statusOf(s, "a"); st.Port != 0 || st.Listen != "" {
		t.Fatalf("a got a port although its range's only port is taken: %+v", st)
	}
	if got, err := askVia(sel.Addr().String()); err != nil || got != "vm-a" {
		t.Fatalf("current-VM port reached %q, %v; want vm-a", got, err)
	}
}
