package speculator

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/rs/zerolog"
)

var sizes8 = jdwp.IDSizes{FieldID: 8, MethodID: 8, ObjectID: 8, ReferenceTypeID: 8, FrameID: 8}

// fakeVM is the kit's scripted VM (jdwptest.VM: it answers commands in
// arrival order, like libjdwp, and can be held so that commands queue up
// unanswered) with what the speculator's tests add: IDSizes answered with
// sizes8, a handler a test can change, and waits on the commands received.
type fakeVM struct {
	t  *testing.T
	vm *jdwptest.VM

	mu     sync.Mutex // guards handle and next
	handle func(p jdwp.Packet) (jdwp.ErrorCode, []byte)
	next   int // the commands before it were consumed by waitFor and waitCount
}

func newFakeVM(t *testing.T, h func(p jdwp.Packet) (jdwp.ErrorCode, []byte)) *fakeVM {
	vm := &fakeVM{t: t, handle: h}
	vm.vm = jdwptest.StartVM(t, jdwptest.Script{Default: vm.reply})
	return vm
}

func (vm *fakeVM) reply(p jdwp.Packet) (jdwp.ErrorCode, []byte) {
	if p.Cmd() == jdwp.CmdIDSizes {
		return 0, jdwp.AppendIDSizes(nil, sizes8)
	}
	vm.mu.Lock()
	h := vm.handle
	vm.mu.Unlock()
	if h == nil {
		return 0, nil
	}
	return h(p)
}

func (vm *fakeVM) hold()    { vm.vm.Hold() }
func (vm *fakeVM) release() { vm.vm.Release() }

func (vm *fakeVM) setHandler(h func(p jdwp.Packet) (jdwp.ErrorCode, []byte)) {
	vm.mu.Lock()
	vm.handle = h
	vm.mu.Unlock()
}

// count is how many commands c the VM received so far.
func (vm *fakeVM) count(c jdwp.Cmd) int { return vm.vm.Count(c) }

// commands is every command the VM received so far.
func (vm *fakeVM) commands() []jdwp.Packet { return vm.vm.Commands() }

// commandsOf lists the commands among cmds the VM received, from its
// from'th command on, in order.
func (vm *fakeVM) commandsOf(from int, cmds ...jdwp.Cmd) []jdwp.Cmd {
	var got []jdwp.Cmd
	for _, p := range vm.commands()[from:] {
		if c := p.Cmd(); slices.Contains(cmds, c) {
			got = append(got, c)
		}
	}
	return got
}

// askedOf is how many commands c the VM received whose first parameter
// is the object (thread, array) obj.
func (vm *fakeVM) askedOf(c jdwp.Cmd, obj uint64) int {
	n := 0
	for _, p := range vm.vm.Commands() {
		if p.Cmd() == c && jdwp.NewBodyReader(p.Body(), sizes8).ObjectID() == obj {
			n++
		}
	}
	return n
}

// waitFor waits until the VM received a command c after the ones already
// consumed, and consumes it and those before it.
func (vm *fakeVM) waitFor(c jdwp.Cmd) jdwp.Packet {
	vm.t.Helper()
	var got jdwp.Packet
	jdwptest.Await(vm.t, "the VM to receive "+c.String(), vm.vm.Changed, func() (bool, string) {
		cmds := vm.vm.Commands()
		vm.mu.Lock()
		defer vm.mu.Unlock()
		for i := vm.next; i < len(cmds); i++ {
			if cmds[i].Cmd() == c {
				vm.next, got = i+1, cmds[i]
				return true, ""
			}
		}
		vm.next = len(cmds)
		return false, fmt.Sprintf("%d commands", len(cmds))
	})
	return got
}

