package journal

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/rs/zerolog"
)

// This file is the test harness: a fake VM that answers every command, a
// scripted fake debugger, and a toy speculator interceptor that produces
// cache hits, belays and synthetic traffic the way the real one does.

var testSizes = jdwp.IDSizes{FieldID: 8, MethodID: 8, ObjectID: 8, ReferenceTypeID: 8, FrameID: 8}

const (
	testThread = 0x1234
	synthBase  = 0x40000000
)

// startFakeVM starts the kit's scripted VM answering IDSizes with 8-byte
// IDs, Version and ThreadReference.Name with strings, VM.Resume with a
// reply then a BREAKPOINT event, anything else with its own body echoed.
// It keeps no commands and allocates nothing per command (BenchmarkRelay
// counts allocations).
func startFakeVM(t testing.TB) *jdwptest.VM {
	t.Helper()
	version := jdwp.BodyWriter{}
	version.String("fake VM 1.0")
	version.Int32(11)
	version.Int32(0)
	version.String("17")
	version.String("fakevm")
	name := jdwp.BodyWriter{}
	name.String("main")
	c := jdwp.Composite{SuspendPolicy: 2, Events: []jdwp.Event{{
		Kind: jdwp.EventBreakpoint, RequestID: 3, Thread: testThread,
		Location: jdwp.Location{TypeTag: 1, Class: 0x77, Method: 0x88, Index: 4},
	}}}
	event := jdwptest.AppendComposite(nil, testSizes, &c)
	var eventID atomic.Uint32
	eventID.Store(1 << 20)
	return jdwptest.StartVM(t, jdwptest.Script{
		Replies: map[jdwp.Cmd]jdwptest.ReplyFunc{
			jdwp.CmdIDSizes:               jdwptest.Body(jdwp.AppendIDSizes(nil, testSizes)),
			jdwp.CmdVirtualMachineVersion: jdwptest.Body(version.Buf),
			jdwp.CmdThreadReferenceName:   jdwptest.Body(name.Buf),
		},
		Default: func(p jdwp.Packet) (jdwp.ErrorCode, []byte) { return 0, p.Body() },
		After: func(c *jdwptest.Conn, p jdwp.Packet) error {
			if p.Cmd() != jdwp.CmdVirtualMachineResume {
				return nil
			}
			return c.Write(jdwp.AppendCommand(nil, eventID.Add(1), jdwp.CmdComposite, event))
		},
		Unrecorded: true,
	})
}

// toySpeculator answers VM.Version from a cache that AllThreads primes
// with a synthetic Version command, and belays ThreadReference.Name behind
// a synthetic Name command.
type toySpeculator struct {
	mu      sync.Mutex // guards the fields below
	next    uint32
	synth   map[uint32]jdwp.Cmd // synthetic commands in flight, by wire ID
	belayed map[uint32]uint32   // synthetic ID -> debugger ID waiting for it
	version []byte              // cached Version reply body
	answer  []byte
}

func newToySpeculator() *toySpeculator {
	return &toySpeculator{next: synthBase, synth: map[uint32]jdwp.Cmd{}, belayed: map[uint32]uint32{}}
}

// send sends a synthetic command through out; a debugger command belayed
// behind it (belayFor, 0 for none) is registered with it.
func (t *toySpeculator) send(out *relay.Outbox, c jdwp.Cmd, body []byte, belayFor uint32, belay bool) {
	t.mu.Lock()
	t.next++
	id := t.next
	t.synth[id] = c
	if belay {
		t.belayed[id] = belayFor
	}
	t.mu.Unlock()
	out.SendToVM(jdwp.AppendCommand(nil, id, c, body), relay.Synthetic)
}

func (t *toySpeculator) FromDebugger(_ *relay.Session, f *relay.Frame) relay.Action {
	if f.Kind != relay.KindCommand {
		return relay.Forward
	}
	switch f.Cmd {
	case jdwp.CmdVirtualMachineVersion:
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.version != nil {
			t.answer = jdwp.AppendReply(t.answer[:0], f.ID, 0, t.version)
			f.Answer = t.answer
			f.Origin = relay.CacheHit
			return relay.Consume
		}
	case jdwp.CmdVirtualMachineAllThreads:
		t.send(f.Out(), jdwp.CmdVirtualMachineVersion, nil, 0, false)
	case jdwp.CmdThreadReferenceName:
		t.send(f.Out(), jdwp.CmdThreadReferenceName, f.Packet.Body(), f.ID, true)
		f.Origin = relay.Belay
		return relay.Consume
	}
	return relay.Forward
}

