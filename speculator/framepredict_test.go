package speculator

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/retag"
)

// Methods of the modelled program: the top frame's, its caller's, and a
// method another caller may be in (its slot 1 is a reference).
const (
	topClass, topMethod       = 0x70, 0x71
	callerClass, callerMethod = 0x80, 0x81
	otherClass, otherMethod   = 0x90, 0x91
)

// hotspotVM models what frame prediction relies on in HotSpot's libjdwp:
// frame IDs are generation<<16 | depth, the generation of thread1 grows
// by step on every resume, and StackFrame commands answer INVALID_FRAMEID
// for any other generation, NO_MORE_FRAMES past the stack, and (unless
// lax) INVALID_SLOT or TYPE_MISMATCH for a slot not live with its tag.
// The values it answers change at every stop.
type hotspotVM struct {
	mu         sync.Mutex // guards every field
	desc, name string     // VirtualMachine.Version's description and vmName
	gen, step  uint64
	stop       uint64          // resumes so far
	frames     []jdwp.Location // thread1's frames, top first
	failFrames int             // Frames commands still to fail (INTERNAL: a transient failure)
	lax        bool            // GetValues does not check slots
}

// modelVars are the modelled methods' variable tables: (slot, tag) live
// over code indexes 0..99.
var modelVars = map[uint64][]slotTag{
	topMethod:    {{1, jdwp.TagInt}, {2, jdwp.TagInt}},
	callerMethod: {{1, jdwp.TagInt}},
	otherMethod:  {{1, jdwp.TagObject}},
}

func newHotspotVM() *hotspotVM {
	return &hotspotVM{
		desc: "Java Debug Wire Protocol (Reference Implementation) version 17.0\nJVM Debug Interface version 17.0\nJVM version 17.0.15 (OpenJDK 64-Bit Server VM, mixed mode, sharing)",
		name: "OpenJDK 64-Bit Server VM", gen: 1, step: 1,
		frames: []jdwp.Location{
			{TypeTag: jdwp.TypeTagClass, Class: topClass, Method: topMethod, Index: 4},
			{TypeTag: jdwp.TypeTagClass, Class: callerClass, Method: callerMethod, Index: 10},
		},
	}
}

func (m *hotspotVM) set(f func(m *hotspotVM)) {
	m.mu.Lock()
	f(m)
	m.mu.Unlock()
}

// frameID is the ID of thread1's frame at depth d now.
func (m *hotspotVM) frameID(d int) jdwp.FrameID {
	m.mu.Lock()
	defer m.mu.Unlock()
	return jdwp.FrameID(m.gen<<16 | uint64(d))
}

// event is a suspending event of kind k at thread1's top frame.
func (m *hotspotVM) event(k jdwp.EventKind) jdwp.Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	return jdwp.Event{Kind: k, RequestID: 3, Thread: thread1, Location: m.frames[0]}
}

