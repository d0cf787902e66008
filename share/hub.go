package share

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/retag"
	"github.com/rs/zerolog"
)

// Log field names of this package.
const (
	LogClient = "client" // a client's number on its front
	LogRole   = "role"
	LogRule   = "rule"
	LogLeft   = "left" // how a client left: dispose, closed, dropped
)

// hubIDBase is where the hub's own ID counter starts: the controller's own
// ID is kept when it is free, and IDs the hub makes up come from here on
// (below retag.ObserverBase, the observers' range, and
// retag.SyntheticBase, the relay's), far from the small numbers debuggers
// count from.
const hubIDBase uint32 = 0x60000000

// defaultIDSize is the ID size assumed until the VM's IDSizes reply was
// seen (HotSpot's and ART's).
const defaultIDSize = 8

// pendingCmd is a command towards the relay, from a client or the hub,
// waiting for its reply under the hub's ID.
type pendingCmd struct {
	c   *Client // nil: the hub's own command, whose reply is dropped
	id  uint32  // the client's ID
	cmd jdwp.Cmd
	// arg is the thread of a ThreadReference.Suspend, the object of a
	// DisableCollection; kind and policy those of an EventRequest.Set, and
	// req the request of an EventRequest.Clear.
	arg    uint64
	kind   jdwp.EventKind
	policy jdwp.SuspendPolicy
	req    int32
}

// request is an event request a client set.
type request struct {
	kind   jdwp.EventKind
	policy jdwp.SuspendPolicy
}

// Hub is one relay session shared by its clients: the relay sees it as its
// debugger (over the pipe), and it relays each client's commands and the
// VM's answers and events.
//
// Goroutines: one reader per client (Client.read) and one for the pipe
// (readRelay); one writer per client connection and one for the pipe
// (writer.run), the only goroutines writing to them. Routing decisions
// are taken under mu and what they send is queued under mu, so the order
// of the pipe's queue is the order of the decisions.
type Hub struct {
	front *Front
	log   zerolog.Logger
	pipe  net.Conn // the hub's end of the pipe to the relay session
	pw    *writer  // writes pipe
	ready chan struct{}
	// over closes once the session is over for the hub (its reader
	// returned, or it never reached the VM).
	over     chan struct{}
	overOnce sync.Once
	// readyErr is why the relay session could not be reached; set before
	// ready closes.
	readyErr error

	mu sync.Mutex // guards everything below
	// clients are the attached clients, in attach order.
	clients    []*Client
	controller *Client
	// hadController: a controller attached; after it left, an observer
	// becomes the controller only by asking (Hub.command).
	hadController bool
	// pending are the commands towards the relay awaiting replies, by the
	// hub's ID; next is the hub's ID counter.
	pending map[uint32]pendingCmd
	next    uint32 // the hub's range: [hubIDBase, retag.ObserverBase)
	nextObs uint32 // observers' range: [retag.ObserverBase, retag.SyntheticBase)
	// owners maps each event request to the client that set it.
	owners map[int32]*Client
	sizes  jdwp.IDSizes
	// ending: no client may join any more (the last one left, or sent
	// Dispose, or the relay session ended); the front makes a new hub.
	ending bool
	// Scratch owned by whoever holds mu: the composite being split, one
	// target per event, the copy being built, the hub's own commands.
	comp    jdwp.Composite
	targets []*Client
	body    jdwp.BodyWriter
	out     []byte
	own     []byte
	// kick are observers whose queue overflowed, to drop after mu.
	kick []*Client
	// held counts the suspension of the VM's start that no controller
	// got (the VM waits for a debugger), and heldStart is its VM_START
	// event; the next controller takes both (control).
	held      Client
	heldStart []byte
}

