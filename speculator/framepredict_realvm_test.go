package speculator

import (
	"bytes"
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/bench/link"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/rs/zerolog"
)

// frameWatch watches a session's StackFrame traffic: the frame IDs the
// VM listed in Frames replies, the frame IDs the proxy asked on its own
// before the VM had listed them (predicted), the VM's replies to the
// proxy's StackFrame commands, and what the debugger got for its own and
// how it was served. Frame IDs differ from stop to stop, so commands are
// told apart by their bytes.
type frameWatch struct {
	mu        sync.Mutex // guards every field
	params    map[[2]uint32][]byte
	listed    map[jdwp.FrameID]bool
	predicted map[jdwp.FrameID]bool
	vmReplies map[string][]byte       // StackFrame command (cmd+params) -> the VM's reply body to the proxy's
	debugger  map[string][]byte       // StackFrame command (cmd+params) -> the body the debugger got
	origin    map[string]relay.Origin // how it was served
	frameOf   map[string]jdwp.FrameID
}

func stackFrameKey(c jdwp.Cmd, params []byte) string {
	return string([]byte{byte(c.Set), c.Cmd}) + string(params)
}

func (w *frameWatch) Observe(s *relay.Session, f *relay.Frame) {
	w.mu.Lock()
	defer w.mu.Unlock()
	sizes, _ := s.IDSizes()
	synth := uint32(0)
	if f.Origin == relay.Synthetic {
		synth = 1
	}
	switch f.Kind {
	case relay.KindCommand:
		c := f.Packet.Cmd()
		if c.Set != jdwp.SetStackFrame && c != jdwp.CmdThreadReferenceFrames {
			return
		}
		w.params[[2]uint32{synth, f.ID}] = append([]byte(nil), f.Packet.Body()...)
		if c.Set == jdwp.SetStackFrame {
			r := jdwp.NewBodyReader(f.Packet.Body(), sizes)
			r.Thread()
			fr := r.Frame()
			w.frameOf[stackFrameKey(c, f.Packet.Body())] = fr
			if synth == 1 && !w.listed[fr] {
				w.predicted[fr] = true
			}
		}
	case relay.KindReply:
		params, ok := w.params[[2]uint32{synth, f.ID}]
		if !ok {
			return
		}
		delete(w.params, [2]uint32{synth, f.ID})
		if f.Cmd == jdwp.CmdThreadReferenceFrames {
			r := jdwp.NewBodyReader(f.Packet.Body(), sizes)
			for n := r.Int32(); n > 0 && r.Err() == nil; n-- {
				w.listed[r.Frame()] = true
				r.Location()
			}
			return
		}
		k := stackFrameKey(f.Cmd, params)
		if synth == 1 {
			w.vmReplies[k] = append([]byte(nil), f.Packet.Body()...)
		} else {
			w.debugger[k] = append([]byte(nil), f.Packet.Body()...)
			w.origin[k] = f.Origin
		}
	}
}

// TestPredictedFramesRealVM steps Deep with the IntelliJ-like JDI driver
// through the speculating proxy behind a 20 ms link on the real JDK: from
// the second stop on, the proxy asks the top frame's values and this on
// the frame ID it predicted before the VM listed any frame, every
// prediction is the ID the VM then lists (none refuted), the debugger's
// StackFrame commands are answered with the very bytes the VM sent for
// the predicted ones, and what the debugger sees at every stop equals a
// direct run.
func TestPredictedFramesRealVM(t *testing.T) {
	if testing.Short() {
		t.Skip("real JVM")
	}
	b := jdwptest.JavaBuild(t)
	opts := javavm.DriverOptions{Debuggee: javavm.Deep, Profile: javavm.ProfileIdeaLike, Steps: 6, Warmup: 1, Dump: true}
	direct, _, err := runDriver(t, b, opts, -1, Config{})
	if err != nil {
		t.Fatal(err)
	}

	vm := jdwptest.StartJava(t, b, opts.Debuggee)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lk, err := link.Listen(ctx, "127.0.0.1:0", vm.Addr(), link.Config{RTT: 20 * time.Millisecond}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Close()
	sp := New(Config{}, zerolog.Nop(), nil)
	watch := &frameWatch{params: map[[2]uint32][]byte{}, listed: map[jdwp.FrameID]bool{}, predicted: map[jdwp.FrameID]bool{},
		vmReplies: map[string][]byte{}, debugger: map[string][]byte{}, origin: map[string]relay.Origin{}, frameOf: map[string]jdwp.FrameID{}}
	srv := relay.NewServer(relay.Config{DialVM: relay.DialTCP(lk.Addr().String()), Logger: zerolog.Nop(),
		NewHooks: func(s *relay.Session) relay.Hooks {
			h := sp.Hooks(s)
			h.Observers = []relay.Observer{watch}
			return h
		}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		srv.Serve(ctx, ln)
		close(done)
	}()
	defer func() { cancel(); <-done }()
	dctx, dcancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer dcancel()
	opts.Addr = ln.Addr().String()
	prox, err := javavm.RunDriver(dctx, b, opts)
	if err != nil {
		t.Fatalf("%v\nVM output:\n%s", err, vm.Output())
	}

	for i := range direct.Stops {
		if i >= len(prox.Stops) || direct.Stops[i].Digest != prox.Stops[i].Digest {
			t.Fatalf("stop %d: what the debugger saw differs from the direct run", i)
		}
	}
	st := sp.Stats()
	t.Logf("frame predictions: %d confirmed, %d refuted; speculation sent %d used %d wasted %d",
		st.FramesConfirmed, st.FramesRefuted, st.SpecSent, st.SpecUsed, st.SpecWasted)
	if st.FramesRefuted != 0 || st.FramesConfirmed < 2*int64(opts.Steps-1) {
		t.Errorf("%d predictions confirmed, %d refuted; want at least %d confirmed, none refuted",
			st.FramesConfirmed, st.FramesRefuted, 2*(opts.Steps-1))
	}
	watch.mu.Lock()
	defer watch.mu.Unlock()
	if len(watch.predicted) < opts.Steps {
		t.Errorf("frames predicted: %v; want one at each of the %d steps", watch.predicted, opts.Steps)
	}
	for fr := range watch.predicted {
		if !watch.listed[fr] {
			t.Errorf("predicted frame %v, never listed by the VM", fr)
		}
	}
	served := 0
	for k, got := range watch.debugger {
		if !watch.predicted[watch.frameOf[k]] {
			continue
		}
		served++
		if vmb, ok := watch.vmReplies[k]; !ok || !bytes.Equal(got, vmb) || watch.origin[k] == relay.Forwarded {
			t.Errorf("%v on %v: the debugger got %x (%v), the VM answered the predicted command %x",
				jdwp.Cmd{Set: jdwp.CommandSet(k[0]), Cmd: k[1]}, watch.frameOf[k], got, watch.origin[k], vmb)
		}
	}
	if served < 2*opts.Steps {
		t.Errorf("%d debugger StackFrame commands on predicted frames, want at least %d", served, 2*opts.Steps)
	}
}
