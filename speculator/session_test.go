package speculator

import (
	"bytes"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/retag"
)

func isObsoleteBody(class, method uint64) []byte {
	return body(func(w *jdwp.BodyWriter) { w.ReferenceTypeID(class); w.MethodID(method) })
}

func TestHitServedWithDebuggerIDAndIdenticalBody(t *testing.T) {
	r, _ := newStopRig(t)
	before := r.sp.Stats()
	first := r.dbg.call(10, jdwp.CmdMethodIsObsolete, isObsoleteBody(0x70, 0x71))
	second := r.dbg.call(11, jdwp.CmdMethodIsObsolete, isObsoleteBody(0x70, 0x71))
	if second.ID() != 11 || !bytes.Equal(first.Body(), second.Body()) || second.ErrorCode() != first.ErrorCode() {
		t.Fatalf("hit: %v body %x, want id 11 body %x", second, second.Body(), first.Body())
	}
	if n := r.vm.count(jdwp.CmdMethodIsObsolete); n != 1 {
		t.Fatalf("VM saw IsObsolete %d times, want 1 (second is a hit)", n)
	}
	if st := r.sp.Stats(); st.Hits-before.Hits != 1 || st.Misses-before.Misses != 1 {
		t.Fatalf("stats %+v", st)
	}
	// A different method is a different key.
	r.dbg.call(12, jdwp.CmdMethodIsObsolete, isObsoleteBody(0x70, 0x72))
	if n := r.vm.count(jdwp.CmdMethodIsObsolete); n != 2 {
		t.Fatalf("VM saw IsObsolete %d times, want 2", n)
	}
}

func TestRedefineInvalidatesClassFacts(t *testing.T) {
	r, _ := newStopRig(t)
	r.dbg.call(10, jdwp.CmdMethodIsObsolete, isObsoleteBody(0x70, 0x71))
	r.dbg.call(11, jdwp.CmdMethodIsObsolete, isObsoleteBody(0x80, 0x81))
	redef := body(func(w *jdwp.BodyWriter) {
		w.Int32(1)
		w.ReferenceTypeID(0x70)
		w.Int32(2)
		w.Uint8(0xCA)
		w.Uint8(0xFE)
	})
	r.dbg.call(12, jdwp.CmdVirtualMachineRedefineClasses, redef)
	r.dbg.call(13, jdwp.CmdMethodIsObsolete, isObsoleteBody(0x70, 0x71))
	r.dbg.call(14, jdwp.CmdMethodIsObsolete, isObsoleteBody(0x80, 0x81))
	if n := r.vm.count(jdwp.CmdMethodIsObsolete); n != 3 {
		t.Fatalf("VM saw IsObsolete %d times, want 3 (redefined class re-asked, other class a hit)", n)
	}
}

