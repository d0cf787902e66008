package relay_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// pipeRig runs sessions through Server.ServeConn over net.Pipe, which
// buffers nothing: a peer that stops reading blocks its writer at once.
type pipeRig struct {
	t    *testing.T
	srv  *relay.Server
	cfg  relay.Config
	vms  chan net.Conn // the test's end of each VM connection the proxy dials
	logs *jdwptest.Buffer
	reg  *prometheus.Registry
	ctx  context.Context
	wg   sync.WaitGroup
}

func newPipeRig(t *testing.T, cfg relay.Config) *pipeRig {
	t.Helper()
	pr := &pipeRig{t: t, vms: make(chan net.Conn, 4), logs: &jdwptest.Buffer{}, reg: prometheus.NewRegistry()}
	cfg.DialVM = relay.Plain(pr.dialVM)
	cfg.Logger = zerolog.New(pr.logs)
	cfg.Metrics = relay.NewMetrics(pr.reg)
	pr.cfg = cfg
	pr.srv = relay.NewServer(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	pr.ctx = ctx
	t.Cleanup(func() {
		cancel()
		pr.wg.Wait()
	})
	return pr
}

// dialVM is the rig's Config.DialVM: a pipe whose other end goes to vms.
func (pr *pipeRig) dialVM(context.Context) (net.Conn, error) {
	proxySide, vmSide := net.Pipe()
	pr.vms <- vmSide
	return proxySide, nil
}

// setDial replaces the server with one dialing the VM with dial.
func (pr *pipeRig) setDial(dial func(context.Context) (net.Conn, error)) {
	pr.cfg.DialVM = relay.Plain(dial)
	pr.srv = relay.NewServer(pr.cfg)
}

// connect starts a session and returns the test's ends of its debugger and
// VM connections, after both handshakes.
func (pr *pipeRig) connect() (dbg, vm net.Conn) {
	pr.t.Helper()
	dbg, proxySide := net.Pipe()
	pr.wg.Add(1)
	go func() {
		defer pr.wg.Done()
		pr.srv.ServeConn(pr.ctx, proxySide)
	}()
	if err := jdwp.WriteHandshake(dbg); err != nil {
		pr.t.Fatal(err)
	}
	vm = <-pr.vms
	if err := jdwp.ReadHandshake(vm); err != nil {
		pr.t.Fatal(err)
	}
	if err := jdwp.WriteHandshake(vm); err != nil {
		pr.t.Fatal(err)
	}
	if err := jdwp.ReadHandshake(dbg); err != nil {
		pr.t.Fatal(err)
	}
	pr.t.Cleanup(func() { dbg.Close(); vm.Close() })
	return dbg, vm
}

// reinjector holds every VM event back and re-sends it through its
// outbox while holding a lock shared by all sessions, as a cache shared
// between sessions would. It counts the events it saw per session.
type reinjector struct {
	mu     *sync.Mutex // shared by every session's reinjector
	events chan uint64 // the session ID of each event seen
}

func (ri *reinjector) FromDebugger(*relay.Session, *relay.Frame) relay.Action { return relay.Forward }
func (ri *reinjector) FromVM(s *relay.Session, f *relay.Frame) relay.Action {
	if f.Kind != relay.KindEvent {
		return relay.Forward
	}
	ri.mu.Lock()
	defer ri.mu.Unlock()
	ri.events <- s.ID
	f.Out().SendToDebugger(f.Packet, relay.Forwarded, jdwp.Cmd{})
	f.Origin = relay.Synthetic
	return relay.Consume
}
func (ri *reinjector) Close(*relay.Session) {}

// TestStalledDebuggerDoesNotBlockVM: a debugger that stops reading stalls
// neither its VM's reader (events keep being read and seen by the hooks,
// which may send to the debugger under their own locks) nor other
// sessions sharing those locks.
func TestStalledDebuggerDoesNotBlockVM(t *testing.T) {
	const n = 200
	events := make(chan uint64, 2*n)
	var shared sync.Mutex
	pr := newPipeRig(t, relay.Config{NewHooks: func(*relay.Session) relay.Hooks {
		return relay.Hooks{Interceptors: []relay.Interceptor{&reinjector{mu: &shared, events: events}}}
	}})
	_, vmA := pr.connect() // this debugger never reads again
	event := jdwp.AppendCommand(nil, 1, jdwp.CmdComposite, []byte{0, 0, 0, 0, 1, byte(jdwp.EventThreadStart), 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 9})
	go func() {
		for range n {
			if _, err := vmA.Write(event); err != nil {
				return
			}
		}
	}()
	timeout := time.After(10 * time.Second)
	for seen := 0; seen < n; {
		select {
		case <-events:
			seen++
		case <-timeout:
			t.Fatalf("the VM reader stopped after %d of %d events: the stalled debugger blocks it", seen, n)
		}
	}

	dbgB, vmB := pr.connect()
	go vmB.Write(event)
	dbgB.SetReadDeadline(time.Now().Add(10 * time.Second))
	if p, err := jdwp.NewReader(dbgB, 0).Next(); err != nil || p.Cmd() != jdwp.CmdComposite {
		t.Fatalf("second session: debugger got %v, %v; want the event while the first debugger is stalled", p, err)
	}
}

// panicky panics on one command (from the debugger), after rewriting its
// ID, or on one event (from the VM).
type panicky struct{ onCmd jdwp.Cmd }

func (p *panicky) FromDebugger(_ *relay.Session, f *relay.Frame) relay.Action {
	if f.Kind == relay.KindCommand && f.Cmd == p.onCmd {
		f.Packet.SetID(0xA0000099) // a retag half done
		panic("interceptor bug")
	}
	return relay.Forward
}
func (p *panicky) FromVM(_ *relay.Session, f *relay.Frame) relay.Action {
	if f.Kind == relay.KindEvent {
		panic("interceptor bug on an event")
	}
	return relay.Forward
}
func (p *panicky) Close(*relay.Session) {}

// panickyObserver panics on the first packet it sees and counts calls.
type panickyObserver struct {
	mu    sync.Mutex // guards calls
	calls int
}

func (o *panickyObserver) Observe(*relay.Session, *relay.Frame) {
	o.mu.Lock()
	o.calls++
	o.mu.Unlock()
	panic("observer bug")
}

// TestHookPanicPassThrough: a panicking hook is counted and logged with
// the packet it was handling, and its session goes on as plain
// pass-through: the packet and those after it are forwarded.
func TestHookPanicPassThrough(t *testing.T) {
	for _, tc := range []struct {
		name, hook string
		hooks      func() relay.Hooks
	}{
		{"interceptor", "interceptor", func() relay.Hooks {
			return relay.Hooks{Interceptors: []relay.Interceptor{&panicky{onCmd: cmdVersion}}}
		}},
		{"observer", "observer", func() relay.Hooks {
			return relay.Hooks{Observers: []relay.Observer{&panickyObserver{}}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, func(*relay.Session) relay.Hooks { return tc.hooks() })
			dbg, vm := r.connect()
			dr, vr := jdwp.NewReader(dbg, 0), jdwp.NewReader(vm, 0)
			for id := uint32(1); id <= 3; id++ {
				dbg.Write(jdwp.AppendCommand(nil, id, cmdVersion, nil))
				if p, err := vr.Next(); err != nil || p.ID() != id {
					t.Fatalf("VM got %v, %v; want command %d", p, err, id)
				}
				vm.Write(jdwp.AppendReply(nil, id, 0, nil))
				if p, err := dr.Next(); err != nil || p.ID() != id {
					t.Fatalf("debugger got %v, %v; want reply %d", p, err, id)
				}
			}
			vm.Write(jdwp.AppendCommand(nil, 50, jdwp.CmdComposite, []byte{0, 0, 0, 0, 0}))
			if p, err := dr.Next(); err != nil || p.ID() != 50 {
				t.Fatalf("debugger got %v, %v; want the event", p, err)
			}
			if n := counter(t, r.reg, "jdwpaccel_hook_panics_total", tc.hook); n != 1 {
				t.Errorf("hook panics counted = %v, want 1 (hooks dropped after the first)", n)
			}
			logs := r.logs.String()
			if !strings.Contains(logs, `"hook":"`+tc.hook+`"`) || !strings.Contains(logs, `"kind":"command"`) ||
				!strings.Contains(logs, `"cmd":"VirtualMachine.Version"`) {
				t.Errorf("no log line naming the hook and the packet's type in:\n%s", logs)
			}
		})
	}
}

var cmdAllThreads = jdwp.Cmd{Set: jdwp.SetVirtualMachine, Cmd: 4}

// TestFloodBackpressure: a debugger flooding commands the VM has not
// answered is read only up to MaxOutstanding commands; each answer lets
// one more through. The proxy holds a bounded number of pending commands
// and TCP pushes back on the debugger.
func TestFloodBackpressure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const limit, flood = 50, 1000
		pr := newPipeRig(t, relay.Config{MaxOutstanding: limit})
		dbg, vm := pr.connect()
		go func() {
			cmd := jdwp.AppendCommand(nil, 0, cmdAllThreads, nil)
			for id := range uint32(flood) {
				cmd.SetID(id)
				if _, err := dbg.Write(cmd); err != nil {
					return
				}
			}
		}()
		got := make(chan uint32, flood)
		go func() {
			defer close(got)
			vr := jdwp.NewReader(vm, 0)
			for {
				p, err := vr.Next()
				if err != nil {
					return
				}
				got <- p.ID()
			}
		}()
		synctest.Wait()
		if n := len(got); n != limit {
			t.Fatalf("the VM got %d of %d unanswered commands, want %d (MaxOutstanding)", n, flood, limit)
		}
		for range 10 {
			vm.Write(jdwp.AppendReply(nil, <-got, 0, nil))
		}
		synctest.Wait()
		if n := len(got); n != limit-10+10 {
			t.Fatalf("after 10 answers the VM has %d unanswered commands, want %d", n, limit)
		}
	})
}