func (m *hotspotVM) handler(p jdwp.Packet) (jdwp.ErrorCode, []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := jdwp.NewBodyReader(p.Body(), sizes8)
	switch p.Cmd() {
	case jdwp.CmdVirtualMachineVersion:
		return 0, jdwptest.VersionBody(m.desc, m.name)
	case jdwp.CmdVirtualMachineResume:
		m.gen += m.step
		m.stop++
		m.frames[0].Index += 2
		return 0, nil
	case jdwp.CmdVirtualMachineAllThreads:
		return 0, body(func(w *jdwp.BodyWriter) { w.Int32(1); w.ObjectID(thread1) })
	case jdwp.CmdThreadReferenceName:
		return 0, body(func(w *jdwp.BodyWriter) { w.String("main") })
	case jdwp.CmdThreadReferenceFrames:
		r.Thread()
		start, n := int(r.Int32()), int(r.Int32())
		if m.failFrames > 0 {
			m.failFrames--
			return jdwp.ErrorInternal, nil
		}
		end := len(m.frames)
		if n >= 0 {
			end = min(end, start+n)
		}
		return 0, body(func(w *jdwp.BodyWriter) {
			w.Int32(int32(end - start))
			for d := start; d < end; d++ {
				w.FrameID(m.gen<<16 | uint64(d))
				w.Location(m.frames[d])
			}
		})
	case jdwp.CmdMethodVariableTable:
		r.Class()
		vars := modelVars[uint64(r.Method())]
		return 0, body(func(w *jdwp.BodyWriter) {
			w.Int32(1)
			w.Int32(int32(len(vars)))
			for _, v := range vars {
				w.Int64(0)
				w.String("v")
				w.String(map[jdwp.Tag]string{jdwp.TagInt: "I", jdwp.TagObject: "Ljava/lang/String;"}[v.tag])
				w.Int32(100)
				w.Int32(v.slot)
			}
		})
	case jdwp.CmdStackFrameGetValues, jdwp.CmdStackFrameThisObject:
		r.Thread()
		fr := uint64(r.Frame())
		if fr>>16 != m.gen {
			return jdwp.ErrorInvalidFrameID, nil
		}
		d := int(fr & 0xFFFF)
		if d >= len(m.frames) {
			return jdwp.ErrorNoMoreFrames, nil
		}
		if p.Cmd() == jdwp.CmdStackFrameThisObject {
			return 0, body(func(w *jdwp.BodyWriter) { w.TaggedObjectID(jdwp.Value{Tag: jdwp.TagObject, Bits: 0x500 + m.stop}) })
		}
		n := int(r.Int32())
		w := jdwp.BodyWriter{Sizes: sizes8}
		w.Int32(int32(n))
		for i := 0; i < n; i++ {
			slot, tag := r.Int32(), jdwp.Tag(r.Uint8())
			live := false
			for _, v := range modelVars[m.frames[d].Method] {
				live = live || v == slotTag{slot, tag}
			}
			if !live && !m.lax {
				return jdwp.ErrorInvalidSlot, nil
			}
			w.Value(jdwp.Value{Tag: jdwp.TagInt, Bits: m.stop*1000 + uint64(d)*100 + uint64(slot)})
		}
		return 0, w.Buf
	}
	return 0, nil
}

// fpDebugger is the test's debugger: it checks every reply it gets
// against the model's own answer to the same command at that time.
type fpDebugger struct {
	t  *testing.T
	r  *rig
	m  *hotspotVM
	id uint32
}

func (d *fpDebugger) send(c jdwp.Cmd, b []byte) uint32 {
	d.id++
	d.r.dbg.send(d.id, c, b)
	return d.id
}

// check requires reply p to command c with body b to be the model's.
func (d *fpDebugger) check(c jdwp.Cmd, b []byte, p jdwp.Packet) jdwp.Packet {
	d.t.Helper()
	code, want := d.m.handler(jdwp.Packet(jdwp.AppendCommand(nil, 1, c, b)))
	if p.ErrorCode() != code || !bytes.Equal(p.Body(), want) {
		d.t.Fatalf("%v: debugger got %v %x, the VM answers %v %x", c, p.ErrorCode(), p.Body(), code, want)
	}
	return p
}

func (d *fpDebugger) call(c jdwp.Cmd, b []byte) jdwp.Packet {
	d.t.Helper()
	d.id++
	return d.check(c, b, d.r.dbg.call(d.id, c, b))
}

// frames asks thread1's frames; it returns their IDs.
func (d *fpDebugger) frames() []jdwp.FrameID {
	d.t.Helper()
	p := d.call(jdwp.CmdThreadReferenceFrames, body(func(w *jdwp.BodyWriter) { w.ObjectID(thread1); w.Int32(0); w.Int32(-1) }))
	r := jdwp.NewBodyReader(p.Body(), sizes8)
	var ids []jdwp.FrameID
	for n := r.Int32(); n > 0; n-- {
		ids = append(ids, r.Frame())
		r.Location()
	}
	return ids
}

func valuesBody(fr jdwp.FrameID, slots []slotTag) []byte {
	return body(func(w *jdwp.BodyWriter) {
		w.ObjectID(thread1)
		w.Frame(fr)
		w.Int32(int32(len(slots)))
		for _, s := range slots {
			w.Int32(s.slot)
			w.Uint8(uint8(s.tag))
		}
	})
}

