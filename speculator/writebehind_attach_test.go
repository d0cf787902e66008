package speculator

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// attachReqVM is attachVM with libjdwp's request counter (from base) and
// the capabilities caps; a Set of a native method's location fails.
type attachReqVM struct {
	h        func(p jdwp.Packet) (jdwp.ErrorCode, []byte)
	caps     byte
	version  []byte // the Version reply's body, if not attachVM's
	mu       sync.Mutex
	next     int32
	assigned []int32
}

func (v *attachReqVM) handler(p jdwp.Packet) (jdwp.ErrorCode, []byte) {
	switch p.Cmd() {
	case jdwp.CmdEventRequestSet:
		v.mu.Lock()
		defer v.mu.Unlock()
		v.next++
		v.assigned = append(v.assigned, v.next)
		return 0, body(func(w *jdwp.BodyWriter) { w.Int32(v.next) })
	case jdwp.CmdVirtualMachineVersion:
		if v.version != nil {
			return 0, v.version
		}
	case jdwp.CmdVirtualMachineCapabilitiesNew:
		b := make([]byte, 32)
		b[0] = v.caps
		return 0, b
	case jdwp.CmdMethodLineTable:
		r := jdwp.NewBodyReader(p.Body(), sizes8)
		r.Class()
		if r.Method() == 0x72 { // native
			return 0, body(func(w *jdwp.BodyWriter) { w.Int64(-1); w.Int64(-1); w.Int32(0) })
		}
	}
	return v.h(p)
}

// attachSets is JDI's attach: a class-prepare and a class-unload request
// without modifiers, then a suspending class-prepare request per pattern.
func attachSets(r *rig, patterns ...string) []int32 {
	t := r.dbg.t
	t.Helper()
	sets := [][]byte{
		body(func(w *jdwp.BodyWriter) { w.Uint8(uint8(jdwp.EventClassPrepare)); w.Uint8(0); w.Int32(0) }),
		body(func(w *jdwp.BodyWriter) { w.Uint8(uint8(jdwp.EventClassUnload)); w.Uint8(0); w.Int32(0) }),
	}
	for _, pat := range patterns {
		sets = append(sets, body(func(w *jdwp.BodyWriter) {
			w.Uint8(uint8(jdwp.EventClassPrepare))
			w.Uint8(uint8(jdwp.SuspendAll))
			w.Int32(1)
			w.Uint8(uint8(jdwp.ModClassMatch))
			w.String(pat)
		}))
	}
	var ids []int32
	for _, b := range sets {
		p := r.dbg.call(nextID(), jdwp.CmdEventRequestSet, b)
		if p.ErrorCode() != 0 {
			t.Fatalf("Set: %v", p.ErrorCode())
		}
		ids = append(ids, be32(p.Body()))
	}
	return ids
}

// wbAttach attaches to a new VM (request IDs from base, capabilities
// caps), suspended at its start if suspended, and reads the capabilities
// as JDI does.
func wbAttach(t *testing.T, sp *Speculator, base int32, caps byte, suspended bool) (*rig, *attachReqVM) {
	t.Helper()
	return wbAttachTo(t, sp, &attachReqVM{h: attachVM(0x70, 0x71), caps: caps, next: base}, suspended)
}

// wbAttachTo is wbAttach to the VM v.
func wbAttachTo(t *testing.T, sp *Speculator, v *attachReqVM, suspended bool) (*rig, *attachReqVM) {
	t.Helper()
	r := startRig(t, sp)
	r.vm.setHandler(v.handler)
	if suspended {
		attachStart(t, r)
	} else {
		r.dbg.call(nextID(), jdwp.CmdIDSizes, nil)
	}
	r.dbg.call(nextID(), jdwp.CmdVirtualMachineVersion, nil)
	r.dbg.call(nextID(), jdwp.CmdVirtualMachineCapabilitiesNew, nil)
	return r, v
}