// TestWriteQueueBound: a VM flooding a debugger that does not read is read
// only until the debugger's write queue is full.
func TestWriteQueueBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const queue, size, flood = 16 << 10, 1 << 10, 2000
		pr := newPipeRig(t, relay.Config{WriteQueueBytes: queue})
		_, vm := pr.connect()
		sent := make(chan struct{}, flood)
		go func() {
			event := jdwp.AppendCommand(nil, 0, jdwp.CmdComposite, make([]byte, size-jdwp.HeaderSize))
			for range flood {
				if _, err := vm.Write(event); err != nil {
					return
				}
				sent <- struct{}{}
			}
		}()
		synctest.Wait()
		// Queued: up to the bound plus one packet; being written: as
		// much again; read ahead: the reader's 64 KiB buffer.
		if n, max := len(sent), 2*(queue/size+1)+(64<<10)/size+2; n > max {
			t.Fatalf("the proxy read %d KiB from the VM for a debugger that reads nothing, want at most %d KiB", n, max)
		}
	})
}

// TestOversizedReplyAnswered: a VM reply above the maximum packet size is
// skipped, the debugger gets a JDWP INTERNAL error reply to its command,
// and the session goes on.
func TestOversizedReplyAnswered(t *testing.T) {
	rec := &recorder{ended: make(chan struct{})}
	r := newRig(t, func(*relay.Session) relay.Hooks { return relay.Hooks{Observers: []relay.Observer{rec}} })
	dbg, vm := r.connect()
	dr, vr := jdwp.NewReader(dbg, 0), jdwp.NewReader(vm, 0)
	dbg.Write(jdwp.AppendCommand(nil, 7, cmdAllThreads, nil))
	if p, err := vr.Next(); err != nil || p.ID() != 7 {
		t.Fatalf("VM got %v, %v", p, err)
	}
	huge := jdwp.AppendReply(nil, 7, 0, make([]byte, 2<<20)) // rig's limit is 1 MiB
	huge = jdwp.AppendCommand(huge, 8, jdwp.CmdComposite, []byte{0, 0, 0, 0, 0})
	go vm.Write(huge)
	dbg.SetReadDeadline(time.Now().Add(10 * time.Second))
	p, err := dr.Next()
	if err != nil || !p.IsReply() || p.ID() != 7 || p.ErrorCode() != jdwp.ErrorInternal || len(p) != jdwp.HeaderSize {
		t.Fatalf("debugger got %v, %v; want an INTERNAL error reply to command 7", p, err)
	}
	if p, err := dr.Next(); err != nil || p.ID() != 8 || p.Cmd() != jdwp.CmdComposite {
		t.Fatalf("debugger got %v, %v; want the event after the skipped reply", p, err)
	}
	if n := counter(t, r.reg, "jdwpaccel_oversized_replies_total"); n != 1 {
		t.Errorf("oversized replies counted = %v, want 1", n)
	}
	if !strings.Contains(r.logs.String(), `"level":"warn"`) || strings.Contains(r.logs.String(), `"level":"error"`) {
		t.Errorf("want a warning and no error in:\n%s", r.logs)
	}
	dbg.Close()
	<-rec.ended
	frames := rec.snapshot()
	if len(frames) != 3 || frames[1].Kind != relay.KindReply || frames[1].Cmd != cmdAllThreads || frames[1].Packet.ErrorCode() != jdwp.ErrorInternal {
		t.Errorf("observed %d frames; want command, its INTERNAL reply (paired with AllThreads), event", len(frames))
	}
}

