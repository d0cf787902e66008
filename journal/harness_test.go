package journal

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

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

// fakeVM accepts JDWP connections and answers: IDSizes with 8-byte IDs,
// Version and ThreadReference.Name with strings, VM.Resume with a reply
// then a BREAKPOINT event, anything else with its own body echoed.
type fakeVM struct {
	ln net.Listener
	wg sync.WaitGroup
}

func startFakeVM(t testing.TB) *fakeVM {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	vm := &fakeVM{ln: ln}
	vm.wg.Add(1)
	go func() {
		defer vm.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			vm.wg.Add(1)
			go func() {
				defer vm.wg.Done()
				vm.serve(c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		vm.wg.Wait()
	})
	return vm
}

func (vm *fakeVM) addr() string { return vm.ln.Addr().String() }

func (vm *fakeVM) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	if jdwp.ReadHandshake(br) != nil || jdwp.WriteHandshake(c) != nil {
		return
	}
	r := jdwp.NewReader(br, 0)
	bw := bufio.NewWriter(c)
	var out, body []byte
	var eventID uint32 = 1 << 20
	for {
		p, err := r.Next()
		if err != nil {
			return
		}
		if p.IsReply() {
			continue
		}
		body = body[:0]
		switch p.Cmd() {
		case jdwp.CmdIDSizes:
			body = jdwp.AppendIDSizes(body, testSizes)
		case jdwp.CmdVirtualMachineVersion:
			w := jdwp.BodyWriter{Buf: body}
			w.String("fake VM 1.0")
			w.Int32(11)
			w.Int32(0)
			w.String("17")
			w.String("fakevm")
			body = w.Buf
		case jdwp.CmdThreadReferenceName:
			w := jdwp.BodyWriter{Buf: body}
			w.String("main")
			body = w.Buf
		default:
			body = append(body, p.Body()...)
		}
		out = jdwp.AppendReply(out[:0], p.ID(), 0, body)
		if p.Cmd() == jdwp.CmdVirtualMachineResume {
			c := jdwp.Composite{SuspendPolicy: 2, Events: []jdwp.Event{{
				Kind: jdwp.EventBreakpoint, RequestID: 3, Thread: testThread,
				Location: jdwp.Location{TypeTag: 1, Class: 0x77, Method: 0x88, Index: 4},
			}}}
			eventID++
			out = jdwp.AppendCommand(out, eventID, jdwp.CmdComposite, jdwp.AppendComposite(nil, testSizes, &c))
		}
		if _, err := bw.Write(out); err != nil {
			return
		}
		if !r.HasPacket() {
			if bw.Flush() != nil {
				return
			}
		}
	}
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

// send sends a synthetic command; a debugger command belayed behind it
// (belayFor, 0 for none) is registered before it goes, since its reply can
// come back before SendToVM returns.
func (t *toySpeculator) send(s *relay.Session, c jdwp.Cmd, body []byte, belayFor uint32, belay bool) {
	t.mu.Lock()
	t.next++
	id := t.next
	t.synth[id] = c
	if belay {
		t.belayed[id] = belayFor
	}
	t.mu.Unlock()
	s.SendToVM(jdwp.AppendCommand(nil, id, c, body), relay.Synthetic) //nolint:errcheck // the session ending is fine
}

func (t *toySpeculator) FromDebugger(s *relay.Session, f *relay.Frame) relay.Action {
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
		t.send(s, jdwp.CmdVirtualMachineVersion, nil, 0, false)
	case jdwp.CmdThreadReferenceName:
		t.send(s, jdwp.CmdThreadReferenceName, f.Packet.Body(), f.ID, true)
		f.Origin = relay.Belay
		return relay.Consume
	}
	return relay.Forward
}

func (t *toySpeculator) FromVM(s *relay.Session, f *relay.Frame) relay.Action {
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
		s.SendToDebugger(reply, relay.Belay, c) //nolint:errcheck // the session ending is fine
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

// debugger is a scripted fake debugger.
type debugger struct {
	t      testing.TB
	c      net.Conn
	r      *jdwp.Reader
	bw     *bufio.Writer
	nextID uint32
	events int
}

func dialDebugger(t testing.TB, addr string) *debugger {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := jdwp.WriteHandshake(c); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	if err := jdwp.ReadHandshake(br); err != nil {
		t.Fatal(err)
	}
	return &debugger{t: t, c: c, r: jdwp.NewReader(br, 0), bw: bufio.NewWriter(c)}
}

// call sends a command and returns its reply's body (a copy), counting
// events that arrive in between.
func (d *debugger) call(c jdwp.Cmd, body []byte) []byte {
	d.t.Helper()
	d.nextID++
	id := d.nextID
	if _, err := d.bw.Write(jdwp.AppendCommand(nil, id, c, body)); err != nil {
		d.t.Fatal(err)
	}
	if err := d.bw.Flush(); err != nil {
		d.t.Fatal(err)
	}
	for {
		p, err := d.r.Next()
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
		p, err := d.r.Next()
		if err != nil {
			d.t.Fatalf("waiting for an event: %v", err)
		}
		if !p.IsReply() {
			d.events++
		}
	}
}

func (d *debugger) close() {
	d.c.Close()
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
	var buf syncBuffer
	j, err := New(&buf, opts)
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	addr, stop := startProxy(t, vm.addr(), func(s *relay.Session) relay.Hooks {
		h := relay.Hooks{Observers: []relay.Observer{j, endSignal(ended)}}
		if spec {
			h.Interceptors = []relay.Interceptor{newToySpeculator()}
		}
		return h
	})
	d := dialDebugger(t, addr)
	run(d)
	d.close()
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

// syncBuffer is a bytes buffer safe for one writer and a later reader.
type syncBuffer struct {
	mu sync.Mutex // guards b
	b  []byte
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b = append(s.b, p...)
	return len(p), nil
}

func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.b...)
}

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
