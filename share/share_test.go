package share_test

import (
	"context"
	"encoding/binary"
	"net"
	"sync/atomic"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/retag"
	"github.com/jdwpaccel/jdwpaccel/share"
	"github.com/rs/zerolog"
)

var sizes8 = jdwp.IDSizes{FieldID: 8, MethodID: 8, ObjectID: 8, ReferenceTypeID: 8, FrameID: 8}

// rig is a scripted VM behind a relay server whose listener shares it.
type rig struct {
	vm    *jdwptest.VM
	front *share.Front
	addr  string
	// roAddr is where every client is an observer.
	roAddr string
}

// startRig starts a fake VM that numbers event requests from 1, a relay
// server to it and a shared listener in front of the server.
func startRig(t *testing.T) *rig {
	t.Helper()
	var reqs atomic.Int32
	vm := jdwptest.StartVM(t, jdwptest.Script{Replies: map[jdwp.Cmd]jdwptest.ReplyFunc{
		jdwp.CmdEventRequestSet: func(jdwp.Packet) (jdwp.ErrorCode, []byte) {
			return 0, binary.BigEndian.AppendUint32(nil, uint32(reqs.Add(1)))
		},
		jdwp.CmdVirtualMachineIDSizes: jdwptest.Body(jdwp.AppendIDSizes(nil, sizes8)),
	}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	front := share.NewFront("test-vm", share.Config{Logger: zerolog.Nop()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	srv := relay.NewServer(relay.Config{DialVM: relay.DialTCP(vm.Addr()), Logger: zerolog.Nop()})
	ro, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { done <- share.Serve(ctx, srv, front, ln, ro, 0) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		front.Close()
	})
	return &rig{vm: vm, front: front, addr: ln.Addr().String(), roAddr: ro.Addr().String()}
}

func (r *rig) attach(t *testing.T) *jdwptest.Debugger { return attachAt(t, r.addr) }

func attachAt(t *testing.T, addr string) *jdwptest.Debugger {
	t.Helper()
	d, err := jdwptest.Attach(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// call sends cmd and returns its reply, skipping events.
func call(t *testing.T, d *jdwptest.Debugger, cmd jdwp.Cmd, body []byte) jdwp.Packet {
	t.Helper()
	p, err := d.Call(cmd, body)
	if err != nil {
		t.Fatalf("%v: %v", cmd, err)
	}
	return p
}

// callOK sends cmd and fails the test, saying what was called, unless
// its reply carries no error.
func callOK(t *testing.T, d *jdwptest.Debugger, cmd jdwp.Cmd, body []byte, what string) {
	t.Helper()
	if p := call(t, d, cmd, body); p.ErrorCode() != 0 {
		t.Fatalf("%s: %v", what, p)
	}
}

// wantSoleController fails the test unless exactly one client is attached
// to r's hub and it is the controller.
func wantSoleController(t *testing.T, r *rig) {
	t.Helper()
	if cl := r.front.Clients(); len(cl) != 1 || cl[0].Role != "controller" {
		t.Fatalf("Clients = %+v", cl)
	}
}

func setBody(kind jdwp.EventKind, policy jdwp.SuspendPolicy) []byte {
	return []byte{byte(kind), byte(policy), 0, 0, 0, 0}
}

func reqID(t *testing.T, p jdwp.Packet) int32 {
	t.Helper()
	if p.ErrorCode() != 0 || len(p.Body()) != 4 {
		t.Fatalf("EventRequest.Set: %v", p)
	}
	return int32(binary.BigEndian.Uint32(p.Body()))
}

func composite(policy jdwp.SuspendPolicy, events ...jdwp.Event) jdwp.Packet {
	c := jdwp.Composite{SuspendPolicy: policy, Events: events}
	return jdwp.AppendCommand(nil, 77, jdwp.CmdEventComposite, jdwptest.AppendComposite(nil, sizes8, &c))
}

func decode(t *testing.T, p jdwp.Packet) jdwp.Composite {
	t.Helper()
	if p.IsReply() || p.Cmd() != jdwp.CmdEventComposite {
		t.Fatalf("want an event, got %v", p)
	}
	var c jdwp.Composite
	if err := c.Decode(p.Body(), sizes8); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestObserverRefusedNothingReachesVM(t *testing.T) {
	r := startRig(t)
	ctl := r.attach(t)
	call(t, ctl, jdwp.CmdVirtualMachineIDSizes, nil)
	obs := r.attach(t)
	thread := binary.BigEndian.AppendUint64(nil, 42)
	refused := []struct {
		cmd  jdwp.Cmd
		body []byte
	}{
		{jdwp.CmdVirtualMachineResume, nil},
		{jdwp.CmdThreadReferenceResume, thread},
		{jdwp.CmdVirtualMachineSuspend, nil},
		{jdwp.CmdEventRequestSet, setBody(jdwp.EventSingleStep, jdwp.SuspendEventThread)},
		{jdwp.CmdEventRequestSet, setBody(jdwp.EventSingleStep, jdwp.SuspendNone)},
		{jdwp.CmdEventRequestSet, setBody(jdwp.EventBreakpoint, jdwp.SuspendAll)},
		{jdwp.CmdObjectReferenceInvokeMethod, thread},
		{jdwp.CmdStackFrameSetValues, thread},
		{jdwp.CmdObjectReferenceSetValues, thread},
		{jdwp.CmdVirtualMachineExit, []byte{0, 0, 0, 0}},
		{jdwp.CmdVirtualMachineHoldEvents, nil},
		{jdwp.CmdVirtualMachineRedefineClasses, []byte{0, 0, 0, 0}},
	}
	before := len(r.vm.Commands())
	for _, c := range refused {
		if p := call(t, obs, c.cmd, c.body); p.ErrorCode() != jdwp.ErrorNotImplemented {
			t.Errorf("observer's %v: got %v, want NOT_IMPLEMENTED", c.cmd, p)
		}
	}
	// A read-only command and a SUSPEND_NONE request pass.
	callOK(t, obs, jdwp.CmdVirtualMachineVersion, nil, "Version")
	reqID(t, call(t, obs, jdwp.CmdEventRequestSet, setBody(jdwp.EventThreadStart, jdwp.SuspendNone)))
	got := r.vm.Commands()[before:]
	if len(got) != 2 || got[0].Cmd() != jdwp.CmdVirtualMachineVersion || got[1].Cmd() != jdwp.CmdEventRequestSet {
		t.Fatalf("the VM got %v, want only Version and the SUSPEND_NONE request", got)
	}
	if n := r.front.Denied(); n != int64(len(refused)) {
		t.Errorf("Denied = %d, want %d", n, len(refused))
	}
	// The controller may do all of it.
	callOK(t, ctl, jdwp.CmdVirtualMachineResume, nil, "controller's Resume")
	cl := r.front.Clients()
	if len(cl) != 2 || cl[0].Role != "controller" || cl[1].Role != "observer" || cl[1].Requests != 1 {
		t.Fatalf("Clients = %+v", cl)
	}
}

func TestEventsRoutedAndSplit(t *testing.T) {
	r := startRig(t)
	ctl := r.attach(t)
	call(t, ctl, jdwp.CmdVirtualMachineIDSizes, nil)
	obs := r.attach(t)
	bp := reqID(t, call(t, ctl, jdwp.CmdEventRequestSet, setBody(jdwp.EventBreakpoint, jdwp.SuspendAll)))
	ts := reqID(t, call(t, obs, jdwp.CmdEventRequestSet, setBody(jdwp.EventThreadStart, jdwp.SuspendNone)))
	loc := jdwp.Location{TypeTag: jdwp.TypeTagClass, Class: 1, Method: 2, Index: 3}
	if err := r.vm.Send(composite(jdwp.SuspendAll,
		jdwp.Event{Kind: jdwp.EventBreakpoint, RequestID: bp, Thread: 9, Location: loc},
		jdwp.Event{Kind: jdwp.EventThreadStart, RequestID: ts, Thread: 9})); err != nil {
		t.Fatal(err)
	}
	p, err := ctl.Next()
	if err != nil {
		t.Fatal(err)
	}
	c := decode(t, p)
	if c.SuspendPolicy != jdwp.SuspendAll || len(c.Events) != 1 || c.Events[0].RequestID != bp {
		t.Fatalf("controller got %+v", c)
	}
	p, err = obs.Next()
	if err != nil {
		t.Fatal(err)
	}
	c = decode(t, p)
	if c.SuspendPolicy != jdwp.SuspendNone || len(c.Events) != 1 || c.Events[0].RequestID != ts {
		t.Fatalf("observer got %+v", c)
	}
	// VM_START goes to both.
	if err := r.vm.Send(composite(jdwp.SuspendAll, jdwp.Event{Kind: jdwp.EventVMStart, Thread: 1})); err != nil {
		t.Fatal(err)
	}
	for i, d := range []*jdwptest.Debugger{ctl, obs} {
		p, err := d.Next()
		if err != nil {
			t.Fatal(err)
		}
		if c := decode(t, p); len(c.Events) != 1 || c.Events[0].Kind != jdwp.EventVMStart || (i == 1) != (c.SuspendPolicy == jdwp.SuspendNone) {
			t.Fatalf("client %d got %+v", i, c)
		}
	}
}

func TestControllerLeavingIsUndone(t *testing.T) {
	r := startRig(t)
	ctl := r.attach(t)
	call(t, ctl, jdwp.CmdVirtualMachineIDSizes, nil)
	obs := r.attach(t)
	bp := reqID(t, call(t, ctl, jdwp.CmdEventRequestSet, setBody(jdwp.EventBreakpoint, jdwp.SuspendAll)))
	reqID(t, call(t, obs, jdwp.CmdEventRequestSet, setBody(jdwp.EventThreadStart, jdwp.SuspendNone)))
	call(t, ctl, jdwp.CmdVirtualMachineSuspend, nil)
	call(t, ctl, jdwp.CmdVirtualMachineSuspend, nil)
	call(t, ctl, jdwp.CmdObjectReferenceDisableCollection, binary.BigEndian.AppendUint64(nil, 5))
	before := len(r.vm.Commands())
	ctl.Close()
	jdwptest.Await(t, "the controller's undo", r.vm.Changed, func() (bool, string) {
		got := r.vm.Commands()[before:]
		clears, resumes, enables := 0, 0, 0
		for _, p := range got {
			switch p.Cmd() {
			case jdwp.CmdEventRequestClear:
				if int32(binary.BigEndian.Uint32(p.Body()[1:])) == bp {
					clears++
				}
			case jdwp.CmdVirtualMachineResume:
				resumes++
			case jdwp.CmdObjectReferenceEnableCollection:
				enables++
			}
		}
		return clears == 1 && resumes == 2 && enables == 1 && len(got) == 4, "clears/resumes/enables/all: " + itoa(clears) + itoa(resumes) + itoa(enables) + itoa(len(got))
	})
	// The observer goes on; it may take control by asking.
	callOK(t, obs, jdwp.CmdVirtualMachineResume, nil, "observer's Resume once no controller is attached")
	wantSoleController(t, r)
}

func TestDisposeOfOneClient(t *testing.T) {
	r := startRig(t)
	a := r.attach(t)
	b := r.attach(t)
	callOK(t, b, jdwp.CmdVirtualMachineDispose, nil, "Dispose")
	if n := r.vm.Count(jdwp.CmdVirtualMachineDispose); n != 0 {
		t.Fatalf("the VM got %d Dispose from a client that was not the last", n)
	}
	callOK(t, a, jdwp.CmdVirtualMachineVersion, nil, "Version")
	callOK(t, a, jdwp.CmdVirtualMachineDispose, nil, "Dispose")
	if n := r.vm.Count(jdwp.CmdVirtualMachineDispose); n != 1 {
		t.Fatalf("the VM got %d Dispose from the last client, want 1", n)
	}
}

func itoa(n int) string { return string(rune('0'+n%10)) + " " }

func TestReadOnlyFirstClientIsObserver(t *testing.T) {
	r := startRig(t)
	obs := attachAt(t, r.roAddr)
	if p := call(t, obs, jdwp.CmdVirtualMachineSuspend, nil); p.ErrorCode() != jdwp.ErrorNotImplemented {
		t.Fatalf("read-only client's Suspend: %v", p)
	}
	ctl := r.attach(t)
	if cl := r.front.Clients(); len(cl) != 2 || cl[1].Role != "controller" {
		t.Fatalf("the first client that may control is not the controller: %+v", cl)
	}
	callOK(t, ctl, jdwp.CmdVirtualMachineSuspend, nil, "controller's Suspend")
	// A suspending event no controller gets is resumed by the hub.
	ctl.Close()
	jdwptest.Await(t, "the controller's suspension released", r.vm.Changed, func() (bool, string) {
		n := r.vm.Count(jdwp.CmdVirtualMachineResume)
		return n == 1, itoa(n)
	})
	if err := r.vm.Send(composite(jdwp.SuspendAll, jdwp.Event{Kind: jdwp.EventVMStart, Thread: 1})); err != nil {
		t.Fatal(err)
	}
	p, err := obs.Next()
	if err != nil {
		t.Fatal(err)
	}
	if c := decode(t, p); c.SuspendPolicy != jdwp.SuspendNone {
		t.Fatalf("observer got %+v", c)
	}
	// The VM's start waits for a controller; the next one takes it and,
	// leaving without resuming, releases it.
	ctl = r.attach(t)
	if n := r.vm.Count(jdwp.CmdVirtualMachineResume); n != 1 {
		t.Fatalf("the hub resumed the VM's start with no controller attached (%d resumes)", n)
	}
	if cl := r.front.Clients(); len(cl) != 2 || cl[1].Role != "observer" {
		t.Fatalf("after a controller left, a new client controls only by asking: %+v", cl)
	}
	// It controls only by asking, so the VM_START the hub holds is not its
	// yet.
	callOK(t, ctl, jdwp.CmdVirtualMachineIDSizes, nil, "IDSizes")                                                    // read-only: no control asked
	call(t, ctl, jdwp.CmdObjectReferenceDisableCollection, binary.BigEndian.AppendUint64(nil, 5))                    // asks nothing either
	callOK(t, ctl, jdwp.CmdThreadReferenceSuspend, binary.BigEndian.AppendUint64(nil, 3), "ThreadReference.Suspend") // asks
	ctl.Close()
	jdwptest.Await(t, "the held start released", r.vm.Changed, func() (bool, string) {
		n, m := r.vm.Count(jdwp.CmdVirtualMachineResume), r.vm.Count(jdwp.CmdThreadReferenceResume)
		return n == 2 && m == 1, itoa(n) + itoa(m)
	})
	if r.front.Orphaned() != 0 {
		t.Fatalf("Orphaned = %d", r.front.Orphaned())
	}
	if cl := r.front.Clients(); len(cl) != 1 || cl[0].Role != "observer" || !cl[0].ReadOnly {
		t.Fatalf("Clients = %+v", cl)
	}
}

func TestDisposeObjectsKeptWhileShared(t *testing.T) {
	r := startRig(t)
	a := r.attach(t)
	b := r.attach(t)
	body := append([]byte{0, 0, 0, 1}, binary.BigEndian.AppendUint64(nil, 5)...)
	body = binary.BigEndian.AppendUint32(body, 1)
	for _, d := range []*jdwptest.Debugger{a, b} {
		callOK(t, d, jdwp.CmdVirtualMachineDisposeObjects, body, "DisposeObjects")
	}
	if n := r.vm.Count(jdwp.CmdVirtualMachineDisposeObjects); n != 0 {
		t.Fatalf("the VM got %d DisposeObjects while two clients share it: one could free an ID the other uses", n)
	}
	b.Close()
	jdwptest.Await(t, "one client left", r.front.Changed, func() (bool, string) { return len(r.front.Clients()) == 1, "" })
	call(t, a, jdwp.CmdVirtualMachineDisposeObjects, body)
	if n := r.vm.Count(jdwp.CmdVirtualMachineDisposeObjects); n != 1 {
		t.Fatalf("a lone client's DisposeObjects: the VM got %d, want 1", n)
	}
}

func TestSlowObserverDropped(t *testing.T) {
	r := startRig(t)
	ctl := r.attach(t)
	call(t, ctl, jdwp.CmdVirtualMachineIDSizes, nil)
	slow := r.attach(t)
	cp := reqID(t, call(t, slow, jdwp.CmdEventRequestSet, setBody(jdwp.EventClassPrepare, jdwp.SuspendNone)))
	// Class prepares of 64 KiB signatures for the observer, which reads
	// none of them: once what waits for it passes the bound, it is
	// dropped, and the controller goes on.
	sig := make([]byte, 64<<10)
	for i := range sig {
		sig[i] = 'a'
	}
	ev := composite(jdwp.SuspendNone, jdwp.Event{Kind: jdwp.EventClassPrepare, RequestID: cp, Thread: 1, TypeID: 2, Signature: sig})
	for sent := 0; len(r.front.Clients()) == 2; sent++ {
		if sent == 1024 { // 64 MiB
			t.Fatalf("an observer that reads nothing was sent 64 MiB and is still attached")
		}
		if err := r.vm.Send(ev); err != nil {
			t.Fatal(err)
		}
	}
	callOK(t, ctl, jdwp.CmdVirtualMachineVersion, nil, "controller after the observer was dropped")
	wantSoleController(t, r)
}

// TestVMStartHeldForController: a read-only client attaches first to a
// VM that waits for a debugger (suspend=y): the VM stays suspended, and
// the debugger attaching next gets the VM_START it would have got
// attaching first, with the VM's suspend policy.
func TestVMStartHeldForController(t *testing.T) {
	r := startRig(t)
	obs := attachAt(t, r.roAddr)
	call(t, obs, jdwp.CmdVirtualMachineIDSizes, nil)
	if err := r.vm.Send(composite(jdwp.SuspendAll, jdwp.Event{Kind: jdwp.EventVMStart, Thread: 1})); err != nil {
		t.Fatal(err)
	}
	p, err := obs.Next()
	if err != nil {
		t.Fatal(err)
	}
	if c := decode(t, p); c.SuspendPolicy != jdwp.SuspendNone || c.Events[0].Kind != jdwp.EventVMStart {
		t.Fatalf("observer got %+v", c)
	}
	ctl := r.attach(t)
	p, err = ctl.Next()
	if err != nil {
		t.Fatal(err)
	}
	if c := decode(t, p); c.SuspendPolicy != jdwp.SuspendAll || len(c.Events) != 1 || c.Events[0].Kind != jdwp.EventVMStart {
		t.Fatalf("controller got %+v", c)
	}
	if n := r.vm.Count(jdwp.CmdVirtualMachineResume); n != 0 {
		t.Fatalf("the VM was resumed %d times before its controller came", n)
	}
	ctl.Close()
	jdwptest.Await(t, "the start's suspension released with its controller", r.vm.Changed, func() (bool, string) {
		n := r.vm.Count(jdwp.CmdVirtualMachineResume)
		return n == 1, itoa(n)
	})
}

// TestIDsPerRole: the controller's commands keep their IDs (a lone
// debugger's stream is unchanged); an observer's come from the observers'
// range, so that hooks learning from the debugger skip them.
func TestIDsPerRole(t *testing.T) {
	r := startRig(t)
	ctl := r.attach(t)
	obs := r.attach(t)
	call(t, ctl, jdwp.CmdVirtualMachineVersion, nil)
	call(t, obs, jdwp.CmdVirtualMachineVersion, nil)
	got := r.vm.Commands()
	if len(got) != 2 || got[0].ID() != 1 || retag.FromObserver(got[0].ID()) || !retag.FromObserver(got[1].ID()) {
		t.Fatalf("the VM got %v; want the controller's ID 1, then an ID of the observers' range", got)
	}
}

// TestOrphanedEventWithoutThreadResumesNoThread: a suspending event that
// no controller gets and that carries no thread (CLASS_UNLOAD) makes the
// hub resume no thread; it never sends ThreadReference.Resume with an ID
// the VM did not give (a null one, or the signature's bytes).
func TestOrphanedEventWithoutThreadResumesNoThread(t *testing.T) {
	r := startRig(t)
	obs := attachAt(t, r.roAddr)
	call(t, obs, jdwp.CmdVirtualMachineIDSizes, nil)
	for _, p := range []jdwp.Packet{
		composite(jdwp.SuspendEventThread, jdwp.Event{Kind: jdwp.EventClassUnload, Signature: []byte("LGone;")}),
		composite(jdwp.SuspendEventThread, jdwp.Event{Kind: jdwp.EventThreadStart, Thread: 9}),
	} {
		if err := r.vm.Send(p); err != nil {
			t.Fatal(err)
		}
		if _, err := obs.Next(); err != nil {
			t.Fatal(err)
		}
	}
	jdwptest.Await(t, "the thread start's thread resumed", r.vm.Changed, func() (bool, string) {
		n := r.vm.Count(jdwp.CmdThreadReferenceResume)
		return n >= 1, itoa(n)
	})
	var resumed []uint64
	for _, p := range r.vm.Commands() {
		if p.Cmd() == jdwp.CmdThreadReferenceResume {
			resumed = append(resumed, binary.BigEndian.Uint64(p.Body()))
		}
	}
	if len(resumed) != 1 || resumed[0] != 9 {
		t.Fatalf("the hub resumed threads %v, want only 9", resumed)
	}
}
