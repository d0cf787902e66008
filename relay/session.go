package relay

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/retag"
	"github.com/rs/zerolog"
)

// ErrSessionClosed is returned by Session.Do after the session ended.
var ErrSessionClosed = errors.New("relay: session closed")

// ErrHooksOff is returned by Session.Do once the session's hooks are off:
// a hook panicked, and the session goes on as plain pass-through.
var ErrHooksOff = errors.New("relay: the session's hooks are off after a panic")

// pending is a command towards the debugger's side waiting for its
// answer, hooks' data included: a VM-originated command awaiting the
// debugger's reply, or a debugger command an interceptor consumed
// awaiting the proxy's answer. Commands towards the VM wait in the VM
// connection's retag.Table (Session.IDs).
type pending struct {
	cmd  jdwp.Cmd
	data [NumSlots]any
}

// Session is one debugger connection and its VM connection. Four
// goroutines serve it: a reader per connection (readDebugger, readVM),
// which classifies each packet, runs the hooks in the session's turn and
// queues the packet for the other side, and a writer per connection
// (writeDebugger, writeVM), the only goroutine that writes to it.
type Session struct {
	// ID numbers sessions in the order the server accepted them.
	ID     uint64
	log    zerolog.Logger
	vmName string // Config.VM

	debugger, vm   net.Conn
	toVM, toDbg    *sideWriter
	maxPacket      int
	maxOutstanding int
	hooks          Hooks

	// debuggerInfo and vmInfo are what the caller learned about each
	// connection before the session (ServeConnInfo, VMConn.Info); set
	// before the hooks are made, never changed.
	debuggerInfo, vmInfo LinkInfo

	// hooksOff is set once a hook panicked: from then on the session is
	// plain pass-through and packet hooks are not called.
	hooksOff atomic.Bool
	metrics  *Metrics

	idSizes atomic.Pointer[jdwp.IDSizes] // nil until the VM's IDSizes reply

	// ids is the VM connection's packet ID table and its commands in
	// flight (see IDs): every command queued to the VM is recorded there
	// (queueToVM) and taken back by its reply. The debugger reader remaps
	// a debugger command whose ID is in the proxy's range, and the VM
	// reader gives its reply the debugger's ID back and tells replies to
	// the proxy's own commands. Remapping only when ownIDs: a session
	// with no interceptor, on a connection that carried nothing of the
	// proxy's (no VMConn.IDs), sends nothing of its own and stays a
	// byte-for-byte pass-through, whatever IDs the debugger uses.
	ids    *retag.Table
	ownIDs bool

	// Commands sent to the VM wait for their replies in ids (Sent,
	// Take), whoever sent them.
	pendingMu sync.Mutex // guards dbgPending and awaiting
	// dbgPending holds VM-originated commands (other than events, which
	// get no reply) waiting for the debugger's reply.
	dbgPending map[uint32]pending
	// awaiting holds the debugger's commands an interceptor consumed
	// without answering at once (a Belay): Outbox.SendToDebugger answers them.
	awaiting map[uint32]pending
	// outstanding counts, by the direction they travel, the commands of
	// each peer that await an answer: [ToVM] the debugger's (forwarded or
	// awaiting), [ToDebugger] the VM's. A reader stops reading its peer
	// while its count is at maxOutstanding.
	outstanding [2]atomic.Int32
	// room is signalled (capacity 1) when outstanding[dir] decreases.
	room [2]chan struct{}

	dbgFrame, vmFrame Frame // reused by each reader goroutine
	// substitute is owned by the VM reader: the error reply standing in
	// for a reply above the maximum packet size.
	substitute [jdwp.HeaderSize]byte

	// The session's turn (see the package doc): hook code runs only
	// while turn is held, one call at a time, and what it sends (out) is
	// applied before the turn is given up. turnOn: the session has hooks,
	// and its readers take the turn for each packet.
	turn   sync.Mutex
	turnOn bool
	// Owned by the goroutine that holds turn: the outbox, and the Frame
	// its packets are observed in.
	out      Outbox
	injFrame Frame
	// Work queued by Do, run in the turn (runQueued). doRun is owned by
	// the goroutine that holds turn: the queue it is running.
	doMu    sync.Mutex // guards doQueue
	doQueue []func(*Outbox)
	doRun   []func(*Outbox)
	nQueued atomic.Int32 // len(doQueue), read without doMu
	// gates are the interceptors that hold the debugger's packets back
	// (Gate); called by the debugger reader only.
	gates []Gate

	// ending is set once the session's end was announced: the debugger
	// sent VirtualMachine.Dispose or Exit, or the VM sent VM_DEATH. A peer
	// resetting its connection after that is the normal end.
	ending atomic.Bool

	endOnce     sync.Once
	endErr      error         // the first reader or writer result (nil for an orderly end)
	endedBy     string        // whose connection ended the session: peerDebugger, peerVM or peerProxy
	ended       chan struct{} // closed by the first end call
	closed      atomic.Bool
	releaseOnce sync.Once
	closeOnce   sync.Once
	done        chan struct{} // closed when the session is released (closeWrites or close)
}

