package speculator

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/retag"
)

// attachVM scripts a VM whose classes have the given IDs: a class LFoo;
// with one method run()V, a line table, and a thread list.
func attachVM(class, method uint64) func(p jdwp.Packet) (jdwp.ErrorCode, []byte) {
	return func(p jdwp.Packet) (jdwp.ErrorCode, []byte) {
		switch p.Cmd() {
		case jdwp.CmdVirtualMachineVersion:
			return 0, versionReply("fake")
		case jdwp.CmdVirtualMachineAllThreads:
			return 0, body(func(w *jdwp.BodyWriter) { w.Int32(1); w.ObjectID(thread1) })
		case jdwp.CmdVirtualMachineTopLevelThreadGroups:
			return 0, body(func(w *jdwp.BodyWriter) { w.Int32(1); w.ObjectID(0x60) })
		case jdwp.CmdReferenceTypeMethodsWithGeneric:
			return 0, body(func(w *jdwp.BodyWriter) {
				w.Int32(1)
				w.MethodID(method)
				w.String("run")
				w.String("()V")
				w.String("")
				w.Int32(1)
			})
		case jdwp.CmdMethodLineTable:
			return 0, body(func(w *jdwp.BodyWriter) { w.Int64(0); w.Int64(9); w.Int32(1); w.Int64(0); w.Int32(7) })
		}
		return 0, []byte{0, 0, 0, 0}
	}
}

// attachStart is a VM started with suspend=y: its VM_START event, then
// the debugger's IDSizes.
func attachStart(t *testing.T, r *rig) {
	t.Helper()
	r.event(jdwp.SuspendAll, jdwp.Event{Kind: jdwp.EventVMStart, Thread: thread1})
	r.expectEvent()
	if p := r.dbg.call(1, jdwp.CmdIDSizes, nil); p.ErrorCode() != 0 || !bytes.Equal(p.Body(), jdwp.AppendIDSizes(nil, sizes8)) {
		t.Fatalf("IDSizes: %v %x", p, p.Body())
	}
}

func TestAttachPrefetchIsServed(t *testing.T) {
	r := startRig(t, newTestSpeculator(Config{}))
	r.vm.setHandler(attachVM(0x70, 0x71))
	attachStart(t, r)
	r.vm.waitFor(jdwp.CmdVirtualMachineTopLevelThreadGroups) // the second wave, after Version's reply
	for i, c := range []jdwp.Cmd{jdwp.CmdVirtualMachineVersion, jdwp.CmdVirtualMachineCapabilitiesNew,
		jdwp.CmdVirtualMachineTopLevelThreadGroups, jdwp.CmdVirtualMachineAllThreads} {
		if p := r.dbg.call(uint32(10+i), c, nil); p.ErrorCode() != 0 || p.ID() != uint32(10+i) {
			t.Fatalf("%v: %v", c, p)
		}
	}
	for _, c := range append(append([]jdwp.Cmd{}, defaultPrefetch...), defaultSuspended...) {
		if n := r.vm.count(c); n != 1 {
			t.Errorf("VM got %v %d times, want once (the prefetch, then hits)", c, n)
		}
	}
	if st := r.sp.Stats(); st.Misses != 0 || st.Hits+st.Belays != 5 {
		t.Fatalf("stats %+v, want the 5 commands served", st)
	}
}

func TestAttachPrefetchOfStopStateIsNotServedAfterResume(t *testing.T) {
	r := startRig(t, newTestSpeculator(Config{}))
	r.vm.setHandler(attachVM(0x70, 0x71))
	attachStart(t, r)
	// The prefetch's second wave goes after Version's reply: a debugger
	// asking before it is sent misses, as it should.
	r.vm.waitFor(jdwp.CmdVirtualMachineTopLevelThreadGroups)
	// TopLevelThreadGroups is answered after AllThreads (in order): once it
	// is served from the prefetch, AllThreads' reply is cached.
	r.dbg.call(10, jdwp.CmdVirtualMachineTopLevelThreadGroups, nil)
	if n := r.vm.count(jdwp.CmdVirtualMachineTopLevelThreadGroups); n != 1 {
		t.Fatalf("TopLevelThreadGroups reached the VM %d times, want 1 (prefetched)", n)
	}
	r.dbg.call(11, jdwp.CmdVirtualMachineResume, nil)
	r.dbg.call(12, jdwp.CmdVirtualMachineAllThreads, nil)
	if n := r.vm.count(jdwp.CmdVirtualMachineAllThreads); n != 2 {
		t.Fatalf("AllThreads reached the VM %d times, want 2: the prefetched reply is stale after the resume", n)
	}
}