func TestClassUnloadInvalidatesBySignature(t *testing.T) {
	r, _ := newStopRig(t)
	prev := r.vm.handle
	r.vm.setHandler(func(p jdwp.Packet) (jdwp.ErrorCode, []byte) {
		if p.Cmd() == jdwp.CmdReferenceTypeSignature {
			return 0, body(func(w *jdwp.BodyWriter) { w.String("LGone;") })
		}
		return prev(p)
	})
	r.dbg.call(10, jdwp.CmdReferenceTypeSignature, body(func(w *jdwp.BodyWriter) { w.ReferenceTypeID(0x70) }))
	r.dbg.call(11, jdwp.CmdMethodIsObsolete, isObsoleteBody(0x70, 0x71))
	r.dbg.call(12, jdwp.CmdMethodIsObsolete, isObsoleteBody(0x80, 0x81)) // 0x80: signature unknown
	r.dbg.call(13, jdwp.CmdMethodIsObsolete, isObsoleteBody(0x90, 0x91))
	r.dbg.call(14, jdwp.CmdReferenceTypeSignature, body(func(w *jdwp.BodyWriter) { w.ReferenceTypeID(0x90) })) // "LGone;" too per the script, but learned after
	r.event(jdwp.SuspendNone, jdwp.Event{Kind: jdwp.EventClassUnload, RequestID: 1, Signature: []byte("LOther;")})
	r.expectEvent()
	// 0x70 has a known other signature: kept. 0x80 was unsigned: dropped.
	r.dbg.call(15, jdwp.CmdMethodIsObsolete, isObsoleteBody(0x70, 0x71))
	r.dbg.call(16, jdwp.CmdMethodIsObsolete, isObsoleteBody(0x80, 0x81))
	if n := r.vm.count(jdwp.CmdMethodIsObsolete); n != 4 {
		t.Fatalf("IsObsolete seen %d times, want 4", n)
	}
	r.event(jdwp.SuspendNone, jdwp.Event{Kind: jdwp.EventClassUnload, RequestID: 1, Signature: []byte("LGone;")})
	r.expectEvent()
	r.dbg.call(17, jdwp.CmdMethodIsObsolete, isObsoleteBody(0x70, 0x71))
	r.dbg.call(18, jdwp.CmdMethodIsObsolete, isObsoleteBody(0x90, 0x91))
	if n := r.vm.count(jdwp.CmdMethodIsObsolete); n != 6 {
		t.Fatalf("IsObsolete seen %d times, want 6 (both classes of LGone; re-asked)", n)
	}
}

func TestSpeculationAndBelay(t *testing.T) {
	r, _ := newStopRig(t)
	before := r.sp.Stats()
	r.vm.hold()
	r.event(jdwp.SuspendAll, bpEvent(thread1))
	r.expectEvent()
	spec := r.vm.waitFor(jdwp.CmdThreadReferenceFrameCount)
	if !retag.InRange(spec.ID()) {
		t.Fatalf("speculative command has ID %#x, not in the synthetic range", spec.ID())
	}
	r.vm.waitFor(jdwp.CmdThreadReferenceFrames)
	// The debugger asks while the speculation is held at the VM: belay.
	r.dbg.send(20, jdwp.CmdThreadReferenceFrameCount, threadBody(thread1))
	r.dbg.send(21, jdwp.CmdThreadReferenceFrames, body(func(w *jdwp.BodyWriter) { w.ObjectID(thread1); w.Int32(0); w.Int32(-1) }))
	r.waitStats(func(st Stats) bool { return st.Belays-before.Belays == 2 })
	r.vm.release()
	p := r.dbg.read()
	if p.ID() != 20 || !p.IsReply() || be32(p.Body()) != 3 {
		t.Fatalf("belayed FrameCount: %v body %x", p, p.Body())
	}
	if p := r.dbg.read(); p.ID() != 21 {
		t.Fatalf("belayed Frames: %v", p)
	}
	if n := r.vm.count(jdwp.CmdThreadReferenceFrameCount); n != 1 {
		t.Fatalf("VM saw FrameCount %d times; belay must not resend", n)
	}
	// Served again from the cache within the same stop.
	if p := r.dbg.call(22, jdwp.CmdThreadReferenceFrameCount, threadBody(thread1)); be32(p.Body()) != 3 {
		t.Fatal("cached FrameCount")
	}
	r.dbg.quiet() // no synthetic reply leaked
	st := r.sp.Stats()
	if st.Belays-before.Belays != 2 || st.Hits-before.Hits != 1 || st.SpecSent == 0 || st.SpecUsed < 2 {
		t.Fatalf("stats %+v", st)
	}
}

