package speculator

import (
	"errors"
	"io"
	"net"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// reqVM scripts the VM side of event requests as libjdwp behaves: request
// IDs from one counter, one per accepted Set; Clear of any ID answers
// NONE; a step request on a thread other than thread1 and those AllThreads
// lists fails with INVALID_THREAD. A test can make it skip an ID or fail a command once.
type reqVM struct {
	fs       *frameState // everything else
	mu       sync.Mutex  // guards the fields below
	next     int32
	skip     bool
	failCmd  jdwp.Cmd
	failCode jdwp.ErrorCode
	assigned []int32
}

func (v *reqVM) failOnce(c jdwp.Cmd, code jdwp.ErrorCode) {
	v.mu.Lock()
	v.failCmd, v.failCode = c, code
	v.mu.Unlock()
}

func (v *reqVM) skipOne() { v.mu.Lock(); v.skip = true; v.mu.Unlock() }

func (v *reqVM) handler(p jdwp.Packet) (jdwp.ErrorCode, []byte) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.failCode != 0 && p.Cmd() == v.failCmd {
		code := v.failCode
		v.failCode = 0
		return code, nil
	}
	switch p.Cmd() {
	case jdwp.CmdEventRequestSet:
		r := jdwp.NewBodyReader(p.Body(), sizes8)
		r.Uint8()
		r.Uint8()
		n := int(r.Int32())
		for i := 0; i < n && r.Err() == nil; i++ {
			if m := r.Modifier(); m.Kind == jdwp.ModStep && m.Thread != thread1 && !v.fs.alive(m.Thread) {
				return jdwp.ErrorInvalidThread, nil
			}
		}
		if r.Err() != nil || r.Remaining() != 0 {
			return jdwp.ErrorIllegalArgument, nil
		}
		if v.skip {
			v.next++
			v.skip = false
		}
		v.next++
		v.assigned = append(v.assigned, v.next)
		return 0, body(func(w *jdwp.BodyWriter) { w.Int32(v.next) })
	case jdwp.CmdEventRequestClear, jdwp.CmdVirtualMachineResume, jdwp.CmdThreadReferenceResume:
		return 0, nil
	}
	return v.fs.handler(p)
}

func newWBRig(t *testing.T, on bool) (*rig, *reqVM) {
	v := &reqVM{fs: &frameState{count: 3, values: 10}, next: 40}
	r := newRig(t, Config{WriteBehind: on})
	r.vm.setHandler(v.handler)
	return r, v
}

// stepSet is JDI's step request: a line step over on thread t, once.
func stepSet(t uint64, count bool) []byte {
	return body(func(w *jdwp.BodyWriter) {
		w.Uint8(uint8(jdwp.EventSingleStep))
		w.Uint8(uint8(jdwp.SuspendAll))
		n := int32(2)
		if count {
			n = 3
		}
		w.Int32(n)
		w.Uint8(uint8(jdwp.ModStep))
		w.ObjectID(t)
		w.Int32(1) // LINE
		w.Int32(1) // OVER
		w.Uint8(uint8(jdwp.ModClassExclude))
		w.String("java.*")
		if count {
			w.Uint8(uint8(jdwp.ModCount))
			w.Int32(1)
		}
	})
}

func clearBody(k jdwp.EventKind, id int32) []byte {
	return body(func(w *jdwp.BodyWriter) { w.Uint8(uint8(k)); w.Int32(id) })
}

func stepEvent(id int32) jdwp.Event {
	return jdwp.Event{Kind: jdwp.EventSingleStep, RequestID: id, Thread: thread1,
		Location: jdwp.Location{TypeTag: jdwp.TypeTagClass, Class: 0x70, Method: 0x71, Index: 5}}
}

// wbIDs numbers the test debugger's commands.
var wbIDs struct {
	sync.Mutex
	n uint32
}

func nextID() uint32 {
	wbIDs.Lock()
	defer wbIDs.Unlock()
	wbIDs.n++
	return 100 + wbIDs.n
}

