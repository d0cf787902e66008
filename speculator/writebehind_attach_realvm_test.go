package speculator

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/bench/link"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/rs/zerolog"
)

// burstDebugger is a raw debugger attached to a real VM started with
// suspend=y (through the proxy when sp is not nil), past its VM_START
// and the attach's first commands, as JDI starts.
type burstDebugger struct {
	t     *testing.T
	d     *jdwptest.Debugger
	sp    *Speculator
	sizes jdwp.IDSizes
}

func attachBurst(t *testing.T, addr string, sp *Speculator) *burstDebugger {
	t.Helper()
	d, err := jdwptest.Attach(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	for { // VM_START: the proxy knows the VM suspended as a whole once it passed
		p, err := d.Next()
		if err != nil {
			t.Fatalf("waiting for VM_START: %v", err)
		}
		if !p.IsReply() && p.Cmd() == jdwp.CmdComposite {
			break
		}
	}
	b := &burstDebugger{t: t, d: d, sp: sp}
	p, err := d.Call(jdwp.CmdIDSizes, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b.sizes, err = jdwp.ParseIDSizes(p.Body()); err != nil {
		t.Fatal(err)
	}
	b.call(jdwp.CmdVirtualMachineVersion, nil)
	b.call(jdwp.CmdVirtualMachineCapabilitiesNew, nil)
	return b
}

// call sends c and returns its reply's error code and, for a Set that
// succeeded, the request ID.
func (b *burstDebugger) call(c jdwp.Cmd, body []byte) (jdwp.ErrorCode, int32) {
	b.t.Helper()
	p, err := b.d.Call(c, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if c == jdwp.CmdEventRequestSet && p.ErrorCode() == jdwp.ErrorNone {
		return 0, be32(p.Body())
	}
	return p.ErrorCode(), 0
}

// nextEvents reads up to the VM's next composite event (skipping replies
// to commands sent without waiting) and decodes it; what is the test's
// wait for, if it fails.
func (b *burstDebugger) nextEvents(what string) *jdwp.Composite {
	b.t.Helper()
	for {
		pk, err := b.d.Next()
		if err != nil {
			b.t.Fatalf("waiting for %s: %v", what, err)
		}
		if pk.IsReply() || pk.Cmd() != jdwp.CmdComposite {
			continue
		}
		var comp jdwp.Composite
		if err := comp.Decode(pk.Body(), b.sizes); err != nil {
			b.t.Fatal(err)
		}
		return &comp
	}
}

// written is how many commands the proxy wrote behind so far.
func (b *burstDebugger) written() int64 {
	if b.sp == nil {
		return 0
	}
	return b.sp.Stats().WrittenBehind
}

// burstVariant is a Set the VM may refuse, or whose proof write-behind
// does not have, built with the session's ID sizes.
type burstVariant struct {
	name string
	body func(sizes jdwp.IDSizes) []byte
}

func rawSet(sizes jdwp.IDSizes, kind, policy uint8, n int32, mods func(w *jdwp.BodyWriter)) []byte {
	w := jdwp.BodyWriter{Sizes: sizes}
	w.Uint8(kind)
	w.Uint8(policy)
	w.Int32(n)
	if mods != nil {
		mods(&w)
	}
	return w.Buf
}

func matchMod(p string) func(w *jdwp.BodyWriter) {
	return func(w *jdwp.BodyWriter) { w.Modifier(jdwp.Modifier{Kind: jdwp.ModClassMatch, Pattern: []byte(p)}) }
}

var burstVariants = []burstVariant{
	{"unknown event kind", func(s jdwp.IDSizes) []byte { return rawSet(s, 0x7F, 2, 1, matchMod("x")) }},
	{"event kind 0", func(s jdwp.IDSizes) []byte { return rawSet(s, 0, 2, 0, nil) }},
	{"suspend policy 3", func(s jdwp.IDSizes) []byte { return rawSet(s, 8, 3, 1, matchMod("x")) }},
	{"suspend policy 0xFF", func(s jdwp.IDSizes) []byte { return rawSet(s, 8, 0xFF, 1, matchMod("x")) }},
	{"unknown modifier", func(s jdwp.IDSizes) []byte {
		return rawSet(s, 8, 2, 1, func(w *jdwp.BodyWriter) { w.Uint8(99) })
	}},
	{"count 0", func(s jdwp.IDSizes) []byte {
		return rawSet(s, 8, 2, 2, func(w *jdwp.BodyWriter) { w.Uint8(1); w.Int32(0); matchMod("x")(w) })
	}},
	{"count -1", func(s jdwp.IDSizes) []byte {
		return rawSet(s, 8, 2, 1, func(w *jdwp.BodyWriter) { w.Uint8(1); w.Int32(-1) })
	}},
	{"invalid class", func(s jdwp.IDSizes) []byte {
		return rawSet(s, 8, 2, 1, func(w *jdwp.BodyWriter) { w.Uint8(4); w.ReferenceTypeID(0x12345) })
	}},
	{"invalid thread", func(s jdwp.IDSizes) []byte {
		return rawSet(s, 8, 2, 1, func(w *jdwp.BodyWriter) { w.Uint8(3); w.ObjectID(0x12345) })
	}},
	{"class match on THREAD_START", func(s jdwp.IDSizes) []byte { return rawSet(s, 6, 2, 1, matchMod("x")) }},
	{"pattern cut short", func(s jdwp.IDSizes) []byte {
		return rawSet(s, 8, 2, 1, func(w *jdwp.BodyWriter) { w.Uint8(5); w.Int32(10); w.Uint8('a') })
	}},
	{"fewer modifiers than counted", func(s jdwp.IDSizes) []byte { return rawSet(s, 8, 2, 2, matchMod("x")) }},
	{"bytes after the modifiers", func(s jdwp.IDSizes) []byte { return append(rawSet(s, 8, 2, 1, matchMod("x")), 1, 2, 3) }},
	{"breakpoint without a location", func(s jdwp.IDSizes) []byte { return rawSet(s, 2, 2, 0, nil) }},
	{"breakpoint in an invalid class", func(s jdwp.IDSizes) []byte {
		return rawSet(s, 2, 2, 1, func(w *jdwp.BodyWriter) {
			w.Uint8(7)
			w.Location(jdwp.Location{TypeTag: 1, Class: 0x12345, Method: 1})
		})
	}},
}

// burstPatterns are an IDE's attach for 30 classes: each class and its
// inner classes; only Deep loads.
func burstPatterns() []string {
	var pats []string
	for i := 0; i < 29; i++ {
		pats = append(pats, fmt.Sprintf("com.example.app.Never%d", i), fmt.Sprintf("com.example.app.Never%d$*", i))
	}
	return append(pats, "Deep", "Deep$*")
}

// TestWriteBehindPatternBurstRealVM: attached to a real VM through the
// proxy with write-behind on and a fresh speculator, 60 CLASS_PREPARE
// requests with class patterns (30 classes and their inner classes, 29 of
// them never loaded) are written behind though their shape was never seen
// accepted, also the session's first CLASS_PREPARE request when the
// debugger's JDI set none before (Eclipse's), whether the VM is suspended
// at its start or runs; when Deep loads, its event carries the request ID
// the debugger was answered for the pattern "Deep"; every invalid variant
// gets the VM's own answer, as directly; and the VM confirmed every
// written-behind Set.
func TestWriteBehindPatternBurstRealVM(t *testing.T) {
	if testing.Short() {
		t.Skip("real JVM")
	}
	b := jdwptest.JavaBuild(t)
	// Directly: the VM's answers to the variants, after the same Sets.
	direct := attachBurst(t, jdwptest.StartJava(t, b, javavm.Deep).Addr(), nil)
	direct.call(jdwp.CmdEventRequestSet, rawSet(direct.sizes, 9, 0, 0, nil))
	for _, pat := range burstPatterns() {
		direct.call(jdwp.CmdEventRequestSet, rawSet(direct.sizes, 8, 2, 1, matchMod(pat)))
	}
	want := map[string]jdwp.ErrorCode{}
	for _, v := range burstVariants {
		want[v.name], _ = direct.call(jdwp.CmdEventRequestSet, v.body(direct.sizes))
	}
	t.Logf("the VM's answers: %v", want)

	for _, tc := range []struct {
		name    string
		jdi     [][]byte // the JDI's own Sets at attach: kind, policy, no modifiers
		running bool
		fwd     int64
	}{
		{"OpenJDK JDI, suspend=y", [][]byte{{8, 0}, {9, 0}}, false, 0},
		{"Eclipse JDI, suspend=y", [][]byte{{9, 0}}, false, 0},
		{"Eclipse JDI, VM running", [][]byte{{9, 0}}, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startProxy(t, jdwptest.StartJava(t, b, javavm.Deep).Addr(), 2*time.Millisecond, Config{WriteBehind: true})
			d := attachBurst(t, p.addr, p.sp)
			// (Resumes are sent without waiting for their replies: an
			// event may come before one, and Call would skip it.)
			resume := func() {
				if _, err := d.d.Send(jdwp.CmdVirtualMachineResume, nil); err != nil {
					t.Fatal(err)
				}
			}
			if tc.running {
				d.call(jdwp.CmdVirtualMachineResume, nil)
			}
			for _, s := range tc.jdi {
				d.call(jdwp.CmdEventRequestSet, rawSet(d.sizes, s[0], s[1], 0, nil))
			}
			before := d.written()
			pattern := map[int32]string{}
			for _, pat := range burstPatterns() {
				code, id := d.call(jdwp.CmdEventRequestSet, rawSet(d.sizes, 8, 2, 1, matchMod(pat)))
				if code != jdwp.ErrorNone {
					t.Fatalf("Set %q: %v", pat, code)
				}
				pattern[id] = pat
			}
			n := len(burstPatterns())
			if fwd := int64(n) - (d.written() - before); fwd != tc.fwd {
				t.Errorf("%d of the %d Sets were forwarded before their answer, want %d", fwd, n, tc.fwd)
			}
			if len(pattern) != n {
				t.Errorf("%d distinct request IDs for %d Sets", len(pattern), n)
			}
			for _, v := range burstVariants {
				before := d.written()
				code, _ := d.call(jdwp.CmdEventRequestSet, v.body(d.sizes))
				if code != want[v.name] || d.written() != before {
					t.Errorf("%s: answered %v (written behind: %v), the VM answers %v", v.name, code, d.written() != before, want[v.name])
				}
			}
			if !tc.running {
				// The burst's requests fire with the IDs the debugger was given.
				resume()
				for deep := false; !deep; {
					comp := d.nextEvents("Deep's CLASS_PREPARE")
					for _, e := range comp.Events {
						pat, ours := pattern[e.RequestID]
						if e.Kind != jdwp.EventClassPrepare || !ours {
							continue
						}
						sig := string(e.Signature)
						name := strings.ReplaceAll(strings.TrimSuffix(strings.TrimPrefix(sig, "L"), ";"), "/", ".")
						if !strings.HasPrefix(name, strings.TrimSuffix(pat, "*")) {
							t.Errorf("CLASS_PREPARE of %s for request %d, which the debugger set for %q", sig, e.RequestID, pat)
						}
						deep = deep || sig == "LDeep;"
					}
					if comp.SuspendPolicy != jdwp.SuspendNone && !deep {
						resume()
					}
				}
			}
			if st := p.sp.Stats(); st.WriteBehindFailures != 0 {
				t.Errorf("%d written-behind Sets failed at the VM", st.WriteBehindFailures)
			}
		})
	}
}

// TestWriteBehindTimedSetRealVM: java-debug's attach through one proxy
// process behind a 20 ms link, twice (each to a new VM): Eclipse JDI's
// internal CLASS_UNLOAD request, then the VM_DEATH request java-debug
// times to pick its async mode. In both sessions, the second with what
// the first taught (shapes, numbering), both go to the VM and the timed
// one takes at least the link's round trip; from the first request with
// a filter (a CLASS_PREPARE request with a class pattern) on, every Set
// is written behind, of a kind seen before or not (THREAD_START).
func TestWriteBehindTimedSetRealVM(t *testing.T) {
	if testing.Short() {
		t.Skip("real JVM")
	}
	b := jdwptest.JavaBuild(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const rtt = 20 * time.Millisecond
	sp := New(Config{WriteBehind: true}, zerolog.Nop(), nil)
	for session := 1; session <= 2; session++ {
		vm := jdwptest.StartJava(t, b, javavm.Deep)
		lk, err := link.Listen(ctx, "127.0.0.1:0", vm.Addr(), link.Config{RTT: rtt, Seed: 1}, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		ended := make(sessionEnded)
		pctx, stop := context.WithCancel(ctx)
		addr, err := serveRelay(pctx, lk.Addr().String(), func(s *relay.Session) relay.Hooks {
			h := sp.Hooks(s)
			h.Observers = append(h.Observers, ended)
			return h
		})
		if err != nil {
			t.Fatal(err)
		}
		d := attachBurst(t, addr, sp)
		set := func(kind uint8, mods func(w *jdwp.BodyWriter)) (written bool, took time.Duration) {
			t.Helper()
			n := int32(0)
			if mods != nil {
				n = 1
			}
			before, start := d.written(), time.Now()
			if code, _ := d.call(jdwp.CmdEventRequestSet, rawSet(d.sizes, kind, 0, n, mods)); code != jdwp.ErrorNone {
				t.Fatalf("session %d: Set of kind %d: %v", session, kind, code)
			}
			return d.written() != before, time.Since(start)
		}
		if w, _ := set(uint8(jdwp.EventClassUnload), nil); w {
			t.Errorf("session %d: JDI's CLASS_UNLOAD request, the session's first Set, was written behind", session)
		}
		if w, took := set(uint8(jdwp.EventVMDeath), nil); w || took < rtt {
			t.Errorf("session %d: the timed VM_DEATH request took %v (written behind: %v), want the link's round trip, %v, at least", session, took, w, rtt)
		}
		var later []bool
		for _, s := range []struct {
			kind uint8
			mods func(w *jdwp.BodyWriter)
		}{
			{uint8(jdwp.EventClassPrepare), matchMod("app.Foo")},
			{uint8(jdwp.EventClassPrepare), matchMod("app.Foo$*")},
			{uint8(jdwp.EventVMDeath), nil},
			{uint8(jdwp.EventClassUnload), nil},
			{uint8(jdwp.EventThreadStart), nil},
		} {
			w, _ := set(s.kind, s.mods)
			later = append(later, w)
		}
		if want := []bool{true, true, true, true, true}; !slices.Equal(later, want) {
			t.Errorf("session %d: later Sets written behind %v, want %v", session, later, want)
		}
		d.d.Close()
		select {
		case <-ended:
		case <-ctx.Done():
			t.Fatal("the session did not end")
		}
		stop()
		lk.Close()
	}
	if st := sp.Stats(); st.WriteBehindFailures != 0 {
		t.Errorf("%d written-behind Sets failed at the VM", st.WriteBehindFailures)
	}
}

// TestWriteBehindFirstStepRealVM: a fresh proxy with write-behind writes
// behind the session's first SINGLE_STEP request, on the thread the
// session's first stop suspended (a line step over, counted once, as
// java-debug and JDI's IDEs set at their first breakpoint), though no
// step request was seen accepted (provableShape); the VM then answers it
// as it was answered, and the step's event carries that request ID. A
// step on a thread the session never saw suspended goes to the VM. So is
// its first METHOD_EXIT_WITH_RETURN_VALUE on that thread (ThreadOnly,
// ClassOnly, InstanceOnly: java-debug's at each stop).
// Fails with SINGLE_STEP or the method exit left out of provableShape (the Set forwarded),
// or with a proof the VM contradicts (a write-behind failure ends the
// session).
func TestWriteBehindFirstStepRealVM(t *testing.T) {
	if testing.Short() {
		t.Skip("real JVM")
	}
	b := jdwptest.JavaBuild(t)
	p := startProxy(t, jdwptest.StartJava(t, b, javavm.Deep).Addr(), 2*time.Millisecond, Config{WriteBehind: true})
	d := attachBurst(t, p.addr, p.sp)
	// JDI's own Sets at attach, then the debugger's class prepare request
	// for Deep, suspending its thread; its stop is the session's first.
	d.call(jdwp.CmdEventRequestSet, rawSet(d.sizes, 9, 0, 0, nil))
	d.call(jdwp.CmdEventRequestSet, rawSet(d.sizes, 8, 1, 1, matchMod("Deep")))
	if _, err := d.d.Send(jdwp.CmdVirtualMachineResume, nil); err != nil {
		t.Fatal(err)
	}
	var thread jdwp.ThreadID
	var class uint64
	for thread == 0 {
		for _, e := range d.nextEvents("Deep's CLASS_PREPARE").Events {
			if e.Kind == jdwp.EventClassPrepare {
				thread, class = jdwp.ThreadID(e.Thread), e.TypeID
			}
		}
	}
	step := func(th jdwp.ThreadID) []byte {
		return rawSet(d.sizes, uint8(jdwp.EventSingleStep), uint8(jdwp.SuspendEventThread), 2, func(w *jdwp.BodyWriter) {
			w.Uint8(uint8(jdwp.ModStep))
			w.Thread(th)
			w.Int32(1) // LINE
			w.Int32(0) // INTO: from the class loader's code, a step over may not end soon
			w.Uint8(uint8(jdwp.ModCount))
			w.Int32(1)
		})
	}
	// A thread this session never saw: the VM's answer, not a proof.
	threads, err := d.d.Call(jdwp.CmdVirtualMachineAllThreads, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := jdwp.NewBodyReader(threads.Body(), d.sizes)
	other := jdwp.ThreadID(0)
	for n := r.Int32(); n > 0 && r.Err() == nil; n-- {
		if th := r.Thread(); th != thread {
			other = th
		}
	}
	before := d.written()
	code, id := d.call(jdwp.CmdEventRequestSet, step(thread))
	if code != jdwp.ErrorNone {
		t.Fatalf("the first step request: %v", code)
	}
	if d.written() == before {
		t.Error("the session's first step request, on the thread its stop suspended, was forwarded, not written behind")
	}
	// java-debug's method exit with its return value, on the stopped
	// thread, in the event's class, of a frame's this (the class loader's
	// under the prepare: the first frame with one).
	frames, err := d.d.Call(jdwp.CmdThreadReferenceFrames, body(func(w *jdwp.BodyWriter) { w.Thread(thread); w.Int32(0); w.Int32(-1) }))
	if err != nil || frames.ErrorCode() != jdwp.ErrorNone {
		t.Fatalf("the stopped thread's frames: %v %v", err, frames.ErrorCode())
	}
	var obj uint64
	fr := jdwp.NewBodyReader(frames.Body(), d.sizes)
	for n := fr.Int32(); n > 0 && obj == 0 && fr.Err() == nil; n-- {
		f := fr.FrameID()
		fr.Location()
		this, err := d.d.Call(jdwp.CmdStackFrameThisObject, body(func(w *jdwp.BodyWriter) { w.Thread(thread); w.FrameID(f) }))
		if err != nil || this.ErrorCode() != jdwp.ErrorNone {
			t.Fatalf("a frame's this: %v %v", err, this.ErrorCode())
		}
		obj = jdwp.NewBodyReader(this.Body(), d.sizes).TaggedObjectID().Bits
	}
	if obj == 0 {
		t.Fatal("no frame of the stopped thread has a this")
	}
	mods := []jdwp.Modifier{{Kind: jdwp.ModThreadOnly, Thread: uint64(thread)}, {Kind: jdwp.ModClassOnly, Class: class},
		{Kind: jdwp.ModInstanceOnly, Object: obj}}
	before = d.written()
	exit := rawSet(d.sizes, uint8(jdwp.EventMethodExitWithReturnValue), uint8(jdwp.SuspendNone), int32(len(mods)), func(w *jdwp.BodyWriter) {
		for _, m := range mods {
			w.Modifier(m)
		}
	})
	if code, _ := d.call(jdwp.CmdEventRequestSet, exit); code != jdwp.ErrorNone {
		t.Fatalf("the first method exit request: %v", code)
	}
	if d.written() == before {
		t.Error("the session's first method exit request, on the thread its stop suspended, was forwarded, not written behind")
	}
	if other != 0 {
		before = d.written()
		d.call(jdwp.CmdEventRequestSet, step(other))
		if d.written() != before {
			t.Error("a step request on a thread the session never saw suspended was written behind")
		}
	}
	if _, err := d.d.Send(jdwp.CmdVirtualMachineResume, nil); err != nil {
		t.Fatal(err)
	}
	stepped := func(comp *jdwp.Composite) bool {
		for _, e := range comp.Events {
			if e.Kind == jdwp.EventSingleStep && jdwp.ThreadID(e.Thread) == thread {
				if e.RequestID != id {
					t.Errorf("the step's event carries request %d; the debugger was answered %d", e.RequestID, id)
				}
				return true
			}
		}
		return false
	}
	for comp := d.nextEvents("the step's event"); !stepped(comp); comp = d.nextEvents("the step's event") {
		if comp.SuspendPolicy != jdwp.SuspendNone {
			if _, err := d.d.Send(jdwp.CmdVirtualMachineResume, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if st := p.sp.Stats(); st.WriteBehindFailures != 0 {
		t.Errorf("%d written-behind Sets failed at the VM", st.WriteBehindFailures)
	}
}