// TestWriteBehindAttachFromProfile: the attach's Sets of shapes an earlier
// session on the same kind of VM (same Version and capabilities) saw
// accepted, with Sets numbered back to back, are written behind while the
// VM is suspended at its start, but for the first of each event kind (the
// first CLASS_PREPARE, which also gives the counter's start, never
// assumed, and the CLASS_UNLOAD); other capabilities, or a VM that runs,
// get every Set forwarded.
func TestWriteBehindAttachFromProfile(t *testing.T) {
	learn := func(t *testing.T) *Speculator {
		sp := newTestSpeculator(Config{WriteBehind: true})
		r, _ := wbAttach(t, sp, 40, 1, true)
		attachSets(r, "Foo", "Bar") // the second pattern's is written behind: learned in the session
		if got := sp.Stats().WrittenBehind; got != 1 {
			t.Fatalf("first session: %d written behind, want 1", got)
		}
		r.stop()
		return sp
	}
	for _, tc := range []struct {
		name      string
		caps      byte
		suspended bool
		want      int64
	}{
		{"same kind of VM", 1, true, 2},
		{"other capabilities", 2, true, 1},
		{"VM not suspended", 1, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := learn(t)
			before := sp.Stats()
			r, v := wbAttach(t, sp, 7, tc.caps, tc.suspended)
			ids := attachSets(r, "Foo", "Bar")
			if got := sp.Stats().Since(before).WrittenBehind; got != tc.want {
				t.Errorf("%d written behind, want %d", got, tc.want)
			}
			r.barrier()
			v.mu.Lock()
			defer v.mu.Unlock()
			if !slices.Equal(ids, v.assigned) {
				t.Errorf("the debugger was answered %v, the VM assigned %v", ids, v.assigned)
			}
			if st := sp.Stats(); st.WriteBehindFailures != 0 {
				t.Errorf("failures: %d", st.WriteBehindFailures)
			}
		})
	}
}

// TestWriteBehindBreakpointInLineTableRange: a breakpoint at a code index
// within its method's range from a LineTable reply of this session is
// written behind; outside it, in a native method, without a LineTable, or
// after a class unload it is forwarded.
func TestWriteBehindBreakpointInLineTableRange(t *testing.T) {
	bp := func(method, index uint64) []byte {
		return body(func(w *jdwp.BodyWriter) {
			w.Uint8(uint8(jdwp.EventBreakpoint))
			w.Uint8(uint8(jdwp.SuspendAll))
			w.Int32(1)
			w.Uint8(uint8(jdwp.ModLocationOnly))
			w.Location(jdwp.Location{TypeTag: 1, Class: 0x70, Method: method, Index: index})
		})
	}
	for _, tc := range []struct {
		name          string
		method, index uint64
		lineTable     bool
		unload        bool
		written       bool
	}{
		{"in range", 0x71, 5, true, false, true},
		{"last index", 0x71, 9, true, false, true},
		{"past the end", 0x71, 10, true, false, false},
		{"native method", 0x72, 0, true, false, false},
		{"no line table", 0x71, 5, false, false, false},
		{"class unloaded since", 0x71, 5, true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := newTestSpeculator(Config{WriteBehind: true})
			r, v := wbAttach(t, sp, 40, 1, true)
			attachSets(r, "Foo")
			// The breakpoint's shape, accepted at another location.
			if p := r.dbg.call(nextID(), jdwp.CmdEventRequestSet, bp(0x73, 1)); p.ErrorCode() != 0 {
				t.Fatal(p.ErrorCode())
			}
			if tc.lineTable {
				r.dbg.call(nextID(), jdwp.CmdMethodLineTable, isObsoleteBody(0x70, tc.method))
			}
			if tc.unload {
				r.event(jdwp.SuspendNone, jdwp.Event{Kind: jdwp.EventClassUnload, RequestID: 2, Signature: []byte("LGone;")})
				r.expectEvent()
			}
			before := sp.Stats().WrittenBehind
			p := r.dbg.call(nextID(), jdwp.CmdEventRequestSet, bp(tc.method, tc.index))
			if got := sp.Stats().WrittenBehind != before; got != tc.written || p.ErrorCode() != 0 {
				t.Errorf("written behind: %v, want %v (error %v)", got, tc.written, p.ErrorCode())
			}
			r.barrier()
			v.mu.Lock()
			defer v.mu.Unlock()
			if id := be32(p.Body()); id != v.assigned[len(v.assigned)-1] {
				t.Errorf("answered %d, the VM assigned %d", id, v.assigned[len(v.assigned)-1])
			}
		})
	}
}

// hotSpotVersionBody is a Version reply body naming HotSpot with the
// reference agent, as JDK 17's.
var hotSpotVersionBody = jdwptest.VersionBody("Java Debug Wire Protocol (Reference Implementation) version 17.0\nJVM Debug Interface version 11.0\nJVM version 17.0.15 (OpenJDK 64-Bit Server VM, mixed mode, sharing)",
	"OpenJDK 64-Bit Server VM")