// step runs one IDE step: Clear the previous step request (prev > 0), Set
// a new one, Resume, and the VM's step event; it returns the request ID
// the debugger was answered. With held, the VM answers nothing until the
// debugger has all three answers (so they cannot be the VM's).
func (r *rig) step(prev int32, held bool) int32 {
	t := r.dbg.t
	t.Helper()
	if held {
		r.vm.hold()
	}
	if prev > 0 {
		if p := r.dbg.call(nextID(), jdwp.CmdEventRequestClear, clearBody(jdwp.EventSingleStep, prev)); p.ErrorCode() != 0 {
			t.Fatalf("Clear: %v", p.ErrorCode())
		}
	}
	p := r.dbg.call(nextID(), jdwp.CmdEventRequestSet, stepSet(thread1, true))
	if p.ErrorCode() != 0 {
		t.Fatalf("Set: %v", p.ErrorCode())
	}
	id := be32(p.Body())
	if p := r.dbg.call(nextID(), jdwp.CmdVirtualMachineResume, nil); p.ErrorCode() != 0 {
		t.Fatalf("Resume: %v", p.ErrorCode())
	}
	r.vm.waitFor(jdwp.CmdVirtualMachineResume)
	if held {
		r.vm.release()
	}
	// The VM answers the resume before the thread can stop again.
	r.barrier()
	r.event(jdwp.SuspendAll, stepEvent(id))
	r.expectEvent()
	return id
}

// barrier returns once the proxy has handled the VM's replies to every
// command sent before: the VM answers in order, and a forwarded command's
// reply (ClearAllBreakpoints is never cached) comes after them.
func (r *rig) barrier() {
	r.dbg.t.Helper()
	if p := r.dbg.call(nextID(), jdwp.CmdEventRequestClearAllBreakpoints, nil); p.ErrorCode() != 0 {
		r.dbg.t.Fatal(p.ErrorCode())
	}
}

// stateCmds are the state-setting commands the VM received, in order.
func (vm *fakeVM) stateCmds() []jdwp.Cmd {
	var out []jdwp.Cmd
	for _, p := range vm.commands() {
		switch c := p.Cmd(); c {
		case jdwp.CmdEventRequestSet, jdwp.CmdEventRequestClear, jdwp.CmdVirtualMachineResume:
			out = append(out, c)
		}
	}
	return out
}

// TestWriteBehindSteps steps as an IDE does: from the third step on, Clear,
// Set and Resume are answered while the VM is held (so without a round
// trip), with the request IDs the VM then assigns, and the VM gets every
// command in the debugger's order.
func TestWriteBehindSteps(t *testing.T) {
	r, v := newWBRig(t, true)
	r.event(jdwp.SuspendAll, bpEvent(thread1))
	r.expectEvent()
	id := r.step(0, false) // learns the step's shape; Resume succeeds once
	id = r.step(id, false) // Clear written behind; the Set's ID is consecutive: learned
	if got := r.sp.Stats().WrittenBehind; got != 2 {
		t.Fatalf("written behind after two steps: %d, want 2 (Clear, Resume)", got)
	}
	for i := 0; i < 3; i++ {
		id = r.step(id, true)
	}
	if got := r.sp.Stats().WrittenBehind; got != 2+3*3 {
		t.Errorf("written behind: %d, want 11", got)
	}
	r.barrier() // every reply before it was absorbed
	v.mu.Lock()
	last := v.assigned[len(v.assigned)-1]
	v.mu.Unlock()
	if id != last {
		t.Errorf("the debugger was answered request ID %d, the VM assigned %d", id, last)
	}
	want := []jdwp.Cmd{jdwp.CmdEventRequestSet, jdwp.CmdVirtualMachineResume}
	for i := 0; i < 4; i++ {
		want = append(want, jdwp.CmdEventRequestClear, jdwp.CmdEventRequestSet, jdwp.CmdVirtualMachineResume)
	}
	if got := r.vm.stateCmds(); !slices.Equal(got, want) {
		t.Errorf("the VM received %v, want %v", got, want)
	}
	if st := r.sp.Stats(); st.WriteBehindFailures != 0 {
		t.Errorf("failures: %d", st.WriteBehindFailures)
	}
}