// reset closes c with a TCP reset.
func reset(c net.Conn) {
	c.(*net.TCPConn).SetLinger(0)
	c.Close()
}

// TestPeerResetAfterVMEnd: a peer resetting its connection after the VM's
// end was announced (VM_DEATH, VirtualMachine.Dispose) is the normal end
// of a session: logged at info, not counted as an error. Without such an
// announcement a reset is a warning, still not an error.
func TestPeerResetAfterVMEnd(t *testing.T) {
	vmDeath := jdwp.AppendCommand(nil, 9, jdwp.CmdComposite, []byte{0, 0, 0, 0, 1, byte(jdwp.EventVMDeath), 0, 0, 0, 0})
	dispose := jdwp.AppendCommand(nil, 3, jdwp.CmdVirtualMachineDispose, nil)
	for _, tc := range []struct {
		name      string
		announce  func(dbg, vm net.Conn, dr, vr *jdwp.Reader) // the VM's end, each side having read it
		resetter  func(dbg, vm net.Conn) net.Conn
		wantLevel string
	}{
		{"VM_DEATH then the VM resets", func(dbg, vm net.Conn, dr, vr *jdwp.Reader) {
			vm.Write(vmDeath)
			dr.Next()
		}, func(_, vm net.Conn) net.Conn { return vm }, "info"},
		{"Dispose then the VM resets", func(dbg, vm net.Conn, dr, vr *jdwp.Reader) {
			dbg.Write(dispose)
			vr.Next()
		}, func(_, vm net.Conn) net.Conn { return vm }, "info"},
		{"Dispose then the debugger resets", func(dbg, vm net.Conn, dr, vr *jdwp.Reader) {
			dbg.Write(dispose)
			vr.Next()
			vm.Write(jdwp.AppendReply(nil, 3, 0, nil))
			dr.Next()
		}, func(dbg, _ net.Conn) net.Conn { return dbg }, "info"},
		{"a reset out of the blue", func(dbg, vm net.Conn, dr, vr *jdwp.Reader) {}, func(_, vm net.Conn) net.Conn { return vm }, "warn"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{ended: make(chan struct{})}
			r := newRig(t, func(*relay.Session) relay.Hooks { return relay.Hooks{Observers: []relay.Observer{rec}} })
			dbg, vm := r.connect()
			tc.announce(dbg, vm, jdwp.NewReader(dbg, 0), jdwp.NewReader(vm, 0))
			reset(tc.resetter(dbg, vm))
			<-rec.ended
			logs := r.logs.String()
			if strings.Contains(logs, `"level":"error"`) {
				t.Errorf("a reset logged as an error:\n%s", logs)
			}
			var last string
			for _, l := range strings.Split(strings.TrimSpace(logs), "\n") {
				if strings.Contains(l, "session ended") {
					last = l
				}
			}
			if !strings.Contains(last, `"level":"`+tc.wantLevel+`"`) {
				t.Errorf("session end logged as %s, want level %s", last, tc.wantLevel)
			}
			wantCount := 0.0
			if tc.wantLevel != "info" {
				wantCount = 1
			}
			if n := counter(t, r.reg, "jdwpaccel_protocol_errors_total", string(relay.ReasonIO)); n != wantCount {
				t.Errorf("io errors counted = %v, want %v", n, wantCount)
			}
		})
	}
}

