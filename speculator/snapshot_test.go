package speculator

import (
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// TestSnapshotPaysRule: the class snapshot is taken when the lookups the
// profile expects beyond its own, times the RTT, outweigh its bytes over
// the bandwidth; never without a profile that saw one.
func TestSnapshotPaysRule(t *testing.T) {
	for _, tc := range []struct {
		name       string
		p          *profile
		rtt        time.Duration
		bandwidth  int64
		compressed bool
		want       bool
	}{
		{"no profile", nil, 30 * time.Millisecond, 0, false, false},
		{"never saw a snapshot", &profile{Lookups: 30}, 30 * time.Millisecond, 0, false, false},
		{"no lookups", &profile{SnapBytes: 30_000}, 30 * time.Millisecond, 0, false, false},
		{"lookups covered by its own", &profile{Lookups: 2, Sigs: []string{"LA;", "LB;"}, SnapBytes: 30_000}, 30 * time.Millisecond, 0, false, false},
		// 2 × 30 ms = 60 ms against 30 kB at 1 MiB/s = 29 ms.
		{"Deep at 30 ms", &profile{Lookups: 2, SnapBytes: 30_000}, 30 * time.Millisecond, 0, false, true},
		// 2 × 2 ms = 4 ms against 29 ms.
		{"Deep at 2 ms", &profile{Lookups: 2, SnapBytes: 30_000}, 2 * time.Millisecond, 0, false, false},
		// … and against 0.3 ms at 100 MB/s.
		{"Deep at 2 ms, fast link", &profile{Lookups: 2, SnapBytes: 30_000}, 2 * time.Millisecond, 100e6, false, true},
		// 30 × 30 ms = 0.9 s against 1.1 MB at 1 MiB/s = 1.05 s.
		{"15,000 classes at 30 ms", &profile{Lookups: 30, SnapBytes: 1_100_000}, 30 * time.Millisecond, 0, false, false},
		{"15,000 classes at 30 ms, 10 MB/s", &profile{Lookups: 30, SnapBytes: 1_100_000}, 30 * time.Millisecond, 10e6, false, true},
		{"15,000 classes at 100 ms", &profile{Lookups: 30, SnapBytes: 1_100_000}, 100 * time.Millisecond, 0, false, true},
		// BigApp's 1,231,506 bytes at 1 MB/s: 1.23 s plain, 0.31 s
		// compressed, against 30 × 30 ms = 0.9 s.
		{"BigApp at 1 MB/s", &profile{Lookups: 30, SnapBytes: 1_231_506}, 30 * time.Millisecond, 1e6, false, false},
		{"BigApp at 1 MB/s, compressed link", &profile{Lookups: 30, SnapBytes: 1_231_506}, 30 * time.Millisecond, 1e6, true, true},
		// 0.31 s against 10 × 30 ms = 0.3 s.
		{"BigApp with 10 lookups, compressed", &profile{Lookups: 10, SnapBytes: 1_231_506}, 30 * time.Millisecond, 1e6, true, false},
	} {
		sp := newTestSpeculator(Config{Bandwidth: tc.bandwidth})
		a := attach{core: &core{sp: sp}, compressed: tc.compressed}
		a.disp.rtt.sample(tc.rtt)
		a.disp.rtt.sample(tc.rtt + time.Millisecond)
		if got := a.snapPays(tc.p); got != tc.want {
			t.Errorf("%s: snapPays = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// snapBody is an AllClassesWithGeneric reply body of classes (tag, ID,
// signature, status), with 8-byte IDs.
func snapBody(classes ...snapEntry) []byte {
	return body(func(w *jdwp.BodyWriter) {
		w.Int32(int32(len(classes)))
		for _, e := range classes {
			w.Uint8(e.tag)
			w.Class(e.id)
			w.String(e.sig)
			w.String("")
			w.Int32(e.status)
		}
	})
}

// TestSnapshotAnswers: the answers built from a snapshot list the classes
// of a signature in the snapshot's order, with their statuses; the JDK's
// own classes, which its agent may load while the VM is suspended, are
// not served from it.
func TestSnapshotAnswers(t *testing.T) {
	sizes := jdwp.IDSizes{FieldID: 8, MethodID: 8, ObjectID: 8, ReferenceTypeID: 8, FrameID: 8}
	entries := []snapEntry{{1, 0x10, "LA;", 7}, {1, 0x11, "LB;", 3}, {3, 0x12, "[I", 7}, {1, 0x13, "LA;", 1}}
	var s snapshot
	s.body = snapBody(entries...)
	if !s.parse(sizes) {
		t.Fatal("the snapshot does not parse")
	}
	want := body(func(w *jdwp.BodyWriter) {
		w.Int32(2)
		w.Uint8(1)
		w.Class(0x10)
		w.Int32(7)
		w.Uint8(1)
		w.Class(0x13)
		w.Int32(1)
	})
	if got := s.answer("LA;", sizes); string(got) != string(want) {
		t.Errorf("ClassesBySignature LA;: %x, want %x", got, want)
	}
	if got := s.answer("LC;", sizes); string(got) != "\x00\x00\x00\x00" {
		t.Errorf("ClassesBySignature of a class not loaded: %x, want none", got)
	}
	for sig, want := range map[string]bool{"LA;": false, "[[LA;": false, "Ljava/lang/String;": true, "[Ljava/util/concurrent/ConcurrentHashMap$CounterCell;": true,
		"Ljdk/internal/vm/VMSupport;": true, "Lsun/misc/Unsafe;": true, "Lcom/sun/jdi/Bootstrap;": true, "[[I": true, "I": true, "Ljavax/x/Y;": true, "Ljavafoo/X;": false} {
		if got := jdkOwned(sig); got != want {
			t.Errorf("jdkOwned(%q) = %v, want %v", sig, got, want)
		}
	}
	var bad snapshot
	bad.body = s.body[:len(s.body)-1]
	if bad.parse(sizes) {
		t.Error("a truncated snapshot parses")
	}
}

// FuzzSnapshotParse: a snapshot reply of any bytes parses or not, without
// panicking, and answers lookups from what parsed.
func FuzzSnapshotParse(f *testing.F) {
	f.Add(snapBody(snapEntry{1, 0x10, "LA;", 7}))
	f.Add([]byte{0, 0, 0, 1, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		sizes := jdwp.IDSizes{FieldID: 8, MethodID: 8, ObjectID: 8, ReferenceTypeID: 8, FrameID: 8}
		s := snapshot{body: b}
		if s.parse(sizes) {
			s.answer("LA;", sizes)
		}
	})
}

// snapVM is attachVM that also answers AllClassesWithGeneric.
func snapVM(classes ...snapEntry) func(p jdwp.Packet) (jdwp.ErrorCode, []byte) {
	h := attachVM(0x70, 0x71)
	return func(p jdwp.Packet) (jdwp.ErrorCode, []byte) {
		if p.Cmd() == jdwp.CmdVirtualMachineAllClassesWithGeneric {
			return 0, snapBody(classes...)
		}
		return h(p)
	}
}

// TestSnapshotServesOnlyWhileNoClassCanChange: at a suspend=y attach the
// debugger's lookups by name are answered from the snapshot; a
// CLASS_UNLOAD (which names no thread), a resume, or a command that may
// collect garbage ends that; a VM not started suspended gets no snapshot.
func TestSnapshotServesOnlyWhileNoClassCanChange(t *testing.T) {
	lookup := func(r *rig, id uint32) {
		if p := r.dbg.call(id, jdwp.CmdVirtualMachineClassesBySignature, sigBody("LA;")); p.ErrorCode() != 0 {
			t.Fatalf("ClassesBySignature: %v", p.ErrorCode())
		}
	}
	start := func() *rig {
		sp := newTestSpeculator(Config{})
		sp.snapAll = true
		r := startRig(t, sp)
		r.vm.setHandler(snapVM(snapEntry{1, 0x10, "LA;", 7}))
		attachStart(t, r)
		r.dbg.call(2, jdwp.CmdVirtualMachineVersion, nil)
		lookup(r, 3)
		lookup(r, 4)
		if n := r.vm.count(jdwp.CmdVirtualMachineClassesBySignature); n != 0 {
			t.Fatalf("VM got %d lookups, want none: the snapshot answers", n)
		}
		return r
	}
	for _, tc := range []struct {
		name string
		end  func(r *rig)
	}{
		{"CLASS_UNLOAD", func(r *rig) {
			r.event(jdwp.SuspendNone, jdwp.Event{Kind: jdwp.EventClassUnload, Signature: []byte("LB;")})
			r.expectEvent()
		}},
		{"resume", func(r *rig) { r.dbg.call(5, jdwp.CmdVirtualMachineResume, nil) }},
		{"CreateString", func(r *rig) { r.dbg.call(5, jdwp.CmdVirtualMachineCreateString, sigBody("x")) }},
	} {
		r := start()
		tc.end(r)
		lookup(r, 6)
		if n := r.vm.count(jdwp.CmdVirtualMachineClassesBySignature); n != 1 {
			t.Errorf("after %s: VM got %d lookups, want the debugger's", tc.name, n)
		}
	}

	sp := newTestSpeculator(Config{})
	sp.snapAll = true
	r := startRig(t, sp)
	r.vm.setHandler(snapVM(snapEntry{1, 0x10, "LA;", 7}))
	r.event(jdwp.SuspendNone, jdwp.Event{Kind: jdwp.EventVMStart, Thread: thread1})
	r.expectEvent()
	r.dbg.call(1, jdwp.CmdIDSizes, nil)
	r.dbg.call(2, jdwp.CmdVirtualMachineVersion, nil)
	lookup(r, 3)
	if n := r.vm.count(jdwp.CmdVirtualMachineAllClassesWithGeneric); n != 0 {
		t.Errorf("a VM not started suspended got %d snapshots", n)
	}
}

// TestSnapshotAtLateVMStart: a VM whose VM_START (suspending all) comes
// after the attach's Version reply still gets its snapshot, taken at the
// event, and the debugger's lookups are answered from it.
func TestSnapshotAtLateVMStart(t *testing.T) {
	sp := newTestSpeculator(Config{})
	sp.snapAll = true
	r := startRig(t, sp)
	r.vm.setHandler(snapVM(snapEntry{1, 0x10, "LA;", 7}))
	r.dbg.call(1, jdwp.CmdIDSizes, nil)
	r.dbg.call(2, jdwp.CmdVirtualMachineVersion, nil)
	if n := r.vm.count(jdwp.CmdVirtualMachineAllClassesWithGeneric); n != 0 {
		t.Fatalf("a snapshot (%d) before the VM said it is suspended", n)
	}
	r.event(jdwp.SuspendAll, jdwp.Event{Kind: jdwp.EventVMStart, Thread: thread1})
	r.expectEvent()
	r.vm.waitFor(jdwp.CmdVirtualMachineAllClassesWithGeneric)
	if p := r.dbg.call(3, jdwp.CmdVirtualMachineClassesBySignature, sigBody("LA;")); p.ErrorCode() != 0 {
		t.Fatalf("ClassesBySignature: %v", p.ErrorCode())
	}
	if n := r.vm.count(jdwp.CmdVirtualMachineClassesBySignature); n != 0 {
		t.Errorf("VM got %d lookups, want none: the snapshot answers", n)
	}
}
