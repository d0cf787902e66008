package speculator

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/rs/zerolog"
)

// snapRig is a raw debugger attached through a relay with a speculator
// that takes every class snapshot it may, to a real VM started with
// suspend=y; ss is the relay session's speculator session.
type snapRig struct {
	t  *testing.T
	sp *Speculator
	ss *session
	d  *jdwptest.Debugger
}

func newSnapRig(t *testing.T) *snapRig {
	b := jdwptest.JavaBuild(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	vm, err := javavm.Start(ctx, b, "Deep", javavm.VMOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(vm.Stop)
	sp := New(Config{}, zerolog.Nop(), nil)
	sp.noPrior, sp.snapAll = true, true
	sessions := make(chan *session, 1)
	addr, err := serveRelay(ctx, vm.Addr(), func(s *relay.Session) relay.Hooks {
		in := sp.NewSession(s)
		sessions <- in.(*session)
		return relay.Hooks{Interceptors: []relay.Interceptor{in}}
	})
	if err != nil {
		t.Fatal(err)
	}
	d, err := jdwptest.Attach(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return &snapRig{t: t, sp: sp, ss: <-sessions, d: d}
}

// call sends c and returns its reply's error code and body (a copy).
func (r *snapRig) call(c jdwp.Cmd, body []byte) (jdwp.ErrorCode, []byte) {
	r.t.Helper()
	p, err := r.d.Call(c, body)
	if err != nil {
		r.t.Fatal(err)
	}
	return p.ErrorCode(), append([]byte(nil), p.Body()...)
}

// served reports the debugger commands answered without a round trip of
// their own so far.
func (r *snapRig) served() int64 { st := r.sp.Stats(); return st.Hits + st.Belays }

// setOff turns the snapshot's serving off (or back on), so that the
// same lookup goes to the VM.
func (r *snapRig) setOff(off bool) {
	r.ss.mu.Lock()
	r.ss.att.snap.off = off
	r.ss.mu.Unlock()
}

type snapLookup struct {
	c   jdwp.Cmd
	sig string
}

// fromSnapshot says whether the snapshot serves q: a lookup of a class
// only the program loads (snapServe).
func (q snapLookup) fromSnapshot() bool {
	return q.c == jdwp.CmdVirtualMachineClassesBySignature && !jdkOwned(q.sig)
}

func (q snapLookup) body() []byte {
	if q.c != jdwp.CmdVirtualMachineClassesBySignature {
		return nil
	}
	return sigBody(q.sig)
}

// compare asks each lookup twice: answered from the snapshot (those of a
// class only the program loads; the others go to the VM), then (its
// serving turned off) by the VM; the reply bodies must be equal byte for
// byte.
func (r *snapRig) compare(qs []snapLookup) {
	r.t.Helper()
	for _, q := range qs {
		before := r.served()
		code, got := r.call(q.c, q.body())
		if want := before + int64(btoi(q.fromSnapshot())); r.served() != want || code != jdwp.ErrorNone {
			r.t.Fatalf("%v %s: served %d from the snapshot, want %d (error %v)", q.c, q.sig, r.served()-before, want-before, code)
		}
		r.setOff(true)
		before = r.served()
		code, want := r.call(q.c, q.body())
		r.setOff(false)
		if r.served() != before || code != jdwp.ErrorNone {
			r.t.Fatalf("%v %s: the VM's own answer was not asked of the VM (error %v)", q.c, q.sig, code)
		}
		if !bytes.Equal(got, want) {
			r.t.Fatalf("%v %s: served %d bytes %.64x…, the VM answers %d bytes %.64x…", q.c, q.sig, len(got), got, len(want), want)
		}
	}
}

// TestRealVMClassSnapshotAnswersAsTheVM: at a suspend=y attach, and after
// VirtualMachine.Suspend once a class loaded, lookups by name of the
// program's classes answered from the class snapshot equal the VM's own
// answers byte for byte, and the JDK's classes and the whole lists, which
// the JDWP agent's own threads may add to while the VM is suspended, are
// the VM's (snapServe); after a resume nothing is served from it.
func TestRealVMClassSnapshotAnswersAsTheVM(t *testing.T) {
	r := newSnapRig(t)
	// As a debugger does, take the VM_START first: the VM sends it when
	// it likes, and the speculator knows the VM is suspended as a whole
	// (what a snapshot needs) only once it has passed.
	for {
		p, err := r.d.Next()
		if err != nil {
			t.Fatalf("waiting for VM_START: %v", err)
		}
		if !p.IsReply() && p.Cmd() == jdwp.CmdComposite {
			break
		}
	}
	r.call(jdwp.CmdIDSizes, nil)
	r.call(jdwp.CmdVirtualMachineVersion, nil)
	lookups := []snapLookup{
		{jdwp.CmdVirtualMachineClassesBySignature, "LDeep;"}, // not loaded yet
		{jdwp.CmdVirtualMachineClassesBySignature, "[LDeep;"},
		{jdwp.CmdVirtualMachineClassesBySignature, "Ljava/lang/String;"},
		{jdwp.CmdVirtualMachineClassesBySignature, "Ljava/lang/Thread;"},
		{jdwp.CmdVirtualMachineClassesBySignature, "[I"},
		{jdwp.CmdVirtualMachineClassesBySignature, "I"},
		{jdwp.CmdVirtualMachineAllClasses, ""},
		{jdwp.CmdVirtualMachineAllClassesWithGeneric, ""},
	}
	r.compare(lookups)
	r.ss.mu.Lock()
	n, size := len(r.ss.att.snap.entries), r.ss.att.snap.bytes
	r.ss.mu.Unlock()
	t.Logf("class snapshot at attach: %d classes, %d bytes (%.1f B per class)", n, size, float64(size)/float64(n))

	// A class loads: told by a CLASS_PREPARE (suspending all).
	req := body(func(w *jdwp.BodyWriter) {
		w.Uint8(uint8(jdwp.EventClassPrepare))
		w.Uint8(uint8(jdwp.SuspendAll))
		w.Int32(1)
		w.Uint8(uint8(jdwp.ModClassMatch))
		w.String("Deep")
	})
	if code, _ := r.call(jdwp.CmdEventRequestSet, req); code != jdwp.ErrorNone {
		t.Fatalf("EventRequest.Set: %v", code)
	}
	if code, _ := r.call(jdwp.CmdVirtualMachineResume, nil); code != jdwp.ErrorNone {
		t.Fatalf("Resume: %v", code)
	}
	for {
		p, err := r.d.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !p.IsReply() && p.Cmd() == jdwp.CmdEventComposite {
			if _, kind, ok := jdwp.CompositeHead(p.Body()); ok && kind == jdwp.EventClassPrepare {
				break
			}
		}
	}
	before := r.served()
	for _, q := range lookups {
		r.call(q.c, q.body())
	}
	if r.served() != before {
		t.Fatalf("%d lookups served after a resume", r.served()-before)
	}
	if code, _ := r.call(jdwp.CmdVirtualMachineSuspend, nil); code != jdwp.ErrorNone {
		t.Fatalf("Suspend: %v", code)
	}
	r.compare(lookups)
	code, b := r.call(jdwp.CmdVirtualMachineClassesBySignature, sigBody("LDeep;"))
	if code != jdwp.ErrorNone || jdwp.NewBodyReader(b, jdwp.IDSizes{}).Int32() != 1 {
		t.Fatalf("LDeep; after its CLASS_PREPARE: error %v, body %x; want one class", code, b)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