// Client is one JDWP client of a hub.
type Client struct {
	// Number numbers the front's clients in attach order, from 1.
	Number   uint64
	conn     net.Conn
	addr     string
	readOnly bool
	since    time.Time
	w        *writer
	log      zerolog.Logger

	// Guarded by the hub's mu:
	role     Role
	gone     bool
	left     string // how it left (leaveLocked): dispose (the hub answered its Dispose), closed, dropped, refused
	requests map[int32]request
	// vmSuspends and threadSuspends count the suspensions it caused and
	// did not resume: VirtualMachine.Suspend and events suspending all
	// (vmSuspends), ThreadReference.Suspend and events suspending their
	// thread (threadSuspends; may go negative when it resumes a thread the
	// VM suspended as a whole).
	vmSuspends     int
	threadSuspends map[uint64]int
	pinned         map[uint64]int // DisableCollection counts
	held           bool           // HoldEvents without ReleaseEvents
	ddm            bool           // it sent DDM: it gets the VM's DDM chunks

	denied atomic.Int64 // commands refused by a rule
}

// ClientInfo describes a client for the page and the journal.
type ClientInfo struct {
	Number   uint64    `json:"number"`
	Addr     string    `json:"addr"`
	Role     string    `json:"role"`
	ReadOnly bool      `json:"read_only,omitempty"`
	Since    time.Time `json:"since"`
	Requests int       `json:"requests"`
	Denied   int64     `json:"denied"`
}

func (c *Client) info() ClientInfo {
	return ClientInfo{Number: c.Number, Addr: c.addr, Role: c.role.String(), ReadOnly: c.readOnly, Since: c.since,
		Requests: len(c.requests), Denied: c.denied.Load()}
}

func newHub(f *Front, pipe net.Conn) *Hub {
	return &Hub{
		front:   f,
		log:     f.cfg.Logger,
		pipe:    pipe,
		pw:      newWriter(pipe, 0),
		ready:   make(chan struct{}),
		over:    make(chan struct{}),
		pending: make(map[uint32]pendingCmd, 16),
		next:    hubIDBase,
		nextObs: retag.ObserverBase,
		owners:  make(map[int32]*Client, 16),
		held:    Client{threadSuspends: map[uint64]int{}},
		sizes:   jdwp.IDSizes{FieldID: defaultIDSize, MethodID: defaultIDSize, ObjectID: defaultIDSize, ReferenceTypeID: defaultIDSize, FrameID: defaultIDSize},
	}
}

// connect performs the JDWP handshake with the relay session over the
// pipe, then starts the pipe's reader and writer; ready closes either way.
func (h *Hub) connect() {
	defer close(h.ready)
	if err := jdwp.WriteHandshake(h.pipe); err != nil {
		h.fail(err)
		return
	}
	br := bufio.NewReaderSize(h.pipe, 64<<10)
	if err := jdwp.ReadHandshake(br); err != nil {
		h.fail(err)
		return
	}
	go h.pw.run() //nolint:errcheck // a failed write ends readRelay too
	go h.readRelay(br)
}

func (h *Hub) fail(err error) {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.ErrClosedPipe) {
		err = errRefused
	}
	h.readyErr = err
	h.pipe.Close()
	h.mu.Lock()
	h.ending = true
	h.mu.Unlock()
	h.overOnce.Do(func() { close(h.over) })
}

// errRefused: the relay session closed its side before the handshake (it
// could not reach the VM, and logged why).
var errRefused = errors.New("share: the VM could not be reached")

// join adds c; the first client that is not read-only becomes the
// controller (after a controller left, only one that asks does). It fails once the hub is
// ending.
func (h *Hub) join(c *Client) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ending {
		return false
	}
	c.role = Observer
	if h.controller == nil && !c.readOnly && !h.hadController {
		h.control(c)
	}
	h.clients = append(h.clients, c)
	return true
}

// control makes c the controller; it takes the suspension the hub held
// for one (the VM's start), to release it if it leaves without resuming,
// and the VM_START event that came with it.
// mu is held.
func (h *Hub) control(c *Client) {
	c.role = Controller
	h.controller = c
	h.hadController = true
	c.vmSuspends += h.held.vmSuspends
	h.held.vmSuspends = 0
	for t, n := range h.held.threadSuspends {
		c.threadSuspends[t] += n
		delete(h.held.threadSuspends, t)
	}
	if len(h.heldStart) > 0 {
		// A debugger attaching to a suspend=y VM waits for VM_START
		// (jdb, JDI's attach): it gets the one the VM sent when a
		// read-only client attached first.
		h.deliver(c, h.heldStart)
		h.heldStart = nil
	}
}

