package relay

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
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

// run relays until either side ends, then shuts the session down.
func (s *Session) run(ctx context.Context, dbr, vmr *jdwp.Reader) error {
	if m := s.metrics; m != nil {
		m.sessions.Inc()
		m.active.Inc()
		defer m.active.Dec()
	}
	// The turn is held since the hooks were made (Server.serve).
	for _, o := range s.hooks.Observers {
		if so, ok := o.(SessionObserver); ok {
			s.lifecycle(func() { so.SessionStart(s) })
		}
	}
	s.endTurn()
	s.log.Info().Msg("debugger session started")

	stop := context.AfterFunc(ctx, s.close)
	defer stop()

	var wg sync.WaitGroup
	wg.Add(4)
	go func() {
		defer wg.Done()
		s.end(peerDebugger, s.readDebugger(dbr))
		discard(s.debugger)
	}()
	go func() {
		defer wg.Done()
		s.end(peerVM, s.readVM(vmr))
		discard(s.vm)
	}()
	go func() { defer wg.Done(); s.end(peerDebugger, s.writeDebugger()) }()
	go func() { defer wg.Done(); s.end(peerVM, s.writeVM()) }()
	<-s.ended
	// Deliver what was queued before the end (the reply to Dispose, the
	// VM_DEATH event), within the write timeout, then close: each peer
	// gets an end of stream after the last byte, and what it still sends
	// is read and dropped for a moment (lingerTimeout) rather than left
	// unread, since closing a socket with unread bytes resets the
	// connection and can destroy the bytes just written before the peer
	// read them.
	s.toVM.stop()
	s.toDbg.stop()
	<-s.toVM.exited
	<-s.toDbg.exited
	s.closeWrites()
	wg.Wait()
	s.close()

	s.beginTurn() // Do work still queued is dropped: the session is closed
	for _, ic := range s.hooks.Interceptors {
		s.lifecycle(func() { ic.Close(s) })
	}
	s.endTurn()
	err := s.endErr
	reason := classify(err)
	by := s.endedBy
	switch {
	case reason == "" && !s.ending.Load() && by == peerVM:
		// The VM side ended without a word: no Dispose or Exit went to
		// it, no VM_DEATH came from it.
		err = nil
		s.log.Warn().Str(LogClosedBy, by).Msg("session ended: the VM's connection closed without Dispose, Exit or VM death (the VM was killed, or the link to it dropped: a far end, a tunnel, an adb forward); the debugger's connection closed too")
	case reason == "" && !s.ending.Load() && by == peerDebugger && s.debuggerInfo.Split:
		// The debugger side is a link (split mode's far end).
		err = nil
		s.log.Warn().Str(LogClosedBy, by).Msg("session ended: the link from the near end closed without Dispose or Exit (the link dropped, or the debugger left without detaching); the VM's connection closed too")
	case reason == "":
		err = nil
		s.log.Info().Str(LogClosedBy, by).Msg("debugger session ended")
	case s.ending.Load() && (peerGone(err) || reason == ReasonIO):
		s.log.Info().Err(err).Str(LogClosedBy, by).Msg("debugger session ended; a peer dropped its connection after the VM's end (Dispose, Exit or VM death)")
		err = nil
	case peerGone(err):
		s.log.Warn().Err(err).Str(LogReason, string(reason)).Str(LogClosedBy, by).Msg("session ended: a peer reset or dropped its connection; both connections closed")
	case reason == ReasonWriteTimeout:
		s.log.Warn().Err(err).Str(LogReason, string(reason)).Str(LogClosedBy, by).Dur(LogWriteTimeout, s.toVM.timeout).Msg("session ended: a peer took none of the proxy's bytes within the write timeout; both connections closed")
	default:
		s.log.Error().Err(err).Str(LogReason, string(reason)).Str(LogClosedBy, by).Msg("session ended by a protocol error; both connections closed")
	}
	if err != nil {
		s.metrics.protocolError(reason) // after the log line, as in serve
	}
	s.beginTurn()
	for _, o := range s.hooks.Observers {
		if so, ok := o.(SessionObserver); ok {
			s.lifecycle(func() { so.SessionEnd(s, err) })
		}
	}
	s.endTurn()
	return err
}

// readDebugger and readVM are named so that stack dumps say which side a
// goroutine serves. An error caused by the session closing is no error.
func (s *Session) readDebugger(r *jdwp.Reader) error {
	err := s.relayDebuggerToVM(r)
	if classify(err) == "" || s.closed.Load() {
		return nil
	}
	return fmt.Errorf("from debugger: %w", err)
}

func (s *Session) readVM(r *jdwp.Reader) error {
	err := s.relayVMToDebugger(r)
	if classify(err) == "" || s.closed.Load() {
		return nil
	}
	return fmt.Errorf("from VM: %w", err)
}

// writeDebugger and writeVM run the writers; like the readers they are
// named for stack dumps.
func (s *Session) writeDebugger() error {
	if err := s.toDbg.run(s.done); err != nil && !s.closed.Load() {
		return writeFailed(peerDebugger, err)
	}
	return nil
}

func (s *Session) writeVM() error {
	if err := s.toVM.run(s.done); err != nil && !s.closed.Load() {
		return writeFailed(peerVM, err)
	}
	return nil
}
