package share

import (
	"encoding/binary"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// Offsets in an Event.Composite body: suspend policy, event count, then
// the first event's kind and request ID, and its thread for the kinds
// that carry one.
const (
	offPolicy    = 0
	offCount     = 1
	offKind      = 5
	offRequest   = 6
	offThread    = 10
	minComposite = offThread
)

// events routes an Event.Composite from the VM: each event to the client
// owning its request (VM_START, VM_DEATH and the VM's other automatic
// events, request 0, to all), a composite holding several clients' events
// split into one copy per client. The controller's copy keeps the VM's
// suspend policy (it is the one that will resume); an observer's says
// NONE. A suspending composite that reaches no controller is resumed by
// the hub. p's bytes are the hub's reader's and may be rewritten. mu is
// held.
func (h *Hub) events(p jdwp.Packet) {
	body := p.Body()
	if len(body) < minComposite || len(h.clients) == 0 {
		if c := h.primary(); c != nil {
			h.deliver(c, p)
		}
		return
	}
	policy := jdwp.SuspendPolicy(body[offPolicy])
	n := binary.BigEndian.Uint32(body[offCount:])
	if n != 1 && len(h.clients) > 1 {
		if h.split(p, policy) {
			return
		}
	}
	// One event (or one client, or a body the hub cannot split): it goes
	// whole to the owner of its first event's request.
	kind := jdwp.EventKind(body[offKind])
	req := int32(binary.BigEndian.Uint32(body[offRequest:]))
	var thread uint64 // 0: the event carries none
	if kind != jdwp.EventVMDeath && kind != jdwp.EventClassUnload {
		thread, _ = readID(body, offThread, h.sizes.ObjectID)
	}
	var only *Client
	if len(h.clients) == 1 {
		only = h.clients[0]
	} else if req != 0 {
		only = h.owner(req, kind)
		if only == nil {
			h.orphan(policy, thread)
			return
		}
	}
	ctlGot := false
	for _, c := range h.clients {
		if only != nil && c != only {
			continue
		}
		if c == h.controller {
			body[offPolicy] = byte(policy)
			ctlGot = true
		} else {
			body[offPolicy] = byte(jdwp.SuspendNone)
		}
		h.deliver(c, p)
	}
	vmStart := kind == jdwp.EventVMStart
	if vmStart && !ctlGot && policy != jdwp.SuspendNone {
		// The next controller gets it, as it would attaching first.
		body[offPolicy] = byte(policy)
		h.heldStart = append(h.heldStart[:0], p...)
	}
	h.suspended(ctlGot, policy, thread, vmStart)
}

// owner is the client owning request req, whose event is of kind: the
// client that set it, or, for an event that came before the reply to its
// EventRequest.Set (another thread's event can), the client with a Set of
// that kind in flight. mu is held.
func (h *Hub) owner(req int32, kind jdwp.EventKind) *Client {
	if c := h.owners[req]; c != nil {
		return c
	}
	var found *Client
	for _, pc := range h.pending {
		if pc.cmd == jdwp.CmdEventRequestSet && pc.kind == kind && pc.c != nil && !pc.c.gone {
			if found == nil || pc.c == h.controller {
				found = pc.c
			}
		}
	}
	return found
}

// suspended counts the suspension of a composite with policy towards the
// controller when it got a copy. With no controller, the VM's start
// (suspend=y: the VM waits for a debugger) stays suspended, held by the
// hub for the next controller (join), as it would wait with no client at
// all; any other suspension the hub resumes, since no client will. mu is
// held.
func (h *Hub) suspended(ctlGot bool, policy jdwp.SuspendPolicy, thread uint64, vmStart bool) {
	c := h.controller
	switch {
	case policy == jdwp.SuspendNone:
		return
	case ctlGot:
	case vmStart:
		c = &h.held
	default:
		h.orphan(policy, thread)
		return
	}
	if policy == jdwp.SuspendAll {
		c.vmSuspends++
	} else if thread != 0 {
		c.threadSuspends[thread]++
	}
}

// orphan resumes what a composite no controller gets suspended. mu is
// held.
func (h *Hub) orphan(policy jdwp.SuspendPolicy, thread uint64) {
	h.front.orphaned.Add(1)
	switch policy {
	case jdwp.SuspendAll:
		h.sendOwn(jdwp.CmdVirtualMachineResume, nil)
	case jdwp.SuspendEventThread:
		h.resumeThread(thread)
	}
}

// resumeThread queues ThreadReference.Resume of t; never of the null ID
// (an event that carries no thread, or a body cut short): HotSpot does
// not check it and would act on a thread of its own. mu is held.
func (h *Hub) resumeThread(t uint64) {
	if t == 0 {
		return
	}
	var b [8]byte
	n := h.sizes.ObjectID
	for i := 0; i < n; i++ {
		b[i] = byte(t >> (8 * (n - 1 - i)))
	}
	h.sendOwn(jdwp.CmdThreadReferenceResume, b[:n])
}

// split delivers a composite of several events, each client its own
// events in a copy of their own; false when the body does not decode
// (it then goes whole to one client). mu is held.
func (h *Hub) split(p jdwp.Packet, policy jdwp.SuspendPolicy) bool {
	if err := h.comp.Decode(p.Body(), h.sizes); err != nil || len(h.comp.Events) == 0 {
		h.log.Warn().Err(err).Msg("an event composite from the VM does not decode; it goes whole to the owner of its first event")
		return false
	}
	h.targets = h.targets[:0]
	var thread uint64
	vmStart := false
	for i := range h.comp.Events {
		e := &h.comp.Events[i]
		var t *Client // nil: every client
		if e.RequestID != 0 {
			if t = h.owner(e.RequestID, e.Kind); t == nil {
				t = orphaned
			}
		}
		h.targets = append(h.targets, t)
		vmStart = vmStart || e.Kind == jdwp.EventVMStart
		if thread == 0 && e.Kind != jdwp.EventVMDeath && e.Kind != jdwp.EventClassUnload {
			thread = e.Thread
		}
	}
	ctlGot := false
	for _, c := range h.clients {
		h.body = jdwp.BodyWriter{Buf: h.body.Buf[:0], Sizes: h.sizes}
		pol := jdwp.SuspendNone
		if c == h.controller {
			pol = policy
		}
		h.body.Uint8(uint8(pol))
		h.body.Int32(0) // the count, below
		count := 0
		for i := range h.comp.Events {
			if t := h.targets[i]; t == nil || t == c {
				h.comp.Events[i].Append(&h.body)
				count++
			}
		}
		if count == 0 {
			continue
		}
		binary.BigEndian.PutUint32(h.body.Buf[offCount:], uint32(count))
		h.out = jdwp.AppendCommand(h.out[:0], p.ID(), jdwp.CmdEventComposite, h.body.Buf)
		h.deliver(c, h.out)
		ctlGot = ctlGot || c == h.controller
	}
	h.suspended(ctlGot, policy, thread, vmStart)
	return true
}

// orphaned is the target of an event whose request no client owns (its
// client left): no one gets it.
var orphaned = &Client{}
