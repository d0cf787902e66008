package share

import (
	"net"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/rs/zerolog"
)

// nopConn is a net.Conn that takes every write and never reads: a
// client's connection for the fuzz targets, which open no sockets.
type nopConn struct{ net.Conn }

func (nopConn) Write(b []byte) (int, error)      { return len(b), nil }
func (nopConn) Close() error                     { return nil }
func (nopConn) SetWriteDeadline(time.Time) error { return nil }

// fuzzHub is a hub with a controller owning request 1 and two observers
// owning requests 2 and 3, none of them running: what the hub sends each
// stays in its writer's queue.
func fuzzHub() (*Hub, []*Client) {
	f := NewFront("fuzz", Config{Logger: zerolog.Nop()})
	h := newHub(f, nopConn{})
	var cs []*Client
	for i := range 3 {
		c := &Client{Number: uint64(i + 1), conn: nopConn{}, w: newWriter(nopConn{}, 0), requests: map[int32]request{},
			threadSuspends: map[uint64]int{}, pinned: map[uint64]int{}, log: zerolog.Nop()}
		h.join(c)
		h.owners[int32(i+1)] = c
		cs = append(cs, c)
	}
	return h, cs
}

// FuzzEvents feeds the hub Event.Composite bodies as the VM would send
// them: nothing panics, every copy a client gets is one whole packet, and
// a body that decodes gives copies that decode, an observer's saying
// SUSPEND_NONE.
func FuzzEvents(f *testing.F) {
	for _, c := range []jdwp.Composite{
		{SuspendPolicy: jdwp.SuspendAll, Events: []jdwp.Event{{Kind: jdwp.EventVMStart, Thread: 1}}},
		{SuspendPolicy: jdwp.SuspendAll, Events: []jdwp.Event{
			{Kind: jdwp.EventBreakpoint, RequestID: 1, Thread: 9, Location: jdwp.Location{TypeTag: jdwp.TypeTagClass, Class: 1, Method: 2, Index: 3}},
			{Kind: jdwp.EventThreadStart, RequestID: 2, Thread: 9},
			{Kind: jdwp.EventClassPrepare, RequestID: 3, Thread: 9, TypeID: 4, Signature: []byte("LX;"), Status: 7}}},
		{SuspendPolicy: jdwp.SuspendEventThread, Events: []jdwp.Event{{Kind: jdwp.EventThreadDeath, RequestID: 4, Thread: 5}}},
		{SuspendPolicy: jdwp.SuspendNone, Events: []jdwp.Event{{Kind: jdwp.EventVMDeath}, {Kind: jdwp.EventClassUnload, RequestID: 2, Signature: []byte("LY;")}}},
	} {
		w := jdwp.BodyWriter{Sizes: sizes8}
		w.Uint8(uint8(c.SuspendPolicy))
		w.Int32(int32(len(c.Events)))
		for i := range c.Events {
			c.Events[i].Append(&w)
		}
		f.Add(w.Buf)
	}
	f.Add([]byte{2, 0, 0, 0, 2, 99})
	f.Fuzz(func(t *testing.T, body []byte) {
		h, cs := fuzzHub()
		h.sizes = sizes8
		var whole jdwp.Composite
		decodes := whole.Decode(body, sizes8) == nil
		p := jdwp.AppendCommand(nil, 5, jdwp.CmdEventComposite, body)
		h.mu.Lock()
		h.events(p)
		h.mu.Unlock()
		for i, c := range cs {
			q := c.w.buf
			for len(q) > 0 {
				if len(q) < jdwp.HeaderSize || int(jdwp.Packet(q).Length()) > len(q) || jdwp.Packet(q).Length() < jdwp.HeaderSize {
					t.Fatalf("client %d got a broken packet: %x", i, q)
				}
				pk := jdwp.Packet(q[:jdwp.Packet(q).Length()])
				q = q[len(pk):]
				if pk.Cmd() != jdwp.CmdEventComposite || !decodes {
					continue
				}
				var got jdwp.Composite
				if err := got.Decode(pk.Body(), sizes8); err != nil {
					t.Fatalf("client %d: a copy of a composite that decodes does not: %v", i, err)
				}
				if i > 0 && got.SuspendPolicy != jdwp.SuspendNone {
					t.Fatalf("observer %d got suspend policy %v", i, got.SuspendPolicy)
				}
			}
		}
	})
}

// FuzzObserverRule feeds the rules observers' commands of any bytes:
// nothing panics, and what an observer may send never resumes, suspends,
// steps or invokes.
func FuzzObserverRule(f *testing.F) {
	f.Add(uint8(jdwp.CmdEventRequestSet.Set), jdwp.CmdEventRequestSet.Cmd, []byte{1, 0, 0, 0, 0, 0})
	f.Add(uint8(jdwp.CmdVirtualMachineResume.Set), jdwp.CmdVirtualMachineResume.Cmd, []byte{})
	f.Add(uint8(jdwp.CmdObjectReferenceEnableCollection.Set), jdwp.CmdObjectReferenceEnableCollection.Cmd, []byte{0, 0, 0, 0, 0, 0, 0, 5})
	f.Add(uint8(199), uint8(1), []byte("HELO"))
	f.Fuzz(func(t *testing.T, set, cmd uint8, body []byte) {
		p := jdwp.AppendCommand(nil, 1, jdwp.Cmd{Set: jdwp.CommandSet(set), Cmd: cmd}, body)
		rule := observerRule(p, sizes8, func(obj uint64) bool { return obj == 5 })
		if rule != RuleAllowed {
			return
		}
		switch c := p.Cmd(); c {
		case jdwp.CmdVirtualMachineResume, jdwp.CmdThreadReferenceResume, jdwp.CmdVirtualMachineSuspend, jdwp.CmdThreadReferenceSuspend,
			jdwp.CmdClassTypeInvokeMethod, jdwp.CmdObjectReferenceInvokeMethod, jdwp.CmdStackFrameSetValues, jdwp.CmdVirtualMachineExit:
			t.Fatalf("an observer may send %v", c)
		case jdwp.CmdEventRequestSet:
			if len(body) < 2 || body[1] != 0 || body[0] == byte(jdwp.EventSingleStep) {
				t.Fatalf("an observer may set %x", body)
			}
		}
	})
}

var sizes8 = jdwp.IDSizes{FieldID: 8, MethodID: 8, ObjectID: 8, ReferenceTypeID: 8, FrameID: 8}