// learned brings a session to where the next step's Clear, Set and Resume
// are written behind, and returns the active step request's ID.
func learned(t *testing.T, r *rig) int32 {
	t.Helper()
	r.event(jdwp.SuspendAll, bpEvent(thread1))
	r.expectEvent()
	return r.step(r.step(0, false), false)
}

// forwarded sends a command and checks it was not written behind: the
// debugger gets the VM's own answer, error code want.
func forwarded(t *testing.T, r *rig, c jdwp.Cmd, b []byte, want jdwp.ErrorCode) jdwp.Packet {
	t.Helper()
	before := r.sp.Stats().WrittenBehind
	p := r.dbg.call(nextID(), c, b)
	if p.ErrorCode() != want {
		t.Errorf("%v: error %v, want the VM's %v", c, p.ErrorCode(), want)
	}
	if got := r.sp.Stats().WrittenBehind; got != before {
		t.Errorf("%v was written behind", c)
	}
	return p
}

// TestWriteBehindForwardsUnproven: each rule, broken, sends the command
// the usual way and the debugger gets the VM's own answer.
func TestWriteBehindForwardsUnproven(t *testing.T) {
	t.Run("clear of the wrong kind", func(t *testing.T) {
		r, v := newWBRig(t, true)
		id := learned(t, r)
		v.failOnce(jdwp.CmdEventRequestClear, jdwp.ErrorInvalidEventType)
		forwarded(t, r, jdwp.CmdEventRequestClear, clearBody(jdwp.EventBreakpoint, id), jdwp.ErrorInvalidEventType)
	})
	t.Run("clear of an unknown request", func(t *testing.T) {
		r, v := newWBRig(t, true)
		id := learned(t, r)
		v.failOnce(jdwp.CmdEventRequestClear, jdwp.ErrorInvalidEventType)
		forwarded(t, r, jdwp.CmdEventRequestClear, clearBody(jdwp.EventSingleStep, id+7), jdwp.ErrorInvalidEventType)
	})
	t.Run("unknown thread", func(t *testing.T) {
		r, _ := newWBRig(t, true)
		id := learned(t, r)
		r.dbg.call(nextID(), jdwp.CmdEventRequestClear, clearBody(jdwp.EventSingleStep, id))
		forwarded(t, r, jdwp.CmdEventRequestSet, stepSet(0x99, true), jdwp.ErrorInvalidThread)
	})
	t.Run("duplicate step", func(t *testing.T) {
		r, v := newWBRig(t, true)
		learned(t, r) // its step request fired (Count 1): no longer active
		// A step request without a Count stays active until cleared.
		p := r.dbg.call(nextID(), jdwp.CmdEventRequestSet, stepSet(thread1, false))
		if p.ErrorCode() != 0 {
			t.Fatal(p.ErrorCode())
		}
		v.failOnce(jdwp.CmdEventRequestSet, jdwp.ErrorDuplicate)
		forwarded(t, r, jdwp.CmdEventRequestSet, stepSet(thread1, true), jdwp.ErrorDuplicate)
	})
	t.Run("another step still active", func(t *testing.T) {
		r, v := newWBRig(t, true)
		learned(t, r)
		a := r.dbg.call(nextID(), jdwp.CmdEventRequestSet, stepSet(thread1, false))
		b := r.dbg.call(nextID(), jdwp.CmdEventRequestSet, stepSet(thread1, false))
		if a.ErrorCode() != 0 || b.ErrorCode() != 0 {
			t.Fatal(a.ErrorCode(), b.ErrorCode())
		}
		r.dbg.call(nextID(), jdwp.CmdEventRequestClear, clearBody(jdwp.EventSingleStep, be32(b.Body())))
		v.failOnce(jdwp.CmdEventRequestSet, jdwp.ErrorDuplicate)
		forwarded(t, r, jdwp.CmdEventRequestSet, stepSet(thread1, true), jdwp.ErrorDuplicate) // a is active
	})
	t.Run("new shape", func(t *testing.T) {
		r, v := newWBRig(t, true)
		learned(t, r)
		bp := body(func(w *jdwp.BodyWriter) {
			w.Uint8(uint8(jdwp.EventBreakpoint))
			w.Uint8(uint8(jdwp.SuspendAll))
			w.Int32(1)
			w.Uint8(uint8(jdwp.ModLocationOnly))
			w.Location(jdwp.Location{TypeTag: 1, Class: 0x70, Method: 0x71, Index: 9})
		})
		v.failOnce(jdwp.CmdEventRequestSet, jdwp.ErrorInvalidLocation)
		forwarded(t, r, jdwp.CmdEventRequestSet, bp, jdwp.ErrorInvalidLocation)
	})
	t.Run("malformed", func(t *testing.T) {
		r, _ := newWBRig(t, true)
		id := learned(t, r)
		r.dbg.call(nextID(), jdwp.CmdEventRequestClear, clearBody(jdwp.EventSingleStep, id))
		forwarded(t, r, jdwp.CmdEventRequestSet, append(stepSet(thread1, true), 0), jdwp.ErrorIllegalArgument)
	})
	t.Run("thread resume of a running thread", func(t *testing.T) {
		r, v := newWBRig(t, true)
		r.event(jdwp.SuspendEventThread, bpEvent(thread1))
		r.expectEvent()
		forwarded(t, r, jdwp.CmdThreadReferenceResume, threadBody(thread1), 0)
		r.event(jdwp.SuspendEventThread, bpEvent(thread1))
		r.expectEvent()
		before := r.sp.Stats().WrittenBehind
		r.dbg.call(nextID(), jdwp.CmdThreadReferenceResume, threadBody(thread1)) // suspended: written behind
		if r.sp.Stats().WrittenBehind != before+1 {
			t.Error("a suspended thread's resume was not written behind")
		}
		r.barrier() // the VM answered the resume
		v.failOnce(jdwp.CmdThreadReferenceResume, jdwp.ErrorInvalidThread)
		forwarded(t, r, jdwp.CmdThreadReferenceResume, threadBody(thread1), jdwp.ErrorInvalidThread) // running now
	})
	t.Run("thread not seen since it last ran", func(t *testing.T) {
		// thread2 stopped once, then ran (and died: the debugger asked for
		// no THREAD_DEATH). A step on it at a later stop is the VM's to
		// answer (INVALID_THREAD), and the session goes on.
		const thread2 = thread1 + 1
		r, _ := newWBRig(t, true)
		r.event(jdwp.SuspendAll, bpEvent(thread2))
		r.expectEvent()
		id := learned(t, r)
		forwarded(t, r, jdwp.CmdEventRequestSet, stepSet(thread2, true), jdwp.ErrorInvalidThread)
		r.step(id, false)
		if st := r.sp.Stats(); st.WriteBehindFailures != 0 {
			t.Errorf("failures: %d", st.WriteBehindFailures)
		}
	})
	t.Run("thread of an AllThreads reply of this stop", func(t *testing.T) {
		const thread2 = thread1 + 1
		r, v := newWBRig(t, true)
		v.fs.mu.Lock()
		v.fs.threads = []uint64{thread1, thread2}
		v.fs.mu.Unlock()
		id := learned(t, r)
		r.dbg.call(nextID(), jdwp.CmdEventRequestClear, clearBody(jdwp.EventSingleStep, id))
		r.dbg.call(nextID(), jdwp.CmdVirtualMachineAllThreads, nil)
		before := r.sp.Stats().WrittenBehind
		r.dbg.call(nextID(), jdwp.CmdEventRequestSet, stepSet(thread2, true))
		if r.sp.Stats().WrittenBehind != before+1 {
			t.Error("a step on a thread the VM listed at this stop was not written behind")
		}
		r.barrier()
		if st := r.sp.Stats(); st.WriteBehindFailures != 0 {
			t.Errorf("failures: %d", st.WriteBehindFailures)
		}
	})
	for _, watched := range []bool{false, true} {
		name := "location of a class not seen since the VM ran, unloads unwatched"
		if watched {
			name = "location of a class known while unloads are watched"
		}
		t.Run(name, func(t *testing.T) {
			// Without a CLASS_UNLOAD request the class may have been
			// unloaded unseen while the VM ran; with one, it stays known.
			r, v := newWBRig(t, true)
			id := learned(t, r)
			if watched {
				unload := body(func(w *jdwp.BodyWriter) {
					w.Uint8(uint8(jdwp.EventClassUnload))
					w.Uint8(uint8(jdwp.SuspendNone))
					w.Int32(0)
				})
				if p := r.dbg.call(nextID(), jdwp.CmdEventRequestSet, unload); p.ErrorCode() != 0 {
					t.Fatal(p.ErrorCode())
				}
			}
			bp := body(func(w *jdwp.BodyWriter) {
				w.Uint8(uint8(jdwp.EventBreakpoint))
				w.Uint8(uint8(jdwp.SuspendAll))
				w.Int32(1)
				w.Uint8(uint8(jdwp.ModLocationOnly))
				w.Location(jdwp.Location{TypeTag: 1, Class: 0x70, Method: 0x71, Index: 9})
			})
			if p := r.dbg.call(nextID(), jdwp.CmdEventRequestSet, bp); p.ErrorCode() != 0 {
				t.Fatal(p.ErrorCode())
			}
			r.step(id, false)
			if !watched {
				v.failOnce(jdwp.CmdEventRequestSet, jdwp.ErrorInvalidClass)
				forwarded(t, r, jdwp.CmdEventRequestSet, bp, jdwp.ErrorInvalidClass)
				return
			}
			before := r.sp.Stats().WrittenBehind
			if p := r.dbg.call(nextID(), jdwp.CmdEventRequestSet, bp); p.ErrorCode() != 0 {
				t.Fatal(p.ErrorCode())
			}
			if r.sp.Stats().WrittenBehind != before+1 {
				t.Error("a breakpoint at a location accepted before, unloads watched, was not written behind")
			}
		})
	}
	t.Run("off", func(t *testing.T) {
		r, _ := newWBRig(t, false)
		r.event(jdwp.SuspendAll, bpEvent(thread1))
		r.expectEvent()
		id := int32(0)
		for i := 0; i < 4; i++ {
			id = r.step(id, false)
		}
		if st := r.sp.Stats(); st.WrittenBehind != 0 {
			t.Errorf("written behind with write-behind off: %d", st.WrittenBehind)
		}
	})
}