func TestResumeInvalidatesSpeculationInFlight(t *testing.T) {
	r, fs := newStopRig(t)
	r.vm.hold()
	r.event(jdwp.SuspendAll, bpEvent(thread1))
	r.expectEvent()
	r.vm.waitFor(jdwp.CmdThreadReferenceFrameCount)
	// The debugger resumes before the speculation is answered; the VM
	// (FIFO) answers the speculation with the pre-resume state.
	r.dbg.send(30, jdwp.CmdVirtualMachineResume, nil)
	r.vm.waitFor(jdwp.CmdVirtualMachineResume)
	r.vm.release()
	if p := r.dbg.read(); p.ID() != 30 {
		t.Fatalf("resume reply: %v", p)
	}
	fs.set(7, 11) // the VM ran
	p := r.dbg.call(31, jdwp.CmdThreadReferenceFrameCount, threadBody(thread1))
	if got := be32(p.Body()); got != 7 {
		t.Fatalf("after resume FrameCount = %d, want 7 (pre-resume speculation served)", got)
	}
	if n := r.vm.count(jdwp.CmdThreadReferenceFrameCount); n != 2 {
		t.Fatalf("VM saw FrameCount %d times, want 2", n)
	}
	// The next stop is answered fresh and cached again.
	r.event(jdwp.SuspendAll, bpEvent(thread1))
	r.expectEvent()
	p = r.dbg.call(32, jdwp.CmdThreadReferenceFrameCount, threadBody(thread1))
	if be32(p.Body()) != 7 {
		t.Fatal("FrameCount at the second stop")
	}
	r.dbg.quiet()
}

// At a stop that suspended only its thread, a read of state the running
// threads may change is answered from the cache only as one moment
// (moment.go): the same read again, with nothing between, may be answered
// with the first answer (the other threads may not have run since); after
// a read of other running state went to the VM, or after a VM event, it is
// the VM's again. The stopped thread's own state stays cached; a running
// thread's is never cached.
func TestSuspendEventThreadScopesTheCache(t *testing.T) {
	r, fs := newStopRig(t)
	r.sp.cfg.MinRTT = 1 << 40 // organic caching only
	r.event(jdwp.SuspendEventThread, bpEvent(thread1))
	r.expectEvent()
	fieldsOf := func(obj uint64) []byte {
		return body(func(w *jdwp.BodyWriter) { w.ObjectID(obj); w.Int32(1); w.FieldID(0x5) })
	}
	value := func(p jdwp.Packet) int64 { return jdwp.NewBodyReader(p.Body()[4:], sizes8).Value().Int() }
	r.dbg.call(40, jdwp.CmdObjectReferenceGetValues, fieldsOf(0x99))
	fs.set(3, 12) // another thread changes the field
	if v := value(r.dbg.call(41, jdwp.CmdObjectReferenceGetValues, fieldsOf(0x99))); v != 10 || r.vm.count(jdwp.CmdObjectReferenceGetValues) != 1 {
		t.Fatalf("the same read again, nothing between: got %d, VM saw %d reads; want the first answer, 10, from the cache", v, r.vm.count(jdwp.CmdObjectReferenceGetValues))
	}
	r.dbg.call(42, jdwp.CmdObjectReferenceGetValues, fieldsOf(0x98)) // another object: to the VM, read after the change
	if v := value(r.dbg.call(43, jdwp.CmdObjectReferenceGetValues, fieldsOf(0x99))); v != 12 {
		t.Fatalf("after a later read of the running program, an earlier answer was served: %d, want 12", v)
	}
	fs.set(3, 13)
	r.event(jdwp.SuspendNone, jdwp.Event{Kind: jdwp.EventClassPrepare, RequestID: 9, Thread: 0x52, RefTypeTag: jdwp.TypeTagClass,
		TypeID: 0x80, Signature: []byte("LX;"), Status: 7})
	r.expectEvent()
	if v := value(r.dbg.call(44, jdwp.CmdObjectReferenceGetValues, fieldsOf(0x99))); v != 13 {
		t.Fatalf("after a VM event, an answer read before it was served: %d, want 13", v)
	}
	r.dbg.call(45, jdwp.CmdThreadReferenceFrameCount, threadBody(thread1))
	r.dbg.call(46, jdwp.CmdThreadReferenceFrameCount, threadBody(thread1))
	if n := r.vm.count(jdwp.CmdThreadReferenceFrameCount); n != 1 {
		t.Fatalf("the stopped thread's frame count must be cached (VM saw %d)", n)
	}
	// Another thread's frame count is not stable.
	r.dbg.call(47, jdwp.CmdThreadReferenceFrameCount, threadBody(0x52))
	r.dbg.call(48, jdwp.CmdThreadReferenceFrameCount, threadBody(0x52))
	if n := r.vm.count(jdwp.CmdThreadReferenceFrameCount); n != 3 {
		t.Fatalf("a running thread's frame count was cached (VM saw %d, want 3)", n)
	}
}