// TestWriteTimeoutEndsSession: a debugger that takes none of the proxy's
// bytes for the write timeout ends its session, with a warning.
func TestWriteTimeoutEndsSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pr := newPipeRig(t, relay.Config{WriteTimeout: 30 * time.Second})
		_, vm := pr.connect() // the debugger never reads
		start := time.Now()
		go vm.Write(jdwp.AppendCommand(nil, 1, jdwp.CmdComposite, []byte{0, 0, 0, 0, 0}))
		if _, err := vm.Read(make([]byte, 1)); err == nil {
			t.Fatal("VM connection still open")
		}
		if d := time.Since(start); d != 30*time.Second {
			t.Errorf("session ended after %v, want the 30 s write timeout", d)
		}
		pr.wg.Wait()
		if n := counter(t, pr.reg, "jdwpaccel_protocol_errors_total", string(relay.ReasonWriteTimeout)); n != 1 {
			t.Errorf("write timeouts counted = %v, want 1", n)
		}
		if logs := pr.logs.String(); !strings.Contains(logs, `"level":"warn"`) || !strings.Contains(logs, "write timeout") {
			t.Errorf("no write timeout warning in:\n%s", logs)
		}
	})
}

// vmCommandEater consumes every VM command of a vendor set, as a hook
// that takes commands its peer proxy sends it does.
type vmCommandEater struct{ set jdwp.CommandSet }