// expectEnd reads until the debugger's connection ends, which must be an
// end of stream, not the deadline.
func expectEnd(t *testing.T, r *rig) {
	t.Helper()
	for {
		_, err := r.dbg.d.Next()
		if err == nil {
			continue
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatal("the session was not ended")
		}
		if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Logf("session ended with %v", err)
		}
		return
	}
}

// TestWriteBehindFailureEndsSession: a written-behind command the VM
// answers otherwise (another request ID, an error) is counted and ends
// the session; a session that is told OK must not go on.
func TestWriteBehindFailureEndsSession(t *testing.T) {
	t.Run("request ID gap", func(t *testing.T) {
		r, v := newWBRig(t, true)
		id := learned(t, r)
		r.dbg.call(nextID(), jdwp.CmdEventRequestClear, clearBody(jdwp.EventSingleStep, id))
		v.skipOne()
		p := r.dbg.call(nextID(), jdwp.CmdEventRequestSet, stepSet(thread1, true))
		if got := be32(p.Body()); got != id+1 {
			t.Fatalf("answered %d, want the prediction %d", got, id+1)
		}
		expectEnd(t, r)
		if st := r.sp.Stats(); st.WriteBehindFailures != 1 {
			t.Errorf("failures %d, want 1", st.WriteBehindFailures)
		}
	})
	t.Run("VM error", func(t *testing.T) {
		r, v := newWBRig(t, true)
		id := learned(t, r)
		v.failOnce(jdwp.CmdEventRequestClear, jdwp.ErrorInvalidEventType)
		if p := r.dbg.call(nextID(), jdwp.CmdEventRequestClear, clearBody(jdwp.EventSingleStep, id)); p.ErrorCode() != 0 {
			t.Fatal("not written behind")
		}
		expectEnd(t, r)
		if st := r.sp.Stats(); st.WriteBehindFailures != 1 {
			t.Errorf("failures %d, want 1", st.WriteBehindFailures)
		}
	})
}

