package push

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/retag"
	"github.com/jdwpaccel/jdwpaccel/speculator"
	"github.com/rs/zerolog"
)

// The scripted VM's world: one suspended thread with one frame.
const (
	thread1 = 0x11
	frame1  = 0x21
	class1  = 0x31
	method1 = 0x41
)

func idsBody() []byte { return jdwp.AppendIDSizes(nil, sizes8) }

func threadParams(t uint64) []byte {
	w := jdwp.BodyWriter{Sizes: sizes8}
	w.ObjectID(t)
	return w.Buf
}

func strBody(s string) []byte {
	w := jdwp.BodyWriter{Sizes: sizes8}
	w.String(s)
	return w.Buf
}

func intBody(vs ...int32) []byte {
	w := jdwp.BodyWriter{Sizes: sizes8}
	for _, v := range vs {
		w.Int32(v)
	}
	return w.Buf
}

// vmScript answers what a speculator asks at a stop of thread1.
func vmScript() map[jdwp.Cmd]jdwptest.ReplyFunc {
	frames := jdwp.BodyWriter{Sizes: sizes8}
	frames.Int32(1)
	frames.FrameID(frame1)
	frames.Uint8(uint8(jdwp.TypeTagClass))
	frames.ReferenceTypeID(class1)
	frames.MethodID(method1)
	frames.Int64(3)
	threads := jdwp.BodyWriter{Sizes: sizes8}
	threads.Int32(1)
	threads.ObjectID(thread1)
	return map[jdwp.Cmd]jdwptest.ReplyFunc{
		jdwp.CmdIDSizes:                     jdwptest.Body(idsBody()),
		jdwp.CmdThreadReferenceFrameCount:   jdwptest.Body(intBody(1)),
		jdwp.CmdThreadReferenceFrames:       jdwptest.Body(frames.Buf),
		jdwp.CmdVirtualMachineAllThreads:    jdwptest.Body(threads.Buf),
		jdwp.CmdThreadReferenceName:         jdwptest.Body(strBody("main")),
		jdwp.CmdThreadReferenceStatus:       jdwptest.Body(intBody(1, 1)),
		jdwp.CmdVirtualMachineResume:        jdwptest.Body(nil),
		jdwp.CmdObjectReferenceSetValues:    jdwptest.Body(nil),
		jdwp.CmdVirtualMachineAllClasses:    jdwptest.Body(intBody(0)),
		jdwp.CmdThreadReferenceSuspendCount: jdwptest.Body(intBody(1)),
	}
}

// stopEvent is an Event.Composite of a SINGLE_STEP of thread1, suspending
// the VM.
func stopEvent(id uint32) jdwp.Packet {
	c := jdwp.Composite{SuspendPolicy: jdwp.SuspendAll, Events: []jdwp.Event{{
		Kind: jdwp.EventSingleStep, RequestID: 5, Thread: thread1,
		Location: jdwp.Location{TypeTag: jdwp.TypeTagClass, Class: class1, Method: method1, Index: 3},
	}}}
	return jdwp.AppendCommand(nil, id, jdwp.CmdComposite, jdwptest.AppendComposite(nil, sizes8, &c))
}

