package push

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/rs/zerolog"
)

// The prepared class of the CLASS_PREPARE tests, with one method.
const (
	prepClass  = 0x51
	prepMethod = 0x61
	prepSig    = "Lp/C;"
)

func writeBody(f func(w *jdwp.BodyWriter)) []byte {
	w := jdwp.BodyWriter{Sizes: sizes8}
	f(&w)
	return w.Buf
}

// prepareScript is vmScript with what a debugger reads of a prepared
// class: its methods (one), its strata, the method's line table.
func prepareScript() map[jdwp.Cmd]jdwptest.ReplyFunc {
	s := vmScript()
	s[jdwp.CmdReferenceTypeMethodsWithGeneric] = jdwptest.Body(writeBody(func(w *jdwp.BodyWriter) {
		w.Int32(1)
		w.MethodID(prepMethod)
		w.String("run")
		w.String("()V")
		w.String("")
		w.Int32(1)
	}))
	s[jdwp.CmdReferenceTypeSourceDebugExtension] = jdwptest.Body(strBody("SMAP"))
	s[jdwp.CmdMethodLineTable] = jdwptest.Body(writeBody(func(w *jdwp.BodyWriter) {
		w.Int64(0)
		w.Int64(9)
		w.Int32(1)
		w.Int64(0)
		w.Int32(7)
	}))
	s[jdwp.CmdEventRequestSet] = jdwptest.Body(intBody(7))
	return s
}

// prepareRequest is the EventRequest.Set an IDE sends for a breakpoint in
// a class not loaded yet: tell me, suspended, when p.C is prepared.
func prepareRequest() []byte {
	return writeBody(func(w *jdwp.BodyWriter) {
		w.Uint8(uint8(jdwp.EventClassPrepare))
		w.Uint8(uint8(jdwp.SuspendAll))
		w.Int32(1)
		w.Modifier(jdwp.Modifier{Kind: jdwp.ModClassMatch, Pattern: []byte("p.C")})
	})
}

// prepareEvent is a suspending CLASS_PREPARE of p.C.
func prepareEvent(id uint32) jdwp.Packet {
	c := jdwp.Composite{SuspendPolicy: jdwp.SuspendAll, Events: []jdwp.Event{{
		Kind: jdwp.EventClassPrepare, RequestID: 7, Thread: thread1,
		RefTypeTag: jdwp.TypeTagClass, TypeID: prepClass, Signature: []byte(prepSig), Status: 7,
	}}}
	return jdwp.AppendCommand(nil, id, jdwp.CmdComposite, jdwptest.AppendComposite(nil, sizes8, &c))
}

func prepClassParams() []byte {
	return writeBody(func(w *jdwp.BodyWriter) { w.ReferenceTypeID(prepClass) })
}

func prepMethodParams() []byte {
	return writeBody(func(w *jdwp.BodyWriter) { w.ReferenceTypeID(prepClass); w.MethodID(prepMethod) })
}

// TestFarHoldsPrepareStop: a suspending CLASS_PREPARE the debugger asked
// for is held like a stop at a location: the class's methods and their
// line tables (chained on the methods reply) come in a bundle, then the
// event.
func TestFarHoldsPrepareStop(t *testing.T) {
	vm := jdwptest.StartVM(t, jdwptest.Script{Replies: prepareScript()})
	cnt := new(Counters)
	d := attach(t, vm.Addr(), FarHooks(newSpec(), Config{MaxHold: time.Minute, Counters: cnt}), 0)
	if _, err := d.Call(jdwp.CmdEventRequestSet, prepareRequest()); err != nil {
		t.Fatal(err)
	}
	ev := prepareEvent(77)
	if err := vm.Send(ev); err != nil {
		t.Fatal(err)
	}
	got := map[jdwp.Cmd]bool{}
	var c codec
	defer c.close()
	p := parser{c: &c}
	for {
		b := next(t, d)
		if b.Cmd() == jdwp.CmdComposite {
			if string(b) != string(ev) {
				t.Fatalf("event %v, want the CLASS_PREPARE", b)
			}
			break
		}
		if b.IsReply() || b.Cmd() != CmdBundle {
			t.Fatalf("unexpected %v", b)
		}
		_, recs, err := p.parse(b.Body(), false)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			got[r.Cmd] = true
		}
	}
	for _, want := range []jdwp.Cmd{jdwp.CmdReferenceTypeMethodsWithGeneric, jdwp.CmdReferenceTypeSourceDebugExtension, jdwp.CmdMethodLineTable} {
		if !got[want] {
			t.Errorf("no %v pushed before the CLASS_PREPARE event (pushed %v)", want, got)
		}
	}
	if st := cnt.Stats(); st.Stops != 1 || st.HoldExpiry != 0 {
		t.Errorf("stats %+v: want one stop held, released when its speculation was done", st)
	}
}