// Logger is the session's logger, with the session field set.
func (s *Session) Logger() *zerolog.Logger { return &s.log }

// IDSizes is what the VM said in reply to VirtualMachine.IDSizes, and
// whether it has said it yet.
func (s *Session) IDSizes() (jdwp.IDSizes, bool) {
	if p := s.idSizes.Load(); p != nil {
		return *p, true
	}
	return jdwp.IDSizes{}, false
}

// SetIDSizes records ID sizes learned elsewhere (for instance by a hook that
// asked the VM before the session started).
func (s *Session) SetIDSizes(sz jdwp.IDSizes) { s.idSizes.Store(&sz) }

// IDs is the VM connection's packet ID table, where every command the
// session sends to the VM waits for its reply: hooks take the IDs of the
// commands they send on their own (Outbox.SendToVM with Synthetic) from it, and
// from nowhere else. In a session with interceptors, or on a connection
// handed over with its table (VMConn.IDs), the relay remaps debugger
// commands in its range before interceptors see them (Frame.ID keeps the
// debugger's ID, the packet carries the one the VM gets) and restores the
// debugger's ID in the reply after interceptors saw it; a reply to a
// command of the proxy's own never reaches the debugger, whichever hook
// sent it.
func (s *Session) IDs() *retag.Table { return s.ids }

// DebuggerAddr is the debugger's remote address.
func (s *Session) DebuggerAddr() net.Addr { return s.debugger.RemoteAddr() }

// DebuggerInfo is what the caller agreed about the debugger's
// connection before the session (Server.ServeConnInfo); zero for a plain
// debugger.
func (s *Session) DebuggerInfo() LinkInfo { return s.debuggerInfo }

// VMInfo is what the dialer agreed about the VM's connection
// (VMConn.Info); zero for a plain VM.
func (s *Session) VMInfo() LinkInfo { return s.vmInfo }

// VM is the name of the VM the session serves (Config.VM), "" if unnamed.
func (s *Session) VM() string { return s.vmName }

// Close ends the session at once, as the proxy's shutdown does: both
// connections are closed. For a hook that finds the session unusable (a
// peer proxy that breaks its protocol). Safe from any goroutine, hooks
// included.
func (s *Session) Close() { s.close() }

// VMAddr is the VM's address.
func (s *Session) VMAddr() net.Addr { return s.vm.RemoteAddr() }

// sendAnswer observes and queues the answer an interceptor gave a
// debugger command at once (Frame.Answer), with the command's data (it
// never waited in awaiting). The turn is held.
func (s *Session) sendAnswer(f *Frame) error {
	a := &s.injFrame
	*a = Frame{Dir: ToDebugger, Kind: KindReply, Origin: f.Origin, Packet: f.Answer, ID: f.Answer.ID(), Cmd: f.Cmd, Time: time.Now(), data: f.data, out: &s.out}
	if !f.Answer.IsReply() {
		a.Cmd = f.Answer.Cmd()
		a.Kind = vmCommandKind(a.Cmd)
	}
	s.observe(a)
	err := s.toDbg.enqueue(f.Answer)
	*a = Frame{}
	return err
}