// TestWriteBehindResumeInvalidates: a written-behind resume has the
// forwarded one's effects: what was cached at the stop before is not
// served after it.
func TestWriteBehindResumeInvalidates(t *testing.T) {
	r, v := newWBRig(t, true)
	id := learned(t, r)
	count := func() int32 {
		p := r.dbg.call(nextID(), jdwp.CmdThreadReferenceFrameCount, threadBody(thread1))
		return be32(p.Body())
	}
	if n := count(); n != 3 {
		t.Fatalf("frame count %d, want 3", n)
	}
	count() // now certainly cached
	v.fs.set(5, 10)
	before := r.sp.Stats()
	r.step(id, true) // Clear, Set and Resume all written behind
	after := r.sp.Stats()
	if got := after.WrittenBehind - before.WrittenBehind; got != 3 {
		t.Fatalf("written behind %d, want 3", got)
	}
	if n := count(); n != 5 {
		t.Errorf("frame count %d after the step, want 5: a reply from before the resume was served", n)
	}
}

// TestWriteBehindInstanceOnlyOfThis: a Set whose InstanceOnly names the
// object a ThisObject reply gave for a frame of a thread suspended since
// is written behind (its shape seen succeed): the frame holds the object,
// so its ID is valid. Another object, or the same once the thread ran or
// its frames were popped, goes to the VM.
func TestWriteBehindInstanceOnlyOfThis(t *testing.T) {
	r, v := newWBRig(t, true)
	const this, other = 0x77, 0x88
	r.vm.setHandler(func(p jdwp.Packet) (jdwp.ErrorCode, []byte) {
		if p.Cmd() == jdwp.CmdStackFrameThisObject {
			return 0, body(func(w *jdwp.BodyWriter) { w.Uint8(uint8(jdwp.TagObject)); w.ObjectID(this) })
		}
		return v.handler(p)
	})
	id := learned(t, r)
	thisOf := func() {
		t.Helper()
		p := r.dbg.call(nextID(), jdwp.CmdStackFrameThisObject, body(func(w *jdwp.BodyWriter) { w.ObjectID(thread1); w.FrameID(0xF3) }))
		if p.ErrorCode() != 0 {
			t.Fatal(p.ErrorCode())
		}
	}
	exitSet := func(obj uint64) []byte {
		return body(func(w *jdwp.BodyWriter) {
			w.Uint8(uint8(jdwp.EventMethodExitWithReturnValue))
			w.Uint8(uint8(jdwp.SuspendEventThread))
			w.Int32(2)
			w.Uint8(uint8(jdwp.ModThreadOnly))
			w.ObjectID(thread1)
			w.Uint8(uint8(jdwp.ModInstanceOnly))
			w.ObjectID(obj)
		})
	}
	thisOf()
	forwarded(t, r, jdwp.CmdEventRequestSet, exitSet(this), 0) // its shape: first seen succeed
	before := r.sp.Stats().WrittenBehind
	if p := r.dbg.call(nextID(), jdwp.CmdEventRequestSet, exitSet(this)); p.ErrorCode() != 0 || r.sp.Stats().WrittenBehind != before+1 {
		t.Fatalf("Set on this: %v, written behind %d (was %d)", p.ErrorCode(), r.sp.Stats().WrittenBehind, before)
	}
	forwarded(t, r, jdwp.CmdEventRequestSet, exitSet(other), 0)
	r.step(id, false) // the thread ran: this must be read again
	forwarded(t, r, jdwp.CmdEventRequestSet, exitSet(this), 0)
	thisOf()
	before = r.sp.Stats().WrittenBehind
	if p := r.dbg.call(nextID(), jdwp.CmdEventRequestSet, exitSet(this)); p.ErrorCode() != 0 || r.sp.Stats().WrittenBehind != before+1 {
		t.Fatalf("Set on this at the next stop: %v, not written behind", p.ErrorCode())
	}
	// A PopFrames may pop the frame that held it, with the thread still
	// suspended.
	r.dbg.call(nextID(), jdwp.CmdStackFramePopFrames, body(func(w *jdwp.BodyWriter) { w.ObjectID(thread1); w.FrameID(0xF3) }))
	forwarded(t, r, jdwp.CmdEventRequestSet, exitSet(this), 0)
	r.barrier()
	if st := r.sp.Stats(); st.WriteBehindFailures != 0 {
		t.Errorf("failures: %d", st.WriteBehindFailures)
	}
}