func thisBody(fr jdwp.FrameID) []byte {
	return body(func(w *jdwp.BodyWriter) { w.ObjectID(thread1); w.Frame(fr) })
}

// work is what the debugger asks at a stop: the frames, the variables
// and values of the frames at depths, this of the top frame, the thread's
// name.
func (d *fpDebugger) work(depths ...int) []jdwp.FrameID {
	d.t.Helper()
	ids := d.frames()
	for _, dep := range depths {
		d.m.mu.Lock()
		loc := d.m.frames[dep]
		d.m.mu.Unlock()
		d.call(jdwp.CmdMethodVariableTable, isObsoleteBody(loc.Class, loc.Method))
		d.call(jdwp.CmdStackFrameGetValues, valuesBody(ids[dep], modelVars[loc.Method]))
	}
	d.call(jdwp.CmdStackFrameThisObject, thisBody(ids[0]))
	d.call(jdwp.CmdThreadReferenceName, threadBody(thread1))
	return ids
}

func (d *fpDebugger) resume() {
	d.t.Helper()
	d.id++
	if p := d.r.dbg.call(d.id, jdwp.CmdVirtualMachineResume, nil); p.ErrorCode() != 0 {
		d.t.Fatalf("resume: %v", p.ErrorCode())
	}
}

// stop has the VM send a suspending event of kind k at thread1's top.
func (d *fpDebugger) stop(k jdwp.EventKind) {
	d.t.Helper()
	d.r.vm.forget()
	d.r.event(jdwp.SuspendAll, d.m.event(k))
	d.r.expectEvent()
}

func newFramesRig(t *testing.T, m *hotspotVM) *fpDebugger {
	r := newRigWith(t, Config{}, m.handler)
	return &fpDebugger{t: t, r: r, m: m, id: 100}
}

// forget consumes the commands received so far (all the debugger's
// commands answered so far were received).
func (vm *fakeVM) forget() {
	n := len(vm.vm.Commands())
	vm.mu.Lock()
	vm.next = max(vm.next, n)
	vm.mu.Unlock()
}

