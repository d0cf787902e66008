package speculator

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/rs/zerolog"
)

// madeUpVM is a program whose every stop shows new frames, new objects of
// new classes, and the same four threads: nothing a rule keyed by class
// or by object carries from one stop to the next.
type madeUpVM struct {
	mu   sync.Mutex
	stop uint64 // the current stop, from 1
	// fields is how many fields each class declares; shifted moves the
	// classes' field IDs to another range (a changed program).
	fields  int
	shifted bool
	threads []uint64
	// handed are the object IDs the VM handed out (replies), bad what it
	// was asked that it did not hand out or that is not valid for the
	// command.
	handed   map[uint64]bool
	bad      []string
	shapes   map[uint64][2]int // by class: shape
	requests int32             // the Sets it took
}

// hand records object IDs the VM hands out.
func (m *madeUpVM) hand(ids ...uint64) {
	if m.handed == nil {
		m.handed = map[uint64]bool{}
	}
	for _, id := range ids {
		m.handed[id] = true
	}
}

// check records a command naming an object the VM did not hand out.
func (m *madeUpVM) check(c jdwp.Cmd, obj uint64) {
	if !m.handed[obj] {
		m.bad = append(m.bad, fmt.Sprintf("%v of object %#x, never handed out", c, obj))
	}
}

const (
	muClass  = 0x70
	muMethod = 0x71
)

func (m *madeUpVM) frame(i int) uint64 { return 0x1000 + m.stop*16 + uint64(i) }
func (m *madeUpVM) object(j int) uint64 {
	return 0x2000 + m.stop*16 + uint64(j)
}
func (m *madeUpVM) classOf(obj uint64) uint64 { return obj + 0x1000 }

// shape is a class's field count and whether its field IDs are in the
// other range: fixed when the VM first describes it, as a loaded class's
// fields are (a changed program changes the classes loaded after).
func (m *madeUpVM) shape(class uint64) (n int, shifted bool) {
	if m.shapes == nil {
		m.shapes = map[uint64][2]int{}
	}
	sh, ok := m.shapes[class]
	if !ok {
		sh = [2]int{m.fields, 0}
		if m.shifted {
			sh[1] = 1
		}
		m.shapes[class] = sh
	}
	return sh[0], sh[1] == 1
}

func (m *madeUpVM) field(class uint64, i int) uint64 {
	if _, shifted := m.shape(class); shifted {
		return class<<8 + 0x80 + uint64(i)
	}
	return class<<8 + uint64(i)
}

func (m *madeUpVM) handler(p jdwp.Packet) (jdwp.ErrorCode, []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := jdwp.NewBodyReader(p.Body(), sizes8)
	switch p.Cmd() {
	case jdwp.CmdVirtualMachineVersion:
		return 0, versionReply(refAgent)
	case jdwp.CmdEventRequestSet:
		m.requests++
		return 0, body(func(w *jdwp.BodyWriter) { w.Int32(m.requests) })
	case jdwp.CmdVirtualMachineAllThreads:
		m.hand(m.threads...)
		return 0, body(func(w *jdwp.BodyWriter) {
			w.Int32(int32(len(m.threads)))
			for _, t := range m.threads {
				w.ObjectID(t)
			}
		})
	case jdwp.CmdThreadReferenceName:
		t := r.ObjectID()
		m.check(p.Cmd(), t)
		return 0, body(func(w *jdwp.BodyWriter) { w.String(fmt.Sprintf("T%x", t)) })
	case jdwp.CmdThreadReferenceFrameCount:
		return 0, body(func(w *jdwp.BodyWriter) { w.Int32(2) })
	case jdwp.CmdThreadReferenceFrames:
		return 0, body(func(w *jdwp.BodyWriter) {
			w.Int32(2)
			for i := range 2 {
				w.FrameID(m.frame(i))
				w.Location(jdwp.Location{TypeTag: 1, Class: muClass, Method: muMethod + uint64(i), Index: 4})
			}
		})
	case jdwp.CmdMethodVariableTable:
		return 0, body(func(w *jdwp.BodyWriter) {
			w.Int32(0)
			w.Int32(2)
			for j := range 2 {
				w.Int64(0)
				w.String(fmt.Sprintf("v%d", j))
				w.String("Lp/C;")
				w.Int32(100)
				w.Int32(int32(j + 1))
			}
		})
	case jdwp.CmdStackFrameGetValues:
		r.ObjectID()
		if f := r.FrameID(); f != m.frame(0) && f != m.frame(1) {
			m.bad = append(m.bad, fmt.Sprintf("%v of frame %#x, not of stop %d", p.Cmd(), f, m.stop))
			return jdwp.ErrorInvalidFrameID, nil
		}
		m.hand(m.object(0), m.object(1))
		return 0, body(func(w *jdwp.BodyWriter) {
			w.Int32(2)
			for j := range 2 {
				w.Value(jdwp.Value{Tag: jdwp.TagObject, Bits: m.object(j)})
			}
		})
	case jdwp.CmdObjectReferenceReferenceType:
		obj := r.ObjectID()
		m.check(p.Cmd(), obj)
		return 0, body(func(w *jdwp.BodyWriter) { w.Uint8(1); w.ReferenceTypeID(m.classOf(obj)) })
	case jdwp.CmdReferenceTypeFields:
		class := r.ReferenceTypeID()
		n, _ := m.shape(class)
		return 0, body(func(w *jdwp.BodyWriter) {
			w.Int32(int32(n))
			for i := range n {
				w.FieldID(m.field(class, i))
				w.String(fmt.Sprintf("f%d", i))
				w.String("I")
				w.Int32(0)
			}
		})
	case jdwp.CmdObjectReferenceGetValues:
		obj := r.ObjectID()
		m.check(p.Cmd(), obj)
		n := r.Int32()
		var fs []uint64
		for range n {
			f := r.FieldID()
			class := m.classOf(obj)
			n, shifted := m.shape(class)
			i := int(f & 0xff)
			if shifted {
				i -= 0x80
			}
			if f>>8 != class || i < 0 || i >= n || f != m.field(class, i) {
				m.bad = append(m.bad, fmt.Sprintf("field %#x asked of object %#x of class %#x", f, obj, m.classOf(obj)))
				return jdwp.ErrorInvalidFieldID, nil
			}
			fs = append(fs, f)
		}
		return 0, body(func(w *jdwp.BodyWriter) {
			w.Int32(n)
			for _, f := range fs {
				w.Value(jdwp.Value{Tag: jdwp.TagInt, Bits: f})
			}
		})
	}
	return 0, nil
}