// fromNear counts, on the far end, the commands the near end sent: the
// debugger's and the near end's own speculation, but not usage reports
// (nor the far end's own commands, Synthetic there).
type fromNear struct {
	mu    sync.Mutex // guards n and order
	n     map[jdwp.Cmd]int
	order []jdwp.Packet // every command from the near end, usage reports too
}

func (o *fromNear) Observe(_ *relay.Session, f *relay.Frame) {
	if f.Dir != relay.ToVM || f.Kind != relay.KindCommand || f.Origin == relay.Synthetic {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.order = append(o.order, f.Packet.Clone())
	if f.Cmd.Set != SetPush {
		o.n[f.Cmd]++
	}
}

func (o *fromNear) commands() []jdwp.Packet {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.order)
}

func (o *fromNear) count(c jdwp.Cmd) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n[c]
}

// splitEnds runs a far end in front of vm and a near end in front of it
// (plain relays, no link emulation) and attaches a debugger to the near
// end; seen counts what reached the far end from the debugger.
func splitEnds(t *testing.T, vm *jdwptest.VM, cfg Config) (d *jdwptest.Debugger, seen *fromNear) {
	t.Helper()
	seen = &fromNear{n: map[jdwp.Cmd]int{}}
	farAddr := serve(t, relay.Config{DialVM: relay.DialTCP(vm.Addr()), Logger: zerolog.Nop(),
		NewHooks: relay.ChainHooks(FarHooks(newSpec(), cfg), func(*relay.Session) relay.Hooks {
			return relay.Hooks{Observers: []relay.Observer{seen}}
		})})
	d = attach(t, farAddr, NearHooks(newSpec(), cfg), 0)
	return d, seen
}

// TestNearAnswersPrepareStopFromBundle: at a CLASS_PREPARE stop, the near
// end answers the debugger's methods, strata and line table reads from the
// far end's bundle, without a round trip to the far end.
func TestNearAnswersPrepareStopFromBundle(t *testing.T) {
	vm := jdwptest.StartVM(t, jdwptest.Script{Replies: prepareScript()})
	d, seen := splitEnds(t, vm, Config{MaxHold: time.Minute})
	if _, err := d.Call(jdwp.CmdEventRequestSet, prepareRequest()); err != nil {
		t.Fatal(err)
	}
	ev := prepareEvent(77)
	if err := vm.Send(ev); err != nil {
		t.Fatal(err)
	}
	if p := next(t, d); string(p) != string(ev) {
		t.Fatalf("got %v, want the CLASS_PREPARE event", p)
	}
	reads := []struct {
		c      jdwp.Cmd
		params []byte
	}{
		{jdwp.CmdReferenceTypeMethodsWithGeneric, prepClassParams()},
		{jdwp.CmdReferenceTypeSourceDebugExtension, prepClassParams()},
		{jdwp.CmdMethodLineTable, prepMethodParams()},
	}
	for _, r := range reads {
		rep, err := d.Call(r.c, r.params)
		if err != nil {
			t.Fatal(err)
		}
		if rep.ErrorCode() != jdwp.ErrorNone || len(rep.Body()) == 0 {
			t.Errorf("%v: reply %v", r.c, rep)
		}
	}
	for _, r := range reads {
		if n := seen.count(r.c); n != 0 {
			t.Errorf("%v crossed to the far end %d times, want the near end to answer it from the bundle (neither the debugger's command nor the near end's own speculation)", r.c, n)
		}
		if n := count(vm, r.c); n != 1 {
			t.Errorf("the VM got %v %d times, want once (the far end's speculation)", r.c, n)
		}
	}
}