func TestInvokeInvalidatesAndRestoresSuspension(t *testing.T) {
	r, fs := newStopRig(t)
	r.sp.cfg.MinRTT = 1 << 40
	r.event(jdwp.SuspendAll, bpEvent(thread1))
	r.expectEvent()
	fields := body(func(w *jdwp.BodyWriter) { w.ObjectID(0x99); w.Int32(1); w.FieldID(0x5) })
	r.dbg.call(50, jdwp.CmdObjectReferenceGetValues, fields)
	r.dbg.call(51, jdwp.CmdObjectReferenceGetValues, fields) // hit
	fs.set(3, 13)                                            // toString has a side effect
	r.dbg.call(52, jdwp.CmdObjectReferenceInvokeMethod, body(func(w *jdwp.BodyWriter) {
		w.ObjectID(0x99)
		w.ObjectID(thread1)
		w.ReferenceTypeID(0x70)
		w.MethodID(0x72)
		w.Int32(0)
		w.Int32(1)
	}))
	p := r.dbg.call(53, jdwp.CmdObjectReferenceGetValues, fields)
	if v := jdwp.NewBodyReader(p.Body()[4:], sizes8).Value(); v.Int() != 13 {
		t.Fatalf("stale value after invoke: %v", v)
	}
	r.dbg.call(54, jdwp.CmdObjectReferenceGetValues, fields) // suspended again: a hit
	if n := r.vm.count(jdwp.CmdObjectReferenceGetValues); n != 2 {
		t.Fatalf("VM saw GetValues %d times, want 2", n)
	}
}

func TestDebuggerIDInSyntheticRangeIsRemapped(t *testing.T) {
	r, _ := newStopRig(t)
	// Make a speculation hold the first synthetic ID.
	r.vm.hold()
	r.event(jdwp.SuspendAll, bpEvent(thread1))
	r.expectEvent()
	syn := r.vm.waitFor(jdwp.CmdThreadReferenceFrameCount).ID()
	r.dbg.send(syn, jdwp.CmdVirtualMachineAllClasses, nil)
	got := r.vm.waitFor(jdwp.CmdVirtualMachineAllClasses)
	if got.ID() == syn || !retag.InRange(got.ID()) {
		t.Fatalf("debugger ID %#x reached the VM as %#x", syn, got.ID())
	}
	r.vm.release()
	p := r.dbg.read()
	if p.ID() != syn || !p.IsReply() {
		t.Fatalf("reply %v, want ID %#x", p, syn)
	}
	// A stray in-range reply from the VM never reaches the debugger.
	r.vm.write(jdwp.AppendReply(nil, 0xFFFFFFF0, 0, []byte("stray")))
	r.dbg.quiet()
}

func TestUnknownCommandInvalidatesStopState(t *testing.T) {
	r, _ := newStopRig(t)
	r.sp.cfg.MinRTT = 1 << 40
	r.event(jdwp.SuspendAll, bpEvent(thread1))
	r.expectEvent()
	r.dbg.call(60, jdwp.CmdThreadReferenceFrameCount, threadBody(thread1))
	r.dbg.call(61, jdwp.Cmd{Set: 99, Cmd: 1}, nil)
	r.dbg.call(62, jdwp.CmdThreadReferenceFrameCount, threadBody(thread1))
	// Event requests do not change state.
	r.dbg.call(63, jdwp.CmdEventRequestClear, body(func(w *jdwp.BodyWriter) { w.Uint8(1); w.Int32(3) }))
	r.dbg.call(64, jdwp.CmdThreadReferenceFrameCount, threadBody(thread1))
	if n := r.vm.count(jdwp.CmdThreadReferenceFrameCount); n != 2 {
		t.Fatalf("VM saw FrameCount %d times, want 2", n)
	}
}

