package relay_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/retag"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// rig is a relay between a test debugger and a test VM, over loopback.
type rig struct {
	t       *testing.T
	proxy   net.Addr
	vmLn    net.Listener
	logs    *jdwptest.Buffer
	metrics *relay.Metrics
	reg     *prometheus.Registry
	done    chan error
	cancel  context.CancelFunc
}

func newRig(t *testing.T, hooks func(*relay.Session) relay.Hooks, opts ...func(*relay.Config)) *rig {
	t.Helper()
	vmLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logs := &jdwptest.Buffer{}
	reg := prometheus.NewRegistry()
	r := &rig{t: t, proxy: ln.Addr(), vmLn: vmLn, logs: logs, reg: reg, metrics: relay.NewMetrics(reg), done: make(chan error, 1)}
	cfg := relay.Config{
		DialVM:           relay.DialTCP(vmLn.Addr().String()),
		MaxPacketSize:    1 << 20,
		HandshakeTimeout: 5 * time.Second,
		NewHooks:         hooks,
		Logger:           zerolog.New(logs),
		Metrics:          r.metrics,
	}
	for _, o := range opts {
		o(&cfg)
	}
	srv := relay.NewServer(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-r.done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		vmLn.Close()
	})
	return r
}

// acceptVM accepts the proxy's connection to the test VM and exchanges the
// handshake.
func (r *rig) acceptVM() net.Conn {
	r.t.Helper()
	if l, ok := r.vmLn.(*net.TCPListener); ok {
		l.SetDeadline(time.Now().Add(10 * time.Second)) // a proxy that never dials fails the test
	}
	c, err := r.vmLn.Accept()
	if err != nil {
		r.t.Fatal(err)
	}
	if err := jdwp.ReadHandshake(c); err != nil {
		r.t.Fatalf("VM side handshake: %v", err)
	}
	if err := jdwp.WriteHandshake(c); err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { c.Close() })
	return c
}

// dial connects a test debugger to the proxy; with handshake true it
// performs the handshake and returns both ends.
func (r *rig) dial() net.Conn {
	r.t.Helper()
	c, err := net.Dial("tcp", r.proxy.String())
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { c.Close() })
	return c
}

func (r *rig) connect() (dbg, vm net.Conn) {
	r.t.Helper()
	dbg = r.dial()
	if err := jdwp.WriteHandshake(dbg); err != nil {
		r.t.Fatal(err)
	}
	vm = r.acceptVM()
	if err := jdwp.ReadHandshake(dbg); err != nil {
		r.t.Fatalf("debugger side handshake: %v", err)
	}
	return dbg, vm
}

// randomPackets builds n well-formed packets, commands and replies mixed.
func randomPackets(rng *rand.Rand, n int, fromVM bool) [][]byte {
	var out [][]byte
	for i := range n {
		body := make([]byte, rng.IntN(300))
		for j := range body {
			body[j] = byte(rng.Uint32())
		}
		switch {
		case rng.IntN(4) == 0:
			out = append(out, jdwp.AppendReply(nil, uint32(i), jdwp.ErrorCode(rng.IntN(3)), body))
		case fromVM && rng.IntN(2) == 0:
			out = append(out, jdwp.AppendCommand(nil, uint32(i), jdwp.CmdComposite, body))
		case fromVM:
			out = append(out, jdwp.AppendCommand(nil, uint32(i), jdwp.CmdDDMChunk, body))
		default:
			out = append(out, jdwp.AppendCommand(nil, uint32(i), jdwp.Cmd{Set: jdwp.CommandSet(1 + rng.IntN(20)), Cmd: uint8(1 + rng.IntN(20))}, body))
		}
	}
	return out
}

// TestTransparency: the bytes each side receives through the proxy are
// exactly the bytes the other side sent, in both directions at once, with
// writes split at arbitrary points.
func TestTransparency(t *testing.T) {
	r := newRig(t, nil)
	dbg, vm := r.connect()
	rng := rand.New(rand.NewPCG(1, 2))
	fromDbg := bytes.Join(randomPackets(rng, 500, false), nil)
	fromVM := bytes.Join(randomPackets(rng, 500, true), nil)

	var wg sync.WaitGroup
	send := func(c net.Conn, b []byte, seed uint64) {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(seed, seed))
		for len(b) > 0 {
			n := min(len(b), 1+rng.IntN(700))
			if _, err := c.Write(b[:n]); err != nil {
				t.Errorf("write: %v", err)
				return
			}
			b = b[n:]
		}
	}
	wg.Add(2)
	go send(dbg, fromDbg, 3)
	go send(vm, fromVM, 4)

	gotAtVM := make([]byte, len(fromDbg))
	gotAtDbg := make([]byte, len(fromVM))
	errc := make(chan error, 2)
	go func() { _, err := io.ReadFull(vm, gotAtVM); errc <- err }()
	go func() { _, err := io.ReadFull(dbg, gotAtDbg); errc <- err }()
	for range 2 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if !bytes.Equal(gotAtVM, fromDbg) {
		t.Error("VM received different bytes than the debugger sent")
	}
	if !bytes.Equal(gotAtDbg, fromVM) {
		t.Error("debugger received different bytes than the VM sent")
	}
}