// answered records that the debugger's command id got its answer f from
// the proxy (not from the VM), and gives f the command's data.
func (s *Session) answered(id uint32, f *Frame) {
	s.pendingMu.Lock()
	pc, ok := s.awaiting[id]
	if ok {
		delete(s.awaiting, id)
	}
	s.pendingMu.Unlock()
	if ok {
		f.data = pc.data
		s.settled(ToVM)
	}
}

// settled counts down the commands awaiting an answer in dir, one got
// its answer.
func (s *Session) settled(dir Direction) {
	s.outstanding[dir].Add(-1)
	signal(s.room[dir])
}

// waitOutstanding blocks while the peer whose commands travel in dir has
// maxOutstanding commands awaiting answers: its reader then stops reading,
// and TCP flow control pushes back on the peer.
func (s *Session) waitOutstanding(dir Direction) error {
	for {
		if int(s.outstanding[dir].Load()) < s.maxOutstanding {
			return nil
		}
		select {
		case <-s.room[dir]:
		case <-s.done:
			return ErrSessionClosed
		}
	}
}

func vmCommandKind(c jdwp.Cmd) Kind {
	switch {
	case c == jdwp.CmdComposite:
		return KindEvent
	case c.Set == jdwp.SetDDM:
		return KindDDM
	}
	return KindVMCommand
}

// queueToVM records a command in flight in the connection's table (with
// the data hooks gave it), then queues it for the VM, without a copy when
// owned (the caller gives f.Packet's bytes away).
func (s *Session) queueToVM(f *Frame, owned bool) error {
	if f.Kind == KindCommand {
		owner := retag.NotOurs
		if f.Origin == Synthetic {
			owner = retag.Synthetic
		}
		dup := s.ids.Sent(f.Packet.ID(), retag.Command{Cmd: f.Cmd, Sent: f.Time, Owner: owner, Debugger: f.ID, Data: f.data})
		if !dup && f.Origin != Synthetic {
			s.outstanding[ToVM].Add(1)
		}
	}
	if owned {
		return s.toVM.enqueueOwned(f.Packet)
	}
	return s.toVM.enqueue(f.Packet)
}

// observe shows f to every observer. A panicking observer turns the
// session into plain pass-through (see hookPanicked).
func (s *Session) observe(f *Frame) {
	s.metrics.count(f)
	if len(s.hooks.Observers) == 0 || s.hooksOff.Load() {
		return
	}
	defer func() {
		if v := recover(); v != nil {
			s.hookPanicked(hookObserver, v, f)
		}
	}()
	for _, o := range s.hooks.Observers {
		o.Observe(s, f)
	}
}

// interceptFromDebugger and interceptFromVM run the interceptors on f. A
// panicking interceptor turns the session into plain pass-through, and
// the packet is forwarded (a debugger's packet with the ID wire the relay
// gave it, in case the interceptor had rewritten it).
func (s *Session) interceptFromDebugger(f *Frame, wire uint32) (action Action) {
	defer func() {
		if v := recover(); v != nil {
			s.hookPanicked(hookInterceptor, v, f)
			f.Packet.SetID(wire)
			action = s.afterPanic(f)
		}
	}()
	for _, ic := range s.hooks.Interceptors {
		if action = ic.FromDebugger(s, f); action == Consume {
			return Consume
		}
	}
	return Forward
}

func (s *Session) interceptFromVM(f *Frame) (action Action) {
	defer func() {
		if v := recover(); v != nil {
			s.hookPanicked(hookInterceptor, v, f)
			action = s.afterPanic(f)
		}
	}()
	for _, ic := range s.hooks.Interceptors {
		if action = ic.FromVM(s, f); action == Consume {
			return Consume
		}
	}
	return Forward
}

// Hook kinds, the label values of jdwpaccel_hook_panics_total.
const (
	hookInterceptor = "interceptor"
	hookObserver    = "observer"
	hookLifecycle   = "lifecycle"
	hookDo          = "do"        // work run by Session.Do
	hookGoroutine   = "goroutine" // a hook's own goroutine (Session.Panicked)
)