func TestErrorRepliesAreNotCached(t *testing.T) {
	r, _ := newStopRig(t)
	r.sp.cfg.MinRTT = 1 << 40
	r.vm.setHandler(func(p jdwp.Packet) (jdwp.ErrorCode, []byte) { return jdwp.ErrorThreadNotSuspended, nil })
	r.event(jdwp.SuspendAll, bpEvent(thread1))
	r.expectEvent()
	r.dbg.call(70, jdwp.CmdThreadReferenceFrameCount, threadBody(thread1))
	r.dbg.call(71, jdwp.CmdThreadReferenceFrameCount, threadBody(thread1))
	if n := r.vm.count(jdwp.CmdThreadReferenceFrameCount); n != 2 {
		t.Fatalf("an error reply was cached")
	}
}

// TestConsumedReplyDoesNotStallForwardedOne: the VM's reply to a debugger
// command shares a TCP segment with synthetic replies the speculator
// absorbs; the debugger's reply must still be delivered (flushed).
func TestConsumedReplyDoesNotStallForwardedOne(t *testing.T) {
	r, _ := newStopRig(t)
	r.vm.hold()
	r.dbg.send(80, jdwp.CmdVirtualMachineAllClasses, nil)
	r.vm.waitFor(jdwp.CmdVirtualMachineAllClasses)
	r.event(jdwp.SuspendAll, bpEvent(thread1))
	r.expectEvent()
	r.vm.waitFor(jdwp.CmdThreadReferenceStatus) // the last default speculation
	r.vm.release()
	if p := r.dbg.read(); p.ID() != 80 || !p.IsReply() {
		t.Fatalf("got %v, want the reply to 80", p)
	}
}

// TestDerivedRulesPredictOnlyAskedCommands checks that rules derived from
// replies predict only commands the debugger has sent: Method.IsObsolete
// and Method.LineTable of each frame are not speculated until the
// debugger asks them once, and then are for a frame method never seen.
func TestDerivedRulesPredictOnlyAskedCommands(t *testing.T) {
	r, fs := newStopRig(t)
	method := func() uint64 { fs.mu.Lock(); defer fs.mu.Unlock(); return 0x100 + uint64(fs.count) }
	r.vm.setHandler(func(p jdwp.Packet) (jdwp.ErrorCode, []byte) {
		if p.Cmd() == jdwp.CmdThreadReferenceFrames {
			m := method()
			return 0, body(func(w *jdwp.BodyWriter) {
				w.Int32(1)
				w.FrameID(0xF0 + m)
				w.Location(jdwp.Location{TypeTag: 1, Class: 0x70, Method: m, Index: 4})
			})
		}
		return fs.handler(p)
	})
	framesBody := body(func(w *jdwp.BodyWriter) { w.ObjectID(thread1); w.Int32(0); w.Int32(-1) })
	methodBody := func(m uint64) []byte {
		return body(func(w *jdwp.BodyWriter) { w.ReferenceTypeID(0x70); w.MethodID(m) })
	}
	other := threadBody(0x99)

	r.event(jdwp.SuspendAll, bpEvent(thread1))
	r.expectEvent()
	// The debugger uses the first-stop guesses, so speculation stays on.
	r.dbg.call(16, jdwp.CmdThreadReferenceFrameCount, threadBody(thread1))
	r.dbg.call(17, jdwp.CmdVirtualMachineAllThreads, nil)
	r.dbg.call(18, jdwp.CmdThreadReferenceName, threadBody(thread1))
	r.dbg.call(19, jdwp.CmdThreadReferenceStatus, threadBody(thread1))
	r.dbg.call(20, jdwp.CmdThreadReferenceFrames, framesBody)
	// A command the VM answers after any speculation the Frames reply
	// started (the VM answers in arrival order).
	r.dbg.call(21, jdwp.CmdThreadReferenceStatus, other)
	if n, m := r.vm.count(jdwp.CmdMethodIsObsolete), r.vm.count(jdwp.CmdMethodLineTable); n != 0 || m != 0 {
		t.Fatalf("never-asked commands speculated: IsObsolete %d, LineTable %d", n, m)
	}
	r.dbg.call(22, jdwp.CmdMethodIsObsolete, methodBody(method()))
	r.dbg.call(23, jdwp.CmdMethodLineTable, methodBody(method()))
	r.dbg.call(24, jdwp.CmdVirtualMachineResume, nil)

	fs.set(4, 10) // a new top method at the next stop
	before := r.sp.Stats()
	r.event(jdwp.SuspendAll, bpEvent(thread1))
	r.expectEvent()
	r.dbg.call(25, jdwp.CmdThreadReferenceFrames, framesBody)
	r.dbg.call(26, jdwp.CmdMethodIsObsolete, methodBody(method()))
	r.dbg.call(27, jdwp.CmdMethodLineTable, methodBody(method()))
	st := r.sp.Stats()
	if saved := st.RoundTripsSaved - before.RoundTripsSaved; saved != 3 {
		t.Errorf("%d of Frames, IsObsolete, LineTable served by speculation, want 3 (stats %+v)", saved, st)
	}
	if n, m := r.vm.count(jdwp.CmdMethodIsObsolete), r.vm.count(jdwp.CmdMethodLineTable); n != 2 || m != 2 {
		t.Errorf("VM saw IsObsolete %d, LineTable %d times; want 2 each (asked once, speculated once)", n, m)
	}
}