// attach starts a relay server in front of vm with hooks and attaches a
// debugger that has learned the ID sizes.
func attach(t *testing.T, vmAddr string, hooks func(*relay.Session) relay.Hooks, maxOutstanding int) *jdwptest.Debugger {
	t.Helper()
	addr := serve(t, relay.Config{DialVM: relay.DialTCP(vmAddr), NewHooks: hooks, MaxOutstanding: maxOutstanding, Logger: zerolog.Nop()})
	d, err := jdwptest.Attach(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if _, err := d.Call(jdwp.CmdIDSizes, nil); err != nil {
		t.Fatal(err)
	}
	return d
}

func newSpec() *speculator.Speculator {
	return speculator.New(speculator.Config{}, zerolog.Nop(), nil)
}

// next reads the debugger's next packet, failing the test on an error.
func next(t *testing.T, d *jdwptest.Debugger) jdwp.Packet {
	t.Helper()
	p, err := d.Next()
	if err != nil {
		t.Fatal(err)
	}
	return p.Clone()
}

// stopBundle has vm send stop event ev and returns the bundle the far end
// in front of it sent first to its debugger d, read with c.
func stopBundle(t *testing.T, vm *jdwptest.VM, d *jdwptest.Debugger, ev jdwp.Packet, c *codec) (jdwp.Packet, Header, []Record) {
	t.Helper()
	if err := vm.Send(ev); err != nil {
		t.Fatal(err)
	}
	b := next(t, d)
	if b.IsReply() || b.Cmd() != CmdBundle {
		t.Fatalf("first packet %v, want a bundle", b)
	}
	p := parser{c: c}
	h, recs, err := p.parse(b.Body(), false)
	if err != nil {
		t.Fatal(err)
	}
	return b, h, recs
}

// TestFarSendsBundleBeforeEvent: at a stop, the far end's debugger (the
// near end) gets one bundle of the speculation's replies, then the event,
// byte for byte as the VM sent it.
func TestFarSendsBundleBeforeEvent(t *testing.T) {
	vm := jdwptest.StartVM(t, jdwptest.Script{Replies: vmScript()})
	cnt := new(Counters)
	d := attach(t, vm.Addr(), FarHooks(newSpec(), Config{MaxHold: time.Minute, Counters: cnt}), 0)
	// A command that may change the VM's state (the debugger's command 2):
	// the bundle's fence names it.
	if _, err := d.Call(jdwp.CmdObjectReferenceSetValues, append(threadParams(thread1), 0, 0, 0, 0)); err != nil {
		t.Fatal(err)
	}
	ev := stopEvent(77)
	var c codec
	defer c.close()
	b, h, recs := stopBundle(t, vm, d, ev, &c)
	if h.Fence != fenceOf(2) {
		t.Errorf("bundle fence %#x, want %#x (the SetValues)", h.Fence, fenceOf(2))
	}
	got := map[jdwp.Cmd]bool{}
	for _, r := range recs {
		got[r.Cmd] = true
	}
	for _, want := range []jdwp.Cmd{jdwp.CmdThreadReferenceFrames, jdwp.CmdVirtualMachineAllThreads, jdwp.CmdThreadReferenceName} {
		if !got[want] {
			t.Errorf("bundle %+v lacks %v (has %v)", h, want, got)
		}
	}
	if e := next(t, d); string(e) != string(ev) {
		t.Fatalf("after the bundle %v, want the stop event", e)
	}
	if st := cnt.Stats(); st.Stops != 1 || st.Bundles != 1 || st.BytesSent != int64(len(b)) || st.HoldExpiry != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestFarCapsBytesPerStop: a stop's bundles stay within MaxBytesPerStop,
// the records left out are counted, and the event still comes.
func TestFarCapsBytesPerStop(t *testing.T) {
	vm := jdwptest.StartVM(t, jdwptest.Script{Replies: vmScript()})
	cnt := new(Counters)
	const limit = 110
	d := attach(t, vm.Addr(), FarHooks(newSpec(), Config{MaxHold: time.Minute, MaxBytesPerStop: limit, Counters: cnt}), 0)
	if err := vm.Send(stopEvent(77)); err != nil {
		t.Fatal(err)
	}
	total := 0
	for {
		p := next(t, d)
		if p.Cmd() == jdwp.CmdComposite {
			break
		}
		if p.Cmd() != CmdBundle {
			t.Fatalf("unexpected %v", p)
		}
		total += len(p)
	}
	st := cnt.Stats()
	if total > limit || st.BytesSent != int64(total) {
		t.Errorf("%d bundle bytes for the stop (stats %d), cap %d", total, st.BytesSent, limit)
	}
	if st.Capped == 0 || st.Records == 0 {
		t.Errorf("stats %+v: want some records sent and some capped", st)
	}
}

// TestFarHoldBound: a stop whose speculation does not finish is released
// by MaxHold, with what was gathered by then.
func TestFarHoldBound(t *testing.T) {
	vm, unstick := stuckVM(t)
	defer unstick()
	cnt := new(Counters)
	d := attach(t, vm.Addr(), FarHooks(newSpec(), Config{MaxHold: 30 * time.Millisecond, Counters: cnt}), 0)
	ev := stopEvent(77)
	if err := vm.Send(ev); err != nil {
		t.Fatal(err)
	}
	for {
		p := next(t, d)
		if p.Cmd() == jdwp.CmdComposite {
			if string(p) != string(ev) {
				t.Fatalf("event %v", p)
			}
			break
		}
	}
	if st := cnt.Stats(); st.HoldExpiry != 1 {
		t.Errorf("stats %+v: want the event released by the hold bound", st)
	}
}

// stuckVM is a scripted VM that does not answer ThreadReference.Status,
// nor any command after it, until unstick is called (at the latest when
// the test ends, before the VM closes).
func stuckVM(t *testing.T) (vm *jdwptest.VM, unstick func()) {
	release := make(chan struct{})
	var once sync.Once
	unstick = func() { once.Do(func() { close(release) }) }
	script := vmScript()
	script[jdwp.CmdThreadReferenceStatus] = func(jdwp.Packet) (jdwp.ErrorCode, []byte) {
		<-release
		return 0, intBody(1, 1)
	}
	vm = jdwptest.StartVM(t, jdwptest.Script{Replies: script})
	t.Cleanup(unstick) // runs before the VM's own cleanup, which waits for it
	return vm, unstick
}

// bundlePacket is a CmdBundle packet for stop with fence and recs.
func bundlePacket(id uint32, stop, fence uint64, recs []Record) jdwp.Packet {
	return jdwp.AppendCommand(nil, id, CmdBundle, encodeBundle(Header{Stop: stop, Fence: fence}, recs, nil))
}

func nameRecord(name string) Record {
	return Record{Cmd: jdwp.CmdThreadReferenceName, Params: threadParams(thread1), Body: strBody(name)}
}

func statusRecord() Record {
	return Record{Cmd: jdwp.CmdThreadReferenceStatus, Params: threadParams(thread1), Body: intBody(1, 1)}
}

// pushStop sends a far end's bundle, then the stop event it goes with.
func pushStop(t *testing.T, vm *jdwptest.VM, bundle, ev jdwp.Packet) {
	t.Helper()
	if err := vm.Send(append(bundle, ev...)); err != nil {
		t.Fatal(err)
	}
}

// count is how many commands c vm received.
func count(vm *jdwptest.VM, c jdwp.Cmd) int {
	n := 0
	for _, p := range vm.Commands() {
		if p.Cmd() == c {
			n++
		}
	}
	return n
}

// nearSetup is a near end whose "VM" is a scripted far end.
func nearSetup(t *testing.T, maxOutstanding int) (*jdwptest.VM, *jdwptest.Debugger, *Counters) {
	vm := jdwptest.StartVM(t, jdwptest.Script{Replies: vmScript()})
	cnt := new(Counters)
	d := attach(t, vm.Addr(), NearHooks(newSpec(), Config{Counters: cnt}), maxOutstanding)
	return vm, d, cnt
}

// TestNearServesBundleAndReportsUsage: a bundle never reaches the
// debugger, its records answer the debugger's reads at its stop, and the
// reads it answered are reported to the far end before the resume.
func TestNearServesBundleAndReportsUsage(t *testing.T) {
	vm, d, cnt := nearSetup(t, 0)
	ev := stopEvent(77)
	pushStop(t, vm, bundlePacket(1, 1, 0, []Record{nameRecord("pushed")}), ev)
	if p := next(t, d); string(p) != string(ev) {
		t.Fatalf("first packet %v, want the event (the bundle must not reach the debugger)", p)
	}
	r, err := d.Call(jdwp.CmdThreadReferenceName, threadParams(thread1))
	if err != nil {
		t.Fatal(err)
	}
	if got := jdwp.NewBodyReader(r.Body(), sizes8).String(); got != "pushed" {
		t.Errorf("name %q, want the pushed reply", got)
	}
	if n := count(vm, jdwp.CmdThreadReferenceName); n != 0 {
		t.Errorf("the far end got %d Name commands, want the near end to answer", n)
	}
	if _, err := d.Call(jdwp.CmdVirtualMachineResume, nil); err != nil {
		t.Fatal(err)
	}
	cmds := vm.Commands()
	var usage jdwp.Packet
	reports := 0
	for i, p := range cmds {
		if p.Cmd() != CmdUsage {
			continue
		}
		if reports++; reports == 1 {
			continue // the debugger's first command (TestNearReportsFirstCommand)
		}
		usage = p
		if i+1 >= len(cmds) || cmds[i+1].Cmd() != jdwp.CmdVirtualMachineResume {
			t.Errorf("usage report not right before the resume: %v", cmds)
		}
	}
	if usage == nil {
		t.Fatalf("no usage report among %v", cmds)
	}
	for _, p := range cmds {
		switch c := p.Cmd(); c {
		case jdwp.CmdIDSizes, CmdUsage, jdwp.CmdVirtualMachineResume:
		case jdwp.CmdVirtualMachineVersion, jdwp.CmdVirtualMachineCapabilitiesNew:
			// The attach's prefetch (speculator.ModeNear), at the
			// debugger's first command: nothing of the stop's.
		default:
			t.Errorf("the near end sent %v of its own (it must not speculate): %v", c, cmds)
		}
	}
	var c codec
	defer c.close()
	p := parser{c: &c}
	h, recs, err := p.parse(usage.Body(), true)
	if err != nil || h.Stop != 1 || len(recs) != 1 || recs[0].Cmd != jdwp.CmdThreadReferenceName {
		t.Errorf("usage %+v %+v %v", h, recs, err)
	}
	if st := cnt.Stats(); st.Stored != 1 || st.BundlesReceived != 1 || st.UsageReports != 2 {
		t.Errorf("stats %+v", st)
	}
}

// TestNearReportsUsageBeforeAMiss: the hits of a stop are reported
// before a read the near end could not answer goes to the far end, so
// the far end learns the order the debugger read in.
func TestNearReportsUsageBeforeAMiss(t *testing.T) {
	vm, d, _ := nearSetup(t, 0)
	ev := stopEvent(77)
	pushStop(t, vm, bundlePacket(1, 1, 0, []Record{nameRecord("pushed")}), ev)
	next(t, d)
	if _, err := d.Call(jdwp.CmdThreadReferenceName, threadParams(thread1)); err != nil { // a hit
		t.Fatal(err)
	}
	if _, err := d.Call(jdwp.CmdThreadReferenceName, threadParams(0x52)); err != nil { // a miss
		t.Fatal(err)
	}
	cmds := vm.Commands()
	usage, miss := -1, -1
	for i, p := range cmds {
		switch {
		case p.Cmd() == CmdUsage && usage < 0:
			usage = i
		case p.Cmd() == jdwp.CmdThreadReferenceName:
			miss = i
		}
	}
	if usage < 0 || miss < 0 || usage > miss {
		t.Fatalf("the far end got the usage report at %d and the missed read at %d: want the report first (%v)", usage, miss, cmds)
	}
}

// TestNearDropsStaleBundles: a bundle for a stop the debugger has resumed
// from is dropped, and so is one gathered before the far end saw a command
// the debugger sent that may change the VM's state.
func TestNearDropsStaleBundles(t *testing.T) {
	vm, d, cnt := nearSetup(t, 0)
	ev := stopEvent(77)
	pushStop(t, vm, bundlePacket(1, 1, 0, []Record{nameRecord("pushed")}), ev)
	next(t, d)
	if _, err := d.Call(jdwp.CmdVirtualMachineResume, nil); err != nil {
		t.Fatal(err)
	}
	// A late bundle of stop 1, after the resume.
	if err := vm.Send(bundlePacket(2, 1, 1, []Record{statusRecord()})); err != nil {
		t.Fatal(err)
	}
	// Stop 2, whose bundle the far end gathered before it received the
	// SetValues below (its fence: the Resume, the debugger's command 2).
	if _, err := d.Call(jdwp.CmdObjectReferenceSetValues, append(threadParams(thread1), 0, 0, 0, 0)); err != nil {
		t.Fatal(err)
	}
	pushStop(t, vm, bundlePacket(3, 2, fenceOf(2), []Record{nameRecord("stale")}), stopEvent(78))
	for {
		if p := next(t, d); p.Cmd() == jdwp.CmdComposite {
			break
		}
	}
	r, err := d.Call(jdwp.CmdThreadReferenceName, threadParams(thread1))
	if err != nil {
		t.Fatal(err)
	}
	if got := jdwp.NewBodyReader(r.Body(), sizes8).String(); got != "main" {
		t.Errorf("name %q, want the VM's (the pushed one was stale)", got)
	}
	if st := cnt.Stats(); st.BundlesStale != 2 || st.Stored != 1 {
		t.Errorf("stats %+v: want 2 stale bundles", st)
	}
	// Stop 3, gathered after the far end received the Resume (command 5):
	// used.
	if _, err := d.Call(jdwp.CmdVirtualMachineResume, nil); err != nil {
		t.Fatal(err)
	}
	pushStop(t, vm, bundlePacket(4, 3, fenceOf(5), []Record{nameRecord("fresh")}), stopEvent(79))
	for {
		if p := next(t, d); p.Cmd() == jdwp.CmdComposite {
			break
		}
	}
	names := count(vm, jdwp.CmdThreadReferenceName)
	if r, err := d.Call(jdwp.CmdThreadReferenceName, threadParams(thread1)); err != nil {
		t.Fatal(err)
	} else if got := jdwp.NewBodyReader(r.Body(), sizes8).String(); got != "fresh" || count(vm, jdwp.CmdThreadReferenceName) != names {
		t.Errorf("name %q, want the pushed one from the cache", got)
	}
}

// TestNearKeepsBundleAcrossEventRequest: a bundle of the stop in progress
// that the far end gathered before it received the debugger's
// EventRequest.Clear (the stop's event went ahead, its hold expired) is
// still used: an event request changes nothing a read says.
func TestNearKeepsBundleAcrossEventRequest(t *testing.T) {
	script := vmScript()
	script[jdwp.CmdEventRequestClear] = jdwptest.Body(nil)
	vm := jdwptest.StartVM(t, jdwptest.Script{Replies: script})
	cnt := new(Counters)
	d := attach(t, vm.Addr(), NearHooks(newSpec(), Config{Counters: cnt}), 0)
	ev := stopEvent(77)
	pushStop(t, vm, bundlePacket(1, 1, 0, []Record{statusRecord()}), ev)
	next(t, d)
	// The rest of the stop's records, gathered before the far end got the
	// Clear below; the Clear's reply comes after them.
	if err := vm.Send(bundlePacket(2, 1, 0, []Record{nameRecord("pushed")})); err != nil {
		t.Fatal(err)
	}
	clear := []byte{byte(jdwp.EventBreakpoint), 0, 0, 0, 7}
	if _, err := d.Call(jdwp.CmdEventRequestClear, clear); err != nil {
		t.Fatal(err)
	}
	r, err := d.Call(jdwp.CmdThreadReferenceName, threadParams(thread1))
	if err != nil {
		t.Fatal(err)
	}
	if got := jdwp.NewBodyReader(r.Body(), sizes8).String(); got != "pushed" || count(vm, jdwp.CmdThreadReferenceName) != 0 {
		t.Errorf("name %q with %d Name commands at the far end, want the pushed reply from the cache", got, count(vm, jdwp.CmdThreadReferenceName))
	}
	if st := cnt.Stats(); st.BundlesStale != 0 || st.Stored != 2 {
		t.Errorf("stats %+v: want both bundles stored", st)
	}
}

// TestNearClosesOnGarbage: a bundle that does not parse ends its session
// (and only that), and never reaches the debugger.
func TestNearClosesOnGarbage(t *testing.T) {
	vm, d, cnt := nearSetup(t, 0)
	if err := vm.Send(jdwp.AppendCommand(nil, 1, CmdBundle, []byte("not a bundle at all, sorry"))); err != nil {
		t.Fatal(err)
	}
	if err := d.WaitClosed(); err != nil {
		t.Fatal(err)
	}
	if st := cnt.Stats(); st.BundlesBad != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestNearBundlesAwaitNoReply: bundles are commands nobody answers; the
// relay must not count them as awaiting the debugger's reply, or a long
// session would stop reading the far end.
func TestNearBundlesAwaitNoReply(t *testing.T) {
	vm, d, _ := nearSetup(t, 2)
	var all []byte
	for i := range 10 {
		all = append(all, bundlePacket(uint32(i+1), uint64(i+1), 0, []Record{nameRecord(fmt.Sprint(i))})...)
	}
	ev := stopEvent(99)
	if err := vm.Send(append(all, ev...)); err != nil {
		t.Fatal(err)
	}
	if p := next(t, d); string(p) != string(ev) {
		t.Fatalf("got %v, want the event after the bundles", p)
	}
}

// TestFarPrefersLikelyUsed: under the byte cap, the records the learner
// rates most likely to be used are the ones sent, in the order they were
// fetched (the near end takes it for the order the VM read them in).
func TestFarPrefersLikelyUsed(t *testing.T) {
	vm := jdwptest.StartVM(t, jdwptest.Script{Replies: vmScript()})
	cnt := new(Counters)
	fars := make(chan *far, 1)
	hooks := FarHooks(newSpec(), Config{MaxHold: time.Minute, MaxBytesPerStop: 400, Counters: cnt})
	d := attach(t, vm.Addr(), func(rs *relay.Session) relay.Hooks {
		h := hooks(rs)
		fars <- h.Interceptors[0].(*far)
		return h
	}, 0)
	f := <-fars
	f.mu.Lock()
	f.stop = 9
	f.mu.Unlock()
	rng := rand.New(rand.NewPCG(1, 2))
	scores := []float64{0.1, 0.7, 0.2, 0.9, 0.3, 0.8}
	// As the speculator would tell the far end, in the relay's turn.
	err := f.rs.Do(func(out *relay.Outbox) {
		for i, s := range scores {
			body := make([]byte, 100)
			for j := range body {
				body[j] = byte(rng.Uint32()) // incompressible
			}
			f.Stored(out, &speculator.SpecReply{Stop: 9, Cmd: jdwp.CmdThreadReferenceName, Params: threadParams(uint64(i)),
				Reply: jdwp.AppendReply(nil, 1, 0, body), Score: s})
		}
		f.Idle(out, 9)
	})
	if err != nil {
		t.Fatal(err)
	}
	b := next(t, d)
	var c codec
	defer c.close()
	p := parser{c: &c}
	_, recs, err := p.parse(b.Body(), false)
	if err != nil {
		t.Fatal(err)
	}
	var got []float64
	for _, r := range recs {
		got = append(got, scores[binary.BigEndian.Uint64(r.Params)])
	}
	if want := []float64{0.7, 0.9, 0.8}; !slices.Equal(got, want) {
		t.Errorf("bundle of %d bytes holds the records scored %v, want %v", len(b), got, want)
	}
	if st := cnt.Stats(); st.Capped != 3 {
		t.Errorf("stats %+v: want 3 capped", st)
	}
}

// TestFarReleasesBeforeVMDeath: a VM_DEATH event behind a held stop event
// is not held (the VM's connection ends right after it): the stop event,
// then VM_DEATH, reach the debugger at once.
func TestFarReleasesBeforeVMDeath(t *testing.T) {
	vm, unstick := stuckVM(t)
	defer unstick()
	d := attach(t, vm.Addr(), FarHooks(newSpec(), Config{MaxHold: time.Hour}), 0)
	ev := stopEvent(77)
	death := jdwp.AppendCommand(nil, 78, jdwp.CmdComposite, jdwptest.AppendComposite(nil, sizes8,
		&jdwp.Composite{SuspendPolicy: jdwp.SuspendNone, Events: []jdwp.Event{{Kind: jdwp.EventVMDeath}}}))
	if err := vm.Send(append(slices.Clone(ev), death...)); err != nil {
		t.Fatal(err)
	}
	var events []jdwp.Packet
	for len(events) < 2 {
		if p := next(t, d); p.Cmd() == jdwp.CmdComposite {
			events = append(events, p)
		}
	}
	if string(events[0]) != string(ev) || string(events[1]) != string(death) {
		t.Errorf("events %v, want the stop then VM_DEATH", events)
	}
}

// TestNearReusedIDsMatchNoFence: a debugger that reuses a packet ID for a
// command that may change the VM's state leaves the far end's fence
// ambiguous: bundles are dropped until a command with a fresh ID.
func TestNearReusedIDsMatchNoFence(t *testing.T) {
	vm, d, cnt := nearSetup(t, 0)
	c := d.Conn()
	r := jdwp.NewReader(c, 0)
	call := func(id uint32, cmd jdwp.Cmd, body []byte) {
		t.Helper()
		if _, err := c.Write(jdwp.AppendCommand(nil, id, cmd, body)); err != nil {
			t.Fatal(err)
		}
		for {
			p, err := r.Next()
			if err != nil {
				t.Fatal(err)
			}
			if p.IsReply() && p.ID() == id {
				return
			}
		}
	}
	setValues := append(threadParams(thread1), 0, 0, 0, 0)
	call(7, jdwp.CmdObjectReferenceSetValues, setValues)
	call(8, jdwp.CmdObjectReferenceSetValues, setValues)
	call(7, jdwp.CmdObjectReferenceSetValues, setValues) // 7 again
	// Gathered after the first 7: the far end would say 7 either way.
	pushStop(t, vm, bundlePacket(1, 1, fenceOf(7), []Record{nameRecord("maybe stale")}), stopEvent(77))
	for {
		p, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if p.Cmd() == jdwp.CmdComposite {
			break
		}
	}
	if st := cnt.Stats(); st.BundlesStale != 1 || st.Stored != 0 {
		t.Errorf("stats %+v: want the bundle dropped", st)
	}
}

// TestNoSpeculatorNoHooks: without a speculator there is nothing to push,
// and the factories are nil, which relay.ChainHooks skips.
func TestNoSpeculatorNoHooks(t *testing.T) {
	if FarHooks(nil, Config{}) != nil || NearHooks(nil, Config{}) != nil {
		t.Fatal("hooks without a speculator")
	}
}

// TestNearSpeculatesOnUnpushedStop: a stop event that comes without a
// bundle (the far end pushed nothing for it) is speculated on by the near
// end itself, so the debugger's reads do not each cross the link; a stop
// with a bundle is not.
func TestNearSpeculatesOnUnpushedStop(t *testing.T) {
	vm, d, _ := nearSetup(t, 0)
	ev := stopEvent(78)
	if err := vm.Send(ev); err != nil {
		t.Fatal(err)
	}
	if p := next(t, d); string(p) != string(ev) {
		t.Fatalf("first packet %v, want the event", p)
	}
	if _, err := d.Call(jdwp.CmdThreadReferenceName, threadParams(thread1)); err != nil {
		t.Fatal(err)
	}
	if n := count(vm, jdwp.CmdThreadReferenceFrames); n == 0 {
		t.Errorf("the near end did not speculate on a stop without pushed state: %v", vm.Commands())
	}
	if n := count(vm, jdwp.CmdThreadReferenceName); n != 1 {
		t.Errorf("the far end got %d Name commands, want 1 (the near end's speculation, serving the debugger's)", n)
	}
}

// usageWithRTT is a usage report of one AllThreads hit at the attach (stop
// 0) that says the near end's round trip to the VM is rtt.
func usageWithRTT(rtt time.Duration) []byte {
	var c codec
	defer c.close()
	h := Header{RTT: uint32(rtt / time.Microsecond), Records: 1}
	return appendBody(nil, h, appendUsage(nil, jdwp.CmdVirtualMachineAllThreads, nil), &c)
}

// TestFarQuietOnFastLink: once the near end reports a round trip under
// speculator.LowRTT, the far end neither speculates nor holds stop events
// (the near end speculates itself, as the IDE-side proxy); once it reports
// a slower link, the far end holds the next stop's event behind its bundle
// again.
func TestFarQuietOnFastLink(t *testing.T) {
	vm := jdwptest.StartVM(t, jdwptest.Script{Replies: vmScript()})
	cnt := new(Counters)
	sp := newSpec()
	d := attach(t, vm.Addr(), FarHooks(sp, Config{MaxHold: time.Minute, Counters: cnt}), 0)
	if _, err := d.Call(CmdUsage, usageWithRTT(300*time.Microsecond)); err != nil {
		t.Fatal(err)
	}
	ev := stopEvent(77)
	if err := vm.Send(ev); err != nil {
		t.Fatal(err)
	}
	if e := next(t, d); string(e) != string(ev) {
		t.Fatalf("on a fast link the first packet is %v, want the stop event itself", e)
	}
	// A round trip through the VM: anything the far end sent on its own
	// at the stop reached the VM before this command.
	if _, err := d.Call(jdwp.CmdVirtualMachineVersion, nil); err != nil {
		t.Fatal(err)
	}
	if n := count(vm, jdwp.CmdThreadReferenceFrames) + count(vm, jdwp.CmdVirtualMachineAllThreads); n != 0 {
		t.Fatalf("the far end sent %d speculative commands on a fast link", n)
	}
	if st := cnt.Stats(); st.Stops != 0 || st.Bundles != 0 {
		t.Fatalf("stats %+v on a fast link, want no stop taken and no bundle", st)
	}
	// Nor does it cache: the near end caches the same replies, so none
	// would be served here. The same read again reaches the VM.
	before := count(vm, jdwp.CmdVirtualMachineVersion)
	if _, err := d.Call(jdwp.CmdVirtualMachineVersion, nil); err != nil {
		t.Fatal(err)
	}
	if n := count(vm, jdwp.CmdVirtualMachineVersion); n != before+1 {
		t.Errorf("quiet: the VM got Version %d times, want %d (nothing cached)", n, before+1)
	}
	if st := sp.Stats(); st.CacheBytes != 0 || st.Hits != 0 {
		t.Errorf("quiet: the far end's cache holds %d bytes and served %d hits, want none", st.CacheBytes, st.Hits)
	}

	if _, err := d.Call(CmdUsage, usageWithRTT(30*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	ev = stopEvent(78)
	if err := vm.Send(ev); err != nil {
		t.Fatal(err)
	}
	if b := next(t, d); b.IsReply() || b.Cmd() != CmdBundle {
		t.Fatalf("on a slow link the first packet is %v, want a bundle", b)
	}
	if e := next(t, d); string(e) != string(ev) {
		t.Fatalf("after the bundle %v, want the stop event", e)
	}
}

// TestNearReportsLinkRTT: the near end times the far end's replies to its
// usage reports (the link's round trip, the far end answering at once) and
// sends the least of them in the next report; the first report, before
// any reply, says 0.
func TestNearReportsLinkRTT(t *testing.T) {
	vm, d, _ := nearSetup(t, 0)
	fence := uint64(0)
	for stop := uint64(1); stop <= 2; stop++ {
		ev := stopEvent(uint32(76 + stop))
		pushStop(t, vm, bundlePacket(uint32(stop), stop, fence, []Record{nameRecord("pushed")}), ev)
		if p := next(t, d); string(p) != string(ev) {
			t.Fatalf("packet %v, want the event", p)
		}
		if _, err := d.Call(jdwp.CmdThreadReferenceName, threadParams(thread1)); err != nil {
			t.Fatal(err)
		}
		// The usage report goes before the resume; the resume's reply
		// comes after the report's.
		if _, err := d.Call(jdwp.CmdVirtualMachineResume, nil); err != nil {
			t.Fatal(err)
		}
		cmds := vm.Commands()
		fence = fenceOf(cmds[len(cmds)-1].ID()) // the far end has received the resume
	}
	var c codec
	defer c.close()
	p := parser{c: &c}
	var rtts []uint64
	for _, cmd := range vm.Commands() {
		if cmd.Cmd() == CmdUsage {
			h, _, err := p.parse(cmd.Body(), true)
			if err != nil {
				t.Fatal(err)
			}
			if h.Fence != 0 {
				t.Errorf("usage report with fence %#x, want 0 (its round trip has its own field)", h.Fence)
			}
			rtts = append(rtts, uint64(h.RTT))
		}
	}
	// The first report is the debugger's first command (its IDSizes, at
	// attach: no round trip measured yet), then one a stop.
	if len(rtts) != 3 || rtts[0] != 0 || rtts[1] == 0 || rtts[2] == 0 || rtts[2] > uint64(time.Second/time.Microsecond) {
		t.Fatalf("usage reports carried round trips %v µs, want 0 (the first command's), then measured ones", rtts)
	}
}

// TestFarHoldsResumeReplyBehindEvent: HotSpot often sends a stop's event
// before its reply to the resume that ran the thread there. The far end
// holds that reply behind the event, as it holds the event behind the
// stop's bundle: the near end gets the bundle, then the event, then the
// reply with the ID the debugger sent the resume with (releasing the event
// at the reply sent it before anything was gathered).
func TestFarHoldsResumeReplyBehindEvent(t *testing.T) {
	vm := jdwptest.StartVM(t, jdwptest.Script{Replies: vmScript()})
	cnt := new(Counters)
	d := attach(t, vm.Addr(), FarHooks(newSpec(), Config{MaxHold: time.Minute, Counters: cnt}), 0)
	// A first stop: the whole VM suspended, so that the resume from it
	// is the one command in flight when the next stop's event comes (the
	// speculator then knows the event shows the state after the resume).
	if err := vm.Send(stopEvent(77)); err != nil {
		t.Fatal(err)
	}
	if b := next(t, d); b.IsReply() || b.Cmd() != CmdBundle {
		t.Fatalf("first packet %v, want the first stop's bundle", b)
	}
	if e := next(t, d); e.ID() != 77 {
		t.Fatalf("after the bundle %v, want the first stop's event", e)
	}
	vm.Hold()
	id, err := d.Send(jdwp.CmdVirtualMachineResume, nil)
	if err != nil {
		t.Fatal(err)
	}
	for vm.Count(jdwp.CmdVirtualMachineResume) == 0 {
		<-vm.Changed()
	}
	ev := stopEvent(78)
	if err := vm.Send(ev); err != nil {
		t.Fatal(err)
	}
	vm.Release() // the resume's reply, then the far end's reads'
	if b := next(t, d); b.IsReply() || b.Cmd() != CmdBundle {
		t.Fatalf("first packet %v, want the stop's bundle", b)
	}
	if e := next(t, d); string(e) != string(ev) {
		t.Fatalf("after the bundle %v, want the stop event", e)
	}
	r := next(t, d)
	if !r.IsReply() || r.ID() != id || r.ErrorCode() != jdwp.ErrorNone {
		t.Fatalf("after the event %v, want the reply to the resume (ID %d)", r, id)
	}
	if st := cnt.Stats(); st.Stops != 2 || st.Bundles != 2 || st.HoldExpiry != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestNearReasksOffersAfterAMiss: at a stop of one thread on a VM that
// carries out commands in order, a read of running state the near end
// could not answer goes to the far end, and the replies of running state
// the far end offered for the stop that the debugger read at the last
// stop and has not read yet at this one are asked again behind it (they
// may no longer answer the debugger once it has the miss's answer; here
// the debugger's read of a later offer already left an earlier one out of
// place); the debugger's later read of one is answered from the new
// reply, not sent on again. Fails without the offers' re-ask (refetch).
func TestNearReasksOffersAfterAMiss(t *testing.T) {
	script := vmScript()
	script[jdwp.CmdVirtualMachineVersion] = jdwptest.Body(jdwptest.VersionBody("Java Debug Wire Protocol (Reference Implementation) version 17.0 (fake)", "Fake"))
	vm := jdwptest.StartVM(t, jdwptest.Script{Replies: script})
	d := attach(t, vm.Addr(), NearHooks(newSpec(), Config{Counters: new(Counters)}), 0)
	if _, err := d.Call(jdwp.CmdVirtualMachineVersion, nil); err != nil {
		t.Fatal(err)
	}
	c := jdwp.Composite{SuspendPolicy: jdwp.SuspendEventThread, Events: []jdwp.Event{{
		Kind: jdwp.EventBreakpoint, RequestID: 5, Thread: thread1,
		Location: jdwp.Location{TypeTag: jdwp.TypeTagClass, Class: class1, Method: method1, Index: 3},
	}}}
	ev := jdwp.AppendCommand(nil, 77, jdwp.CmdComposite, jdwptest.AppendComposite(nil, sizes8, &c))
	offered := []Record{
		{Cmd: jdwp.CmdThreadReferenceName, Params: threadParams(0x52), Body: strBody("worker-2")},
		{Cmd: jdwp.CmdThreadReferenceName, Params: threadParams(0x53), Body: strBody("worker-3")},
	}
	pushStop(t, vm, bundlePacket(1, 1, 0, offered), ev)
	next(t, d)
	for _, th := range []uint64{0x52, 0x53} { // the first stop: both offers read
		if _, err := d.Call(jdwp.CmdThreadReferenceName, threadParams(th)); err != nil {
			t.Fatal(err)
		}
	}
	resume, err := d.Call(jdwp.CmdVirtualMachineResume, nil)
	if err != nil {
		t.Fatal(err)
	}
	pushStop(t, vm, bundlePacket(2, 2, fenceOf(resume.ID()), offered), jdwp.AppendCommand(nil, 78, jdwp.CmdComposite, jdwptest.AppendComposite(nil, sizes8, &c)))
	next(t, d)
	if _, err := d.Call(jdwp.CmdThreadReferenceName, threadParams(0x53)); err != nil { // offered: a hit
		t.Fatal(err)
	}
	if _, err := d.Call(jdwp.CmdThreadReferenceName, threadParams(0x54)); err != nil { // not offered: a miss
		t.Fatal(err)
	}
	jdwptest.Await(t, "the near end to ask the offer again", vm.Changed, func() (bool, string) {
		for _, p := range vm.Commands() {
			if p.Cmd() == jdwp.CmdThreadReferenceName && retag.InRange(p.ID()) && jdwp.NewBodyReader(p.Body(), sizes8).ObjectID() == 0x52 {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d commands", len(vm.Commands()))
	})
	if _, err := d.Call(jdwp.CmdThreadReferenceName, threadParams(0x52)); err != nil {
		t.Fatal(err)
	}
	at, again := -1, -1
	var by []uint32
	for i, p := range vm.Commands() {
		if p.Cmd() != jdwp.CmdThreadReferenceName {
			continue
		}
		switch th := jdwp.NewBodyReader(p.Body(), sizes8).ObjectID(); th {
		case 0x54:
			at = i
		case 0x52:
			again, by = i, append(by, p.ID())
		case 0x53:
			t.Errorf("the name of 0x53, which the debugger read from the offer, asked again")
		}
	}
	if at < 0 || again < at || len(by) != 1 || !retag.InRange(by[0]) {
		t.Fatalf("the far end got the miss at %d and the name of 0x52 at %d by IDs %v: want it once, after the miss, asked by the near end", at, again, by)
	}
}