// sendSet sends an EventRequest.Set of kind with policy and mods, and says
// whether it was written behind; it fails the test on an error.
func sendSet(t *testing.T, r *rig, kind jdwp.EventKind, policy jdwp.SuspendPolicy, mods ...jdwp.Modifier) (id int32, written bool) {
	t.Helper()
	before := r.sp.Stats().WrittenBehind
	p := r.dbg.call(nextID(), jdwp.CmdEventRequestSet, setBody(kind, policy, mods...))
	if p.ErrorCode() != 0 {
		t.Fatalf("Set %v: %v", kind, p.ErrorCode())
	}
	return be32(p.Body()), r.sp.Stats().WrittenBehind != before
}

// setBody is an EventRequest.Set's body.
func setBody(kind jdwp.EventKind, policy jdwp.SuspendPolicy, mods ...jdwp.Modifier) []byte {
	return body(func(w *jdwp.BodyWriter) {
		w.Uint8(uint8(kind))
		w.Uint8(uint8(policy))
		w.Int32(int32(len(mods)))
		for _, m := range mods {
			w.Modifier(m)
		}
	})
}

func classMatch(p string) jdwp.Modifier {
	return jdwp.Modifier{Kind: jdwp.ModClassMatch, Pattern: []byte(p)}
}

// TestWriteBehindFirstUnfilteredOfEachKindForwarded: in a second session
// with a learned profile, java-debug's attach (Eclipse JDI's internal
// CLASS_UNLOAD request, then the VM_DEATH request java-debug times to
// measure the link) gets both forwarded, each answered with the VM's own
// reply: at attach, the first unfiltered Set of each event kind goes to
// the VM. A later Set of those kinds is written behind; so is, from the
// first Set with a modifier on (a class pattern), the first of any kind
// (THREAD_START), and, after the first stop, the first of another kind.
// Each check fails without its rule: with every first of a kind
// forwarded at attach, the THREAD_START is; with the first Set with a
// modifier not counted, its CLASS_PREPARE is.
func TestWriteBehindFirstUnfilteredOfEachKindForwarded(t *testing.T) {
	sp := newTestSpeculator(Config{WriteBehind: true})
	attach := func(base int32) []bool {
		r, v := wbAttach(t, sp, base, 1, true)
		defer r.stop()
		var written []bool
		var ids []int32
		for _, s := range []struct {
			kind jdwp.EventKind
			mods []jdwp.Modifier
		}{
			{jdwp.EventClassUnload, nil},
			{jdwp.EventVMDeath, nil},
			{jdwp.EventVMDeath, nil},
			{jdwp.EventClassPrepare, []jdwp.Modifier{classMatch("a.Foo")}},
			{jdwp.EventClassPrepare, []jdwp.Modifier{classMatch("a.Foo$*")}},
			{jdwp.EventThreadStart, nil},
		} {
			id, w := sendSet(t, r, s.kind, jdwp.SuspendNone, s.mods...)
			written, ids = append(written, w), append(ids, id)
		}
		// The first stop: the attach is over.
		r.event(jdwp.SuspendAll, jdwp.Event{Kind: jdwp.EventClassPrepare, RequestID: ids[len(ids)-2], Thread: thread1,
			RefTypeTag: jdwp.TypeTagClass, TypeID: 0x70, Signature: []byte("La/Foo$1;"), Status: 7})
		r.expectEvent()
		id, w := sendSet(t, r, jdwp.EventThreadDeath, jdwp.SuspendNone)
		written, ids = append(written, w), append(ids, id)
		r.barrier()
		v.mu.Lock()
		defer v.mu.Unlock()
		if !slices.Equal(ids, v.assigned) {
			t.Errorf("the debugger was answered %v, the VM assigned %v", ids, v.assigned)
		}
		return written
	}
	// The first session learns the shapes and the numbering.
	attach(40)
	// The second takes them from the profile: only the first unfiltered
	// Set of each kind before the first filtered one goes to the VM.
	if got, want := attach(7), []bool{false, false, true, true, true, true, true}; !slices.Equal(got, want) {
		t.Errorf("written behind %v, want %v", got, want)
	}
	if st := sp.Stats(); st.WriteBehindFailures != 0 {
		t.Errorf("failures: %d", st.WriteBehindFailures)
	}
}