// TestBelayedNotSuspendedIsAskedAgain: the VM answers a speculative Frames
// THREAD_NOT_SUSPENDED for the thread the proxy believed suspended (a wrong
// "suspended" fact). The debugger command belayed on it must not be
// answered with that error: it is asked again, and the wrong belief is
// dropped with what was cached under it.
func TestBelayedNotSuspendedIsAskedAgain(t *testing.T) {
	r, fs := newStopRig(t)
	var mu sync.Mutex
	frames := 0
	r.vm.setHandler(func(p jdwp.Packet) (jdwp.ErrorCode, []byte) {
		if p.Cmd() == jdwp.CmdThreadReferenceFrames {
			mu.Lock()
			frames++
			first := frames == 1
			mu.Unlock()
			if first {
				return jdwp.ErrorThreadNotSuspended, nil
			}
		}
		return fs.handler(p)
	})
	r.vm.hold()
	r.event(jdwp.SuspendEventThread, bpEvent(thread1))
	r.expectEvent()
	r.vm.waitFor(jdwp.CmdThreadReferenceFrameCount)
	r.vm.waitFor(jdwp.CmdThreadReferenceFrames)
	before := r.sp.Stats()
	r.dbg.send(80, jdwp.CmdThreadReferenceFrames, body(func(w *jdwp.BodyWriter) { w.ObjectID(thread1); w.Int32(0); w.Int32(-1) }))
	r.waitStats(func(st Stats) bool { return st.Belays-before.Belays == 1 })
	r.vm.release()
	p := r.dbg.read()
	if p.ID() != 80 || !p.IsReply() {
		t.Fatalf("belayed Frames: %v", p)
	}
	if p.ErrorCode() != 0 {
		t.Fatalf("belayed Frames answered with the speculation's error %v", p.ErrorCode())
	}
	if n := r.vm.count(jdwp.CmdThreadReferenceFrames); n != 2 {
		t.Fatalf("VM saw Frames %d times, want 2 (speculation, then asked again)", n)
	}
	// The FrameCount speculated under the wrong belief is not served.
	r.dbg.call(81, jdwp.CmdThreadReferenceFrameCount, threadBody(thread1))
	if n := r.vm.count(jdwp.CmdThreadReferenceFrameCount); n != 2 {
		t.Fatalf("VM saw FrameCount %d times, want 2: a reply cached under a wrong suspension was served", n)
	}
	r.dbg.quiet()
}