// hookPanicked handles a panic recovered from a hook: it is counted and
// logged with the packet it was handling, and the session goes on as plain
// pass-through: no interceptor or observer sees another packet. (Commands
// an interceptor had consumed and meant to answer later stay unanswered.)
// With Hooks.EndOnPanic the session ends instead, the packet undelivered.
// Lifecycle calls (Interceptor.Close, SessionObserver.SessionEnd) are
// still made, so hooks can release what they hold.
func (s *Session) hookPanicked(hook string, v any, f *Frame) {
	s.hooksOff.Store(true)
	s.metrics.hookPanic(hook)
	e := s.log.Error().Str(LogHook, hook).Str(LogPanic, fmt.Sprint(v)).Str(LogStack, string(debug.Stack()))
	if f != nil {
		e = e.Stringer(LogDir, f.Dir).Stringer(LogKind, f.Kind).Stringer(LogCmd, f.Cmd).Uint32(LogPacketID, f.ID)
	}
	if s.hooks.EndOnPanic {
		e.Msg("a hook panicked (a bug to report); this session ends")
		s.Fail(ReasonHookPanic, fmt.Errorf("a %s panicked: %v", hook, v))
		return
	}
	e.Msg("a hook panicked (a bug to report); this session goes on as plain pass-through")
}

// afterPanic is what becomes of the packet an interceptor panicked on: it
// is forwarded, unless the session ends (Hooks.EndOnPanic) and it must not
// reach the other peer unhandled.
func (s *Session) afterPanic(f *Frame) Action {
	if s.hooks.EndOnPanic {
		f.Origin = Synthetic
		return Consume
	}
	return Forward
}

// lifecycle calls fn, recovering a panic (counted and logged).
func (s *Session) lifecycle(fn func()) {
	defer func() {
		if v := recover(); v != nil {
			s.hookPanicked(hookLifecycle, v, nil)
		}
	}()
	fn()
}

func (s *Session) hooksOn() bool { return len(s.hooks.Interceptors) > 0 && !s.hooksOff.Load() }

// relayDebuggerToVM reads the debugger's packets until it fails.
func (s *Session) relayDebuggerToVM(r *jdwp.Reader) error {
	f := &s.dbgFrame
	for {
		if err := s.waitOutstanding(ToVM); err != nil {
			return err
		}
		p, err := r.Next()
		if err != nil {
			return err
		}
		if s.closed.Load() {
			return ErrSessionClosed // read while the session ends: not relayed, not observed
		}
		*f = Frame{Dir: ToVM, Packet: p, ID: p.ID(), Time: time.Now()}
		if p.IsReply() {
			f.Kind = KindDebuggerReply
			s.pendingMu.Lock()
			pc, ok := s.dbgPending[p.ID()]
			delete(s.dbgPending, p.ID())
			s.pendingMu.Unlock()
			if ok {
				f.Cmd, f.data = pc.cmd, pc.data
				s.settled(ToDebugger)
			}
		} else {
			f.Kind = KindCommand
			f.Cmd = p.Cmd()
			if f.Cmd == jdwp.CmdVirtualMachineDispose || f.Cmd == jdwp.CmdVirtualMachineExit {
				s.ending.Store(true)
			}
		}
		// A command whose ID is in the proxy's range goes to the VM
		// under a fresh proxy ID (in the packet; f.ID keeps the
		// debugger's).
		wire, remapped := f.ID, false
		if f.Kind == KindCommand && s.ownIDs {
			wire, remapped = s.ids.FromDebugger(p)
		}
		if e := s.log.Trace(); e.Enabled() {
			e.Uint32(LogPacketID, f.ID).Stringer(LogCmd, f.Cmd).Int(LogLength, len(p)).Msg("from debugger")
		}
		if !s.turnOn {
			s.observe(f)
			// A big packet's buffer is the reader's no more: queue it
			// as it is, rather than hold a copy too.
			if err := s.queueToVM(f, r.Owned(f.Packet)); err != nil {
				return writeFailed(peerVM, err)
			}
			if err := s.toVM.waitRoom(s.done); err != nil {
				return writeFailed(peerVM, err)
			}
			continue
		}
		s.holdDebugger()
		s.beginTurn()
		action, err := s.debuggerTurn(f, wire, remapped, r)
		s.endTurn()
		if err != nil {
			return err
		}
		if action == Forward {
			if err := s.toVM.waitRoom(s.done); err != nil {
				return writeFailed(peerVM, err)
			}
		} else if f.Answer != nil {
			if err := s.toDbg.waitRoom(s.done); err != nil {
				return writeFailed(peerDebugger, err)
			}
		}
	}
}