func TestAttachWithoutSuspensionPrefetchesNoStopState(t *testing.T) {
	r := startRig(t, newTestSpeculator(Config{}))
	r.vm.setHandler(attachVM(0x70, 0x71))
	r.dbg.call(1, jdwp.CmdIDSizes, nil) // no VM_START: a VM that runs
	r.dbg.call(2, jdwp.CmdVirtualMachineVersion, nil)
	r.dbg.call(3, jdwp.CmdVirtualMachineAllThreads, nil)
	if n := r.vm.count(jdwp.CmdVirtualMachineAllThreads); n != 1 {
		t.Fatalf("AllThreads reached the VM %d times, want only the debugger's", n)
	}
}

// learnedAttach runs one attach: the VM prepares LFoo; (IDs class,
// method) and the debugger reads its methods and line table.
func learnedAttach(t *testing.T, sp *Speculator, class, method uint64) *rig {
	t.Helper()
	return learnedAttachWith(t, sp, class, method, nil)
}

// learnedAttachWith is learnedAttach, calling started once the debugger's
// first command (IDSizes) made the session.
func learnedAttachWith(t *testing.T, sp *Speculator, class, method uint64, started func()) *rig {
	t.Helper()
	r := startRig(t, sp)
	r.vm.setHandler(attachVM(class, method))
	attachStart(t, r)
	if started != nil {
		started()
	}
	r.dbg.call(2, jdwp.CmdVirtualMachineVersion, nil)
	r.event(jdwp.SuspendAll, jdwp.Event{Kind: jdwp.EventClassPrepare, RequestID: 2, Thread: thread1,
		RefTypeTag: jdwp.TypeTagClass, TypeID: class, Signature: []byte("LFoo;"), Status: 7})
	r.expectEvent()
	r.dbg.call(3, jdwp.CmdReferenceTypeMethodsWithGeneric, body(func(w *jdwp.BodyWriter) { w.ReferenceTypeID(class) }))
	r.dbg.call(4, jdwp.CmdMethodLineTable, isObsoleteBody(class, method))
	r.dbg.call(5, jdwp.CmdVirtualMachineClassesBySignature, sigBody("LBar;")) // never loaded
	return r
}

func TestAttachSequenceIsReplayedWithThisConnectionsIDs(t *testing.T) {
	sp := newTestSpeculator(Config{})
	first := learnedAttach(t, sp, 0x70, 0x71)
	if n := first.vm.count(jdwp.CmdMethodLineTable); n != 1 {
		t.Fatalf("first attach: LineTable reached the VM %d times", n)
	}
	first.stop()
	before := sp.Stats()
	// A new VM process hands out other IDs for the same class.
	second := learnedAttach(t, sp, 0x90, 0x91)
	if n := second.vm.count(jdwp.CmdMethodLineTable); n != 1 {
		t.Fatalf("second attach: LineTable reached the VM %d times, want once (replayed)", n)
	}
	if st := sp.Stats().Since(before); st.Misses != 0 {
		t.Fatalf("second attach: %d misses, want every command served (%+v)", st.Misses, st)
	}
	for _, p := range second.vm.commands() {
		if p.Cmd().Set == jdwp.SetReferenceType || p.Cmd().Set == jdwp.SetMethod {
			if id := jdwp.NewBodyReader(p.Body(), sizes8).Class(); id != 0x90 {
				t.Fatalf("second VM got %v for class %#x: an ID it never handed out", p.Cmd(), id)
			}
		}
	}
}

func TestLearnFileRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "learn.json")
	sp := newTestSpeculator(Config{LearnFile: path})
	want := &profile{VM: []jdwp.Cmd{jdwp.CmdVirtualMachineAllThreads}, Sigs: []string{"LBar;"},
		Class:     []classCmd{{Sig: "LFoo;", Set: jdwp.SetReferenceType, Cmd: 15}},
		Method:    []methodCmd{{Sig: "LFoo;", Name: "run", MSig: "()V", Set: jdwp.SetMethod, Cmd: 1}},
		AttachUse: 0.5, Asked: []jdwp.Cmd{jdwp.CmdStringReferenceValue}, Ratio: make([]float64, numKinds),
		PrepClass: []jdwp.Cmd{jdwp.CmdReferenceTypeMethodsWithGeneric}, PrepMethod: []jdwp.Cmd{jdwp.CmdMethodLineTable},
		FramesRule: -1, ValueDepth: 3, Templates: []relTmpl{{Set: jdwp.SetThreadReference, Cmd: 6, Rel: true, Ints: []int32{0, -1}}}}
	sp.profiles.put("k", want)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("learn file mode %v, want 0600", fi.Mode().Perm())
	}
	again := newTestSpeculator(Config{LearnFile: path})
	if got := again.profiles.get("k"); !reflect.DeepEqual(got, want) {
		t.Fatalf("read back %+v, want %+v", got, want)
	}
	if err := os.WriteFile(path, []byte(`{"k":{"vm":[{"Set":99,"Cmd":1}]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := newTestSpeculator(Config{LearnFile: path}).profiles.get("k"); got != nil {
		t.Fatalf("a profile naming a command that is not cacheable was kept: %+v", got)
	}
	if err := os.WriteFile(path, []byte(`{"k":{"prep_class":[{"Set":11,"Cmd":6}]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := newTestSpeculator(Config{LearnFile: path}).profiles.get("k"); got != nil {
		t.Fatalf("a profile naming a stop-state command for prepare stops was kept: %+v", got)
	}
}

func FuzzParseProfiles(f *testing.F) {
	f.Add([]byte(`{"k":{"vm":[{"Set":1,"Cmd":1}],"class":[{"sig":"LFoo;","set":2,"cmd":15}],"templates":[{"set":11,"cmd":6,"rel":true,"ints":[0,-1]}]}}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"k":null}`))
	f.Add([]byte(`{"k":{"shapes":[{"sig":"LNode;","fields":[{"hops":0,"name":"next"},{"hops":1,"name":"id"}]}]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseProfiles(b)
		if err != nil {
			return
		}
		if len(m) > maxProfiles {
			t.Fatalf("%d profiles", len(m))
		}
		c := &core{learn: newLearner()}
		for _, p := range m {
			if !p.valid() {
				t.Fatalf("invalid profile kept: %+v", p)
			}
			c.learn.importFrom(p, sizes8) // must not panic
			(&shapeRules{core: c}).importFrom(p, sizes8)
			cf := shapeClasses()
			for _, refs := range c.learn.shapes {
				w := jdwp.BodyWriter{Sizes: sizes8}
				cf.fieldTail(&w, 10, refs) // must not panic
			}
		}
	})
}

// TestAttachSendsNothingBeforeTheDebuggerUnlessTheVMWaits: a VM's first
// packet starts the prefetch only if it is the VM_START of a VM suspended
// for this debugger; any other VM gets nothing before the debugger's own
// first command (an older Android runtime takes any command for a
// debugger arriving). The counters are updated before the event is
// forwarded.
func TestAttachSendsNothingBeforeTheDebuggerUnlessTheVMWaits(t *testing.T) {
	r := startRig(t, newTestSpeculator(Config{}))
	r.vm.setHandler(attachVM(0x70, 0x71))
	r.event(jdwp.SuspendNone, jdwp.Event{Kind: jdwp.EventVMStart, Thread: thread1})
	r.expectEvent()
	if st := r.sp.Stats(); st.SpecSent != 0 {
		t.Fatalf("%d commands sent before the debugger's first, for a VM that does not wait", st.SpecSent)
	}
	r.dbg.call(1, jdwp.CmdIDSizes, nil)
	if st := r.sp.Stats(); st.SpecSent != int64(len(defaultPrefetch)) {
		t.Fatalf("%d commands prefetched at the debugger's first, want %d", st.SpecSent, len(defaultPrefetch))
	}

	w := startRig(t, newTestSpeculator(Config{}))
	w.vm.setHandler(attachVM(0x70, 0x71))
	w.event(jdwp.SuspendAll, jdwp.Event{Kind: jdwp.EventVMStart, Thread: thread1})
	w.expectEvent()
	if st := w.sp.Stats(); st.SpecSent != int64(len(defaultPrefetch)) {
		t.Fatalf("%d commands prefetched on a suspend=y VM's VM_START, want %d", st.SpecSent, len(defaultPrefetch))
	}
}

// TestAttachWasteGateCarriesOver: an attach whose own commands went
// unused leaves a profile that keeps the next attach, on a fast link,
// from replaying anything.
func TestAttachWasteGateCarriesOver(t *testing.T) {
	sp := newTestSpeculator(Config{})
	learnedAttach(t, sp, 0x70, 0x71).stop()
	sp.profiles.mu.Lock()
	if len(sp.profiles.m) != 1 {
		t.Fatalf("%d profiles after one attach, want 1", len(sp.profiles.m))
	}
	for _, p := range sp.profiles.m {
		if len(p.Class) == 0 || len(p.Method) == 0 {
			t.Fatalf("profile without the attach sequence: %+v", p)
		}
		p.AttachUse = 0
	}
	sp.profiles.mu.Unlock()
	before := sp.Stats()
	rigModes.Store(sp, ModeAdaptive) // the proxy's usual mode, with its Session kept
	learnedAttachWith(t, sp, 0x90, 0x91, func() {
		// A fast link, whatever this machine's load makes of the rig's
		// round trips (the gate holds below LowRTT).
		v, _ := rigSessions.Load(sp)
		s := v.(*Session)
		s.ss.mu.Lock()
		defer s.ss.mu.Unlock()
		for range 3 {
			s.ss.disp.rtt.sample(LowRTT / 4)
		}
	})
	if st := sp.Stats().Since(before); st.Misses != 2 {
		t.Fatalf("second attach: %d misses, want Methods and LineTable asked by the debugger itself (%+v)", st.Misses, st)
	}
}

func sigBody(sig string) []byte { return body(func(w *jdwp.BodyWriter) { w.String(sig) }) }

// TestAttachLookupServesClassesBySignatureOnlyWhileSuspended: at the
// second attach the speculator looks LFoo; up itself; the debugger's own
// lookup is served from it while the VM stays suspended since, and goes
// to the VM after a resume, or after a command that may unload classes.
func TestAttachLookupServesClassesBySignatureOnlyWhileSuspended(t *testing.T) {
	sp := newTestSpeculator(Config{})
	learnedAttach(t, sp, 0x70, 0x71).stop()

	r := startRig(t, sp)
	r.vm.setHandler(attachVM(0x90, 0x91))
	attachStart(t, r)
	r.dbg.call(2, jdwp.CmdVirtualMachineVersion, nil)
	r.dbg.call(3, jdwp.CmdVirtualMachineClassesBySignature, sigBody("LFoo;"))
	r.dbg.call(6, jdwp.CmdVirtualMachineClassesBySignature, sigBody("LBar;"))
	if n := r.vm.count(jdwp.CmdVirtualMachineClassesBySignature); n != 2 {
		t.Fatalf("VM got ClassesBySignature %d times, want twice (the speculator's lookups)", n)
	}
	r.dbg.call(4, jdwp.CmdVirtualMachineInstanceCounts, body(func(w *jdwp.BodyWriter) { w.Int32(0) }))
	r.dbg.call(5, jdwp.CmdVirtualMachineClassesBySignature, sigBody("LFoo;"))
	if n := r.vm.count(jdwp.CmdVirtualMachineClassesBySignature); n != 3 {
		t.Fatalf("VM got ClassesBySignature %d times, want 3: InstanceCounts may unload classes", n)
	}

	w := startRig(t, sp)
	w.vm.setHandler(attachVM(0x90, 0x91))
	attachStart(t, w)
	w.dbg.call(2, jdwp.CmdVirtualMachineVersion, nil)
	w.dbg.call(3, jdwp.CmdVirtualMachineResume, nil)
	w.dbg.call(4, jdwp.CmdVirtualMachineClassesBySignature, sigBody("LFoo;"))
	if n := w.vm.count(jdwp.CmdVirtualMachineClassesBySignature); n != 3 {
		t.Fatalf("VM got ClassesBySignature %d times, want 3 (2 lookups, then the debugger's): after a resume classes may have been loaded", n)
	}
}

// TestAttachNearEndPrefetchesOnlyTheAttach: a near end (ModeNear) prefetches
// the attach as the proxy does, and sends nothing of its own at a stop;
// ModeNever sends nothing at all.
func TestAttachNearEndPrefetchesOnlyTheAttach(t *testing.T) {
	for _, tc := range []struct {
		mode     Mode
		prefetch int
	}{{ModeNear, 1}, {ModeNever, 0}} {
		sp := newTestSpeculator(Config{})
		rigModes.Store(sp, tc.mode)
		r := startRig(t, sp)
		r.vm.setHandler(attachVM(0x70, 0x71))
		attachStart(t, r)
		r.dbg.call(10, jdwp.CmdVirtualMachineCapabilitiesNew, nil)
		if tc.prefetch > 0 {
			// The second wave goes out on the Version reply, which the
			// debugger's call does not wait for.
			r.vm.waitFor(jdwp.CmdVirtualMachineAllThreads)
		} else {
			r.barrier() // anything sent before it reached the VM first
		}
		if n := r.vm.count(jdwp.CmdVirtualMachineAllThreads); n != tc.prefetch {
			t.Errorf("mode %d: AllThreads reached the VM %d times at attach, want %d", tc.mode, n, tc.prefetch)
		}
		r.dbg.call(11, jdwp.CmdVirtualMachineResume, nil)
		r.event(jdwp.SuspendAll, bpEvent(thread1))
		r.expectEvent()
		r.dbg.call(12, jdwp.CmdVirtualMachineVersion, nil) // a round trip: speculation would be sent by now
		if n := r.vm.count(jdwp.CmdThreadReferenceFrames) + r.vm.count(jdwp.CmdVirtualMachineAllThreads); n != tc.prefetch {
			t.Errorf("mode %d: sent %d stop commands of its own, want none", tc.mode, n-tc.prefetch)
		}
		r.stop()
	}
}

// TestQuietSessionDoesNotLearnPeerSpeculation: in a session that sends
// nothing of its own (SetMode(ModeNever): split mode's far end on a fast
// link), a command in the proxies' ID range is the near end's own
// speculation: answered, but not learned as the debugger's; the same
// command with a debugger's ID, or in a speculating session, is.
func TestQuietSessionDoesNotLearnPeerSpeculation(t *testing.T) {
	for _, tc := range []struct {
		quiet bool
		id    uint32
		learn bool
	}{{true, 0xA0000040, false}, {true, 0x40, true}, {false, 0xA0000040, true}} {
		sp := newTestSpeculator(Config{})
		rigModes.Store(sp, ModeAlways)
		r := learnedAttach(t, sp, 0x70, 0x71)
		v, _ := rigSessions.Load(sp)
		s := v.(*Session)
		if tc.quiet {
			s.SetMode(ModeNever)
		}
		r.dbg.call(tc.id, jdwp.CmdReferenceTypeSourceFile, body(func(w *jdwp.BodyWriter) { w.ReferenceTypeID(0x70) }))
		s.ss.mu.Lock()
		learned := s.ss.learn.asked[jdwp.CmdReferenceTypeSourceFile] != 0
		s.ss.mu.Unlock()
		if learned != tc.learn {
			t.Errorf("quiet %v, ID %#x: learned %v, want %v", tc.quiet, tc.id, learned, tc.learn)
		}
		r.stop()
	}
}

// TestFarEndKnowsTheDebuggerByItsFirstCommand: a far end does not take its
// near end's own commands (the near end's attach prefetch, in the proxies'
// ID range) for the debugger's first command, but the one its near end
// reports: its profile's key stays the debugger's from session to
// session. Fails with the far end identifying on the first command it
// gets.
func TestFarEndKnowsTheDebuggerByItsFirstCommand(t *testing.T) {
	sp := newTestSpeculator(Config{})
	rigModes.Store(sp, ModeAlways)
	r := startRigWith(t, sp, (&frameState{count: 3, values: 10}).handler)
	r.dbg.call(retag.SyntheticBase+1, jdwp.CmdVirtualMachineAllThreads, nil) // the near end's own
	v, _ := rigSessions.Load(sp)
	s := v.(*Session)
	done := make(chan struct{})
	if err := s.ss.rs.Do(func(out *relay.Outbox) { // the near end's report of the debugger's first
		s.Identify(out, jdwp.CmdIDSizes, sizes8)
		close(done)
	}); err != nil {
		t.Fatal(err)
	}
	<-done // Do runs fn later if another turn holds the session

	s.ss.mu.Lock()
	defer s.ss.mu.Unlock()
	if a := &s.ss.att; !a.identified || a.first != jdwp.CmdIDSizes {
		t.Fatalf("far end identified %v by %v, want the debugger's IDSizes", a.identified, a.first)
	}
}