func (vmCommandEater) FromDebugger(*relay.Session, *relay.Frame) relay.Action { return relay.Forward }
func (e vmCommandEater) FromVM(_ *relay.Session, f *relay.Frame) relay.Action {
	if f.Kind == relay.KindVMCommand && f.Cmd.Set == e.set {
		f.Origin = relay.Synthetic
		return relay.Consume
	}
	return relay.Forward
}
func (vmCommandEater) Close(*relay.Session) {}

// TestConsumedVMCommandsAwaitNoReply: a VM command an interceptor consumed
// never reaches the debugger, so no reply to it will come: it must not
// count towards MaxOutstanding, or the proxy would stop reading the VM
// after MaxOutstanding of them.
func TestConsumedVMCommandsAwaitNoReply(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const limit = 3
		set := jdwp.CommandSet(0xE1)
		pr := newPipeRig(t, relay.Config{MaxOutstanding: limit, NewHooks: func(*relay.Session) relay.Hooks {
			return relay.Hooks{Interceptors: []relay.Interceptor{vmCommandEater{set: set}}}
		}})
		dbg, vm := pr.connect()
		go func() {
			for id := range uint32(3 * limit) {
				if _, err := vm.Write(jdwp.AppendCommand(nil, id+1, jdwp.Cmd{Set: set, Cmd: 1}, nil)); err != nil {
					return
				}
			}
			vm.Write(jdwp.AppendCommand(nil, 100, jdwp.Cmd{Set: jdwp.SetEvent, Cmd: 100}, []byte{0, 0, 0, 0, 0}))
		}()
		got := make(chan jdwp.Packet, 1)
		go func() {
			p, err := jdwp.NewReader(dbg, 0).Next()
			if err == nil {
				got <- p.Clone()
			}
			close(got)
		}()
		synctest.Wait()
		select {
		case p := <-got:
			if p == nil || p.ID() != 100 {
				t.Fatalf("the debugger got %v, want the event after the consumed commands", p)
			}
		default:
			t.Fatal("the proxy stopped reading the VM after consumed commands")
		}
	})
}

// TestHookPanicEndsSession: with Hooks.EndOnPanic a panicking interceptor
// ends its session: the packet it panicked on reaches neither peer, both
// connections close, and the end is counted under its reason.
func TestHookPanicEndsSession(t *testing.T) {
	r := newRig(t, func(*relay.Session) relay.Hooks {
		return relay.Hooks{Interceptors: []relay.Interceptor{&panicky{onCmd: cmdVersion}}, EndOnPanic: true}
	})
	dbg, vm := r.connect()
	dbg.Write(jdwp.AppendCommand(nil, 1, cmdAllThreads, nil))
	vr := jdwp.NewReader(vm, 0)
	if p, err := vr.Next(); err != nil || p.ID() != 1 {
		t.Fatalf("VM got %v, %v; want command 1", p, err)
	}
	dbg.Write(jdwp.AppendCommand(nil, 2, cmdVersion, nil))
	vm.SetReadDeadline(time.Now().Add(5 * time.Second))
	if p, err := vr.Next(); err == nil {
		t.Fatalf("the VM got %v, which the interceptor panicked on", p)
	}
	expectClosed(t, dbg)
	expectClosed(t, vm)
	jdwptest.Eventually(t, "the end counted under hook_panic", func() (bool, string) {
		n := counter(t, r.reg, "jdwpaccel_protocol_errors_total", string(relay.ReasonHookPanic))
		return n == 1, fmt.Sprint(n)
	})
	if n := counter(t, r.reg, "jdwpaccel_hook_panics_total", "interceptor"); n != 1 {
		t.Errorf("hook panics counted = %v, want 1", n)
	}
}