// debuggerTurn handles a debugger's packet f in the session's turn: the
// interceptors, then what they sent, then the observers, then the packet
// is queued for the VM or answered; answers to it that the interceptors
// sent go last.
func (s *Session) debuggerTurn(f *Frame, wire uint32, remapped bool, r *jdwp.Reader) (Action, error) {
	f.out = &s.out
	action := Forward
	if s.hooksOn() {
		action = s.interceptFromDebugger(f, wire)
		if action == Consume && remapped {
			s.ids.Forget(wire) // answered by the proxy: no reply will come
		}
	}
	if f.Kind == KindCommand {
		s.markAnswers(f.ID)
	}
	s.applyOut(true)
	s.observe(f)
	if action == Consume && f.Kind == KindCommand && f.Answer == nil {
		// After observers gave it their data; before an answer sent
		// meanwhile is applied.
		s.pendingMu.Lock()
		_, dup := s.awaiting[f.ID]
		s.awaiting[f.ID] = pending{cmd: f.Cmd, data: f.data}
		s.pendingMu.Unlock()
		if !dup {
			s.outstanding[ToVM].Add(1)
		}
	}
	s.applyOut(false)
	if action == Forward {
		// A big packet's buffer is the reader's no more: queue it as it
		// is, rather than hold a copy too.
		if err := s.queueToVM(f, r.Owned(f.Packet)); err != nil {
			return action, writeFailed(peerVM, err)
		}
	} else if f.Answer != nil {
		if err := s.sendAnswer(f); err != nil {
			return action, writeFailed(peerDebugger, err)
		}
	}
	return action, nil
}

// holdDebugger calls the gates (Gate) before a debugger's packet's turn.
func (s *Session) holdDebugger() {
	if len(s.gates) == 0 || s.hooksOff.Load() {
		return
	}
	defer func() {
		if v := recover(); v != nil {
			s.hookPanicked(hookInterceptor, v, nil)
		}
	}()
	for _, g := range s.gates {
		g.HoldDebugger(s)
	}
}

// relayVMToDebugger reads the VM's packets until it fails.
func (s *Session) relayVMToDebugger(r *jdwp.Reader) error {
	f := &s.vmFrame
	for {
		if err := s.waitOutstanding(ToDebugger); err != nil {
			return err
		}
		p, err := r.Next()
		if err != nil {
			if p = s.replaceOversizedReply(err); p == nil {
				return err
			}
		}
		if s.closed.Load() {
			return ErrSessionClosed // read while the session ends: not relayed, not observed
		}
		*f = Frame{Dir: ToDebugger, Packet: p, Time: time.Now()}
		synthetic := false
		var cmd retag.Command
		owner := retag.NotOurs
		if p.IsReply() {
			f.Kind = KindReply
			var ok bool
			cmd, owner, ok = s.ids.Take(p.ID())
			if ok {
				if owner != retag.Synthetic {
					s.settled(ToVM)
				}
				f.Cmd = cmd.Cmd
				f.data = cmd.Data
				f.Latency = f.Time.Sub(cmd.Sent)
				if cmd.Cmd == jdwp.CmdIDSizes && p.ErrorCode() == 0 {
					s.learnIDSizes(p.Body())
				}
			}
			// A reply to a command of the proxy's own (sent through the
			// session or before it, see VMConn.IDs), or in its range
			// when the proxy may have sent it.
			synthetic = owner == retag.Synthetic && (ok || s.ownIDs)
			if synthetic {
				f.Origin = Synthetic
			}
		} else {
			f.Cmd = p.Cmd()
			f.Kind = vmCommandKind(f.Cmd)
			if f.Kind == KindEvent && jdwp.StartsWithVMDeath(p.Body()) {
				s.ending.Store(true)
			}
		}
		if s.turnOn {
			s.beginTurn()
		}
		action, err := s.vmTurn(f, synthetic, owner, cmd.Debugger, r)
		if s.turnOn {
			s.endTurn()
		}
		if err != nil {
			return err
		}
		if action == Forward {
			if err := s.toDbg.waitRoom(s.done); err != nil {
				return writeFailed(peerDebugger, err)
			}
		}
	}
}