// waitAsked waits until the VM received a command c with the body want
// (what names it in a failure); it consumes nothing.
func (vm *fakeVM) waitAsked(what string, c jdwp.Cmd, want []byte) {
	vm.t.Helper()
	jdwptest.Await(vm.t, what, vm.vm.Changed, func() (bool, string) {
		cmds := vm.vm.Commands()
		for _, p := range cmds {
			if p.Cmd() == c && string(p.Body()) == string(want) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d commands", len(cmds))
	})
}

// waitCount waits until the VM received command c at least n times (as
// commands reach it: speculation is counted sent as it goes out), and
// consumes the commands up to the nth.
func (vm *fakeVM) waitCount(c jdwp.Cmd, n int) {
	vm.t.Helper()
	jdwptest.Await(vm.t, fmt.Sprintf("the VM to receive %v %d times", c, n), vm.vm.Changed, func() (bool, string) {
		cmds := vm.vm.Commands()
		seen := 0
		for i, p := range cmds {
			if p.Cmd() != c {
				continue
			}
			if seen++; seen == n {
				vm.mu.Lock()
				vm.next = max(vm.next, i+1)
				vm.mu.Unlock()
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d times", seen)
	})
}

// write sends p (an event, a stray reply) to the debugger's connection.
func (vm *fakeVM) write(p jdwp.Packet) {
	if err := vm.vm.Send(p); err != nil && !errors.Is(err, net.ErrClosed) {
		vm.t.Logf("fake VM write: %v", err)
	}
}

// debugger is the test's side of the debugger connection: the kit's
// debugger, with the test's own packet IDs.
type debugger struct {
	t *testing.T
	d *jdwptest.Debugger
}

func (d *debugger) send(id uint32, c jdwp.Cmd, body []byte) {
	d.t.Helper()
	if _, err := d.d.Conn().Write(jdwp.AppendCommand(nil, id, c, body)); err != nil {
		d.t.Fatal(err)
	}
}

func (d *debugger) read() jdwp.Packet {
	d.t.Helper()
	p, err := d.d.NextWithin(5 * time.Second)
	if err != nil {
		d.t.Fatalf("debugger read: %v", err)
	}
	return p.Clone()
}

// call sends a command and reads packets until its reply; events read on
// the way are returned too.
func (d *debugger) call(id uint32, c jdwp.Cmd, body []byte) jdwp.Packet {
	d.t.Helper()
	d.send(id, c, body)
	for {
		p := d.read()
		if p.IsReply() {
			if p.ID() != id {
				d.t.Fatalf("reply for %#x while waiting for %#x", p.ID(), id)
			}
			return p
		}
	}
}

// quiet asserts nothing more arrives for a short while.
func (d *debugger) quiet() {
	d.t.Helper()
	p, err := d.d.NextWithin(150 * time.Millisecond)
	if err == nil {
		d.t.Fatalf("unexpected packet to debugger: %v", p)
	}
}

type rig struct {
	vm   *fakeVM
	dbg  *debugger
	sp   *Speculator
	stop func()                        // ends the session and waits for the relay (idempotent)
	rs   atomic.Pointer[relay.Session] // the last session the relay made
}

func newRig(t *testing.T, cfg Config) *rig {
	t.Helper()
	return newRigWith(t, cfg, nil)
}

// newRigWith is newRig with the VM answering with h from the start (the
// attach's Version included).
func newRigWith(t *testing.T, cfg Config, h func(p jdwp.Packet) (jdwp.ErrorCode, []byte)) *rig {
	t.Helper()
	r := startRigWith(t, newTestSpeculator(cfg), h)
	// Learn ID sizes as JDI does first.
	if p := r.dbg.call(1, jdwp.CmdIDSizes, nil); p.ErrorCode() != 0 {
		t.Fatal("IDSizes failed")
	}
	r.vm.waitFor(jdwp.CmdIDSizes)
	// A few round trips so the RTT estimator has samples.
	for i := uint32(2); i < 5; i++ {
		r.dbg.call(i, jdwp.CmdVirtualMachineVersion, nil)
	}
	return r
}

func newTestSpeculator(cfg Config) *Speculator {
	if cfg.MinRTT == 0 {
		cfg.MinRTT = -1 // always speculate in unit tests
	}
	sp := New(cfg, testLog(), nil)
	sp.noPrior = true // the fake VM's attaches learn from nothing but themselves
	return sp
}

func testLog() zerolog.Logger {
	if os.Getenv("SPEC_DEBUG") != "" {
		return zerolog.New(zerolog.NewConsoleWriter()).Level(zerolog.TraceLevel)
	}
	return zerolog.Nop()
}

// startRig connects a debugger through a relay with sp to a new fake VM,
// and sends nothing yet.
func startRig(t *testing.T, sp *Speculator) *rig {
	t.Helper()
	return startRigWith(t, sp, nil)
}

// startRigWith is startRig with the VM answering with h.
func startRigWith(t *testing.T, sp *Speculator, h func(p jdwp.Packet) (jdwp.ErrorCode, []byte)) *rig {
	t.Helper()
	log := testLog()
	vm := newFakeVM(t, h)
	r := &rig{vm: vm, sp: sp}
	hooks := rigHooks(sp)
	srv := relay.NewServer(relay.Config{
		DialVM: relay.DialTCP(vm.vm.Addr()),
		Logger: log,
		NewHooks: func(rs *relay.Session) relay.Hooks {
			r.rs.Store(rs)
			return hooks(rs)
		},
	})
	dbgLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		srv.Serve(ctx, dbgLn)
		close(done)
	}()
	jd, err := jdwptest.Attach(dbgLn.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	r.dbg = &debugger{t: t, d: jd}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			jd.Close()
			cancel()
			<-done
			vm.vm.Close()
		})
	}
	r.stop = stop
	t.Cleanup(stop)
	return r
}