// TestWriteBehindProvableShapes: on HotSpot, a burst of CLASS_PREPARE
// requests with class patterns (a class and its inner classes) is written
// behind from the first, once a CLASS_PREPARE request of the session went
// to the VM (as JDI's own at attach), whether the VM is suspended or runs;
// on another VM the first of the shape waits to be seen accepted, and the
// rest need the VM suspended. Variants the VM may refuse, or that the
// proof does not cover, are forwarded.
func TestWriteBehindProvableShapes(t *testing.T) {
	for _, tc := range []struct {
		name      string
		hotspot   bool
		suspended bool
		want      int // of the burst's 60, written behind
	}{
		{"hotspot suspended", true, true, 60},
		{"hotspot running", true, false, 60},
		{"other VM suspended", false, true, 59},
		{"other VM running", false, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := newTestSpeculator(Config{WriteBehind: true})
			v := &attachReqVM{h: attachVM(0x70, 0x71), caps: 1, next: 11}
			if tc.hotspot {
				v.version = hotSpotVersionBody
			}
			r, _ := wbAttachTo(t, sp, v, tc.suspended)
			attachSets(r) // JDI's: forwarded, the first of their kinds
			written := 0
			for i := 0; i < 30; i++ {
				for _, pat := range []string{fmt.Sprintf("app.C%d", i), fmt.Sprintf("app.C%d$*", i)} {
					if _, w := sendSet(t, r, jdwp.EventClassPrepare, jdwp.SuspendAll, classMatch(pat)); w {
						written++
					}
				}
			}
			if written != tc.want {
				t.Errorf("written behind %d of 60, want %d", written, tc.want)
			}
			if !tc.hotspot {
				return
			}
			for _, c := range []struct {
				name   string
				kind   jdwp.EventKind
				policy jdwp.SuspendPolicy
				mods   []jdwp.Modifier
			}{
				{"suspend policy 3", jdwp.EventClassPrepare, 3, []jdwp.Modifier{classMatch("x")}},
				{"count 0", jdwp.EventClassPrepare, jdwp.SuspendAll, []jdwp.Modifier{{Kind: jdwp.ModCount}, classMatch("x")}},
				{"count -1", jdwp.EventClassPrepare, jdwp.SuspendAll, []jdwp.Modifier{{Kind: jdwp.ModCount, Count: -1}}},
				{"unknown class", jdwp.EventClassPrepare, jdwp.SuspendAll, []jdwp.Modifier{{Kind: jdwp.ModClassOnly, Class: 0x1234}}},
				{"unknown thread", jdwp.EventClassPrepare, jdwp.SuspendAll, []jdwp.Modifier{{Kind: jdwp.ModThreadOnly, Thread: 0x1234}}},
				{"source name", jdwp.EventClassPrepare, jdwp.SuspendAll, []jdwp.Modifier{{Kind: jdwp.ModSourceNameMatch, Pattern: []byte("*.java")}}},
				{"class match on thread start", jdwp.EventThreadStart, jdwp.SuspendAll, []jdwp.Modifier{classMatch("x")}},
				{"breakpoint without a location", jdwp.EventBreakpoint, jdwp.SuspendAll, nil},
				{"breakpoint at an unproven location", jdwp.EventBreakpoint, jdwp.SuspendAll, []jdwp.Modifier{{Kind: jdwp.ModLocationOnly,
					Location: jdwp.Location{TypeTag: 1, Class: 0x70, Method: 0x71, Index: 3}}}},
			} {
				if _, w := sendSet(t, r, c.kind, c.policy, c.mods...); w {
					t.Errorf("%s: written behind", c.name)
				}
			}
			// A breakpoint of a shape never seen, at a location within its
			// method's LineTable range, once a breakpoint went to the VM.
			r.dbg.call(nextID(), jdwp.CmdMethodLineTable, isObsoleteBody(0x70, 0x71))
			if _, w := sendSet(t, r, jdwp.EventBreakpoint, jdwp.SuspendEventThread, jdwp.Modifier{Kind: jdwp.ModCount, Count: 1},
				jdwp.Modifier{Kind: jdwp.ModLocationOnly, Location: jdwp.Location{TypeTag: 1, Class: 0x70, Method: 0x71, Index: 5}}); !w {
				t.Errorf("a breakpoint of a new shape at a proven location: forwarded")
			}
			if st := sp.Stats(); st.WriteBehindFailures != 0 {
				t.Errorf("failures: %d", st.WriteBehindFailures)
			}
		})
	}
}
