package relay_test

import (
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
)

// vmBelayer belays every Version command on a synthetic Version command
// of its own, and answers it from the VM's side when the VM replies, as
// the speculator serves a belay: the answer is sent in the VM reader's
// turn, racing the debugger reader's observation of the command.
type vmBelayer struct{}

var belaySlot = relay.NewSlot()

func (vmBelayer) FromDebugger(rs *relay.Session, f *relay.Frame) relay.Action {
	if f.Kind != relay.KindCommand || f.Cmd != cmdVersion {
		return relay.Forward
	}
	id := f.ID
	f.Out().SendToVMData(jdwp.AppendCommand(nil, rs.IDs().NewSynthetic(), cmdVersion, nil), relay.Synthetic, belaySlot, &id)
	f.Origin = relay.Belay
	return relay.Consume
}

func (vmBelayer) FromVM(_ *relay.Session, f *relay.Frame) relay.Action {
	if id, ok := f.Data(belaySlot).(*uint32); ok {
		answer := f.Packet.Clone()
		answer.SetID(*id)
		f.Out().SendToDebugger(answer, relay.Belay, cmdVersion)
		f.Origin = relay.Synthetic
		return relay.Consume
	}
	return relay.Forward
}

func (vmBelayer) Close(*relay.Session) {}

// answerVersions is a VM that answers each command at once with the body
// "version", until its connection fails.
func answerVersions(vm net.Conn) {
	vr := jdwp.NewReader(vm, 0)
	for {
		p, err := vr.Next()
		if err != nil {
			return
		}
		if _, err := vm.Write(jdwp.AppendReply(nil, p.ID(), 0, []byte("version"))); err != nil {
			return
		}
	}
}

// TestAnswerFromVMSideObservedAfterCommand: a debugger command belayed on
// a command of the proxy's own, answered when the VM replies to that one
// (on the VM's side, while the VM answers at once), is observed before
// its answer, and the proxy's command, sent while the debugger's was
// intercepted, before both.
func TestAnswerFromVMSideObservedAfterCommand(t *testing.T) {
	rec := &recorder{ended: make(chan struct{})}
	r := newRig(t, func(*relay.Session) relay.Hooks {
		return relay.Hooks{Interceptors: []relay.Interceptor{vmBelayer{}}, Observers: []relay.Observer{rec}}
	})
	dbg, vm := r.connect()
	go answerVersions(vm)
	dr := jdwp.NewReader(dbg, 0)
	const n = 300
	for i := range uint32(n) {
		dbg.Write(jdwp.AppendCommand(nil, i, cmdVersion, nil))
		if p, err := dr.Next(); err != nil || p.ID() != i || string(p.Body()) != "version" {
			t.Fatalf("answer %d: %v, %v", i, p, err)
		}
	}
	dbg.Close()
	<-rec.ended
	var got []string
	for _, f := range rec.snapshot() {
		got = append(got, fmt.Sprintf("%v/%v/%v", f.Dir, f.Kind, f.Origin))
	}
	// What a hook sends goes before the packet it was called for: the
	// answer before the reply to the proxy's command that brought it.
	want := "to_vm/command/synthetic to_vm/command/belay to_debugger/reply/belay to_debugger/reply/synthetic"
	if len(got) != 4*n {
		t.Fatalf("observed %d frames, want %d", len(got), 4*n)
	}
	for i := 0; i < len(got); i += 4 {
		if s := strings.Join(got[i:i+4], " "); s != want {
			t.Fatalf("frames %d-%d: %s, want %s", i, i+3, s, want)
		}
	}
}

// turnChecker is an interceptor and observer that fails the test if any
// of its calls runs while another hook call or Do work of the session
// runs.
type turnChecker struct {
	t      *testing.T
	inTurn atomic.Int32
}

func (c *turnChecker) enter() {
	if n := c.inTurn.Add(1); n != 1 {
		c.t.Errorf("%d pieces of hook code run at once", n)
	}
}