// TestWriteBehindFirstResumeOnHotSpot: on HotSpot's libjdwp, whose
// VirtualMachine.Resume fails only for a dead VM, the session's first
// Resume is answered at once, once a forwarded Set came back (the first
// Set goes to the VM, for a client that times it); before that, and on a
// VM that is not HotSpot's, it goes to the VM until one succeeded. Fails
// with the first Resume forwarded whatever the VM (writeBehind.command).
func TestWriteBehindFirstResumeOnHotSpot(t *testing.T) {
	for _, c := range []struct {
		name     string
		vm       string
		setFirst bool
		written  bool
	}{
		{"HotSpot after a Set", "OpenJDK 64-Bit Server VM", true, true},
		{"HotSpot before any Set", "OpenJDK 64-Bit Server VM", false, false},
		{"another VM", "Eclipse OpenJ9 VM", true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := &reqVM{fs: &frameState{count: 3, values: 10}, next: 40}
			r := newRigWith(t, Config{WriteBehind: true}, func(p jdwp.Packet) (jdwp.ErrorCode, []byte) {
				if p.Cmd() == jdwp.CmdVirtualMachineVersion {
					return 0, jdwptestVersion(c.vm)
				}
				return v.handler(p)
			})
			r.dbg.call(nextID(), jdwp.CmdIDSizes, nil)
			r.dbg.call(nextID(), jdwp.CmdVirtualMachineVersion, nil)
			if c.setFirst {
				forwarded(t, r, jdwp.CmdEventRequestSet, vmDeathSet(), 0)
			}
			before := r.sp.Stats().WrittenBehind
			if p := r.dbg.call(nextID(), jdwp.CmdVirtualMachineResume, nil); p.ErrorCode() != 0 {
				t.Fatalf("Resume answered %v", p.ErrorCode())
			}
			if written := r.sp.Stats().WrittenBehind != before; written != c.written {
				t.Errorf("the first Resume written behind: %v, want %v", written, c.written)
			}
			r.vm.waitFor(jdwp.CmdVirtualMachineResume) // it reaches the VM either way
			r.dbg.quiet()
		})
	}
}