// vmTurn handles a VM's packet f, in the session's turn if it has hooks:
// the interceptors, then what they sent, then the observers, then the
// packet is queued for the debugger. synthetic says f replies to a
// command of the proxy's own; owner is the table's owner of its command,
// and dbgID the ID the debugger gave it.
func (s *Session) vmTurn(f *Frame, synthetic bool, owner retag.Owner, dbgID uint32, r *jdwp.Reader) (Action, error) {
	p := f.Packet
	f.out = &s.out
	action := Forward
	if s.hooksOn() {
		action = s.interceptFromVM(f)
	}
	if f.Kind == KindReply {
		if owner == retag.Remapped {
			p.SetID(dbgID) // the debugger's ID back
		}
		if synthetic {
			// The debugger never sent that command, whether or not an
			// interceptor took the reply (the one that sent it may be
			// gone: it panicked, or expired the command).
			f.Origin = Synthetic
			action = Consume
		}
	}
	f.ID = p.ID() // after any rewrite: the ID the debugger receives
	if e := s.log.Trace(); e.Enabled() {
		e.Uint32(LogPacketID, f.ID).Stringer(LogCmd, f.Cmd).Stringer(LogKind, f.Kind).Int(LogLength, len(p)).Msg("from VM")
	}
	s.applyOut(false)
	s.observe(f)
	if f.Kind == KindVMCommand && action == Forward {
		// Awaits the debugger's reply, with the data observers gave it;
		// a command an interceptor consumed (one the proxy's peer sent
		// the proxy) awaits none.
		s.pendingMu.Lock()
		_, dup := s.dbgPending[p.ID()]
		s.dbgPending[p.ID()] = pending{cmd: f.Cmd, data: f.data}
		s.pendingMu.Unlock()
		if !dup {
			s.outstanding[ToDebugger].Add(1)
		}
	}
	if action == Forward {
		enqueue := s.toDbg.enqueue
		if r.Owned(p) {
			enqueue = s.toDbg.enqueueOwned // as in relayDebuggerToVM
		}
		if err := enqueue(p); err != nil {
			return action, writeFailed(peerDebugger, err)
		}
	}
	return action, nil
}

// oversizedReplyError is the JDWP error a debugger gets instead of a
// reply above the maximum packet size. INTERNAL (113) says the failure is
// the debugging machinery's, which is true of the proxy's limit; JDI
// raises it as an InternalException for that one request and goes on.
// OUT_OF_MEMORY (110) would be read as the debuggee running out of memory
// (JDI's VMOutOfMemoryException), which it did not.
const oversizedReplyError = jdwp.ErrorInternal

// replaceOversizedReply returns, for a *jdwp.TooLargeError about a reply,
// an error reply with the same ID that stands in for it (the reader skips
// the reply's bytes), or nil for any other error. The substitute lives in
// s.substitute, owned by the VM reader.
func (s *Session) replaceOversizedReply(err error) jdwp.Packet {
	var tl *jdwp.TooLargeError
	if !errors.As(err, &tl) || !tl.Packet().IsReply() {
		return nil
	}
	h := tl.Packet()
	s.metrics.oversizedReply()
	s.log.Warn().Uint32(LogPacketID, h.ID()).Uint32(LogLength, h.Length()).Int(LogMax, tl.Max).
		Stringer(LogErrorCode, oversizedReplyError).
		Msg("VM reply above the maximum packet size skipped; the debugger gets an error reply instead (raise the maximum packet size to let such replies through)")
	return jdwp.AppendReply(s.substitute[:0], h.ID(), oversizedReplyError, nil)
}

func (s *Session) learnIDSizes(body []byte) {
	sz, err := jdwp.ParseIDSizes(body)
	if err != nil {
		s.log.Warn().Err(err).Msg("VM sent an IDSizes reply that does not parse")
		return
	}
	s.idSizes.Store(&sz)
	s.log.Debug().Int("object_id_size", sz.ObjectID).Int("reference_type_id_size", sz.ReferenceTypeID).
		Int("method_id_size", sz.MethodID).Int("field_id_size", sz.FieldID).Int("frame_id_size", sz.FrameID).
		Msg("learned ID sizes")
}