func (t *toySpeculator) FromVM(_ *relay.Session, f *relay.Frame) relay.Action {
	if f.Kind != relay.KindReply {
		return relay.Forward
	}
	id := f.Packet.ID()
	t.mu.Lock()
	c, ok := t.synth[id]
	if !ok {
		t.mu.Unlock()
		return relay.Forward
	}
	delete(t.synth, id)
	f.Origin = relay.Synthetic
	if c == jdwp.CmdVirtualMachineVersion {
		t.version = append([]byte(nil), f.Packet.Body()...)
	}
	dbgID, belayed := t.belayed[id]
	delete(t.belayed, id)
	t.mu.Unlock()
	if belayed {
		reply := f.Packet.Clone()
		reply.SetID(dbgID)
		f.Out().SendToDebugger(reply, relay.Belay, c)
	}
	return relay.Consume
}

func (t *toySpeculator) Close(*relay.Session) {}

// proxy runs a relay.Server in front of vm with the given hooks and
// returns its address. It stops at the end of the test.
func startProxy(t testing.TB, vmAddr string, hooks func(s *relay.Session) relay.Hooks) (addr string, stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := relay.NewServer(relay.Config{DialVM: relay.DialTCP(vmAddr), NewHooks: hooks, Logger: zerolog.Nop()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("relay: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return ln.Addr().String(), stop
}

// debugger is the kit's scripted debugger, counting the events it reads.
type debugger struct {
	*jdwptest.Debugger
	t      testing.TB
	events int
}

func dialDebugger(t testing.TB, addr string) *debugger {
	t.Helper()
	d, err := jdwptest.Attach(addr)
	if err != nil {
		t.Fatal(err)
	}
	return &debugger{Debugger: d, t: t}
}

// call sends a command and returns its reply's body (a copy), counting
// events that arrive in between.
func (d *debugger) call(c jdwp.Cmd, body []byte) []byte {
	d.t.Helper()
	id, err := d.Send(c, body)
	if err != nil {
		d.t.Fatal(err)
	}
	for {
		p, err := d.Next()
		if err != nil {
			d.t.Fatalf("waiting for the reply to %v: %v", c, err)
		}
		if !p.IsReply() {
			d.events++
			continue
		}
		if p.ID() != id {
			d.t.Fatalf("reply id %d, want %d", p.ID(), id)
		}
		return append([]byte(nil), p.Body()...)
	}
}

// waitEvent reads until an event arrives.
func (d *debugger) waitEvent() {
	d.t.Helper()
	for d.events == 0 {
		p, err := d.Next()
		if err != nil {
			d.t.Fatalf("waiting for an event: %v", err)
		}
		if !p.IsReply() {
			d.events++
		}
	}
}

func threadBody(id uint64) []byte {
	w := jdwp.BodyWriter{Sizes: testSizes}
	w.ObjectID(id)
	return w.Buf
}

// script is a debugging session touching every kind of record: a miss, a
// speculation, a cache hit, a belay, an error-free DDM exchange, an event.
func script(d *debugger) {
	d.call(jdwp.CmdIDSizes, nil)
	d.call(jdwp.CmdVirtualMachineVersion, nil)    // miss: no cache yet
	d.call(jdwp.CmdVirtualMachineAllThreads, nil) // speculates Version
	d.call(jdwp.CmdVirtualMachineVersion, nil)    // hit
	d.call(jdwp.CmdThreadReferenceName, threadBody(testThread))
	fw := jdwp.BodyWriter{Sizes: testSizes}
	fw.ObjectID(testThread)
	fw.Int32(0)
	fw.Int32(-1)
	d.call(jdwp.CmdThreadReferenceFrames, fw.Buf)
	d.call(jdwp.CmdDDMChunk, []byte("HELO\x00\x00\x00\x04\x00\x00\x00\x01"))
	d.call(jdwp.CmdVirtualMachineResume, nil)
	d.waitEvent()
}

// session runs script through a proxy with the given journal options and
// interceptors, and returns the journal's bytes.
func session(t testing.TB, opts Options, spec bool, run func(d *debugger)) []byte {
	t.Helper()
	vm := startFakeVM(t)
	var buf jdwptest.Buffer
	j, err := New(&buf, opts)
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	addr, stop := startProxy(t, vm.Addr(), func(s *relay.Session) relay.Hooks {
		h := relay.Hooks{Observers: []relay.Observer{j, endSignal(ended)}}
		if spec {
			h.Interceptors = []relay.Interceptor{newToySpeculator()}
		}
		return h
	})
	d := dialDebugger(t, addr)
	run(d)
	d.Close()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("session did not end")
	}
	stop()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// endSignal closes its channel when a session ends.
type endSignal chan struct{}

func (e endSignal) Observe(*relay.Session, *relay.Frame) {}
func (e endSignal) SessionStart(*relay.Session)          {}
func (e endSignal) SessionEnd(*relay.Session, error)     { close(e) }

// blockingWriter blocks every Write until release is closed.
type blockingWriter struct {
	release chan struct{}
	entered chan struct{} // closed on the first Write
	once    sync.Once
}

func (b *blockingWriter) Write(p []byte) (int, error) {
	b.once.Do(func() { close(b.entered) })
	<-b.release
	return len(p), nil
}

var errFull = errors.New("disk full")

// failingWriter fails every write.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errFull }

var _ io.Writer = failingWriter{}