// jdwptestVersion is a Version reply body of the reference agent on the
// VM named vm.
func jdwptestVersion(vm string) []byte { return jdwptest.VersionBody(refAgent, vm) }

// vmDeathSet is java-debug's VM_DEATH request: no modifier.
func vmDeathSet() []byte {
	return body(func(w *jdwp.BodyWriter) {
		w.Uint8(uint8(jdwp.EventVMDeath))
		w.Uint8(uint8(jdwp.SuspendNone))
		w.Int32(0)
	})
}

// TestWriteBehindAfterInvoke: an invoke runs every thread, so nothing
// is known alive after it, but the thread it ran on: its reply proves it
// alive and, the VM having suspended it again, suspended. The next step's
// Set and Resume on that thread are written behind as before the invoke.
// Fails without writeBehind.invoked (both go to the VM first).
func TestWriteBehindAfterInvoke(t *testing.T) {
	r, v := newWBRig(t, true)
	r.vm.setHandler(func(p jdwp.Packet) (jdwp.ErrorCode, []byte) {
		if p.Cmd() == jdwp.CmdObjectReferenceInvokeMethod {
			return 0, body(func(w *jdwp.BodyWriter) {
				w.Value(jdwp.Value{Tag: jdwp.TagString, Bits: 0x77}) // the method's value
				w.Value(jdwp.Value{Tag: jdwp.TagObject})             // no exception
			})
		}
		return v.handler(p)
	})
	id := learned(t, r)
	invoke := body(func(w *jdwp.BodyWriter) {
		w.ObjectID(0x55)
		w.ObjectID(thread1)
		w.ReferenceTypeID(0x70)
		w.MethodID(0x72)
		w.Int32(0) // no arguments
		w.Int32(0) // options: all threads run
	})
	if p := r.dbg.call(nextID(), jdwp.CmdObjectReferenceInvokeMethod, invoke); p.ErrorCode() != 0 {
		t.Fatalf("InvokeMethod: %v", p.ErrorCode())
	}
	before := r.sp.Stats().WrittenBehind
	r.step(id, false)
	if got := r.sp.Stats().WrittenBehind - before; got != 3 {
		t.Errorf("written behind in the step after the invoke: %d, want 3 (Clear, Set, Resume)", got)
	}
}