// askTopLocals asks, through call, thread1's top two frames, the top
// frame's variable table and its two object locals (slots 1 and 2), and
// returns the locals' objects: how madeUpClient begins a stop.
func askTopLocals(call func(jdwp.Cmd, []byte) jdwp.BodyReader) []uint64 {
	fr := call(jdwp.CmdThreadReferenceFrames, body(func(w *jdwp.BodyWriter) { w.ObjectID(thread1); w.Int32(0); w.Int32(2) }))
	fr.Int32()
	top, loc := fr.FrameID(), fr.Location()
	call(jdwp.CmdMethodVariableTable, body(func(w *jdwp.BodyWriter) { w.ReferenceTypeID(loc.Class); w.MethodID(loc.Method) }))
	vals := call(jdwp.CmdStackFrameGetValues, body(func(w *jdwp.BodyWriter) {
		w.ObjectID(thread1)
		w.FrameID(top)
		w.Int32(2)
		for j := range 2 {
			w.Int32(int32(j + 1))
			w.Uint8(uint8(jdwp.TagObject))
		}
	}))
	var objs []uint64
	for n := vals.Int32(); n > 0; n-- {
		objs = append(objs, uint64(vals.Value().ObjectID()))
	}
	return objs
}

// madeUpClient is a debugger no rule was written for, at each stop: the
// top frames, the top frame's two locals, then, from the last local to
// the first, its type, the type's fields and the value of its 2nd field;
// then the threads and their names, last thread first.
func madeUpClient(t *testing.T, r *rig, m *madeUpVM, id *uint32) {
	t.Helper()
	call := func(c jdwp.Cmd, b []byte) jdwp.BodyReader {
		t.Helper()
		*id++
		p := r.dbg.call(*id, c, b)
		if p.ErrorCode() != 0 {
			t.Fatalf("%v: error %d", c, p.ErrorCode())
		}
		return *jdwp.NewBodyReader(p.Body(), sizes8)
	}
	objs := askTopLocals(call)
	for _, o := range slices.Backward(objs) {
		rt := call(jdwp.CmdObjectReferenceReferenceType, body(func(w *jdwp.BodyWriter) { w.ObjectID(o) }))
		rt.Uint8()
		class := rt.ReferenceTypeID()
		fs := call(jdwp.CmdReferenceTypeFields, body(func(w *jdwp.BodyWriter) { w.ReferenceTypeID(class) }))
		var second uint64
		for i, n := 0, int(fs.Int32()); i < n; i++ {
			f := fs.FieldID()
			fs.StringBytes()
			fs.StringBytes()
			fs.Int32()
			if i == 1 {
				second = f
			}
		}
		if second == 0 {
			continue // a class with one field
		}
		call(jdwp.CmdObjectReferenceGetValues, body(func(w *jdwp.BodyWriter) { w.ObjectID(o); w.Int32(1); w.FieldID(second) }))
	}
	at := call(jdwp.CmdVirtualMachineAllThreads, nil)
	var threads []uint64
	for n := at.Int32(); n > 0; n-- {
		threads = append(threads, at.ObjectID())
	}
	for _, th := range slices.Backward(threads) {
		call(jdwp.CmdThreadReferenceName, body(func(w *jdwp.BodyWriter) { w.ObjectID(th) }))
	}
}

// stopAndAsk brings the made-up program to its next stop and has the
// client read it; it returns the stop's counters.
func stopAndAsk(t *testing.T, r *rig, m *madeUpVM, id *uint32) Stats {
	t.Helper()
	return stopAndAskKind(t, r, m, id, jdwp.EventBreakpoint, madeUpClient)
}