// recorder is an observer that keeps a copy of every frame.
type recorder struct {
	mu     sync.Mutex // guards frames
	frames []relay.Frame
	ended  chan struct{}
}

func (rec *recorder) Observe(_ *relay.Session, f *relay.Frame) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	c := *f
	c.Packet = f.Packet.Clone()
	rec.frames = append(rec.frames, c)
}

func (rec *recorder) SessionStart(*relay.Session) {}
func (rec *recorder) SessionEnd(*relay.Session, error) {
	close(rec.ended)
}

func (rec *recorder) snapshot() []relay.Frame {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]relay.Frame(nil), rec.frames...)
}

func TestClassification(t *testing.T) {
	rec := &recorder{ended: make(chan struct{})}
	var sess *relay.Session
	r := newRig(t, func(s *relay.Session) relay.Hooks {
		sess = s
		return relay.Hooks{Observers: []relay.Observer{rec}}
	})
	dbg, vm := r.connect()
	sizes := jdwp.IDSizes{FieldID: 8, MethodID: 8, ObjectID: 8, ReferenceTypeID: 8, FrameID: 8}

	write := func(c net.Conn, p []byte) {
		if _, err := c.Write(p); err != nil {
			t.Fatal(err)
		}
	}
	read := func(c net.Conn) jdwp.Packet {
		p, err := jdwp.NewReader(c, 0).Next()
		if err != nil {
			t.Fatal(err)
		}
		return p.Clone()
	}
	write(dbg, jdwp.AppendCommand(nil, 1, jdwp.CmdIDSizes, nil))
	read(vm)
	write(vm, jdwp.AppendReply(nil, 1, 0, jdwp.AppendIDSizes(nil, sizes)))
	read(dbg)
	write(vm, jdwp.AppendCommand(nil, 7, jdwp.CmdComposite, []byte{2, 0, 0, 0, 0}))
	read(dbg)
	write(vm, jdwp.AppendCommand(nil, 8, jdwp.CmdDDMChunk, []byte("HELO")))
	read(dbg)
	write(vm, jdwp.AppendCommand(nil, 9, jdwp.Cmd{Set: 100, Cmd: 1}, nil))
	read(dbg)
	write(dbg, jdwp.AppendReply(nil, 9, 0, nil))
	read(vm)
	dbg.Close()
	<-rec.ended

	if got, ok := sess.IDSizes(); !ok || got != sizes {
		t.Errorf("IDSizes = %+v, %v; want %+v learned from the reply", got, ok, sizes)
	}
	want := []struct {
		dir  relay.Direction
		kind relay.Kind
		cmd  jdwp.Cmd
		id   uint32
	}{
		{relay.ToVM, relay.KindCommand, jdwp.CmdIDSizes, 1},
		{relay.ToDebugger, relay.KindReply, jdwp.CmdIDSizes, 1},
		{relay.ToDebugger, relay.KindEvent, jdwp.CmdComposite, 7},
		{relay.ToDebugger, relay.KindDDM, jdwp.CmdDDMChunk, 8},
		{relay.ToDebugger, relay.KindVMCommand, jdwp.Cmd{Set: 100, Cmd: 1}, 9},
		{relay.ToVM, relay.KindDebuggerReply, jdwp.Cmd{Set: 100, Cmd: 1}, 9},
	}
	got := rec.snapshot()
	if len(got) != len(want) {
		t.Fatalf("observed %d frames, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Dir != w.dir || g.Kind != w.kind || g.Cmd != w.cmd || g.ID != w.id || g.Origin != relay.Forwarded {
			t.Errorf("frame %d = {%v %v %v id=%d %v}, want {%v %v %v id=%d forwarded}", i, g.Dir, g.Kind, g.Cmd, g.ID, g.Origin, w.dir, w.kind, w.cmd, w.id)
		}
	}
	if got[1].Latency <= 0 {
		t.Errorf("reply latency = %v, want > 0", got[1].Latency)
	}
	if n := counter(t, r.reg, "jdwpaccel_packets_total", "to_debugger", "event"); n != 1 {
		t.Errorf("events counted = %v, want 1", n)
	}
}

