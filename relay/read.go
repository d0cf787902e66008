package relay

import (
	"errors"
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/retag"
)

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
			s.endsSession(f)
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
	s.endsSession(f)
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

// endsSession marks the session ending at the debugger's Dispose or
// Exit, once what the proxy sent in its turn is queued ahead of it
// (inject drops the proxy's own commands from then on: they would go
// after it).
func (s *Session) endsSession(f *Frame) {
	if f.Kind == KindCommand && (f.Cmd == jdwp.CmdVirtualMachineDispose || f.Cmd == jdwp.CmdVirtualMachineExit) {
		s.ending.Store(true)
	}
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
	f.ID = p.ID()
	if f.Kind == KindReply && owner == retag.Remapped {
		f.ID = dbgID // what the debugger will receive, for an interceptor that holds a copy
	}
	action := Forward
	if s.hooksOn() {
		s.out.flushing = true
		action = s.interceptFromVM(f)
		s.out.flushing = false
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