// TestLearnedMadeUpClient: a client whose pattern no rule was written for
// (the 2nd field of each object local, of classes new at every stop; the
// names of all threads, in its own order) is answered from speculation
// for at least 90% of its reads from the second stop, with little waste.
func TestLearnedMadeUpClient(t *testing.T) {
	m := &madeUpVM{fields: 3, threads: []uint64{thread1, 0x52, 0x53, 0x54}}
	r := newRigWith(t, Config{}, m.handler)
	id := uint32(100)
	stopAndAsk(t, r, m, &id)
	var total Stats
	for range 4 {
		st := stopAndAsk(t, r, m, &id)
		t.Logf("stop: hits %d belays %d misses %d; speculation sent %d used %d wasted %d",
			st.Hits, st.Belays, st.Misses, st.SpecSent, st.SpecUsed, st.SpecWasted)
		total.Hits += st.Hits
		total.Belays += st.Belays
		total.Misses += st.Misses
		total.SpecSent += st.SpecSent
		total.SpecWasted += st.SpecWasted
	}
	served := total.Hits + total.Belays
	if ratio := float64(served) / float64(served+total.Misses); ratio < 0.9 {
		t.Errorf("from the second stop %d of %d reads served from speculation (%.0f%%), want >= 90%%",
			served, served+total.Misses, 100*ratio)
	}
	if total.SpecSent == 0 || float64(total.SpecWasted)/float64(total.SpecSent) >= 0.2 {
		t.Errorf("speculation wasted %d of %d, want < 20%%", total.SpecWasted, total.SpecSent)
	}
}

// TestLearnedChangedProgram: when the program changes under the learned
// templates (the classes loaded next with one field where the client read
// the 2nd; then with field IDs in another range; threads ending and
// starting), the replay
// never asks the VM an ID it did not hand out in this connection, a frame
// of another stop, or a field outside the object's own class chain.
func TestLearnedChangedProgram(t *testing.T) {
	m := &madeUpVM{fields: 3, threads: []uint64{thread1, 0x52, 0x53, 0x54}}
	r := newRigWith(t, Config{}, m.handler)
	id := uint32(100)
	stopAndAsk(t, r, m, &id)
	stopAndAsk(t, r, m, &id)
	m.mu.Lock()
	m.fields = 1
	m.threads = []uint64{thread1, 0x52, 0x55}
	m.mu.Unlock()
	stopAndAsk(t, r, m, &id)
	m.mu.Lock()
	m.fields, m.shifted = 3, true
	m.threads = []uint64{thread1, 0x56, 0x52}
	m.mu.Unlock()
	stopAndAsk(t, r, m, &id)
	st := stopAndAsk(t, r, m, &id)
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, b := range m.bad {
		t.Error(b)
	}
	if st.Misses > 1 {
		t.Errorf("the changed program's second stop missed %d reads, want at most 1", st.Misses)
	}
}