// Peers whose connection ends a session, the values of the closed_by log
// field: the debugger's or the VM's (its reader or writer returned first),
// or the proxy's own shutdown (the session was closed before either did).
const (
	peerDebugger = "debugger"
	peerVM       = "vm"
	peerProxy    = "proxy"
)

// writeError is a failure to write to a peer's connection. Whichever
// goroutine meets it (the other side's reader, waiting for room, or the
// writer itself), the session ends by that peer.
type writeError struct {
	peer string
	err  error
}

func writeFailed(peer string, err error) error { return &writeError{peer: peer, err: err} }

func (e *writeError) Error() string {
	name := "VM"
	if e.peer == peerDebugger {
		name = "debugger"
	}
	return "write to " + name + ": " + e.err.Error()
}

func (e *writeError) Unwrap() error { return e.err }

// end records the first result of a reader or writer, and the peer whose
// connection it serves (or, for a failed write, the peer written to), and
// starts the session's shutdown.
func (s *Session) end(peer string, err error) {
	s.endOnce.Do(func() {
		var we *writeError
		switch {
		case s.closed.Load():
			peer = peerProxy
		case errors.As(err, &we):
			peer = we.peer
		}
		s.endErr, s.endedBy = err, peer
		close(s.ended)
	})
}

// lingerTimeout bounds how long a session's end waits for a peer to close
// its side after the proxy closed its own (closeWrites).
const lingerTimeout = 500 * time.Millisecond

// release marks the session closed once: Send* fail, and readers and
// writers blocked on room or data return.
func (s *Session) release() {
	s.releaseOnce.Do(func() {
		s.closed.Store(true)
		close(s.done)
	})
}

// closeWrites ends the session gracefully: each connection gets an end of
// stream after the bytes already written, and its reader, which stops
// relaying, reads and drops what the peer still sends until the peer
// closes or lingerTimeout passes. A connection that cannot half-close is
// closed at once.
func (s *Session) closeWrites() {
	s.release()
	deadline := time.Now().Add(lingerTimeout)
	for _, c := range []net.Conn{s.debugger, s.vm} {
		cw, ok := c.(interface{ CloseWrite() error })
		if !ok || cw.CloseWrite() != nil {
			c.Close()
			continue
		}
		c.SetReadDeadline(deadline)
	}
}

// close closes both connections once; readers and writers then return.
func (s *Session) close() {
	s.release()
	s.closeOnce.Do(func() {
		s.debugger.Close()
		s.vm.Close()
	})
}

// discard reads and drops what c still delivers, until its peer closes,
// the read deadline set by closeWrites passes, or c is closed. A reader
// calls it once it stopped relaying, so the proxy never closes c with
// bytes left unread.
func discard(c net.Conn) {
	var buf [4096]byte
	for {
		if _, err := c.Read(buf[:]); err != nil {
			return
		}
	}
}

// classify maps an error that ended a session to a protocol error reason,
// or "" for an orderly end.
func classify(err error) Reason {
	var fe *failError
	switch {
	case errors.As(err, &fe):
		return fe.reason
	case err == nil, errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), errors.Is(err, ErrSessionClosed):
		return ""
	case errors.Is(err, jdwp.ErrShortPacket):
		return ReasonShortPacket
	case errors.Is(err, jdwp.ErrPacketTooLarge):
		return ReasonOversizedPacket
	case errors.Is(err, jdwp.ErrTruncated):
		return ReasonTruncated
	case errors.Is(err, jdwp.ErrBadHandshake):
		return ReasonBadHandshake
	case errors.Is(err, os.ErrDeadlineExceeded):
		return ReasonWriteTimeout
	}
	return ReasonIO
}

// peerGone reports whether err is a peer closing or resetting its
// connection (rather than breaking the protocol).
func peerGone(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, jdwp.ErrTruncated) || errors.Is(err, io.ErrUnexpectedEOF)
}