func (c *turnChecker) leave() { c.inTurn.Add(-1) }

func (c *turnChecker) FromDebugger(*relay.Session, *relay.Frame) relay.Action {
	c.enter()
	defer c.leave()
	return relay.Forward
}

func (c *turnChecker) FromVM(*relay.Session, *relay.Frame) relay.Action {
	c.enter()
	defer c.leave()
	return relay.Forward
}

func (c *turnChecker) Close(*relay.Session) {}

func (c *turnChecker) Observe(*relay.Session, *relay.Frame) {
	c.enter()
	defer c.leave()
}

// TestDoRunsInTurnInOrder: work queued with Session.Do from several
// goroutines runs, each goroutine's in the order queued, never at the same
// time as hook calls or other Do work, while both peers' packets flow;
// the packets it sends are observed and delivered in that order.
func TestDoRunsInTurnInOrder(t *testing.T) {
	chk := &turnChecker{t: t}
	sessions := make(chan *relay.Session, 1)
	r := newRig(t, func(s *relay.Session) relay.Hooks {
		sessions <- s
		return relay.Hooks{Interceptors: []relay.Interceptor{chk}, Observers: []relay.Observer{chk}}
	})
	dbg, vm := r.connect()
	s := <-sessions
	go func() { // the VM answers each command at once
		vr := jdwp.NewReader(vm, 0)
		for {
			p, err := vr.Next()
			if err != nil {
				return
			}
			if _, err := vm.Write(jdwp.AppendReply(nil, p.ID(), 0, nil)); err != nil {
				return
			}
		}
	}()

	const workers, each = 4, 200
	var mu sync.Mutex // guards ran
	ran := make([][]int, workers)
	var done sync.WaitGroup
	done.Add(workers * each)
	for w := range workers {
		go func() {
			for i := range each {
				err := s.Do(func(out *relay.Outbox) {
					chk.enter()
					defer chk.leave()
					mu.Lock()
					ran[w] = append(ran[w], i)
					mu.Unlock()
					if w == 0 {
						// A VM-originated command the proxy held back,
						// numbered by i.
						out.SendToDebugger(jdwp.AppendCommand(nil, uint32(1000+i), jdwp.CmdComposite, []byte{0, 0, 0, 0, 0}), relay.Forwarded, jdwp.Cmd{})
					}
					done.Done()
				})
				if err != nil {
					t.Error(err)
					done.Done()
				}
			}
		}()
	}
	// The debugger sends commands meanwhile, and reads their replies and
	// the events worker 0's work sends, in order.
	dr := jdwp.NewReader(dbg, 0)
	const cmds = 200
	go func() {
		for i := range uint32(cmds) {
			if _, err := dbg.Write(jdwp.AppendCommand(nil, i, jdwp.CmdIDSizes, nil)); err != nil {
				return
			}
		}
	}()
	replies, nextEvent := 0, uint32(1000)
	for replies < cmds || nextEvent < 1000+each {
		p, err := dr.Next()
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case p.IsReply():
			replies++
		case p.ID() != nextEvent:
			t.Fatalf("debugger got event %d, want %d", p.ID(), nextEvent)
		default:
			nextEvent++
		}
	}
	done.Wait()
	mu.Lock()
	defer mu.Unlock()
	for w, got := range ran {
		for i, v := range got {
			if v != i {
				t.Fatalf("worker %d's work ran in the order %v", w, got)
			}
		}
		if len(got) != each {
			t.Fatalf("worker %d: %d pieces of work ran, want %d", w, len(got), each)
		}
	}
}

// doer queues, from its FromVM call for an event, work that sends a
// marker packet to the debugger.
type doer struct{}

func (doer) FromDebugger(*relay.Session, *relay.Frame) relay.Action { return relay.Forward }
func (doer) FromVM(s *relay.Session, f *relay.Frame) relay.Action {
	if f.Kind == relay.KindEvent && f.ID < 100 {
		s.Do(func(out *relay.Outbox) { //nolint:errcheck // the session ending is fine
			out.SendToDebugger(jdwp.AppendCommand(nil, 100+f.ID, jdwp.CmdComposite, []byte{0, 0, 0, 0, 0}), relay.Forwarded, jdwp.Cmd{})
		})
	}
	return relay.Forward
}
func (doer) Close(*relay.Session) {}