// TestWriteBehindInsideAHeldMoment: at a step that left the other threads
// running, the thread list the debugger reads at every stop is read ahead
// in a moment, held open while it is out (session.stopMoment); the
// debugger's Clear and Set of its step requests, written behind, go to
// the VM inside it, and its Resume after the moment's own. Fails with a
// written-behind command closing the moment (two moments at a stop) or
// with the debugger's Resume inside it.
func TestWriteBehindInsideAHeldMoment(t *testing.T) {
	v := &reqVM{fs: &frameState{count: 3, values: 10}, next: 40}
	r := newRigWith(t, Config{WriteBehind: true}, func(p jdwp.Packet) (jdwp.ErrorCode, []byte) {
		if p.Cmd() == jdwp.CmdVirtualMachineVersion {
			return 0, jdwptestVersion("OpenJDK 64-Bit Server VM")
		}
		return v.handler(p)
	})
	r.dbg.call(nextID(), jdwp.CmdVirtualMachineVersion, nil)
	r.event(jdwp.SuspendEventThread, bpEvent(thread1))
	r.expectEvent()
	var id int32
	step := func(hold bool) {
		r.dbg.call(nextID(), jdwp.CmdVirtualMachineAllThreads, nil)
		if id > 0 {
			r.dbg.call(nextID(), jdwp.CmdEventRequestClear, clearBody(jdwp.EventSingleStep, id))
		}
		id = be32(r.dbg.call(nextID(), jdwp.CmdEventRequestSet, stepSet(thread1, true)).Body())
		r.dbg.call(nextID(), jdwp.CmdThreadReferenceResume, threadBody(thread1))
		r.vm.waitFor(jdwp.CmdThreadReferenceResume)
		r.barrier()
		if hold {
			r.vm.hold() // the thread list read ahead stays out: the moment stays open
		}
		r.event(jdwp.SuspendEventThread, stepEvent(id))
		r.expectEvent()
	}
	for range 2 { // the thread list learned; Clear, Set and Resume proven
		step(false)
	}
	from := len(r.vm.commands())
	step(true)
	r.vm.waitFor(jdwp.CmdVirtualMachineAllThreads)
	before := r.sp.Stats().WrittenBehind
	r.dbg.call(nextID(), jdwp.CmdEventRequestClear, clearBody(jdwp.EventSingleStep, id))
	r.dbg.call(nextID(), jdwp.CmdEventRequestSet, stepSet(thread1, true))
	r.dbg.call(nextID(), jdwp.CmdThreadReferenceResume, threadBody(thread1))
	if n := r.sp.Stats().WrittenBehind - before; n != 3 {
		t.Fatalf("%d of Clear, Set and Resume written behind, want 3", n)
	}
	r.vm.waitFor(jdwp.CmdThreadReferenceResume)
	r.vm.release()
	r.barrier()
	got := r.vm.commandsOf(from, jdwp.CmdVirtualMachineSuspend, jdwp.CmdVirtualMachineResume, jdwp.CmdEventRequestClear,
		jdwp.CmdEventRequestSet, jdwp.CmdThreadReferenceResume, jdwp.CmdVirtualMachineAllThreads)
	// The last step's commands, then the held stop's.
	want := []jdwp.Cmd{jdwp.CmdVirtualMachineAllThreads, jdwp.CmdEventRequestClear, jdwp.CmdEventRequestSet, jdwp.CmdThreadReferenceResume,
		jdwp.CmdVirtualMachineSuspend, jdwp.CmdVirtualMachineAllThreads, jdwp.CmdEventRequestClear,
		jdwp.CmdEventRequestSet, jdwp.CmdVirtualMachineResume, jdwp.CmdThreadReferenceResume}
	if !slices.Equal(got, want) {
		t.Errorf("the VM received %v, want %v", got, want)
	}
	r.dbg.quiet()
}