// answerer answers every VM.Version command itself and injects an extra
// command of its own, to exercise the interceptor path.
type answerer struct {
	closed chan struct{}
}

var cmdVersion = jdwp.Cmd{Set: jdwp.SetVirtualMachine, Cmd: 1}

func (a *answerer) FromDebugger(s *relay.Session, f *relay.Frame) relay.Action {
	if f.Kind == relay.KindCommand && f.Cmd == cmdVersion {
		f.Origin = relay.CacheHit
		f.Answer = jdwp.AppendReply(nil, f.ID, 0, []byte("cached"))
		f.Out().SendToVM(jdwp.AppendCommand(nil, 0xA0000000, cmdVersion, nil), relay.Synthetic)
		return relay.Consume
	}
	return relay.Forward
}

func (a *answerer) FromVM(_ *relay.Session, f *relay.Frame) relay.Action {
	if f.Kind == relay.KindReply && f.Packet.ID() >= 0xA0000000 {
		f.Origin = relay.Synthetic
		return relay.Consume
	}
	return relay.Forward
}

func (a *answerer) Close(*relay.Session) { close(a.closed) }

func TestInterceptor(t *testing.T) {
	rec := &recorder{ended: make(chan struct{})}
	ans := &answerer{closed: make(chan struct{})}
	r := newRig(t, func(*relay.Session) relay.Hooks {
		return relay.Hooks{Interceptors: []relay.Interceptor{ans}, Observers: []relay.Observer{rec}}
	})
	dbg, vm := r.connect()
	dr, vr := jdwp.NewReader(dbg, 0), jdwp.NewReader(vm, 0)

	dbg.Write(jdwp.AppendCommand(nil, 5, cmdVersion, nil))
	p, err := dr.Next()
	if err != nil {
		t.Fatal(err)
	}
	if !p.IsReply() || p.ID() != 5 || string(p.Body()) != "cached" {
		t.Fatalf("debugger got %v %q, want the cached reply with its own ID", p, p.Body())
	}
	p, err = vr.Next()
	if err != nil {
		t.Fatal(err)
	}
	if p.ID() != 0xA0000000 {
		t.Fatalf("VM got %v, want only the synthetic command", p)
	}
	vm.Write(jdwp.AppendReply(nil, 0xA0000000, 0, []byte("synthetic")))
	// A forwarded round trip after it proves the synthetic reply was
	// consumed: the debugger's next packet is this reply, not that one.
	dbg.Write(jdwp.AppendCommand(nil, 6, jdwp.CmdIDSizes, nil))
	if p, err = vr.Next(); err != nil || p.ID() != 6 {
		t.Fatalf("VM got %v, %v; want command 6", p, err)
	}
	vm.Write(jdwp.AppendReply(nil, 6, 0, nil))
	if p, err = dr.Next(); err != nil || p.ID() != 6 {
		t.Fatalf("debugger got %v, %v; want reply 6 and no synthetic reply", p, err)
	}
	vm.Close()
	<-ans.closed
	<-rec.ended

	// Each direction is observed in order; the two directions interleave
	// freely. The synthetic command is injected while the debugger's
	// command is being intercepted, so it is observed first, and a
	// command is observed before its answer.
	var toVM, toDbg []string
	for _, f := range rec.snapshot() {
		s := f.Kind.String() + "/" + f.Origin.String()
		if f.Dir == relay.ToVM {
			toVM = append(toVM, s)
		} else {
			toDbg = append(toDbg, s)
		}
	}
	if got, want := strings.Join(toVM, " "), "command/synthetic command/cache_hit command/forwarded"; got != want {
		t.Errorf("to VM observed %s, want %s", got, want)
	}
	if got, want := strings.Join(toDbg, " "), "reply/cache_hit reply/synthetic reply/forwarded"; got != want {
		t.Errorf("to debugger observed %s, want %s", got, want)
	}
}