// TestDoFromHookRunsAfterTurn: work a hook queues with Do from its own
// hook call runs once that call's packet was observed and queued.
func TestDoFromHookRunsAfterTurn(t *testing.T) {
	rec := &recorder{ended: make(chan struct{})}
	r := newRig(t, func(*relay.Session) relay.Hooks {
		return relay.Hooks{Interceptors: []relay.Interceptor{doer{}}, Observers: []relay.Observer{rec}}
	})
	dbg, vm := r.connect()
	dr := jdwp.NewReader(dbg, 0)
	for id := uint32(1); id <= 3; id++ {
		vm.Write(jdwp.AppendCommand(nil, id, jdwp.CmdComposite, []byte{0, 0, 0, 0, 0}))
		for _, want := range []uint32{id, 100 + id} {
			if p, err := dr.Next(); err != nil || p.ID() != want {
				t.Fatalf("debugger got %v, %v; want event %d", p, err, want)
			}
		}
	}
	dbg.Close()
	<-rec.ended
	var got []uint32
	for _, f := range rec.snapshot() {
		got = append(got, f.ID)
	}
	if fmt.Sprint(got) != "[1 101 2 102 3 103]" {
		t.Errorf("observed %v, want each event before the packet its hook's work sent", got)
	}
}

// timerPanic answers Version itself, and on AllThreads starts a timer
// whose work, queued with Do, panics.
type timerPanic struct{ reached chan struct{} }

func (tp *timerPanic) FromDebugger(s *relay.Session, f *relay.Frame) relay.Action {
	switch f.Cmd {
	case cmdVersion:
		f.Answer = jdwp.AppendReply(nil, f.ID, 0, []byte("cached"))
		f.Origin = relay.CacheHit
		return relay.Consume
	case cmdAllThreads:
		time.AfterFunc(time.Millisecond, func() {
			s.Do(func(*relay.Outbox) { //nolint:errcheck // the session ending is fine
				close(tp.reached)
				panic("boom")
			})
		})
	}
	return relay.Forward
}
func (tp *timerPanic) FromVM(*relay.Session, *relay.Frame) relay.Action { return relay.Forward }
func (tp *timerPanic) Close(*relay.Session)                             {}

// TestDoPanic: a panic in work a timer queued with Do is recovered,
// counted and logged; the session goes on as plain pass-through, or ends
// with Hooks.EndOnPanic.
func TestDoPanic(t *testing.T) {
	for _, end := range []bool{false, true} {
		t.Run(fmt.Sprint("EndOnPanic=", end), func(t *testing.T) {
			tp := &timerPanic{reached: make(chan struct{})}
			r := newRig(t, func(*relay.Session) relay.Hooks {
				return relay.Hooks{Interceptors: []relay.Interceptor{tp}, EndOnPanic: end}
			})
			dbg, vm := r.connect()
			dr, vr := jdwp.NewReader(dbg, 0), jdwp.NewReader(vm, 0)
			dbg.Write(jdwp.AppendCommand(nil, 1, cmdAllThreads, nil))
			if p, err := vr.Next(); err != nil || p.ID() != 1 {
				t.Fatalf("VM got %v, %v; want command 1", p, err)
			}
			<-tp.reached
			if end {
				expectClosed(t, dbg)
				expectClosed(t, vm)
				jdwptest.Eventually(t, "the end counted under hook_panic", func() (bool, string) {
					n := counter(t, r.reg, "jdwpaccel_protocol_errors_total", string(relay.ReasonHookPanic))
					return n == 1, fmt.Sprint(n)
				})
			} else {
				// The panic was handled in the turn the work ran in, before
				// this command's: the interceptor no longer answers it.
				dbg.Write(jdwp.AppendCommand(nil, 2, cmdVersion, nil))
				if p, err := vr.Next(); err != nil || p.ID() != 2 {
					t.Fatalf("VM got %v, %v; want command 2, forwarded as plain pass-through", p, err)
				}
				vm.Write(jdwp.AppendReply(nil, 2, 0, nil))
				if p, err := dr.Next(); err != nil || p.ID() != 2 {
					t.Fatalf("debugger got %v, %v; want the VM's reply 2", p, err)
				}
			}
			if n := counter(t, r.reg, "jdwpaccel_hook_panics_total", "do"); n != 1 {
				t.Errorf("hook panics counted = %v, want 1", n)
			}
			if logs := r.logs.String(); !strings.Contains(logs, `"hook":"do"`) || !strings.Contains(logs, `"panic":"boom"`) {
				t.Errorf("no log line naming the panic in:\n%s", logs)
			}
		})
	}
}