// learnFrom has a split mode's far end take one stop of the made-up
// client (a session without a VM, so in ModeNever: it learns as the far
// end's does, and sends nothing): the replies its speculation stored
// (offered here), then what the near end's usage reports and the misses tell it
// the debugger asked, in order; the next stop settles what it learned.
// It returns the learned templates, described.
func learnFrom(t *testing.T, order func([]jdwp.Packet) []jdwp.Packet) []string {
	t.Helper()
	rs, s, ic := quietSession()
	event := func() { stopAt(rs, ic, jdwp.SuspendAll) }
	m := &madeUpVM{stop: 1, fields: 3, threads: []uint64{thread1, 0x52, 0x53, 0x54}}
	m.hand(m.object(0), m.object(1))
	event()
	// The client's commands at the stop, in its order (madeUpClient).
	var asked []jdwp.Packet
	ask := func(c jdwp.Cmd, b []byte) jdwp.BodyReader {
		p := jdwp.AppendCommand(nil, uint32(len(asked)+1), c, b)
		asked = append(asked, p)
		code, reply := m.handler(p)
		if code != 0 {
			t.Fatalf("%v: error %d", c, code)
		}
		s.Offer(c, b, jdwp.AppendReply(nil, 1, 0, reply), MarkNow(), sizes8)
		return *jdwp.NewBodyReader(reply, sizes8)
	}
	for _, o := range askTopLocals(ask) {
		rt := ask(jdwp.CmdObjectReferenceReferenceType, body(func(w *jdwp.BodyWriter) { w.ObjectID(o) }))
		rt.Uint8()
		class := rt.ReferenceTypeID()
		ask(jdwp.CmdReferenceTypeFields, body(func(w *jdwp.BodyWriter) { w.ReferenceTypeID(class) }))
		ask(jdwp.CmdObjectReferenceGetValues, body(func(w *jdwp.BodyWriter) { w.ObjectID(o); w.Int32(1); w.FieldID(m.field(class, 1)) }))
	}
	ask(jdwp.CmdVirtualMachineAllThreads, nil)
	for _, th := range m.threads {
		ask(jdwp.CmdThreadReferenceName, body(func(w *jdwp.BodyWriter) { w.ObjectID(th) }))
	}
	for _, p := range order(asked) {
		s.Asked(nil, p.Cmd(), p.Body(), sizes8)
	}
	ic.FromDebugger(rs, &relay.Frame{Kind: relay.KindCommand, ID: 999,
		Packet: jdwp.AppendCommand(nil, 999, jdwp.CmdVirtualMachineResume, nil)})
	event()
	ss := s.ss
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var out []string
	for _, g := range ss.lrn.graphs {
		for _, n := range g.nodes {
			if n.seen == 0 {
				continue
			}
			d := n.cmd.String()
			if n.from != nil {
				d += " from " + n.from.cmd.String()
			}
			for _, p := range n.params {
				d += fmt.Sprintf(" [src %d path %d idx %b all %v tags %b raw %x]", p.src, p.path, p.idx, p.all, p.tags, p.raw)
			}
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out
}

// TestLearnedFarEndOrder: a split mode's far end is told the debugger's
// commands out of order (the misses as they come, the near end's cache
// hits in a usage report before the resume); it learns the same templates
// as a session that saw them in the debugger's order, and learns them:
// the templates its next stop's gathering replays.
func TestLearnedFarEndOrder(t *testing.T) {
	inOrder := learnFrom(t, func(ps []jdwp.Packet) []jdwp.Packet { return ps })
	// The near end answered the thread names, the locals and the types
	// from the far end's bundle (reported last); the rest were misses.
	batched := learnFrom(t, func(ps []jdwp.Packet) []jdwp.Packet {
		var misses, hits []jdwp.Packet
		for _, p := range ps {
			switch p.Cmd() {
			case jdwp.CmdThreadReferenceName, jdwp.CmdStackFrameGetValues, jdwp.CmdObjectReferenceReferenceType:
				hits = append(hits, p)
			default:
				misses = append(misses, p)
			}
		}
		slices.Reverse(hits)
		return append(misses, hits...)
	})
	if !slices.Equal(inOrder, batched) {
		t.Errorf("told in the debugger's order, the far end learned\n%s\ntold misses first and hits last\n%s",
			strings.Join(inOrder, "\n"), strings.Join(batched, "\n"))
	}
	want := []string{"ObjectReference.GetValues from StackFrame.GetValues", "ThreadReference.Name from VirtualMachine.AllThreads",
		"StackFrame.GetValues from ThreadReference.Frames", "ReferenceType.Fields from ObjectReference.ReferenceType"}
	for _, w := range want {
		if !slices.ContainsFunc(inOrder, func(s string) bool { return strings.HasPrefix(s, w) }) {
			t.Errorf("no template %q learned in\n%s", w, strings.Join(inOrder, "\n"))
		}
	}
}

// TestLearnedProfileNextSession: the templates a session learned that
// hold no ID go to the profile, and the next session of the same debugger
// replays them from its first stop, with the IDs its own VM hands out.
func TestLearnedProfileNextSession(t *testing.T) {
	sp := newTestSpeculator(Config{})
	id := uint32(100)
	learnMadeUp(t, sp, &id)
	r, m := attachMadeUp(t, sp)
	st := stopAndAsk(t, r, m, &id)
	served := st.Hits + st.Belays
	t.Logf("the next session's first stop: hits %d belays %d misses %d", st.Hits, st.Belays, st.Misses)
	// (Without the learned templates, the rules written for IDEs miss
	// the 2nd field of each local and the types' fields.)
	if st.Misses > 0 {
		t.Errorf("the next session's first stop served %d reads from speculation and missed %d, want no miss", served, st.Misses)
	}
}

// TestProfileOfAnotherJDI: a profile's stop templates are taken by a
// session whose debugger set up the same requests as it attached (its
// JDI) as the one that left it, not by one whose JDI set up others,
// though both began with the same command (every JDI's first is
// IDSizes). Fails with the templates taken whatever the attach
// (learnedRules.take).
func TestProfileOfAnotherJDI(t *testing.T) {
	openJDK := []jdwp.EventKind{jdwp.EventClassPrepare, jdwp.EventClassUnload}
	eclipse := []jdwp.EventKind{jdwp.EventClassUnload, jdwp.EventVMDeath}
	sp := newTestSpeculator(Config{})
	id := uint32(100)
	learnMadeUp(t, sp, &id, openJDK...)
	firstStop := func(sets []jdwp.EventKind) Stats {
		r, m := attachMadeUp(t, sp, sets...)
		defer r.stop()
		return stopAndAsk(t, r, m, &id)
	}
	if st := firstStop(openJDK); st.Misses > 0 {
		t.Errorf("the same JDI's next session missed %d reads at its first stop, want none", st.Misses)
	}
	// (The rules written for IDEs miss the 2nd field of each local and the
	// types' fields, which only the templates read ahead.)
	if st := firstStop(eclipse); st.Misses == 0 {
		t.Error("another JDI's session missed nothing at its first stop: it took the templates of a debugger that attached otherwise")
	}
}

// attachMadeUp attaches a session of sp to a new made-up program, its
// JDI setting up requests of the kinds sets (none if not given) after the
// ID sizes.
func attachMadeUp(t *testing.T, sp *Speculator, sets ...jdwp.EventKind) (*rig, *madeUpVM) {
	t.Helper()
	m := &madeUpVM{fields: 3, threads: []uint64{thread1, 0x52, 0x53, 0x54}}
	r := startRigWith(t, sp, m.handler)
	r.dbg.call(1, jdwp.CmdIDSizes, nil)
	for _, k := range sets {
		r.dbg.call(nextID(), jdwp.CmdEventRequestSet, body(func(w *jdwp.BodyWriter) { w.Uint8(uint8(k)); w.Uint8(0); w.Int32(0) }))
	}
	for i := uint32(2); i < 5; i++ {
		r.dbg.call(i, jdwp.CmdVirtualMachineVersion, nil)
	}
	return r, m
}

// learnMadeUp has the made-up client read three stops of a session of
// sp, which leaves its profile; sets as attachMadeUp's.
func learnMadeUp(t *testing.T, sp *Speculator, id *uint32, sets ...jdwp.EventKind) {
	t.Helper()
	r, m := attachMadeUp(t, sp, sets...)
	for range 3 {
		stopAndAsk(t, r, m, id)
	}
	r.stop()
}

// stopAndAskKind is stopAndAsk with a stop of kind k and the given client.
func stopAndAskKind(t *testing.T, r *rig, m *madeUpVM, id *uint32, k jdwp.EventKind,
	client func(*testing.T, *rig, *madeUpVM, *uint32)) Stats {
	t.Helper()
	before := r.sp.Stats()
	m.mu.Lock()
	m.stop++
	m.mu.Unlock()
	e := bpEvent(thread1)
	e.Kind = k
	r.event(jdwp.SuspendAll, e)
	r.expectEvent()
	client(t, r, m, id)
	*id++
	r.dbg.call(*id, jdwp.CmdVirtualMachineResume, nil)
	return r.sp.Stats().Since(before)
}

// TestProfileListsWaitForTheDebugger: a session that began from another
// session's profile replays that profile's per-element templates (the
// name of every thread) on a list only once its debugger asks for that
// list: a debugger whose attach is the same as the profile's (jdb after
// IntelliJ) may read no list, and each replay is a command per element.
// Fails with the replay not held (learnedRules.feed) or not released when
// the debugger asks (learnedRules.asked).
func TestProfileListsWaitForTheDebugger(t *testing.T) {
	sp := newTestSpeculator(Config{})
	id := uint32(100)
	learnMadeUp(t, sp, &id)
	r, m := attachMadeUp(t, sp)
	namesOfOthers := func() int {
		return r.vm.count(jdwp.CmdThreadReferenceName) - r.vm.askedOf(jdwp.CmdThreadReferenceName, thread1)
	}
	madeUpStop(r, m)
	// The debugger reads first what the profile's did (its top frames):
	// the profile's replay asks the thread list then; its reply is
	// handled before the barrier's.
	r.dbg.call(nextID(), jdwp.CmdThreadReferenceFrames, body(func(w *jdwp.BodyWriter) { w.ObjectID(thread1); w.Int32(0); w.Int32(2) }))
	r.vm.waitFor(jdwp.CmdVirtualMachineAllThreads)
	r.barrier()
	r.barrier()
	if n := namesOfOthers(); n != 0 {
		t.Fatalf("the VM was asked %d names of other threads before the debugger asked for the thread list, want none", n)
	}
	// The debugger asks for the list: the names follow at once.
	r.dbg.call(nextID(), jdwp.CmdVirtualMachineAllThreads, nil)
	r.vm.waitAsked("the VM to be asked the name of a listed thread", jdwp.CmdThreadReferenceName,
		body(func(w *jdwp.BodyWriter) { w.ObjectID(0x54) }))
	r.dbg.quiet()
}

// TestProfileTemplateRestsWhenUnused: a template of the stopped thread
// from an earlier session's profile rests after one stop at which its
// replay went unused (jdb after an IDE with the same attach reads none of
// the IDE's frames); one the session's debugger sent rests after two.
// Fails with the profile's templates given two stops (learner.importFrom).
func TestProfileTemplateRestsWhenUnused(t *testing.T) {
	l := newLearner()
	l.importFrom(&profile{Templates: []relTmpl{{Set: jdwp.CmdThreadReferenceFrames.Set, Cmd: jdwp.CmdThreadReferenceFrames.Cmd,
		Rel: true, Ints: []int32{0, 20}}}}, sizes8)
	if len(l.templates) != 1 {
		t.Fatalf("%d templates imported, want 1", len(l.templates))
	}
	imported := l.templates[0]
	own := &template{rel: true}
	replayUnused(&l, imported, own)
	if !imported.removed || own.removed {
		t.Fatalf("after one unused stop: the profile's template removed %v, the session's %v; want true, false", imported.removed, own.removed)
	}
	replayUnused(&l, imported, own)
	if !own.removed {
		t.Error("the session's template was not removed after two unused stops")
	}
}

// TestStopSignatureFromTheProfile: until the debugger asks a type's
// signature at a stop, the rules ask the signature command the profile's
// stop templates ask (Eclipse's JDI: the plain one, though it asked the
// generic one at attach); from then on, the one it asked last. Fails with
// the attach's command taken (learner.signatureCmd) or the templates' not
// noted (learnedRules.take).
func TestStopSignatureFromTheProfile(t *testing.T) {
	plain, generic := jdwp.CmdReferenceTypeSignature, jdwp.CmdReferenceTypeSignatureWithGeneric
	c := &core{learn: newLearner()}
	lr := newLearnedRules(c)
	lr.offer(&profile{Learned: []learnedTmpl{{Kind: jdwp.EventBreakpoint, Set: plain.Set, Cmd: plain.Cmd, From: -1,
		Params: []learnedParam{{Src: srcClass}}}}})
	c.learn.asked[generic] = 1 // at the attach
	lr.take()
	if got, _ := c.learn.signatureCmd(); got != plain {
		t.Errorf("at the first stop the rules ask %v, want %v (the profile's stop templates')", got, plain)
	}
	c.learn.asked[generic] = 3 // at the second stop
	if got, _ := c.learn.signatureCmd(); got != generic {
		t.Errorf("once the debugger asked %v at a stop the rules ask %v", generic, got)
	}
}

// TestWatchedVariableReadAhead: a client that, besides its Variables view
// (the top frame's two locals), reads one of them alone at each stop, as
// a watch expression does, gets the watch's read answered from
// speculation from the second stop (slotLists keeps both lists a stop
// asked); a client that asks one list a frame keeps one, so no other list
// is read ahead for it. Fails with one list kept per method (the later
// overwriting the earlier: one of the two reads misses).
func TestWatchedVariableReadAhead(t *testing.T) {
	var watchMissed int64
	watch := func(t *testing.T, r *rig, m *madeUpVM, id *uint32) {
		t.Helper()
		madeUpClient(t, r, m, id)
		*id++
		fr := r.dbg.call(*id, jdwp.CmdThreadReferenceFrames, body(func(w *jdwp.BodyWriter) { w.ObjectID(thread1); w.Int32(0); w.Int32(2) }))
		br := jdwp.NewBodyReader(fr.Body(), sizes8)
		br.Int32()
		top := br.FrameID()
		before := r.sp.Stats().Misses
		*id++
		p := r.dbg.call(*id, jdwp.CmdStackFrameGetValues, body(func(w *jdwp.BodyWriter) {
			w.ObjectID(thread1)
			w.FrameID(top)
			w.Int32(1)
			w.Int32(2)
			w.Uint8(uint8(jdwp.TagObject))
		}))
		if p.ErrorCode() != 0 {
			t.Fatalf("the watch's GetValues: error %d", p.ErrorCode())
		}
		watchMissed += r.sp.Stats().Misses - before
	}
	// run has client read four stops, and returns how many GetValues of a
	// frame the VM got at each of the last three.
	run := func(client func(*testing.T, *rig, *madeUpVM, *uint32)) []int {
		m := &madeUpVM{fields: 3, threads: []uint64{thread1, 0x52}}
		r := newRigWith(t, Config{}, m.handler)
		id := uint32(100)
		stopAndAskKind(t, r, m, &id, jdwp.EventBreakpoint, client)
		watchMissed = 0
		var perStop []int
		for range 3 {
			before := r.vm.count(jdwp.CmdStackFrameGetValues)
			stopAndAskKind(t, r, m, &id, jdwp.EventBreakpoint, client)
			perStop = append(perStop, r.vm.count(jdwp.CmdStackFrameGetValues)-before)
		}
		if len(m.bad) > 0 {
			t.Errorf("the VM was asked: %v", m.bad)
		}
		return perStop
	}
	if got := run(madeUpClient); !slices.Equal(got, []int{1, 1, 1}) {
		t.Errorf("frame reads the VM got at each stop, the Variables view alone: %v, want one a stop", got)
	}
	got := run(watch)
	if watchMissed != 0 {
		t.Errorf("the watch's read missed at %d of three stops", watchMissed)
	}
	if !slices.Equal(got, []int{2, 2, 2}) {
		t.Errorf("frame reads the VM got at each stop, with a watch: %v, want two a stop", got)
	}
}

// TestReadsAfterAnInvokeAreNoTemplates: a read the debugger makes only
// after an invoke at each stop (Eclipse's JDI reads the thread's suspend
// count again once a watch's toString() returned) is not replayed at the
// next stop's event: that stop's invoke would void the reply before the
// debugger asked. Fails with such reads kept as templates (the VM then
// gets the replay and the debugger's own command at every stop).
func TestReadsAfterAnInvokeAreNoTemplates(t *testing.T) {
	client := func(t *testing.T, r *rig, m *madeUpVM, id *uint32) {
		t.Helper()
		madeUpClient(t, r, m, id)
		*id++
		inv := r.dbg.call(*id, jdwp.CmdObjectReferenceInvokeMethod, body(func(w *jdwp.BodyWriter) {
			w.ObjectID(m.object(0))
			w.ObjectID(thread1)
			w.ReferenceTypeID(muClass)
			w.MethodID(muMethod)
			w.Int32(0) // no arguments
			w.Int32(0) // options: every thread runs
		}))
		if inv.ErrorCode() != 0 {
			t.Fatalf("InvokeMethod: error %d", inv.ErrorCode())
		}
		*id++
		r.dbg.call(*id, jdwp.CmdThreadReferenceSuspendCount, threadBody(thread1))
	}
	m := &madeUpVM{fields: 3, threads: []uint64{thread1, 0x52}}
	r := newRigWith(t, Config{}, m.handler)
	id := uint32(100)
	stopAndAskKind(t, r, m, &id, jdwp.EventBreakpoint, client)
	var perStop []int
	for range 3 {
		before := r.vm.count(jdwp.CmdThreadReferenceSuspendCount)
		stopAndAskKind(t, r, m, &id, jdwp.EventBreakpoint, client)
		perStop = append(perStop, r.vm.count(jdwp.CmdThreadReferenceSuspendCount)-before)
	}
	if !slices.Equal(perStop, []int{1, 1, 1}) {
		t.Errorf("suspend counts the VM got at stops 2 to 4: %v, want the debugger's own one a stop", perStop)
	}
	if len(m.bad) > 0 {
		t.Errorf("the VM was asked: %v", m.bad)
	}
}

// TestReportedReadsAfterAnInvokeStayTemplates: at a far end, a read the
// near end reports it served (Session.Asked) is learned as a template even
// when the report comes after the debugger's invoke passed: the near end
// served it from the stop's pushed replies, which the invoke voided there,
// so it was read before. A read sent to this end after the invoke is not
// (TestReadsAfterAnInvokeAreNoTemplates). Fails with reported reads taken
// as read after the invoke.
func TestReportedReadsAfterAnInvokeStayTemplates(t *testing.T) {
	rs, s, ic := quietSession()
	stopAt(rs, ic, jdwp.SuspendAll)
	invoke := body(func(w *jdwp.BodyWriter) {
		w.ObjectID(0x55)
		w.ObjectID(thread1)
		w.ReferenceTypeID(muClass)
		w.MethodID(muMethod)
		w.Int32(0)
		w.Int32(0)
	})
	ic.FromDebugger(rs, &relay.Frame{Kind: relay.KindCommand, ID: 7,
		Packet: jdwp.AppendCommand(nil, 7, jdwp.CmdObjectReferenceInvokeMethod, invoke)})
	s.Asked(nil, jdwp.CmdThreadReferenceSuspendCount, threadBody(thread1), sizes8)
	ic.FromDebugger(rs, &relay.Frame{Kind: relay.KindCommand, ID: 8,
		Packet: jdwp.AppendCommand(nil, 8, jdwp.CmdThreadReferenceStatus, threadBody(thread1))})
	ss := s.ss
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var kept []jdwp.Cmd
	for k := range ss.learn.byKey {
		kept = append(kept, k.Cmd())
	}
	if !slices.Contains(kept, jdwp.CmdThreadReferenceSuspendCount) {
		t.Errorf("the reported read is no template (templates: %v)", kept)
	}
	if slices.Contains(kept, jdwp.CmdThreadReferenceStatus) {
		t.Errorf("a read sent here after the invoke is a template (templates: %v)", kept)
	}
}

// TestLearnedArrayReadFitsTheArray: a learned ArrayReference.GetValues
// replayed on another array (the same path at a later stop, or in a
// profile learned on another run) reads what the debugger reads of that
// array: a read from the first element shorter than a page read a whole
// array, so it reads the whole of this one (up to a page), and none while
// its length is unknown; a read past the first page keeps its range,
// clipped to the array. Fails with the learned length replayed as it was
// (an array of 10 read as 4 elements: wasted, and the debugger's read
// missed).
func TestLearnedArrayReadFitsTheArray(t *testing.T) {
	_, s, _ := quietSession()
	ss := s.ss
	ss.cache.pause(false)
	const known, long, unknown = 0x1b9, 0x1c0, 0x1ba
	for arr, n := range map[uint64]int32{known: 10, long: 500} {
		cmd := jdwp.AppendCommand(nil, 7, jdwp.CmdArrayReferenceLength, threadBody(arr))
		k, info, ok := keyOf(cmd, sizes8)
		if !ok {
			t.Fatal("not keyable")
		}
		reply := jdwp.AppendReply(nil, 7, 0, body(func(w *jdwp.BodyWriter) { w.Int32(n) }))
		ss.cache.store(&k, info, k.Subject(info, sizes8), ss.facts.gen, 0, reply, nil, sizes8)
	}
	for _, c := range []struct {
		arr         uint64
		first, n    int32
		want        int32 // elements read; -1: none
		description string
	}{
		{known, 0, 4, 10, "a whole array of 4, replayed on one of 10"},
		{known, 0, 8, 10, "a whole array of 8, replayed on one of 10"},
		{known, 0, 10, 10, "the same length"},
		{long, 0, 4, arrPage, "a whole array of 4, replayed on one of 500: its first page"},
		{long, 0, arrPage, arrPage, "a page"},
		{long, 400, arrPage, arrPage, "a later page"},
		{long, 450, arrPage, 50, "the last page, clipped"},
		{known, 100, arrPage, -1, "a page past the array's end"},
		{unknown, 0, 4, -1, "a whole array whose length is not known"},
		{unknown, 100, arrPage, arrPage, "a later page of an array whose length is not known"},
	} {
		params := body(func(w *jdwp.BodyWriter) { w.ObjectID(c.arr); w.Int32(c.first); w.Int32(c.n) })
		got, ok := ss.lrn.cutToLength(params, sizes8)
		switch {
		case c.want < 0 && ok:
			t.Errorf("%s: reads %x, want none", c.description, got)
		case c.want >= 0 && !ok:
			t.Errorf("%s: reads none, want %d elements", c.description, c.want)
		case ok:
			r := jdwp.NewBodyReader(got, sizes8)
			arr, first, n := r.ObjectID(), r.Int32(), r.Int32()
			if arr != c.arr || first != c.first || n != c.want {
				t.Errorf("%s: reads %#x from %d, %d elements; want %#x from %d, %d", c.description, arr, first, n, c.arr, c.first, c.want)
			}
		}
	}
}

// TestVisibleSlotsAtANewIndex: a debugger that reads, of a frame, every
// variable visible at its location (in any order: Eclipse's JDI lists them
// in its own) has a frame at a code index it never read read by the
// variables visible there, from the method's variable table: a step into
// a new variable's scope reads it too. A debugger that reads other lists
// has the method's last one. Fails with the method's last list replayed
// for a debugger that reads what is visible (the step that brings a new
// local into scope: its frame's read missed, and each level under it).
func TestVisibleSlotsAtANewIndex(t *testing.T) {
	_, s, _ := quietSession()
	ss := s.ss
	at := func(index uint64) jdwp.Location {
		return jdwp.Location{TypeTag: jdwp.TypeTagClass, Class: 0x70, Method: 0x71, Index: index}
	}
	ss.facts.classes.vars[methodOf(at(0))] = []variable{
		{start: 0, length: 40, slot: 0, tag: jdwp.TagObject, this: true},
		{start: 0, length: 40, slot: 1, tag: jdwp.TagInt},
		{start: 10, length: 30, slot: 2, tag: jdwp.TagObject}, // in scope from index 10
	}
	slots := func(pairs ...int32) []byte {
		return body(func(w *jdwp.BodyWriter) {
			w.Int32(int32(len(pairs) / 2))
			for i := 0; i+1 < len(pairs); i += 2 {
				w.Int32(pairs[i])
				w.Uint8(uint8(pairs[i+1]))
			}
		})
	}
	asked := slots(1, int32(jdwp.TagInt)) // what the debugger read at index 4
	ss.learn.slotsOf(methodOf(at(4))).add(1, asked)
	// The learner tells a debugger that reads what is visible, in its own
	// order, from one that does not.
	for _, c := range []struct {
		read []byte
		want int8
	}{
		{slots(2, int32(jdwp.TagObject), 1, int32(jdwp.TagInt)), 1},
		{slots(2, int32(jdwp.TagObject)), -1},
	} {
		ss.learn.ep.active = true
		ss.learn.ep.frames = map[jdwp.FrameID]frameInfo{0xF1: {thread: thread1, loc: at(20)}}
		key := body(func(w *jdwp.BodyWriter) { w.ObjectID(thread1); w.FrameID(0xF1) })
		var k keyable.Key
		info, ok := keyable.Fill(&k, jdwp.CmdStackFrameGetValues, append(key, c.read...), sizes8)
		if !ok {
			t.Fatal("not keyable")
		}
		ss.learn.learnCommand(&k, info, k.Subject(info, sizes8), sizes8, nil, &ss.facts.classes, false)
		if ss.learn.visibleSlots != c.want {
			t.Errorf("read %x at index 20: reads the visible variables %d, want %d", c.read, ss.learn.visibleSlots, c.want)
		}
	}
	ss.learn.slotsOf(methodOf(at(4))).add(2, asked) // the method's last list again
	for _, c := range []struct {
		visible int8
		want    []byte
	}{
		{1, slots(1, int32(jdwp.TagInt), 2, int32(jdwp.TagObject))},
		{-1, asked},
		{0, asked},
	} {
		ss.learn.visibleSlots = c.visible
		got, ok := ss.frameSlots(at(12))
		if !ok || len(got) == 0 || !bytes.Equal(got[0], c.want) {
			t.Errorf("a debugger reading the visible variables %d: at a new index read %x, want %x", c.visible, got, c.want)
		}
	}
}

// TestEveryElementOfATemplatesTags: a template that reads the objects of a
// value list by their tags replays every element only if the debugger
// asked every element with one of the tags it asked, whatever the number
// of tags (three here: objects, a string, an array), and elements of other
// tags (a thread) do not count.
func TestEveryElementOfATemplatesTags(t *testing.T) {
	rs := &relay.Session{}
	rs.SetIDSizes(sizes8)
	ss := newSession(New(Config{}, zerolog.Nop(), nil), rs)
	ss.learn.beginEpisode(thread1, jdwp.Location{TypeTag: 1, Class: 0x70, Method: 0x71})
	lr := &ss.lrn
	if lr.begin() == nil {
		t.Fatal("no stop")
	}
	var k keyable.Key
	if _, ok := keyable.Fill(&k, jdwp.CmdObjectReferenceGetValues, body(func(w *jdwp.BodyWriter) {
		w.ObjectID(0x2000)
		w.Int32(1)
		w.FieldID(0x90)
	}), sizes8); !ok {
		t.Fatal("not keyable")
	}
	values := body(func(w *jdwp.BodyWriter) {
		w.Int32(5)
		for i, tag := range []jdwp.Tag{jdwp.TagObject, jdwp.TagObject, jdwp.TagString, jdwp.TagArray, jdwp.TagThread} {
			w.Value(jdwp.Value{Tag: tag, Bits: 0x3000 + uint64(i)})
		}
	})
	tags := tagBit(jdwp.TagObject) | tagBit(jdwp.TagString) | tagBit(jdwp.TagArray)
	for _, c := range []struct {
		asked uint64
		all   bool
	}{
		{0b01111, true},  // every object, the string and the array; not the thread
		{0b00111, false}, // the array not asked
		{0b01011, false}, // the string not asked
	} {
		n := &lnode{cmd: jdwp.CmdObjectReferenceGetValues, params: []lparam{{src: srcReply, path: pValue}}, tags: tags}
		lr.index(&k, n, values, sizes8, true)
		n.asked = map[keyable.Key]uint64{k: c.asked}
		lr.settleIndices(n)
		if p := n.params[0]; p.all != c.all || p.idx != c.asked {
			t.Errorf("asked %05b of objects, string, array, thread: all %v, indices %b; want all %v", c.asked, p.all, p.idx, c.all)
		}
	}
}

// A stop whose bookkeeping grew past keepStopEntries in any of its maps
// hands none of them to the next stop: a cleared map keeps its size.
func TestClearedStopKeepsNoOversizedMap(t *testing.T) {
	small := lstop{origins: map[idKey][]origin{{}: nil}, waitType: map[jdwp.ObjectID][]*lnode{1: nil}}
	if kept := small.cleared(); kept.origins == nil || kept.waitType == nil || len(kept.waitType) != 0 {
		t.Fatalf("a small stop's maps: origins %v, waitType %v; want kept, emptied", kept.origins, kept.waitType)
	}
	big := lstop{origins: map[idKey][]origin{{}: nil}, waitType: map[jdwp.ObjectID][]*lnode{}}
	for i := range keepStopEntries + 1 {
		big.waitType[jdwp.ObjectID(i+1)] = nil
	}
	if kept := big.cleared(); kept.origins != nil || kept.waitType != nil {
		t.Fatalf("a stop with %d objects waiting for their type: its maps were kept", keepStopEntries+1)
	}
}