func body(f func(w *jdwp.BodyWriter)) []byte {
	w := jdwp.BodyWriter{Sizes: sizes8}
	f(&w)
	return w.Buf
}

func threadBody(t uint64) []byte { return body(func(w *jdwp.BodyWriter) { w.ObjectID(t) }) }

// event sends a one-event composite from the fake VM.
func (r *rig) event(policy jdwp.SuspendPolicy, e jdwp.Event) {
	c := jdwp.Composite{SuspendPolicy: policy, Events: []jdwp.Event{e}}
	r.vm.write(jdwp.AppendCommand(nil, 1000, jdwp.CmdComposite, jdwptest.AppendComposite(nil, sizes8, &c)))
}

// expectEvent reads the event the VM sent.
func (r *rig) expectEvent() {
	r.dbg.t.Helper()
	p := r.dbg.read()
	if p.IsReply() || p.Cmd() != jdwp.CmdComposite {
		r.dbg.t.Fatalf("want event, got %v", p)
	}
}

const thread1 = 0x51

func bpEvent(thread uint64) jdwp.Event {
	return jdwp.Event{Kind: jdwp.EventBreakpoint, RequestID: 3, Thread: thread,
		Location: jdwp.Location{TypeTag: jdwp.TypeTagClass, Class: 0x70, Method: 0x71, Index: 4}}
}

// frameState is a scripted VM state for the stop tests.
type frameState struct {
	mu      sync.Mutex
	count   int32
	values  int32
	threads []uint64 // AllThreads' answer; thread1 alone when empty
}

func (fs *frameState) set(count, values int32) {
	fs.mu.Lock()
	fs.count, fs.values = count, values
	fs.mu.Unlock()
}

// alive says whether AllThreads lists t.
func (fs *frameState) alive(t uint64) bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return slices.Contains(fs.threads, t)
}

func (fs *frameState) handler(p jdwp.Packet) (jdwp.ErrorCode, []byte) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	switch p.Cmd() {
	case jdwp.CmdThreadReferenceFrameCount:
		return 0, body(func(w *jdwp.BodyWriter) { w.Int32(fs.count) })
	case jdwp.CmdThreadReferenceFrames:
		return 0, body(func(w *jdwp.BodyWriter) {
			w.Int32(1)
			w.FrameID(0xF0 + uint64(fs.count))
			w.Location(jdwp.Location{TypeTag: 1, Class: 0x70, Method: 0x71, Index: 4})
		})
	case jdwp.CmdVirtualMachineAllThreads:
		threads := fs.threads
		if len(threads) == 0 {
			threads = []uint64{thread1}
		}
		return 0, body(func(w *jdwp.BodyWriter) {
			w.Int32(int32(len(threads)))
			for _, t := range threads {
				w.ObjectID(t)
			}
		})
	case jdwp.CmdThreadReferenceName:
		return 0, body(func(w *jdwp.BodyWriter) { w.String("main") })
	case jdwp.CmdThreadReferenceStatus:
		return 0, body(func(w *jdwp.BodyWriter) { w.Int32(1); w.Int32(1) })
	case jdwp.CmdMethodIsObsolete:
		return 0, []byte{0}
	case jdwp.CmdObjectReferenceGetValues, jdwp.CmdStackFrameGetValues:
		return 0, body(func(w *jdwp.BodyWriter) { w.Int32(1); w.Value(jdwp.Value{Tag: jdwp.TagInt, Bits: uint64(fs.values)}) })
	case jdwp.CmdVirtualMachineVersion:
		return 0, versionReply(refAgent)
	}
	return 0, nil
}