// TestPanickedOnHookGoroutine: a panic a hook recovered on a goroutine of
// its own and reported (Session.Panicked) is counted and logged, and the
// session goes on as plain pass-through.
func TestPanickedOnHookGoroutine(t *testing.T) {
	sessions := make(chan *relay.Session, 1)
	tp := &timerPanic{reached: make(chan struct{})}
	r := newRig(t, func(s *relay.Session) relay.Hooks {
		sessions <- s
		return relay.Hooks{Interceptors: []relay.Interceptor{tp}}
	})
	dbg, vm := r.connect()
	dr, vr := jdwp.NewReader(dbg, 0), jdwp.NewReader(vm, 0)
	dbg.Write(jdwp.AppendCommand(nil, 1, cmdVersion, nil))
	if p, err := dr.Next(); err != nil || string(p.Body()) != "cached" {
		t.Fatalf("debugger got %v, %v; want the interceptor's answer", p, err)
	}
	(<-sessions).Panicked("boom")
	dbg.Write(jdwp.AppendCommand(nil, 2, cmdVersion, nil))
	if p, err := vr.Next(); err != nil || p.ID() != 2 {
		t.Fatalf("VM got %v, %v; want command 2, forwarded as plain pass-through", p, err)
	}
	if n := counter(t, r.reg, "jdwpaccel_hook_panics_total", "goroutine"); n != 1 {
		t.Errorf("hook panics counted = %v, want 1", n)
	}
	if logs := r.logs.String(); !strings.Contains(logs, `"hook":"goroutine"`) || !strings.Contains(logs, `"panic":"boom"`) {
		t.Errorf("no log line naming the panic in:\n%s", logs)
	}
}

// gate holds the debugger's packets until the VM's first packet was
// handled (relay.Gate), as split mode's near end awaits its attach bundle.
type gate struct {
	vmFirst chan struct{}
	once    sync.Once
}

func (g *gate) HoldDebugger(*relay.Session) {
	select {
	case <-g.vmFirst:
	case <-time.After(time.Minute): // a bound, as a Gate must have; never reached here
	}
}
func (g *gate) FromDebugger(*relay.Session, *relay.Frame) relay.Action { return relay.Forward }
func (g *gate) FromVM(*relay.Session, *relay.Frame) relay.Action {
	g.once.Do(func() { close(g.vmFirst) })
	return relay.Forward
}
func (g *gate) Close(*relay.Session) {}