// The known threads' names are speculated at a stop only when the
// debugger asked the name of a thread other than the stopped one at its
// last stop: a debugger that names only the thread that stopped (jdb)
// is not sent every thread's name.
func TestKnownThreadsNamedOnlyForADebuggerThatListsThem(t *testing.T) {
	r, fs := newStopRig(t)
	fs.threads = []uint64{thread1, 0x52, 0x53}
	specNames := func(thread uint64) int { // the proxy's own Name commands for thread
		n := 0
		for _, p := range r.vm.commands() {
			if p.Cmd() == jdwp.CmdThreadReferenceName && retag.InRange(p.ID()) && jdwp.NewBodyReader(p.Body(), sizes8).ObjectID() == thread {
				n++
			}
		}
		return n
	}
	id := uint32(100)
	stop := func(names ...uint64) {
		r.event(jdwp.SuspendAll, bpEvent(thread1))
		r.expectEvent()
		for _, c := range []jdwp.Cmd{jdwp.CmdVirtualMachineAllThreads} {
			id++
			r.dbg.call(id, c, nil)
		}
		for _, th := range names {
			id++
			r.dbg.call(id, jdwp.CmdThreadReferenceName, threadBody(th))
		}
		id++
		r.dbg.call(id, jdwp.CmdVirtualMachineVersion, nil) // the VM has read what was sent before
		id++
		r.dbg.call(id, jdwp.CmdVirtualMachineResume, nil)
	}
	stop(thread1)
	stop(thread1)
	if n := specNames(0x52); n != 0 {
		t.Fatalf("the proxy asked thread 0x52's name %d times; the debugger only ever named the stopped thread", n)
	}
	stop(thread1, 0x52, 0x53)
	stop(thread1, 0x52, 0x53)
	if specNames(0x52) == 0 || specNames(0x53) == 0 {
		t.Fatalf("after a stop that named the other threads, their names are not speculated (asked %d, %d times)", specNames(0x52), specNames(0x53))
	}
}

