package relay

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/rs/zerolog"
)

// ErrSessionClosed is returned by Send* after the session ended.
var ErrSessionClosed = errors.New("relay: session closed")

// pending is a command waiting for its reply.
type pending struct {
	cmd  jdwp.Cmd
	sent time.Time
}

// sideWriter is the only writer of one connection. Forwarded and injected
// packets both go through it, so they never interleave mid-packet.
type sideWriter struct {
	mu   sync.Mutex // guards bw and the connection's write side
	bw   *bufio.Writer
	conn net.Conn
}

// write writes p and flushes unless more is coming (flush false).
func (w *sideWriter) write(p []byte, flush bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := w.bw.Write(p); err != nil {
		return err
	}
	if flush {
		return w.bw.Flush()
	}
	return nil
}

// flush writes out anything buffered. A reader calls it when no whole
// packet is waiting in its input, so a burst goes out in one write, and
// nothing stays buffered when later packets of the burst were consumed by
// an interceptor instead of forwarded.
func (w *sideWriter) flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.bw.Buffered() == 0 {
		return nil
	}
	return w.bw.Flush()
}

// Session is one debugger connection and its VM connection.
type Session struct {
	// ID numbers sessions in the order the server accepted them.
	ID  uint64
	log zerolog.Logger

	debugger, vm net.Conn
	toVM, toDbg  sideWriter
	maxPacket    int
	hooks        Hooks
	metrics      *Metrics

	idSizes atomic.Pointer[jdwp.IDSizes] // nil until the VM's IDSizes reply

	pendingMu sync.Mutex         // guards vmPending and dbgPending
	vmPending map[uint32]pending // commands sent to the VM, by wire ID
	// dbgPending holds VM-originated commands (other than events, which
	// get no reply) waiting for the debugger's reply.
	dbgPending map[uint32]pending

	dbgFrame, vmFrame Frame // reused by each reader goroutine

	// The debugger's command being intercepted and not yet observed. An
	// answer to it sent from another goroutine (a belay served when the
	// speculation's reply arrives) waits until the command itself has been
	// observed, so observers always see a command before its answer.
	inFlightMu   sync.Mutex // guards inFlight and inFlightID
	inFlightCond *sync.Cond // signalled when inFlight becomes false
	inFlight     bool
	inFlightID   uint32

	closed    atomic.Bool
	closeOnce sync.Once
}

// framePool holds Frames for injected packets.
var framePool = sync.Pool{New: func() any { return new(Frame) }}

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

// DebuggerAddr is the debugger's remote address.
func (s *Session) DebuggerAddr() net.Addr { return s.debugger.RemoteAddr() }

// VMAddr is the VM's address.
func (s *Session) VMAddr() net.Addr { return s.vm.RemoteAddr() }

// SendToVM injects a whole command packet towards the VM, with the given
// origin (Synthetic for the proxy's own commands). Safe from any goroutine.
// The caller keeps ownership of p; it is written before SendToVM returns.
func (s *Session) SendToVM(p jdwp.Packet, origin Origin) error {
	if s.closed.Load() {
		return ErrSessionClosed
	}
	f := framePool.Get().(*Frame)
	*f = Frame{Dir: ToVM, Kind: KindCommand, Origin: origin, Packet: p, ID: p.ID(), Time: time.Now()}
	if p.IsReply() {
		f.Kind = KindDebuggerReply
	} else {
		f.Cmd = p.Cmd()
	}
	s.observe(f)
	err := s.writeToVM(f, true)
	*f = Frame{}
	framePool.Put(f)
	return err
}

// SendToDebugger injects a whole packet towards the debugger: an answer to
// one of its commands (cmd is the command answered, origin CacheHit or
// Belay) or a VM-originated packet the proxy held back. Safe from any
// goroutine. The caller keeps ownership of p. A Belay answer waits until
// its command has been observed, so observers see the command first; an
// interceptor answers synchronously through Frame.Answer, never by a Belay
// SendToDebugger from inside FromDebugger.
func (s *Session) SendToDebugger(p jdwp.Packet, origin Origin, cmd jdwp.Cmd) error {
	if s.closed.Load() {
		return ErrSessionClosed
	}
	if origin == Belay {
		s.waitObserved(p.ID())
	}
	f := framePool.Get().(*Frame)
	*f = Frame{Dir: ToDebugger, Origin: origin, Packet: p, ID: p.ID(), Cmd: cmd, Time: time.Now()}
	if p.IsReply() {
		f.Kind = KindReply
	} else {
		f.Cmd = p.Cmd()
		f.Kind = vmCommandKind(f.Cmd)
	}
	s.observe(f)
	err := s.toDbg.write(p, true)
	*f = Frame{}
	framePool.Put(f)
	return err
}

// waitObserved returns once the debugger command with this ID is not
// between interception and observation. It never waits on the debugger
// reader's own goroutine: that one observes before it answers.
func (s *Session) waitObserved(id uint32) {
	s.inFlightMu.Lock()
	for s.inFlight && s.inFlightID == id && !s.closed.Load() {
		s.inFlightCond.Wait()
	}
	s.inFlightMu.Unlock()
}