// TestGateHoldsDebuggerOutsideTurn: a Gate holds the debugger's packet
// back outside the session's turn, so the VM's packet it waits for is
// handled meanwhile, and observed first.
func TestGateHoldsDebuggerOutsideTurn(t *testing.T) {
	rec := &recorder{ended: make(chan struct{})}
	g := &gate{vmFirst: make(chan struct{})}
	r := newRig(t, func(*relay.Session) relay.Hooks {
		return relay.Hooks{Interceptors: []relay.Interceptor{g}, Observers: []relay.Observer{rec}}
	})
	dbg, vm := r.connect()
	dr, vr := jdwp.NewReader(dbg, 0), jdwp.NewReader(vm, 0)
	dbg.Write(jdwp.AppendCommand(nil, 1, jdwp.CmdIDSizes, nil))
	vm.Write(jdwp.AppendCommand(nil, 7, jdwp.CmdComposite, []byte{0, 0, 0, 0, 0}))
	if p, err := dr.Next(); err != nil || p.ID() != 7 {
		t.Fatalf("debugger got %v, %v; want the event", p, err)
	}
	if p, err := vr.Next(); err != nil || p.ID() != 1 {
		t.Fatalf("VM got %v, %v; want command 1", p, err)
	}
	dbg.Close()
	<-rec.ended
	if f := rec.snapshot(); len(f) < 2 || f[0].Kind != relay.KindEvent || f[1].Kind != relay.KindCommand {
		t.Errorf("observed %v, want the event, then the command the gate held", f)
	}
}

// ownAfterDispose sends a command of the proxy's own with every debugger
// command it sees, the debugger's Dispose included, and with every reply
// of the VM's.
type ownAfterDispose struct{}

func (ownAfterDispose) FromDebugger(s *relay.Session, f *relay.Frame) relay.Action {
	if f.Kind == relay.KindCommand {
		f.Out().SendToVM(jdwp.AppendCommand(nil, s.IDs().NewSynthetic(), cmdVersion, nil), relay.Synthetic)
	}
	return relay.Forward
}
func (ownAfterDispose) FromVM(s *relay.Session, f *relay.Frame) relay.Action {
	if f.Kind == relay.KindReply {
		f.Out().SendToVM(jdwp.AppendCommand(nil, s.IDs().NewSynthetic(), cmdVersion, nil), relay.Synthetic)
	}
	return relay.Forward
}
func (ownAfterDispose) Close(*relay.Session) {}

// TestNothingOwnAfterDispose: once the debugger disposed of the VM, no
// command of the proxy's own goes to the VM (HotSpot closes after its
// answer; a command left unread in its socket turns that close into a
// reset, which can lose the answer on its way to the debugger). What the
// proxy sent in the Dispose's own turn goes ahead of it (a split mode's
// near end reports the stop's usage there).
func TestNothingOwnAfterDispose(t *testing.T) {
	r := newRig(t, func(*relay.Session) relay.Hooks {
		return relay.Hooks{Interceptors: []relay.Interceptor{ownAfterDispose{}}}
	})
	dbg, vm := r.connect()
	dbg.Write(jdwp.AppendCommand(nil, 1, cmdVersion, nil))
	dbg.Write(jdwp.AppendCommand(nil, 2, jdwp.CmdVirtualMachineDispose, nil))
	vr := jdwp.NewReader(vm, 0)
	var got []string
	for {
		vm.SetReadDeadline(time.Now().Add(jdwptest.Timeout))
		p, err := vr.Next()
		if err != nil {
			t.Fatalf("VM read %v, then %v", got, err)
		}
		own := p.ID() >= 0xA0000000
		got = append(got, fmt.Sprintf("%v own=%v", p.Cmd(), own))
		if p.Cmd() == jdwp.CmdVirtualMachineDispose {
			break
		}
	}
	// Each command's own command goes first, the Dispose's too; the
	// VM must see nothing after the Dispose (not the one sent with its
	// answer), and answer and close.
	vm.Write(jdwp.AppendReply(nil, 2, 0, nil))
	vm.(interface{ CloseWrite() error }).CloseWrite()
	if b, err := io.ReadAll(vm); err != nil || len(b) != 0 {
		t.Errorf("after the Dispose the VM got %x (%v), want nothing of the proxy's own", b, err)
	}
	want := fmt.Sprint([]string{
		fmt.Sprintf("%v own=true", cmdVersion), fmt.Sprintf("%v own=false", cmdVersion),
		fmt.Sprintf("%v own=true", cmdVersion), fmt.Sprintf("%v own=false", jdwp.CmdVirtualMachineDispose)})
	if fmt.Sprint(got) != want {
		t.Errorf("VM got %v, want %v", got, want)
	}
}