// TestBadInput: each kind of bad input closes its own session with a clear
// log line and a counted reason; the server keeps serving.
func TestBadInput(t *testing.T) {
	r := newRig(t, nil)
	cases := []struct {
		name   string
		reason relay.Reason
		run    func(t *testing.T)
	}{
		{"wrong handshake", relay.ReasonBadHandshake, func(t *testing.T) {
			c := r.dial()
			c.Write([]byte("GET / HTTP/1.1\r\n"))
			expectClosed(t, c)
		}},
		{"short packet", relay.ReasonShortPacket, func(t *testing.T) {
			dbg, vm := r.connect()
			dbg.Write([]byte{0, 0, 0, 5, 0, 0, 0, 1, 0, 1, 1})
			expectClosed(t, dbg)
			expectClosed(t, vm)
		}},
		{"oversized packet", relay.ReasonOversizedPacket, func(t *testing.T) {
			dbg, vm := r.connect()
			vm.Write([]byte{0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 1, 0, 1, 1})
			expectClosed(t, dbg)
			expectClosed(t, vm)
		}},
		{"peer vanishes mid-packet", relay.ReasonTruncated, func(t *testing.T) {
			dbg, vm := r.connect()
			p := jdwp.AppendCommand(nil, 1, cmdVersion, make([]byte, 100))
			dbg.Write(p[:50])
			dbg.(*net.TCPConn).CloseWrite()
			expectClosed(t, vm)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := counter(t, r.reg, "jdwpaccel_protocol_errors_total", string(c.reason))
			c.run(t)
			protocolErrors(t, r.reg, c.reason, before+1)
			if !strings.Contains(r.logs.String(), `"reason":"`+string(c.reason)+`"`) {
				t.Errorf("no log line with reason %s in:\n%s", c.reason, r.logs)
			}
		})
	}
	// The server still relays a good session.
	dbg, vm := r.connect()
	dbg.Write(jdwp.AppendCommand(nil, 1, cmdVersion, nil))
	if p, err := jdwp.NewReader(vm, 0).Next(); err != nil || p.ID() != 1 {
		t.Fatalf("after bad sessions, VM got %v, %v", p, err)
	}
}

func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("connection was not closed")
	}
}

// TestSessionsOneAfterAnother: each debugger gets its own VM connection,
// closed when the debugger leaves.
func TestSessionsOneAfterAnother(t *testing.T) {
	r := newRig(t, nil)
	for i := range 3 {
		dbg, vm := r.connect()
		dbg.Write(jdwp.AppendCommand(nil, uint32(i), cmdVersion, nil))
		if p, err := jdwp.NewReader(vm, 0).Next(); err != nil || p.ID() != uint32(i) {
			t.Fatalf("session %d: VM got %v, %v", i, p, err)
		}
		dbg.Close()
		expectClosed(t, vm)
	}
}

func TestShutdownClosesSessions(t *testing.T) {
	r := newRig(t, nil)
	dbg, vm := r.connect()
	r.cancel()
	expectClosed(t, dbg)
	expectClosed(t, vm)
}

// counter reads a counter from reg by name and label values (in the
// order the metric declares its labels).
// protocolErrors waits until jdwpaccel_protocol_errors_total counts want
// for reason: the count is incremented by a session's goroutine, after its
// log line, with no other signal to wait on.
func protocolErrors(t *testing.T, reg *prometheus.Registry, reason relay.Reason, want float64) {
	t.Helper()
	jdwptest.Eventually(t, "protocol errors of reason "+string(reason), func() (bool, string) {
		n := counter(t, reg, "jdwpaccel_protocol_errors_total", string(reason))
		return n == want, fmt.Sprintf("%v, want %v", n, want)
	})
}