// versionReply is the body of a VirtualMachine.Version reply from an
// agent with the description desc, on a VM that calls itself fakevm.
func versionReply(desc string) []byte { return jdwptest.VersionBody(desc, "fakevm") }

// refAgent is the description the reference JDWP agent (libjdwp) gives in
// its Version reply: the fake VMs claim it (the moment's rule needs it).
const refAgent = "Java Debug Wire Protocol (Reference Implementation) version 17.0 (fake)"

func newStopRig(t *testing.T) (*rig, *frameState) {
	fs := &frameState{count: 3, values: 10}
	return newRigWith(t, Config{}, fs.handler), fs
}

// waitStats waits until the speculator's counters satisfy cond: they are
// the only sign that the relay has processed a debugger command the
// speculator consumed.
func (r *rig) waitStats(cond func(Stats) bool) {
	r.dbg.t.Helper()
	jdwptest.Await(r.dbg.t, "the speculator's stats", r.sp.Changed, func() (bool, string) {
		st := r.sp.Stats()
		return cond(st), fmt.Sprintf("%+v", st)
	})
}

// be32 reads a big-endian int32 at the start of b.
func be32(b []byte) int32 { return int32(binary.BigEndian.Uint32(b)) }

// rigModes holds the Mode a test's Speculator's rig sessions run in
// (NewTapped), for the Speculators a test put there; others use Hooks.
var rigModes sync.Map // *Speculator → Mode

// rigHooks makes a rig session's hooks: the speculator's session (in the
// test's Mode, if it put one in rigModes), and the test's observer of it
// (rigObservers), if any.
func rigHooks(sp *Speculator) func(*relay.Session) relay.Hooks {
	return func(rs *relay.Session) relay.Hooks {
		var ss *session
		if m, ok := rigModes.Load(sp); ok {
			s := sp.NewTapped(rs, m.(Mode), nil)
			rigSessions.Store(sp, s)
			ss = s.ss
		} else {
			ss = newSession(sp, rs) // as sp.Hooks
		}
		h := relay.Hooks{Interceptors: []relay.Interceptor{ss}}
		if o, ok := rigObservers.Load(sp); ok {
			h.Observers = []relay.Observer{o.(func(*session) relay.Observer)(ss)}
		}
		return h
	}
}

// rigObservers holds, for a test's Speculator, what makes an observer
// of its rig sessions (after the speculator's interceptor).
var rigObservers sync.Map // *Speculator → func(*session) relay.Observer

// observerFunc is a relay.Observer.
type observerFunc func(*relay.Session, *relay.Frame)

func (o observerFunc) Observe(rs *relay.Session, f *relay.Frame) { o(rs, f) }

// rigSessions holds the last Session a rig with a mode made for a test's
// Speculator.
var rigSessions sync.Map // *Speculator → *Session

// quietSession is a session with no VM in ModeNever (it sends nothing of
// its own, and learns as a far end's does from what it is told): its relay
// session, the session and its interceptor.
func quietSession() (*relay.Session, *Session, relay.Interceptor) {
	rs := &relay.Session{}
	rs.SetIDSizes(sizes8)
	s := New(Config{}, zerolog.Nop(), nil).NewTapped(rs, ModeNever, nil)
	return rs, s, s.Interceptor()
}

// stopAt hands ic a breakpoint event of thread1, suspending by policy p.
func stopAt(rs *relay.Session, ic relay.Interceptor, p jdwp.SuspendPolicy) {
	c := jdwp.Composite{SuspendPolicy: p, Events: []jdwp.Event{bpEvent(thread1)}}
	ic.FromVM(rs, &relay.Frame{Kind: relay.KindEvent, Packet: jdwp.AppendCommand(nil, 1000, jdwp.CmdComposite, jdwptest.AppendComposite(nil, sizes8, &c))})
}