// flushingBelayer is vmBelayer whose answer, sent in the VM's turn, is
// flushed, after which it waits for the debugger to have read it before
// its hook returns; a Version command whose body is "hit" it answers in
// the debugger's turn, flushing too (which must do nothing there).
type flushingBelayer struct {
	vmBelayer
	read chan struct{} // the test's debugger read the answer
	late atomic.Bool   // the answer was not read before the hook returned
}

func (b *flushingBelayer) FromDebugger(rs *relay.Session, f *relay.Frame) relay.Action {
	if f.Kind == relay.KindCommand && f.Cmd == cmdVersion && string(f.Packet.Body()) == "hit" {
		f.Out().SendToDebugger(jdwp.AppendReply(nil, f.ID, 0, []byte("version")), relay.CacheHit, cmdVersion)
		f.Out().Flush()
		f.Origin = relay.CacheHit
		return relay.Consume
	}
	return b.vmBelayer.FromDebugger(rs, f)
}

func (b *flushingBelayer) FromVM(_ *relay.Session, f *relay.Frame) relay.Action {
	id, ok := f.Data(belaySlot).(*uint32)
	if !ok {
		return relay.Forward
	}
	answer := f.Packet.Clone()
	answer.SetID(*id)
	f.Out().SendToDebugger(answer, relay.Belay, cmdVersion)
	f.Out().Flush()
	select {
	case <-b.read:
	case <-time.After(10 * time.Second):
		b.late.Store(true)
	}
	f.Origin = relay.Synthetic
	return relay.Consume
}

// flushingObserver calls Flush on every packet it observes.
type flushingObserver struct{}

func (flushingObserver) Observe(_ *relay.Session, f *relay.Frame) {
	if out := f.Out(); out != nil {
		out.Flush()
	}
}

// TestFlushSendsBeforeTheHookReturns: an answer a hook sends in a VM
// packet's turn and flushes reaches the debugger while the hook still
// runs, observed in the order it would have been without the flush; in a
// debugger command's turn a flush leaves the answer after the command.
func TestFlushSendsBeforeTheHookReturns(t *testing.T) {
	rec := &recorder{ended: make(chan struct{})}
	b := &flushingBelayer{read: make(chan struct{}, 1)}
	r := newRig(t, func(*relay.Session) relay.Hooks {
		// An observer that flushes too, as it observes what a flush
		// applies: it must apply nothing twice.
		return relay.Hooks{Interceptors: []relay.Interceptor{b}, Observers: []relay.Observer{rec, flushingObserver{}}}
	})
	dbg, vm := r.connect()
	go answerVersions(vm)
	dr := jdwp.NewReader(dbg, 0)
	for i, body := range []string{"", "hit", ""} {
		dbg.Write(jdwp.AppendCommand(nil, uint32(i), cmdVersion, []byte(body)))
		if p, err := dr.Next(); err != nil || p.ID() != uint32(i) || string(p.Body()) != "version" {
			t.Fatalf("answer %d: %v, %v", i, p, err)
		}
		if body == "" {
			b.read <- struct{}{}
		}
	}
	dbg.Close()
	<-rec.ended
	if b.late.Load() {
		t.Error("a flushed answer reached the debugger only after its hook returned")
	}
	var got []string
	for _, f := range rec.snapshot() {
		got = append(got, fmt.Sprintf("%v/%v/%v", f.Dir, f.Kind, f.Origin))
	}
	belayed := "to_vm/command/synthetic to_vm/command/belay to_debugger/reply/belay to_debugger/reply/synthetic"
	want := strings.Join([]string{belayed, "to_vm/command/cache_hit to_debugger/reply/cache_hit", belayed}, " ")
	if s := strings.Join(got, " "); s != want {
		t.Errorf("observed %s\nwant     %s", s, want)
	}
}