// alloc returns the hub ID for a command of c (nil: the hub's own) whose
// own ID is want: the controller's own ID when it is free and below the
// observers' range, so that a lone debugger's stream is unchanged; else
// the next free one of the hub's range, or, for an observer, of the
// observers' range (retag.FromObserver: the speculator learns from the
// controller only).
func (h *Hub) alloc(c *Client, want uint32) uint32 {
	if c != nil && c.role == Observer {
		return h.nextFree(&h.nextObs, retag.ObserverBase, retag.SyntheticBase)
	}
	if c != nil && want < retag.ObserverBase {
		if _, busy := h.pending[want]; !busy {
			return want
		}
	}
	return h.nextFree(&h.next, hubIDBase, retag.ObserverBase)
}

// nextFree advances *next within [lo, hi) to an ID no command holds.
func (h *Hub) nextFree(next *uint32, lo, hi uint32) uint32 {
	for {
		*next++
		if *next >= hi || *next < lo {
			*next = lo
		}
		if _, busy := h.pending[*next]; !busy {
			return *next
		}
	}
}

// sendOwn queues a command of the hub's own (undoing a client that left);
// its reply is dropped. mu is held.
func (h *Hub) sendOwn(c jdwp.Cmd, body []byte) {
	id := h.alloc(nil, 0)
	h.pending[id] = pendingCmd{cmd: c}
	h.own = jdwp.AppendCommand(h.own[:0], id, c, body)
	h.pw.queue(h.own)
}

// answer queues a reply from the hub to c. mu is held.
func (h *Hub) answer(c *Client, id uint32, code jdwp.ErrorCode, body []byte) {
	h.out = jdwp.AppendReply(h.out[:0], id, code, body)
	h.deliver(c, h.out)
}

// deliver queues p for c; an observer whose queue went over the bound is
// dropped once mu is released (kick). mu is held.
func (h *Hub) deliver(c *Client, p []byte) {
	n := c.w.queue(p)
	if n > h.front.cfg.WriteQueueBytes && c != h.controller && !c.gone {
		h.kick = append(h.kick, c)
	}
}