func counter(t *testing.T, reg *prometheus.Registry, name string, values ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != len(values) {
				continue
			}
			for i, l := range m.GetLabel() {
				if l.GetValue() != values[i] {
					continue metrics
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no counter %s%v", name, values)
	return 0
}

// TestFlushWhenBurstEndsConsumed: a forwarded packet followed, in the same
// read, by one an interceptor consumes must still be flushed to its peer.
func TestFlushWhenBurstEndsConsumed(t *testing.T) {
	ans := &answerer{closed: make(chan struct{})}
	r := newRig(t, func(*relay.Session) relay.Hooks {
		return relay.Hooks{Interceptors: []relay.Interceptor{ans}}
	})
	dbg, vm := r.connect()
	dbg.Write(jdwp.AppendCommand(nil, 6, jdwp.CmdIDSizes, nil))
	if p, err := jdwp.NewReader(vm, 0).Next(); err != nil || p.ID() != 6 {
		t.Fatalf("VM got %v, %v", p, err)
	}
	burst := jdwp.AppendReply(nil, 6, 0, nil)
	burst = append(burst, jdwp.AppendReply(nil, 0xA0000001, 0, []byte("consumed"))...)
	vm.Write(burst)
	dbg.SetReadDeadline(time.Now().Add(5 * time.Second))
	if p, err := jdwp.NewReader(dbg, 0).Next(); err != nil || p.ID() != 6 {
		t.Fatalf("debugger got %v, %v; want reply 6, flushed although the burst's last packet was consumed", p, err)
	}
}

// belayer holds every Version command and answers it from another
// goroutine at once, racing the relay's observation of the command.
type belayer struct{ wg sync.WaitGroup }

func (b *belayer) FromDebugger(s *relay.Session, f *relay.Frame) relay.Action {
	if f.Kind != relay.KindCommand || f.Cmd != cmdVersion {
		return relay.Forward
	}
	answer := jdwp.AppendReply(nil, f.ID, 0, []byte("belayed"))
	started := make(chan struct{})
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		close(started)
		s.Do(func(out *relay.Outbox) { out.SendToDebugger(answer, relay.Belay, cmdVersion) }) //nolint:errcheck // the session ending is fine
	}()
	<-started
	runtime.Gosched()
	f.Origin = relay.Belay
	return relay.Consume
}
func (b *belayer) FromVM(*relay.Session, *relay.Frame) relay.Action { return relay.Forward }
func (b *belayer) Close(*relay.Session)                             { b.wg.Wait() }

// TestBelayObservedAfterCommand: observers see a belayed command before
// its answer, however fast the answer comes.
func TestBelayObservedAfterCommand(t *testing.T) {
	rec := &recorder{ended: make(chan struct{})}
	bel := &belayer{}
	r := newRig(t, func(*relay.Session) relay.Hooks {
		return relay.Hooks{Interceptors: []relay.Interceptor{bel}, Observers: []relay.Observer{rec}}
	})
	dbg, _ := r.connect()
	dr := jdwp.NewReader(dbg, 0)
	const n = 300
	for i := range n {
		dbg.Write(jdwp.AppendCommand(nil, uint32(i), cmdVersion, nil))
		if p, err := dr.Next(); err != nil || p.ID() != uint32(i) {
			t.Fatalf("answer %d: %v, %v", i, p, err)
		}
	}
	dbg.Close()
	<-rec.ended
	frames := rec.snapshot()
	if len(frames) != 2*n {
		t.Fatalf("observed %d frames, want %d", len(frames), 2*n)
	}
	for i := 0; i < len(frames); i += 2 {
		if frames[i].Kind != relay.KindCommand || frames[i+1].Kind != relay.KindReply || frames[i].ID != frames[i+1].ID {
			t.Fatalf("frames %d,%d: %v id=%d then %v id=%d; want each command observed before its answer",
				i, i+1, frames[i].Kind, frames[i].ID, frames[i+1].Kind, frames[i+1].ID)
		}
	}
}

// idle is an interceptor that lets everything through.
type idle struct{}

func (idle) FromDebugger(*relay.Session, *relay.Frame) relay.Action { return relay.Forward }
func (idle) FromVM(*relay.Session, *relay.Frame) relay.Action       { return relay.Forward }
func (idle) Close(*relay.Session)                                   {}

// TestRemapInRelay: the relay itself keeps the debugger's IDs apart from
// the proxy's range, whatever its interceptors do: a debugger command in
// the range reaches the VM under another ID and its reply comes back
// under the debugger's, and a reply to a command of the proxy's own (one
// whose sender gave up on it) never reaches the debugger. With no
// interceptor at all the relay sends nothing of its own and passes every
// ID unchanged.
func TestRemapInRelay(t *testing.T) {
	const theirs = retag.SyntheticBase + 5
	for _, hooked := range []bool{true, false} {
		var hooks func(*relay.Session) relay.Hooks
		if hooked {
			hooks = func(*relay.Session) relay.Hooks { return relay.Hooks{Interceptors: []relay.Interceptor{idle{}}} }
		}
		r := newRig(t, hooks)
		dbg, vm := r.connect()
		dr, vr := jdwp.NewReader(dbg, 0), jdwp.NewReader(vm, 0)
		dbg.Write(jdwp.AppendCommand(nil, theirs, jdwp.CmdIDSizes, nil))
		p, err := vr.Next()
		if err != nil {
			t.Fatal(err)
		}
		wire := p.ID()
		if hooked && (wire == theirs || !retag.InRange(wire)) || !hooked && wire != theirs {
			t.Fatalf("interceptors %v: VM got ID %#x for the debugger's %#x", hooked, wire, uint32(theirs))
		}
		var burst []byte
		if hooked {
			burst = jdwp.AppendReply(nil, 0xA0001234, 0, []byte("late"))
		}
		vm.Write(append(burst, jdwp.AppendReply(nil, wire, 0, []byte("theirs"))...))
		if p, err = dr.Next(); err != nil || p.ID() != theirs || string(p.Body()) != "theirs" {
			t.Fatalf("interceptors %v: debugger got %v, %v; want its reply under its own ID", hooked, p, err)
		}
	}
}

// dataSlot is the slot of slotter, the test's hook with per-command data.
var dataSlot = relay.NewSlot()

// slotter keeps each debugger command's ID with it, injects a synthetic
// command with data of its own, and records what each reply brings back.
type slotter struct {
	mu  sync.Mutex // guards got
	got map[uint32]any
}

func (s *slotter) FromDebugger(rs *relay.Session, f *relay.Frame) relay.Action {
	if f.Kind != relay.KindCommand {
		return relay.Forward
	}
	id := f.ID
	f.SetData(dataSlot, &id)
	if f.ID == 1 {
		syn := rs.IDs().NewSynthetic()
		f.Out().SendToVMData(jdwp.AppendCommand(nil, syn, cmdVersion, nil), relay.Synthetic, dataSlot, "synthetic")
	}
	return relay.Forward
}

func (s *slotter) FromVM(_ *relay.Session, f *relay.Frame) relay.Action {
	if f.Kind == relay.KindReply {
		s.mu.Lock()
		s.got[f.Packet.ID()] = f.Data(dataSlot)
		s.mu.Unlock()
	}
	return relay.Forward
}

func (s *slotter) Close(*relay.Session) {}

// TestSlotData: the relay hands each reply the data its command was given
// (Frame.SetData for the debugger's, Outbox.SendToVMData for the proxy's own),
// under the ID the VM used, remapped commands included.
func TestSlotData(t *testing.T) {
	sl := &slotter{got: map[uint32]any{}}
	r := newRig(t, func(*relay.Session) relay.Hooks { return relay.Hooks{Interceptors: []relay.Interceptor{sl}} })
	dbg, vm := r.connect()
	dr, vr := jdwp.NewReader(dbg, 0), jdwp.NewReader(vm, 0)
	const theirs = retag.SyntheticBase + 9
	dbg.Write(append(jdwp.AppendCommand(nil, 1, jdwp.CmdIDSizes, nil), jdwp.AppendCommand(nil, theirs, jdwp.CmdIDSizes, nil)...))
	var replies []byte
	wires := map[uint32]bool{}
	for range 3 {
		p, err := vr.Next()
		if err != nil {
			t.Fatal(err)
		}
		wires[p.ID()] = true
		replies = append(replies, jdwp.AppendReply(nil, p.ID(), 0, nil)...)
	}
	vm.Write(replies)
	for _, want := range []uint32{1, theirs} {
		if p, err := dr.Next(); err != nil || p.ID() != want {
			t.Fatalf("debugger got %v, %v; want the reply to %#x", p, err, want)
		}
	}
	// The synthetic reply was read before the debugger's second one.
	sl.mu.Lock()
	defer sl.mu.Unlock()
	var synthetic, own int
	for id, d := range sl.got {
		switch d := d.(type) {
		case string:
			synthetic++
		case *uint32:
			if *d != id && !(*d == theirs && wires[id]) {
				t.Errorf("reply %#x got the data of command %#x", id, *d)
			}
			own++
		default:
			t.Errorf("reply %#x got %v", id, d)
		}
	}
	if synthetic != 1 || own != 2 {
		t.Fatalf("replies with data: %d synthetic, %d debugger's; want 1 and 2 (%v)", synthetic, own, sl.got)
	}
}

// TestSessionSeedsTCP is FuzzSession's property over loopback TCP, through
// a Server accepting on a listener, for each seed.
func TestSessionSeedsTCP(t *testing.T) {
	for i, s := range sessionSeeds() {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			r := newRig(t, nil, func(c *relay.Config) { c.MaxPacketSize = fuzzMaxPacket })
			dbg, vm := r.connect()
			checkSession(t, dbg, vm, s[0], s[1])
		})
	}
}