// setInFlight marks the debugger command with id as intercepted and not yet
// observed (on true) or observed (on false).
func (s *Session) setInFlight(on bool, id uint32) {
	s.inFlightMu.Lock()
	s.inFlight, s.inFlightID = on, id
	s.inFlightMu.Unlock()
	if !on {
		s.inFlightCond.Broadcast()
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

// writeToVM records a command as pending, then writes it.
func (s *Session) writeToVM(f *Frame, flush bool) error {
	if f.Kind == KindCommand {
		s.pendingMu.Lock()
		s.vmPending[f.Packet.ID()] = pending{cmd: f.Cmd, sent: f.Time}
		s.pendingMu.Unlock()
	}
	return s.toVM.write(f.Packet, flush)
}

func (s *Session) observe(f *Frame) {
	s.metrics.count(f)
	for _, o := range s.hooks.Observers {
		o.Observe(s, f)
	}
}

// relayDebuggerToVM reads the debugger's packets until it fails.
func (s *Session) relayDebuggerToVM(r *jdwp.Reader) error {
	f := &s.dbgFrame
	for {
		p, err := r.Next()
		if err != nil {
			return err
		}
		*f = Frame{Dir: ToVM, Packet: p, ID: p.ID(), Time: time.Now()}
		if p.IsReply() {
			f.Kind = KindDebuggerReply
			s.pendingMu.Lock()
			if pc, ok := s.dbgPending[p.ID()]; ok {
				f.Cmd = pc.cmd
				delete(s.dbgPending, p.ID())
			}
			s.pendingMu.Unlock()
		} else {
			f.Kind = KindCommand
			f.Cmd = p.Cmd()
		}
		if e := s.log.Trace(); e.Enabled() {
			e.Uint32(LogPacketID, f.ID).Stringer(LogCmd, f.Cmd).Int(LogLength, len(p)).Msg("from debugger")
		}
		action := Forward
		if len(s.hooks.Interceptors) > 0 {
			s.setInFlight(true, f.ID)
			for _, ic := range s.hooks.Interceptors {
				if action = ic.FromDebugger(s, f); action == Consume {
					break
				}
			}
		}
		s.observe(f)
		if len(s.hooks.Interceptors) > 0 {
			s.setInFlight(false, 0)
		}
		if action == Forward {
			if err := s.writeToVM(f, false); err != nil {
				return fmt.Errorf("write to VM: %w", err)
			}
		} else if f.Answer != nil {
			if err := s.SendToDebugger(f.Answer, f.Origin, f.Cmd); err != nil {
				return fmt.Errorf("write to debugger: %w", err)
			}
		}
		if !r.HasPacket() {
			if err := s.toVM.flush(); err != nil {
				return fmt.Errorf("write to VM: %w", err)
			}
		}
	}
}

// relayVMToDebugger reads the VM's packets until it fails.
func (s *Session) relayVMToDebugger(r *jdwp.Reader) error {
	f := &s.vmFrame
	for {
		p, err := r.Next()
		if err != nil {
			return err
		}
		*f = Frame{Dir: ToDebugger, Packet: p, Time: time.Now()}
		if p.IsReply() {
			f.Kind = KindReply
			s.pendingMu.Lock()
			pc, ok := s.vmPending[p.ID()]
			delete(s.vmPending, p.ID())
			s.pendingMu.Unlock()
			if ok {
				f.Cmd = pc.cmd
				f.Latency = f.Time.Sub(pc.sent)
				if pc.cmd == jdwp.CmdIDSizes && p.ErrorCode() == 0 {
					s.learnIDSizes(p.Body())
				}
			}
		} else {
			f.Cmd = p.Cmd()
			f.Kind = vmCommandKind(f.Cmd)
			if f.Kind == KindVMCommand {
				s.pendingMu.Lock()
				s.dbgPending[p.ID()] = pending{cmd: f.Cmd, sent: f.Time}
				s.pendingMu.Unlock()
			}
		}
		action := Forward
		for _, ic := range s.hooks.Interceptors {
			if action = ic.FromVM(s, f); action == Consume {
				break
			}
		}
		f.ID = p.ID() // after any rewrite: the ID the debugger receives
		if e := s.log.Trace(); e.Enabled() {
			e.Uint32(LogPacketID, f.ID).Stringer(LogCmd, f.Cmd).Stringer(LogKind, f.Kind).Int(LogLength, len(p)).Msg("from VM")
		}
		s.observe(f)
		if action == Forward {
			if err := s.toDbg.write(p, false); err != nil {
				return fmt.Errorf("write to debugger: %w", err)
			}
		}
		if !r.HasPacket() {
			if err := s.toDbg.flush(); err != nil {
				return fmt.Errorf("write to debugger: %w", err)
			}
		}
	}
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

// close closes both connections once; the readers then return.
func (s *Session) close() {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.inFlightMu.Lock()
		s.inFlightCond.Broadcast() // release any waitObserved
		s.inFlightMu.Unlock()
		s.debugger.Close()
		s.vm.Close()
	})
}

// classify maps an error that ended a reader to a protocol error reason,
// or "" for an orderly end.
func classify(err error) string {
	switch {
	case err == nil, errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		return ""
	case errors.Is(err, jdwp.ErrShortPacket):
		return ReasonShortPacket
	case errors.Is(err, jdwp.ErrPacketTooLarge):
		return ReasonOversizedPacket
	case errors.Is(err, jdwp.ErrTruncated):
		return ReasonTruncated
	case errors.Is(err, jdwp.ErrBadHandshake):
		return ReasonBadHandshake
	}
	return ReasonIO
}