// kicked takes the observers whose queues overflowed while mu was held
// (nil when none: no allocation). mu is held.
func (h *Hub) kicked() []*Client {
	if len(h.kick) == 0 {
		return nil
	}
	var out []*Client
	for _, c := range h.kick {
		if !c.gone && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	h.kick = h.kick[:0]
	return out
}

// drop disconnects the observers kicked returned: too slow, they would
// stall the others.
func (h *Hub) drop(kicked []*Client) {
	for _, c := range kicked {
		c.log.Warn().Int(LogMaxQueue, h.front.cfg.WriteQueueBytes).Msg("an observer took too long to read what the VM sent it; dropped it so that the other clients go on")
		h.leave(c, "dropped")
	}
}

// LogMaxQueue is the bound a dropped observer's queue went over.
const LogMaxQueue = "max_queue_bytes"

// command handles a command from c (a packet of c's reader, which the hub
// may rewrite in place). mu is held.
func (h *Hub) command(c *Client, p jdwp.Packet) {
	if c.gone {
		if c.left != "dispose" {
			return
		}
		// After its Dispose the hub answers as a VM that let it go would.
		h.answer(c, p.ID(), jdwp.ErrorVMDead, nil)
		return
	}
	cmd := p.Cmd()
	body := p.Body()
	if cmd == jdwp.CmdVirtualMachineDispose && len(h.clients) > 1 {
		// Not the last client: the VM connection goes on for the others.
		h.answer(c, p.ID(), jdwp.ErrorNone, nil)
		h.leaveLocked(c, "dispose")
		return
	}
	if c.role == Observer && cmd != jdwp.CmdVirtualMachineDispose { // the last client's Dispose goes on, as a lone debugger's
		rule := observerRule(p, h.sizes, func(obj uint64) bool { return c.pinned[obj] > 0 })
		if rule != RuleAllowed && h.controller == nil && !c.readOnly {
			// No controller: the first observer that asks for control
			// (sends a controlling command) becomes the controller.
			h.control(c)
			c.log.Info().Str(LogRole, Controller.String()).Stringer(LogCmd, cmd).Msg("client took control of the VM (no controller was attached)")
			h.front.changed()
			rule = RuleAllowed
		}
		if rule != RuleAllowed {
			h.deny(c, p, rule)
			return
		}
	}
	pc := pendingCmd{c: c, id: p.ID(), cmd: cmd}
	switch cmd {
	case jdwp.CmdEventRequestSet:
		if len(body) >= 2 {
			pc.kind, pc.policy = jdwp.EventKind(body[0]), jdwp.SuspendPolicy(body[1])
		}
	case jdwp.CmdEventRequestClear:
		req, _ := readInt32(body, 1)
		if o := h.owners[req]; o != nil && o != c {
			h.deny(c, p, RuleOthersRequest)
			return
		}
		pc.req = req
	case jdwp.CmdEventRequestClearAllBreakpoints:
		if len(h.clients) > 1 {
			// Only its own: the others' breakpoints stay.
			h.clearOwn(c, jdwp.EventBreakpoint)
			h.answer(c, p.ID(), jdwp.ErrorNone, nil)
			return
		}
	case jdwp.CmdVirtualMachineDispose:
		h.ending = true // the last client: the session ends as today
	case jdwp.CmdVirtualMachineResume:
		c.resumeVM()
	case jdwp.CmdThreadReferenceResume:
		if t, ok := readID(body, 0, h.sizes.ObjectID); ok {
			c.threadSuspends[t]--
		}
	case jdwp.CmdThreadReferenceSuspend, jdwp.CmdObjectReferenceDisableCollection:
		pc.arg, _ = readID(body, 0, h.sizes.ObjectID)
	case jdwp.CmdObjectReferenceEnableCollection:
		if o, ok := readID(body, 0, h.sizes.ObjectID); ok && c.pinned[o] > 0 {
			if c.pinned[o]--; c.pinned[o] == 0 {
				delete(c.pinned, o)
			}
		}
	case jdwp.CmdVirtualMachineDisposeObjects:
		if len(h.clients) > 1 {
			// The VM counts an ID's references per connection, not per
			// client: one client's release could free an ID another still
			// uses. Shared, IDs are released when the last client leaves
			// (the VM resets).
			h.answer(c, p.ID(), jdwp.ErrorNone, nil)
			return
		}
	case jdwp.CmdVirtualMachineHoldEvents:
		c.held = true
	case jdwp.CmdVirtualMachineReleaseEvents:
		c.held = false
	}
	if cmd.Set == jdwp.SetDDM {
		c.ddm = true
	}
	id := h.alloc(c, p.ID())
	h.pending[id] = pc
	p.SetID(id)
	h.pw.queue(p)
}

// resumeVM counts down the suspensions of a VirtualMachine.Resume: the
// VM's own if any, else one of each thread's.
func (c *Client) resumeVM() {
	if c.vmSuspends > 0 {
		c.vmSuspends--
		return
	}
	for t, n := range c.threadSuspends {
		if n <= 1 {
			delete(c.threadSuspends, t)
		} else {
			c.threadSuspends[t] = n - 1
		}
	}
}

// deny answers c's command p with the refusal error and logs the rule.
// mu is held.
func (h *Hub) deny(c *Client, p jdwp.Packet, rule Rule) {
	c.denied.Add(1)
	h.front.denied.Add(1)
	c.log.Warn().Str(LogRule, string(rule)).Stringer(LogCmd, p.Cmd()).Str(LogRole, c.role.String()).Uint32(LogPacketID, p.ID()).
		Msg("refused a command this client's role does not allow; nothing reached the VM")
	h.answer(c, p.ID(), deniedError, nil)
}

// Log field names shared with the relay.
const (
	LogCmd      = "cmd"
	LogPacketID = "packet_id"
)

// clearOwn queues EventRequest.Clear for each request of c of kind (every
// kind when 0) and forgets them. mu is held.
func (h *Hub) clearOwn(c *Client, kind jdwp.EventKind) {
	for id, r := range c.requests {
		if kind != 0 && r.kind != kind {
			continue
		}
		h.clearRequest(r.kind, id)
		delete(c.requests, id)
		delete(h.owners, id)
	}
}

func (h *Hub) clearRequest(kind jdwp.EventKind, id int32) {
	var b [5]byte
	b[0] = byte(kind)
	binary.BigEndian.PutUint32(b[1:], uint32(id))
	h.sendOwn(jdwp.CmdEventRequestClear, b[:])
}

// reply routes a reply from the relay to the client whose command it
// answers (replyTarget). mu is held.
func (h *Hub) reply(p jdwp.Packet) {
	if c := h.replyTarget(p); c != nil {
		h.deliver(c, p)
	}
}

// replyTarget learns what the reply p tells (request owners, suspensions,
// pins, ID sizes; only its header when p is one) and gives it the client's
// ID back; it returns the client to give it to, nil when none (the hub's
// own command, or a client that left). A reply to no command in flight
// goes to the primary client, as the relay would deliver it to a lone
// debugger. mu is held.
func (h *Hub) replyTarget(p jdwp.Packet) *Client {
	pc, ok := h.pending[p.ID()]
	if !ok {
		return h.primary()
	}
	delete(h.pending, p.ID())
	c := pc.c
	okReply := p.ErrorCode() == jdwp.ErrorNone
	body := p.Body()
	if okReply {
		switch pc.cmd {
		case jdwp.CmdVirtualMachineIDSizes:
			if sz, err := jdwp.ParseIDSizes(body); err == nil {
				h.sizes = sz
			}
		case jdwp.CmdEventRequestSet:
			if req, ok := readInt32(body, 0); ok && c != nil {
				if c.gone {
					h.clearRequest(pc.kind, req) // it left before the reply
				} else {
					c.requests[req] = request{kind: pc.kind, policy: pc.policy}
					h.owners[req] = c
				}
			}
		case jdwp.CmdEventRequestClear:
			if c != nil && h.owners[pc.req] == c {
				delete(h.owners, pc.req)
				delete(c.requests, pc.req)
			}
		case jdwp.CmdVirtualMachineSuspend:
			if c != nil {
				c.vmSuspends++
				if c.gone {
					h.releaseSuspends(c)
				}
			}
		case jdwp.CmdThreadReferenceSuspend:
			if c != nil {
				c.threadSuspends[pc.arg]++
				if c.gone {
					h.releaseSuspends(c)
				}
			}
		case jdwp.CmdObjectReferenceDisableCollection:
			if c != nil {
				c.pinned[pc.arg]++
				if c.gone {
					h.unpin(c)
				}
			}
		}
	}
	if c == nil || c.gone {
		return nil // the hub's own, or for a client that left
	}
	p.SetID(pc.id)
	return c
}

// vmCommand routes a command the VM sent that is not an event (DDM
// chunks, vendor commands): to the clients that speak DDM, or the
// controller when none does (as the relay delivers it to a lone debugger).
// mu is held.
func (h *Hub) vmCommand(p jdwp.Packet) {
	sent := false
	if p.CommandSet() == jdwp.SetDDM {
		for _, c := range h.clients {
			if c.ddm {
				h.deliver(c, p)
				sent = true
			}
		}
	}
	if sent {
		return
	}
	if c := h.primary(); c != nil {
		h.deliver(c, p)
	}
}

// primary is the client that gets what belongs to no one in particular:
// the controller, else the first client.
func (h *Hub) primary() *Client {
	if h.controller != nil {
		return h.controller
	}
	if len(h.clients) > 0 {
		return h.clients[0]
	}
	return nil
}
