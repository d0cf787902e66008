package speculator

import (
	"testing"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// prepareVM scripts a VM whose class of ID class has n methods, IDs
// class+1 .. class+n, each with a line table.
func prepareVM(n int) func(p jdwp.Packet) (jdwp.ErrorCode, []byte) {
	return func(p jdwp.Packet) (jdwp.ErrorCode, []byte) {
		switch p.Cmd() {
		case jdwp.CmdReferenceTypeMethodsWithGeneric:
			class := jdwp.NewBodyReader(p.Body(), sizes8).ReferenceTypeID()
			return 0, body(func(w *jdwp.BodyWriter) {
				w.Int32(int32(n))
				for i := 1; i <= n; i++ {
					w.MethodID(class + uint64(i))
					w.String("m")
					w.String("()V")
					w.String("")
					w.Int32(1)
				}
			})
		case jdwp.CmdReferenceTypeSourceDebugExtension:
			return 0, body(func(w *jdwp.BodyWriter) { w.String("SMAP") })
		case jdwp.CmdMethodLineTable:
			return 0, body(func(w *jdwp.BodyWriter) { w.Int64(0); w.Int64(9); w.Int32(1); w.Int64(0); w.Int32(7) })
		case jdwp.CmdEventRequestSet:
			return 0, body(func(w *jdwp.BodyWriter) { w.Int32(7) })
		case jdwp.CmdVirtualMachineResume:
			return 0, nil
		case jdwp.CmdVirtualMachineVersion:
			return 0, versionReply(refAgent)
		}
		return 0, []byte{0, 0, 0, 0}
	}
}

// prepareRig attaches to a suspend=y VM with prepareVM(n); with pattern
// != "", the debugger asks to be told (suspending) of classes matching it.
func prepareRig(t *testing.T, n int, pattern string) *rig {
	t.Helper()
	r := startRig(t, newTestSpeculator(Config{}))
	r.vm.setHandler(prepareVM(n))
	attachStart(t, r)
	r.dbg.call(2, jdwp.CmdVirtualMachineVersion, nil)
	if pattern != "" {
		r.dbg.call(3, jdwp.CmdEventRequestSet, body(func(w *jdwp.BodyWriter) {
			w.Uint8(uint8(jdwp.EventClassPrepare))
			w.Uint8(uint8(jdwp.SuspendAll))
			w.Int32(1)
			w.Modifier(jdwp.Modifier{Kind: jdwp.ModClassMatch, Pattern: []byte(pattern)})
		}))
	}
	return r
}

// prepare resumes the VM and has it prepare class (signature sig).
func (r *rig) prepare(id uint32, class uint64, sig string) {
	r.dbg.call(id, jdwp.CmdVirtualMachineResume, nil)
	r.event(jdwp.SuspendAll, jdwp.Event{Kind: jdwp.EventClassPrepare, RequestID: 7, Thread: thread1,
		RefTypeTag: jdwp.TypeTagClass, TypeID: class, Signature: []byte(sig), Status: 7})
	r.expectEvent()
}

func classBody(class uint64) []byte {
	return body(func(w *jdwp.BodyWriter) { w.ReferenceTypeID(class) })
}

// resolve asks what JDI asks to resolve breakpoints in class: its
// methods, its strata, the line tables of methods 1..lines.
func (r *rig) resolve(id uint32, class uint64, lines int) {
	r.dbg.call(id, jdwp.CmdReferenceTypeMethodsWithGeneric, classBody(class))
	r.dbg.call(id+1, jdwp.CmdReferenceTypeSourceDebugExtension, classBody(class))
	for i := 1; i <= lines; i++ {
		r.dbg.call(id+1+uint32(i), jdwp.CmdMethodLineTable, isObsoleteBody(class, class+uint64(i)))
	}
}

// resolveCmds is how many commands resolve sends.
func resolveCmds(lines int) int64 { return int64(2 + lines) }

// TestPrepareRuleResolvesRequestedClass: at the CLASS_PREPARE of a class
// the debugger asked to be told of, the class's methods and strata are
// sent with the event, each method's line table with the methods reply;
// the debugger's own reads are served, and the line tables it did not
// read count as waste at its resume.
func TestPrepareRuleResolvesRequestedClass(t *testing.T) {
	r := prepareRig(t, 3, "pkg.Foo")
	r.prepare(10, 0x70, "Lpkg/Foo;")
	r.waitStats(func(st Stats) bool { return st.SpecSent >= int64(defaultPrefetchN+2+3) })
	for _, c := range []jdwp.Cmd{jdwp.CmdReferenceTypeMethodsWithGeneric, jdwp.CmdReferenceTypeSourceDebugExtension} {
		r.vm.waitCount(c, 1) // counted sent as they go out
		if n := r.vm.count(c); n != 1 {
			t.Fatalf("VM got %v %d times before the debugger asked, want 1 (speculated)", c, n)
		}
	}
	before := r.sp.Stats()
	r.resolve(20, 0x70, 2)
	st := r.sp.Stats().Since(before)
	if st.Misses != 0 || st.Hits+st.Belays != resolveCmds(2) {
		t.Fatalf("resolving the prepared class: %+v, want every read served", st)
	}
	if n := r.vm.count(jdwp.CmdMethodLineTable); n != 3 {
		t.Fatalf("VM got %d line tables, want 3 (one per method, speculated once)", n)
	}
	r.dbg.call(30, jdwp.CmdVirtualMachineResume, nil)
	if st := r.sp.Stats().Since(before); st.SpecWasted != 1 {
		t.Fatalf("wasted %d at the resume, want 1 (the line table not read)", st.SpecWasted)
	}
	for _, p := range r.vm.commands() {
		if s := p.Cmd().Set; s == jdwp.SetReferenceType || s == jdwp.SetMethod {
			if id := jdwp.NewBodyReader(p.Body(), sizes8).Class(); id != 0x70 {
				t.Fatalf("VM got %v for class %#x, which it never handed out", p.Cmd(), id)
			}
		}
	}
}

// defaultPrefetchN is what the attach prefetch sends before anything.
var defaultPrefetchN = len(defaultPrefetch) + len(defaultSuspended)

// TestPrepareRuleNeedsItsGate: a class prepared that the debugger did not
// ask to be told of by name, in a session that has not seen the debugger
// resolve a prepared class, gets nothing sent; nor does a class the
// catch-all pattern matches.
func TestPrepareRuleNeedsItsGate(t *testing.T) {
	for _, pattern := range []string{"", "*", "pkg.Other"} {
		r := prepareRig(t, 3, pattern)
		r.prepare(10, 0x70, "Lpkg/Foo;")
		r.dbg.call(11, jdwp.CmdVirtualMachineVersion, nil) // the event was handled
		before := r.sp.Stats()
		r.resolve(20, 0x70, 3)
		if st := r.sp.Stats().Since(before); st.Misses != resolveCmds(3) {
			t.Fatalf("pattern %q: %+v, want every read forwarded (nothing speculated)", pattern, st)
		}
		for _, c := range []jdwp.Cmd{jdwp.CmdReferenceTypeMethodsWithGeneric, jdwp.CmdReferenceTypeSourceDebugExtension, jdwp.CmdMethodLineTable} {
			if n, want := r.vm.count(c), 1; c == jdwp.CmdMethodLineTable && n != 3 || c != jdwp.CmdMethodLineTable && n != want {
				t.Fatalf("pattern %q: VM got %v %d times, want only the debugger's", pattern, c, n)
			}
		}
		r.stop()
	}
}

// TestPrepareRuleLearnsFromAnEarlierPrepareStop: without any request by
// name, once the debugger resolved a prepared class at a CLASS_PREPARE
// stop, the next prepared class gets the same reads speculated.
func TestPrepareRuleLearnsFromAnEarlierPrepareStop(t *testing.T) {
	r := prepareRig(t, 3, "")
	r.prepare(10, 0x70, "LFoo;")
	r.resolve(20, 0x70, 3)
	r.prepare(30, 0x80, "LBar;")
	before := r.sp.Stats()
	r.resolve(40, 0x80, 3)
	if st := r.sp.Stats().Since(before); st.Misses != 0 || st.Hits+st.Belays != resolveCmds(3) {
		t.Fatalf("resolving the second prepared class: %+v, want every read served", st)
	}
	if n := r.vm.count(jdwp.CmdMethodLineTable); n != 6 {
		t.Fatalf("VM got %d line tables, want 6", n)
	}
}

// TestPrepareRuleServesNothingOfAnUnloadedClass: the facts speculated at
// a class's CLASS_PREPARE are not served once the class is unloaded.
func TestPrepareRuleServesNothingOfAnUnloadedClass(t *testing.T) {
	r := prepareRig(t, 2, "*.Foo")
	r.prepare(10, 0x70, "Lpkg/Foo;")
	r.waitStats(func(st Stats) bool { return st.SpecSent >= int64(defaultPrefetchN+2+2) })
	r.vm.waitCount(jdwp.CmdMethodLineTable, 2) // counted sent as they go out
	if n := r.vm.count(jdwp.CmdMethodLineTable); n != 2 {
		t.Fatalf("VM got %d line tables, want 2 (speculated)", n)
	}
	r.dbg.call(11, jdwp.CmdVirtualMachineVersion, nil) // the replies are in
	r.dbg.call(12, jdwp.CmdVirtualMachineResume, nil)
	r.event(jdwp.SuspendNone, jdwp.Event{Kind: jdwp.EventClassUnload, RequestID: 8, Signature: []byte("Lpkg/Foo;")})
	r.expectEvent()
	before := r.sp.Stats()
	r.dbg.call(20, jdwp.CmdReferenceTypeMethodsWithGeneric, classBody(0x70))
	r.dbg.call(21, jdwp.CmdMethodLineTable, isObsoleteBody(0x70, 0x71))
	if st := r.sp.Stats().Since(before); st.Misses != 2 || st.Hits+st.Belays != 0 {
		t.Fatalf("after the unload: %+v, want both reads forwarded", st)
	}
	if n := r.vm.count(jdwp.CmdMethodLineTable); n != 3 {
		t.Fatalf("VM got %d line tables, want 3 (the unloaded class's asked again)", n)
	}
}

// TestPrepareRuleIsKeptInTheProfile: what a session saw the debugger ask at
// a CLASS_PREPARE stop gates the rule in the next session of the same
// debugger from its first prepare stop (for a class the attach replay
// does not know).
func TestPrepareRuleIsKeptInTheProfile(t *testing.T) {
	sp := newTestSpeculator(Config{})
	first := startRig(t, sp)
	first.vm.setHandler(prepareVM(2))
	attachStart(t, first)
	first.dbg.call(2, jdwp.CmdVirtualMachineVersion, nil)
	first.prepare(10, 0x70, "LFoo;")
	first.resolve(20, 0x70, 2)
	first.stop()

	second := startRig(t, sp)
	second.vm.setHandler(prepareVM(2))
	attachStart(t, second)
	second.dbg.call(2, jdwp.CmdVirtualMachineVersion, nil)
	second.prepare(10, 0x90, "LBar;")
	before := sp.Stats()
	second.resolve(20, 0x90, 2)
	if st := sp.Stats().Since(before); st.Misses != 0 || st.Hits+st.Belays != resolveCmds(2) {
		t.Fatalf("second session's first prepare stop: %+v, want every read served", st)
	}
}

// TestPrepareRuleLearnsTheThreadsRead: a debugger that lists the VM's
// threads at a CLASS_PREPARE stop that suspended only its thread (java-
// debug) gets that list speculated at the next one, served under the
// moment's rules (the other threads run).
func TestPrepareRuleLearnsTheThreadsRead(t *testing.T) {
	r := prepareRig(t, 1, "")
	prepare := func(id uint32, class uint64, sig string) {
		r.dbg.call(id, jdwp.CmdVirtualMachineResume, nil)
		r.event(jdwp.SuspendEventThread, jdwp.Event{Kind: jdwp.EventClassPrepare, RequestID: 7, Thread: thread1,
			RefTypeTag: jdwp.TypeTagClass, TypeID: class, Signature: []byte(sig), Status: 7})
		r.expectEvent()
	}
	prepare(10, 0x70, "LFoo;")
	r.dbg.call(11, jdwp.CmdVirtualMachineAllThreads, nil)
	r.resolve(20, 0x70, 1)
	prepare(30, 0x80, "LBar;")
	before := r.sp.Stats()
	r.dbg.call(31, jdwp.CmdVirtualMachineAllThreads, nil)
	if st := r.sp.Stats().Since(before); st.Misses != 0 || st.Hits+st.Belays != 1 {
		t.Fatalf("the threads listed at the second prepare stop: %+v, want served", st)
	}
	if n := r.vm.count(jdwp.CmdVirtualMachineAllThreads); n != 3 {
		t.Fatalf("VM got AllThreads %d times, want 3 (the attach's, the debugger's at the first prepare stop, the proxy's at the second)", n)
	}
}

// TestPrepareRuleSkipsMethodsWithoutCode: a native or abstract method has
// no line table, and JDI (OpenJDK's, Eclipse's) answers for it without
// asking the VM: the prepare rule reads ahead the line tables of the
// other methods only. Fails with every method's line table read ahead.
func TestPrepareRuleSkipsMethodsWithoutCode(t *testing.T) {
	r := prepareRig(t, 0, "pkg.Foo")
	mods := []int32{1, 1, 0x0101, 0x0401} // public; public native; public abstract
	code := prepareVM(0)
	r.vm.setHandler(func(p jdwp.Packet) (jdwp.ErrorCode, []byte) {
		if p.Cmd() != jdwp.CmdReferenceTypeMethodsWithGeneric {
			return code(p)
		}
		class := jdwp.NewBodyReader(p.Body(), sizes8).ReferenceTypeID()
		return 0, body(func(w *jdwp.BodyWriter) {
			w.Int32(int32(len(mods)))
			for i, m := range mods {
				w.MethodID(class + uint64(i+1))
				w.String("m")
				w.String("()V")
				w.String("")
				w.Int32(m)
			}
		})
	})
	r.prepare(10, 0x70, "Lpkg/Foo;")
	r.vm.waitCount(jdwp.CmdMethodLineTable, 2)
	// Two round trips through the VM: whatever the methods reply led to
	// was sent before the second.
	r.dbg.call(nextID(), jdwp.CmdVirtualMachineAllClasses, nil)
	r.dbg.call(nextID(), jdwp.CmdVirtualMachineAllClasses, nil)
	for _, p := range r.vm.commands() {
		if p.Cmd() != jdwp.CmdMethodLineTable {
			continue
		}
		br := jdwp.NewBodyReader(p.Body(), sizes8)
		br.Class()
		if m := br.Method(); m > 0x72 {
			t.Errorf("the VM got the line table of method %v, which has no code", m)
		}
	}
}

// TestPrepareRuleLearnsWhichClassesTheDebuggerResolves: an IDE asks to be
// told of Outer and of Outer$*, and may resolve its breakpoints in the
// inner classes or only in Outer: once it resumed a prepare stop of an
// inner class without reading it, the next inner class prepared gets
// nothing read ahead, while Outer's kind (matched by name) still does;
// an inner class it reads again makes them read ahead again. Fails
// without prepareRule.resolves: each inner class's methods, strata and
// line tables were read ahead for nothing (BigApp: a lambda's, an
// anonymous class's, a nested class's).
func TestPrepareRuleLearnsWhichClassesTheDebuggerResolves(t *testing.T) {
	r := prepareRig(t, 2, "pkg.Foo")
	r.dbg.call(4, jdwp.CmdEventRequestSet, body(func(w *jdwp.BodyWriter) {
		w.Uint8(uint8(jdwp.EventClassPrepare))
		w.Uint8(uint8(jdwp.SuspendAll))
		w.Int32(1)
		w.Modifier(jdwp.Modifier{Kind: jdwp.ModClassMatch, Pattern: []byte("pkg.Foo$*")})
	}))
	methodsOf := func(class uint64) int {
		n := 0
		for _, p := range r.vm.commands() {
			if p.Cmd() == jdwp.CmdReferenceTypeMethodsWithGeneric && jdwp.NewBodyReader(p.Body(), sizes8).ReferenceTypeID() == class {
				n++
			}
		}
		return n
	}
	settle := func() {
		// Two round trips through the VM: whatever the stop led to was
		// sent before the second.
		r.dbg.call(nextID(), jdwp.CmdVirtualMachineAllClasses, nil)
		r.dbg.call(nextID(), jdwp.CmdVirtualMachineAllClasses, nil)
	}
	r.prepare(10, 0x70, "Lpkg/Foo;")
	r.resolve(20, 0x70, 2)
	r.prepare(30, 0x80, "Lpkg/Foo$1;") // not read by the debugger
	r.vm.waitCount(jdwp.CmdReferenceTypeMethodsWithGeneric, 2)
	r.prepare(40, 0x90, "Lpkg/Foo$2;")
	settle()
	if n := methodsOf(0x90); n != 0 {
		t.Errorf("the VM got %d Methods of an inner class after the debugger read none at the last one, want none", n)
	}
	r.resolve(50, 0x90, 2) // this one it reads (a miss)
	r.prepare(60, 0xA0, "Lpkg/Foo$3;")
	r.vm.waitCount(jdwp.CmdReferenceTypeMethodsWithGeneric, 4)
	if n := methodsOf(0xA0); n != 1 {
		t.Errorf("the VM got %d Methods of an inner class after the debugger read the last one, want the one read ahead", n)
	}
}

// TestPrepareRuleKeepsWhatItResolvesInTheProfile: which kinds of matched
// classes the debugger read at the last prepare stop go in the profile
// and come back in the next session's rule. Fails without PrepRead.
func TestPrepareRuleKeepsWhatItResolvesInTheProfile(t *testing.T) {
	var pr prepareRule
	pr.resolves[matchName], pr.resolves[matchInner] = 1, -1
	var p profile
	pr.exportTo(&p, nil, sizes8)
	if !p.valid() {
		t.Fatalf("the profile exported does not read back: %+v", p)
	}
	var next prepareRule
	next.importFrom(&p, sizes8)
	if next.resolves != pr.resolves {
		t.Errorf("next session's rule resolves %v, want %v", next.resolves, pr.resolves)
	}
}