// until returns the commands the VM receives after those consumed, up to
// the first c, that one included, and consumes them.
func (vm *fakeVM) until(c jdwp.Cmd) []jdwp.Packet {
	vm.t.Helper()
	var got []jdwp.Packet
	jdwptest.Await(vm.t, "the VM to receive "+c.String(), vm.vm.Changed, func() (bool, string) {
		cmds := vm.vm.Commands()
		vm.mu.Lock()
		defer vm.mu.Unlock()
		for i := vm.next; i < len(cmds); i++ {
			if cmds[i].Cmd() == c {
				got = cmds[vm.next : i+1]
				vm.next = i + 1
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d commands after the consumed ones", len(cmds)-vm.next)
	})
	return got
}

// stackFrameCmds are the StackFrame commands in ps, as (command, frame).
func stackFrameCmds(ps []jdwp.Packet) (cmds []jdwp.Cmd, frames []jdwp.FrameID, synthetic []bool) {
	for _, p := range ps {
		if p.Cmd().Set == jdwp.SetStackFrame {
			r := jdwp.NewBodyReader(p.Body(), sizes8)
			r.Thread()
			cmds = append(cmds, p.Cmd())
			frames = append(frames, r.Frame())
			synthetic = append(synthetic, retag.InRange(p.ID()))
		}
	}
	return
}

// TestPredictedFramesServedAfterConfirmation: from the second stop on,
// the top frame's values and this are sent on the predicted frame ID in
// the same burst as Frames, before the VM answered anything, and the
// debugger's own commands on that frame are answered from them (the VM
// sees each once) with the VM's values of this stop; the debugger asking
// them before the Frames reply confirmed the ID is not answered from the
// prediction but forwarded.
func TestPredictedFramesServedAfterConfirmation(t *testing.T) {
	m := newHotspotVM()
	d := newFramesRig(t, m)
	d.stop(jdwp.EventBreakpoint)
	d.work(0)
	d.resume()

	before := d.r.sp.Stats()
	d.r.vm.hold()
	d.stop(jdwp.EventSingleStep)
	want := m.frameID(0)
	got := d.r.vm.until(jdwp.CmdThreadReferenceName) // the last template of the burst
	cmds, frames, synth := stackFrameCmds(got)
	if len(cmds) != 2 || frames[0] != want || frames[1] != want || !synth[0] || !synth[1] {
		t.Fatalf("burst at the stop: StackFrame commands %v on %v (synthetic %v), want GetValues and ThisObject on %v", cmds, frames, synth, want)
	}
	d.r.vm.release()
	if ids := d.work(0); ids[0] != want {
		t.Fatalf("top frame %v, predicted %v", ids[0], want)
	}
	if n := d.r.vm.count(jdwp.CmdStackFrameGetValues); n != 2 {
		t.Fatalf("VM saw GetValues %d times in two stops, want 2 (one forwarded, one predicted)", n)
	}
	if st := d.r.sp.Stats().Since(before); st.FramesConfirmed != 2 || st.FramesRefuted != 0 || st.Misses != 0 {
		t.Fatalf("stats %+v, want 2 confirmed predictions and no miss", st)
	}
	d.resume()

	// The debugger asks the predicted frame before any Frames reply: the
	// prediction is not confirmed yet, so its command goes to the VM.
	d.r.vm.hold()
	d.stop(jdwp.EventSingleStep)
	want = m.frameID(0)
	d.r.vm.until(jdwp.CmdThreadReferenceName)
	vals := valuesBody(want, modelVars[topMethod])
	id := d.send(jdwp.CmdStackFrameGetValues, vals)
	own := d.r.vm.until(jdwp.CmdStackFrameGetValues)
	if p := own[len(own)-1]; retag.InRange(p.ID()) {
		t.Fatalf("the debugger's GetValues on an unconfirmed frame ID was not forwarded (VM got %#x)", p.ID())
	}
	d.r.vm.release()
	if p := d.r.dbg.read(); p.ID() != id {
		t.Fatalf("got %v, want the reply to %d", p, id)
	} else {
		d.check(jdwp.CmdStackFrameGetValues, vals, p)
	}
	d.work(0)
	d.r.dbg.quiet()
}

// TestPredictedFrameHeldUntilConfirmed: when the reply to a predicted
// frame comes before any Frames reply confirms it (the speculated Frames
// failed), it is held, and stored once the debugger's own Frames reply
// confirms the ID: its GetValues is then answered without the VM.
func TestPredictedFrameHeldUntilConfirmed(t *testing.T) {
	m := newHotspotVM()
	d := newFramesRig(t, m)
	d.stop(jdwp.EventBreakpoint)
	d.work(0)
	d.resume()
	m.set(func(m *hotspotVM) { m.failFrames = 1 })
	wasted := d.r.sp.Stats().SpecWasted
	d.stop(jdwp.EventSingleStep)
	d.r.vm.until(jdwp.CmdThreadReferenceName)
	// The failed Frames speculation is dropped (not belayed on) before the
	// debugger asks its own.
	d.r.waitStats(func(st Stats) bool { return st.SpecWasted > wasted })
	before := d.r.vm.count(jdwp.CmdStackFrameGetValues)
	d.work(0)
	if n := d.r.vm.count(jdwp.CmdStackFrameGetValues) - before; n != 0 {
		t.Fatalf("VM saw %d more GetValues; the held prediction should have answered", n)
	}
	if st := d.r.sp.Stats(); st.FramesConfirmed != 2 {
		t.Fatalf("stats %+v, want 2 confirmed", st)
	}
}

// TestWrongPredictionNeverServed: the VM moved the generation by two (as
// an invoke between two stops does); the predicted IDs are refuted, the
// debugger's commands on the real IDs go to the VM and get its answers,
// and the thread is not predicted at the next stop (its step not shown
// again yet).
func TestWrongPredictionNeverServed(t *testing.T) {
	m := newHotspotVM()
	d := newFramesRig(t, m)
	d.stop(jdwp.EventBreakpoint)
	d.work(0)
	m.set(func(m *hotspotVM) { m.step = 2 })
	d.resume()
	d.r.vm.hold()
	d.stop(jdwp.EventSingleStep)
	_, frames, _ := stackFrameCmds(d.r.vm.until(jdwp.CmdThreadReferenceName))
	if len(frames) != 2 || frames[0] == m.frameID(0) {
		t.Fatalf("predicted %v; the test wants a wrong prediction (real %v)", frames, m.frameID(0))
	}
	// Counted from before the release: the Frames reply the VM then sends
	// chains the GetValues on the real ID at once, maybe before d.work.
	before := d.r.vm.count(jdwp.CmdStackFrameGetValues)
	d.r.vm.release()
	d.work(0)
	if n := d.r.vm.count(jdwp.CmdStackFrameGetValues) - before; n != 1 {
		t.Fatalf("VM saw %d more GetValues, want one on the real ID (chained on the Frames reply)", n)
	}
	if st := d.r.sp.Stats(); st.FramesRefuted != 2 || st.FramesConfirmed != 0 {
		t.Fatalf("stats %+v, want 2 refuted", st)
	}
	d.resume()
	d.r.vm.hold()
	d.stop(jdwp.EventSingleStep)
	if cmds, _, _ := stackFrameCmds(d.r.vm.until(jdwp.CmdThreadReferenceName)); len(cmds) != 0 {
		t.Fatalf("predicted again right after a refutation: %v", cmds)
	}
	d.r.vm.release()
	d.work(0)
}

// TestPredictionOnMovedFrameNotServed: the caller frame's ID is right but
// the frame is in another method now, where the slots asked at the
// previous stop are not live; the VM (lax here) answers the prediction,
// but it is refuted, and the debugger asking the very same command gets
// it from the VM.
func TestPredictionOnMovedFrameNotServed(t *testing.T) {
	m := newHotspotVM()
	m.lax = true
	d := newFramesRig(t, m)
	d.stop(jdwp.EventBreakpoint)
	d.work(0, 1)
	m.set(func(m *hotspotVM) {
		m.frames[1] = jdwp.Location{TypeTag: jdwp.TypeTagClass, Class: otherClass, Method: otherMethod, Index: 7}
	})
	d.resume()
	d.r.vm.hold()
	d.stop(jdwp.EventSingleStep)
	_, frames, _ := stackFrameCmds(d.r.vm.until(jdwp.CmdThreadReferenceName))
	if len(frames) != 3 || frames[2] != m.frameID(1) {
		t.Fatalf("predicted %v, want the top frame's values and this and the caller's values", frames)
	}
	d.r.vm.release()
	ids := d.frames()
	stale := valuesBody(ids[1], modelVars[callerMethod])
	// (The frame's values in the method it moved to, by the slots JDI
	// shows there, may be asked too: count only the stale command's.)
	sent := func() int {
		n := 0
		for _, p := range d.r.vm.commands() {
			if p.Cmd() == jdwp.CmdStackFrameGetValues && bytes.Equal(p.Body(), stale) {
				n++
			}
		}
		return n
	}
	before := sent()
	d.call(jdwp.CmdStackFrameGetValues, stale)
	if n := sent() - before; n != 1 {
		t.Fatalf("the refuted prediction answered the debugger (VM saw %d more of its GetValues)", n)
	}
	if st := d.r.sp.Stats(); st.FramesRefuted != 1 || st.FramesConfirmed != 2 {
		t.Fatalf("stats %+v, want the caller refuted, the top frame's two confirmed", st)
	}
}

// TestStalePredictionAfterResumeNotServed: the debugger resumes before the
// replies to the predicted frame come; at the next stop, its command on
// the old frame ID is forwarded and gets the VM's INVALID_FRAMEID.
func TestStalePredictionAfterResumeNotServed(t *testing.T) {
	m := newHotspotVM()
	d := newFramesRig(t, m)
	d.stop(jdwp.EventBreakpoint)
	d.work(0)
	d.resume()
	d.r.vm.hold()
	d.stop(jdwp.EventSingleStep)
	old := m.frameID(0)
	if _, frames, _ := stackFrameCmds(d.r.vm.until(jdwp.CmdThreadReferenceName)); len(frames) != 2 || frames[0] != old {
		t.Fatalf("predicted %v, want %v", frames, old)
	}
	id := d.send(jdwp.CmdVirtualMachineResume, nil)
	d.r.vm.until(jdwp.CmdVirtualMachineResume)
	d.r.vm.release()
	if p := d.r.dbg.read(); p.ID() != id {
		t.Fatalf("got %v, want the resume's reply", p)
	}
	d.stop(jdwp.EventSingleStep)
	before := d.r.vm.count(jdwp.CmdStackFrameGetValues)
	p := d.call(jdwp.CmdStackFrameGetValues, valuesBody(old, modelVars[topMethod]))
	if p.ErrorCode() != jdwp.ErrorInvalidFrameID || d.r.vm.count(jdwp.CmdStackFrameGetValues)-before != 1 {
		t.Fatalf("stale frame: %v, VM saw %d more", p.ErrorCode(), d.r.vm.count(jdwp.CmdStackFrameGetValues)-before)
	}
	p = d.call(jdwp.CmdStackFrameThisObject, thisBody(old))
	if p.ErrorCode() != jdwp.ErrorInvalidFrameID {
		t.Fatalf("stale frame's this: %v", p.ErrorCode())
	}
}

// TestNoPredictionOnOtherVMs: a VM whose Version names no HotSpot (ART
// with libjdwp, OpenJ9) is never sent a frame ID it did not hand out.
func TestNoPredictionOnOtherVMs(t *testing.T) {
	for _, vm := range []struct{ desc, name string }{
		{"Java Debug Wire Protocol (Reference Implementation) version 11.0\nJVM Debug Interface version 11.0\nJVM version 0.9 (Dalvik, null, null)", "Dalvik"},
		{"Android Runtime 2.1.0", "Dalvik"},
		{"Java Debug Wire Protocol (Reference Implementation) version 17.0\nJVM Debug Interface version 17.0\nJVM version 17.0.9 (Eclipse OpenJ9 VM, JRE 17 Linux amd64-64)", "Eclipse OpenJ9 VM"},
	} {
		t.Run(vm.name, func(t *testing.T) {
			m := newHotspotVM()
			m.desc, m.name = vm.desc, vm.name
			d := newFramesRig(t, m)
			for stop := 0; stop < 3; stop++ {
				d.stop(jdwp.EventSingleStep)
				if stop > 0 {
					if cmds, _, _ := stackFrameCmds(d.r.vm.until(jdwp.CmdThreadReferenceName)); len(cmds) != 0 {
						t.Fatalf("stop %d: StackFrame commands %v sent before the Frames reply", stop, cmds)
					}
				}
				d.work(0)
				d.resume()
			}
			if st := d.r.sp.Stats(); st.FramesConfirmed+st.FramesRefuted != 0 || st.SpecUsed == 0 {
				t.Fatalf("stats %+v: no prediction expected, but speculation", st)
			}
		})
	}
}

func TestHotSpotVersion(t *testing.T) {
	version := func(desc, name string) jdwp.Packet {
		return jdwp.AppendReply(nil, 1, 0, jdwptest.VersionBody(desc, name))
	}
	const ri = "Java Debug Wire Protocol (Reference Implementation) version 17.0\n..."
	for _, tc := range []struct {
		p    jdwp.Packet
		want bool
	}{
		{version(ri, "OpenJDK 64-Bit Server VM"), true},
		{version(ri, "Java HotSpot(TM) 64-Bit Server VM"), true},
		{version(ri, "OpenJDK Client VM"), true},
		{version(ri, "Eclipse OpenJ9 VM"), false},
		{version(ri, "Dalvik"), false},
		{version("Android Runtime 2.1.0", "Dalvik"), false},
		{version("Some other agent", "OpenJDK 64-Bit Server VM"), false},
		{jdwp.AppendReply(nil, 1, jdwp.ErrorVMDead, nil), false},
		{version(ri, "OpenJDK 64-Bit Server VM")[:40], false},
	} {
		if got := hotSpotVersion(tc.p); got != tc.want {
			t.Errorf("hotSpotVersion(%q) = %v, want %v", tc.p, got, tc.want)
		}
	}
}

func FuzzHotSpotVersion(f *testing.F) {
	f.Add([]byte(jdwp.AppendReply(nil, 1, 0, jdwptest.VersionBody("Java Debug Wire Protocol (Reference Implementation) version 17.0", "OpenJDK 64-Bit Server VM"))))
	f.Add([]byte{0, 0, 0, 11, 0, 0, 0, 1, 0x80, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		hotSpotVersion(jdwp.Packet(b))
	})
}

// TestFramePredictorLearnsStep: the base and the step per resume are
// learned from the Frames replies and the debugger's resumes; a reply
// whose IDs are not base+depth, too many resumes since, or refuted
// predictions stop or delay prediction.
func TestFramePredictorLearnsStep(t *testing.T) {
	var loc jdwp.Location
	fp := framePredictor{hotspot: true}
	const th = jdwp.ThreadID(1)
	resumeVM := func() { fp.resumed(jdwp.CmdVirtualMachineResume, nil, sizes8) }
	predict := func(want jdwp.FrameID, what string) {
		t.Helper()
		_, base, ok := fp.predict(th, sizes8)
		if want == 0 && ok {
			t.Fatalf("%s: predicted %#x", what, uint64(base))
		}
		if want != 0 && (!ok || base != want) {
			t.Fatalf("%s: %#x %v, want %#x", what, uint64(base), ok, uint64(want))
		}
	}
	predict(0, "a thread never seen")
	fp.observe(th, 0, 0x20000, loc, 1, true)
	fp.observe(th, 1, 0x20001, loc, 1, false)
	predict(0, "no resume since")
	resumeVM()
	predict(0x30000, "second stop (the first step assumed)")
	fp.observe(th, 0, 0x30000, loc, 2, true)
	fp.resumed(jdwp.CmdObjectReferenceInvokeMethod, nil, sizes8) // an invoke within the stop
	fp.observe(th, 0, 0x40000, loc, 2, true)
	fp.observe(th, 1, 0x40001, loc, 2, false)
	resumeVM()
	resumeVM() // a stop lost (or a class prepare suspension) in between
	predict(0x60000, "two resumes since")
	fp.resumed(jdwp.CmdThreadReferenceResume, threadBody(2), sizes8) // another thread's resume
	predict(0x60000, "another thread resumed")
	fp.resumed(jdwp.CmdThreadReferenceResume, threadBody(uint64(th)), sizes8)
	predict(0x70000, "the thread resumed on its own")
	if _, _, ok := fp.predict(th, jdwp.IDSizes{FrameID: 4}); ok {
		t.Fatal("predicted with 4-byte frame IDs")
	}
	fp.refuted(th)
	predict(0, "right after a refutation")
	fp.observe(th, 0, 0x70000, loc, 3, true)
	resumeVM()
	predict(0x80000, "after the step was shown again")
	fp.refuted(th)
	fp.observe(th, 0, 0x80000, loc, 4, true)
	resumeVM()
	fp.observe(th, 0, 0x90000, loc, 5, true)
	resumeVM()
	predict(0, "after two refutations")

	third := jdwp.ThreadID(3)
	fp.observe(third, 0, 0x20000, loc, 6, true)
	for range maxPredResumes + 1 {
		resumeVM()
	}
	if _, _, ok := fp.predict(third, sizes8); ok {
		t.Fatal("predicted over too many resumes")
	}
	fp.observe(third, 0, 0x20000, loc, 7, true)
	resumeVM()
	if _, _, ok := fp.predict(third, sizes8); !ok {
		t.Fatal("a fresh thread not predicted")
	}
	fp.hotspot = false
	if _, _, ok := fp.predict(third, sizes8); ok {
		t.Fatal("predicted on a VM not HotSpot")
	}
	other := jdwp.ThreadID(2)
	fp.hotspot = true
	fp.observe(other, 0, 0x20000, loc, 8, true)
	fp.observe(other, 1, 0x30001, loc, 8, false) // not base+depth
	resumeVM()
	if _, _, ok := fp.predict(other, sizes8); ok {
		t.Fatal("predicted a VM whose frame IDs are not base+depth")
	}
}