// TestNativeFramesGetNoTables: a frame in a native method (code index -1)
// has no line or variable table, and JDI knows it from the method's
// modifiers: the frame rules read neither ahead for it, where they do for
// a frame with code. Fails without the native check in specClassMeta.
func TestNativeFramesGetNoTables(t *testing.T) {
	r, fs := newStopRig(t)
	var mu sync.Mutex
	index := uint64(4)
	method := func() uint64 { fs.mu.Lock(); defer fs.mu.Unlock(); return 0x100 + uint64(fs.count) }
	r.vm.setHandler(func(p jdwp.Packet) (jdwp.ErrorCode, []byte) {
		if p.Cmd() == jdwp.CmdThreadReferenceFrames {
			m := method()
			mu.Lock()
			i := index
			mu.Unlock()
			return 0, body(func(w *jdwp.BodyWriter) {
				w.Int32(1)
				w.FrameID(0xF0 + m)
				w.Location(jdwp.Location{TypeTag: 1, Class: 0x70, Method: m, Index: i})
			})
		}
		return fs.handler(p)
	})
	framesBody := body(func(w *jdwp.BodyWriter) { w.ObjectID(thread1); w.Int32(0); w.Int32(-1) })
	methodBody := func(m uint64) []byte {
		return body(func(w *jdwp.BodyWriter) { w.ReferenceTypeID(0x70); w.MethodID(m) })
	}
	tables := func(m uint64) int {
		n := 0
		for _, p := range r.vm.commands() {
			br := jdwp.NewBodyReader(p.Body(), sizes8)
			if br.ReferenceTypeID(); p.Cmd() == jdwp.CmdMethodLineTable && br.MethodID() == m {
				n++
			}
		}
		return n
	}
	stop := func(id uint32, native bool, top int32) {
		mu.Lock()
		index = 4
		if native {
			index = ^uint64(0) // -1: a native method
		}
		mu.Unlock()
		fs.set(top, 10)
		r.event(jdwp.SuspendAll, bpEvent(thread1))
		r.expectEvent()
		r.dbg.call(id, jdwp.CmdThreadReferenceFrames, framesBody)
		// Answered by the VM after whatever the Frames reply started.
		r.dbg.call(id+1, jdwp.CmdThreadReferenceStatus, threadBody(0x99))
		r.dbg.call(id+2, jdwp.CmdThreadReferenceStatus, threadBody(0x98))
	}
	stop(20, false, 1)
	// The debugger uses the first stop's guesses, so speculation stays on.
	r.dbg.call(25, jdwp.CmdThreadReferenceFrameCount, threadBody(thread1))
	r.dbg.call(26, jdwp.CmdVirtualMachineAllThreads, nil)
	r.dbg.call(27, jdwp.CmdThreadReferenceName, threadBody(thread1))
	r.dbg.call(28, jdwp.CmdThreadReferenceStatus, threadBody(thread1))
	r.dbg.call(30, jdwp.CmdMethodLineTable, methodBody(method()))
	r.dbg.call(31, jdwp.CmdVirtualMachineResume, nil)
	stop(40, true, 2) // a new method, native
	native := method()
	if n := tables(native); n != 0 {
		t.Errorf("the VM got %d line tables of the native frame's method, want none", n)
	}
	r.dbg.call(50, jdwp.CmdVirtualMachineResume, nil)
	stop(60, false, 3) // a new method with code
	// The debugger's line table at the first stop, and this one's.
	r.vm.waitCount(jdwp.CmdMethodLineTable, 2)
	if n := tables(method()); n != 1 {
		t.Errorf("the VM got %d line tables of the frame's method, want the one read ahead", n)
	}
	if n := tables(native); n != 0 {
		t.Errorf("the VM got %d line tables of the native frame's method by the end, want none", n)
	}
}

// TestBelayedAnswerLeavesFirst: a debugger command belayed on a
// speculation is answered as soon as the speculation's reply is in: its
// answer is on its way (observed) while the speculator is still taking in
// what the reply teaches and leads to, not once it is done.
func TestBelayedAnswerLeavesFirst(t *testing.T) {
	sp := newTestSpeculator(Config{})
	var during, after atomic.Int32 // belayed answers observed in the speculator's call, after it
	rigObservers.Store(sp, func(ss *session) relay.Observer {
		return observerFunc(func(_ *relay.Session, f *relay.Frame) {
			if f.Dir != relay.ToDebugger || f.Origin != relay.Belay {
				return
			}
			if ss.mu.TryLock() {
				ss.mu.Unlock()
				after.Add(1)
			} else {
				during.Add(1)
			}
		})
	})
	fs := &frameState{count: 3, values: 10}
	r := startRigWith(t, sp, fs.handler)
	r.dbg.call(1, jdwp.CmdIDSizes, nil) // (answered, maybe belayed on the attach's own)
	before := r.sp.Stats()
	r.vm.hold()
	r.event(jdwp.SuspendAll, bpEvent(thread1))
	r.expectEvent()
	r.vm.waitFor(jdwp.CmdThreadReferenceFrames)
	r.dbg.send(20, jdwp.CmdThreadReferenceFrames, body(func(w *jdwp.BodyWriter) { w.ObjectID(thread1); w.Int32(0); w.Int32(-1) }))
	r.waitStats(func(st Stats) bool { return st.Belays-before.Belays == 1 })
	r.vm.release()
	if p := r.dbg.read(); p.ID() != 20 || p.ErrorCode() != 0 {
		t.Fatalf("belayed Frames: %v", p)
	}
	if during.Load() == 0 || after.Load() != 0 {
		t.Errorf("belayed answers observed during the speculator's call %d, after it %d; want all during", during.Load(), after.Load())
	}
}
