package relay

import (
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// An Outbox holds what hook code sends during its turn (see the package
// doc): commands towards the VM, answers to the debugger's commands and
// packets towards the debugger. Hooks get it from the Frame they are
// called with (Frame.Out) or from Session.Do, and may use it only until
// they return. The relay applies it once the hook returned: each packet is
// observed and queued for its peer in the order sent, before the packet
// the hook was called for (as if it had been sent at once), except an
// answer to the debugger command being intercepted, which follows that
// command.
//
// Sending copies the packet, so the caller keeps ownership of p and may
// reuse it at once. Nothing here blocks or fails: a packet applied after
// its peer's writer stopped (the session is ending) is dropped.
//
// Buffer ownership: a session has one Outbox, owned by the goroutine that
// holds the session's turn; entries and buf keep their capacity from turn
// to turn, so steady state allocates nothing.
type Outbox struct {
	entries []outEntry // in the order sent
	buf     []byte     // the entries' bytes, entries[i] at buf[off:off+n]
	// s is the session whose outbox this is, flushing set while a hook
	// handles a VM's packet (Flush); both owned by the turn's holder.
	s        *Session
	flushing bool
}

// Flush applies what was sent so far, as the relay does once the hook
// returns (observed and queued for its peer, in the order sent): for a
// hook handling a VM's packet that answered the debugger, and has work
// left that the answer need not wait for. What the hook sends after is
// applied after. Elsewhere (a debugger's command, whose answers follow
// it; Do work; an observer's call, made while the outbox is applied) it
// does nothing.
func (o *Outbox) Flush() {
	if o.flushing {
		o.flushing = false
		o.s.applyOut(false)
		o.flushing = true
	}
}

// outEntry is one packet in an Outbox.
type outEntry struct {
	dir    Direction
	origin Origin
	cmd    jdwp.Cmd // towards the debugger: the command it answers (SendToDebugger)
	slot   Slot     // towards the VM: data's slot (SendToVMData)
	data   any
	off, n int
	later  bool // an answer to the debugger command of the turn: applied after it
}

// SendToVM sends a whole command packet towards the VM, with the given
// origin (Synthetic for the proxy's own commands, whose IDs come from
// Session.IDs).
func (o *Outbox) SendToVM(p jdwp.Packet, origin Origin) {
	o.add(outEntry{dir: ToVM, origin: origin}, p)
}

// SendToVMData is SendToVM for a command that keeps data in slot until
// its reply (see Frame.Data): a hook's own command is paired by the relay
// like any other.
func (o *Outbox) SendToVMData(p jdwp.Packet, origin Origin, slot Slot, data any) {
	o.add(outEntry{dir: ToVM, origin: origin, slot: slot, data: data}, p)
}

// SendToDebugger sends a whole packet towards the debugger: an answer to
// one of its commands (cmd is the command answered, origin CacheHit or
// Belay; the command gets its data back, Frame.Data, as its answer is
// observed) or a VM-originated packet the proxy held back.
func (o *Outbox) SendToDebugger(p jdwp.Packet, origin Origin, cmd jdwp.Cmd) {
	o.add(outEntry{dir: ToDebugger, origin: origin, cmd: cmd}, p)
}

func (o *Outbox) add(e outEntry, p jdwp.Packet) {
	e.off, e.n = len(o.buf), len(p)
	o.buf = append(o.buf, p...)
	o.entries = append(o.entries, e)
}

// packet is e's bytes.
func (o *Outbox) packet(e *outEntry) jdwp.Packet { return jdwp.Packet(o.buf[e.off : e.off+e.n]) }

// reset empties the outbox, keeping its capacity (up to keepQueueBytes of
// bytes) and dropping references to hooks' data.
func (o *Outbox) reset() {
	clear(o.entries)
	o.entries = o.entries[:0]
	if cap(o.buf) > keepQueueBytes {
		o.buf = nil
	}
	o.buf = o.buf[:0]
}

// Out is the outbox of the hook call f is passed to: what the hook sends
// goes there (see Outbox). It is nil in a Frame the relay did not make.
func (f *Frame) Out() *Outbox { return f.out }

// beginTurn takes the session's turn (see the package doc) and runs the
// work queued by Do meanwhile.
func (s *Session) beginTurn() {
	s.turn.Lock()
	s.runQueued()
}

// endTurn runs the work queued by Do, then gives the turn up. Work queued
// after that is run by whoever takes the turn next: this goroutine, if
// nobody holds it.
func (s *Session) endTurn() {
	for {
		s.runQueued()
		s.turn.Unlock()
		if s.nQueued.Load() == 0 || !s.turn.TryLock() {
			return
		}
	}
}

// Do runs fn in the session's turn, with the session's outbox, which the
// relay applies when fn returns: for hook code that runs on a goroutine of
// its own (a timer, a client's loop) rather than in a hook call. fn runs
// after the hook calls and Do work already under way or queued, one at a
// time, never concurrently with any other hook code of the session; a
// panic in fn is recovered as in a hook call (Hooks.EndOnPanic). Do never
// blocks: if the turn is free, fn runs before Do returns, on the calling
// goroutine (so call Do holding none of the hook's own locks); otherwise
// it runs on the goroutine that holds the turn, when that goroutine's
// current work is done. Called from hook code, fn runs once the turn's
// own packets were applied. Work still queued when the session ends or
// its hooks are turned off (a hook panicked) is dropped, and any Do after
// that fails (ErrSessionClosed, ErrHooksOff).
func (s *Session) Do(fn func(out *Outbox)) error {
	switch {
	case s.closed.Load():
		return ErrSessionClosed
	case s.hooksOff.Load():
		return ErrHooksOff
	}
	s.doMu.Lock()
	s.doQueue = append(s.doQueue, fn)
	s.nQueued.Store(int32(len(s.doQueue)))
	s.doMu.Unlock()
	if s.turn.TryLock() {
		s.endTurn()
	}
	return nil
}

// Yield asks each interceptor keeping the VM in a state of its own making
// (Yielder) to end it, through out. Call it from Do work, before sending a
// command the interceptors did not see.
func (s *Session) Yield(out *Outbox) {
	for _, ic := range s.hooks.Interceptors {
		if y, ok := ic.(Yielder); ok {
			y.Yield(s, out)
		}
	}
}

// runQueued runs the work queued by Do, in order, until none is left. The
// turn is held.
func (s *Session) runQueued() {
	for s.nQueued.Load() > 0 {
		s.doMu.Lock()
		s.doRun, s.doQueue = s.doQueue, s.doRun[:0]
		s.nQueued.Store(0)
		s.doMu.Unlock()
		for i, fn := range s.doRun {
			s.doRun[i] = nil
			if s.closed.Load() || s.hooksOff.Load() {
				continue // hook code no longer runs
			}
			s.callDo(fn)
			s.applyOut(false)
		}
	}
}

// callDo calls fn, recovering a panic as for a hook call.
func (s *Session) callDo(fn func(*Outbox)) {
	defer func() {
		if v := recover(); v != nil {
			s.hookPanicked(hookDo, v, nil)
		}
	}()
	fn(&s.out)
}

// markAnswers marks, in the outbox, the answers to the debugger's command
// id: applyOut(true) leaves them for after the command was observed.
func (s *Session) markAnswers(id uint32) {
	o := &s.out
	for i := range o.entries {
		e := &o.entries[i]
		if p := o.packet(e); e.dir == ToDebugger && p.IsReply() && p.ID() == id {
			e.later = true
		}
	}
}

// applyOut observes and queues the outbox's packets in order, except,
// with hold, those marked later, which stay for the next applyOut(false).
// The turn is held. A packet whose peer's writer stopped is dropped: the
// session is ending.
func (s *Session) applyOut(hold bool) {
	o := &s.out
	kept := 0
	for i := 0; i < len(o.entries); i++ { // an observer may add to it
		e := o.entries[i]
		if hold && e.later {
			o.entries[kept] = e
			kept++
			continue
		}
		s.inject(&e, o.packet(&e))
	}
	if kept == 0 {
		o.reset()
		return
	}
	clear(o.entries[kept:])
	o.entries = o.entries[:kept]
}

// inject observes and queues one packet of the outbox, in injFrame (owned
// by the turn).
func (s *Session) inject(e *outEntry, p jdwp.Packet) {
	f := &s.injFrame
	*f = Frame{Dir: e.dir, Origin: e.origin, Packet: p, ID: p.ID(), Time: time.Now(), out: &s.out}
	if e.dir == ToVM && e.origin == Synthetic && !p.IsReply() && s.ending.Load() {
		// The debugger disposed of the VM (or made it exit): HotSpot
		// answers and closes, and a command of the proxy's own behind
		// that answer would sit unread in the VM's socket, so that the
		// close resets the connection and the answer can be lost on the
		// way back. Nothing of the proxy's own goes after it.
		s.ids.Forget(p.ID())
		*f = Frame{}
		return
	}
	if e.dir == ToVM {
		f.Kind = KindCommand
		f.data[e.slot] = e.data
		if p.IsReply() {
			f.Kind = KindDebuggerReply
		} else {
			f.Cmd = p.Cmd()
		}
		s.observe(f)
		s.queueToVM(f, false) //nolint:errcheck // dropped: the session is ending
	} else {
		f.Cmd = e.cmd
		if p.IsReply() {
			f.Kind = KindReply
			s.answered(p.ID(), f)
		} else {
			f.Cmd = p.Cmd()
			f.Kind = vmCommandKind(f.Cmd)
		}
		s.observe(f)
		s.toDbg.enqueue(p) //nolint:errcheck // dropped: the session is ending
	}
	*f = Frame{}
}

// Panicked reports a panic recovered in hook code that runs on a
// goroutine of the hook's own outside Do (a client's read loop): it is
// counted and logged, and the session goes on as plain pass-through or
// ends, as for a panic in a hook call (Hooks.EndOnPanic). For use in a
// deferred function:
//
//	defer func() {
//		if v := recover(); v != nil {
//			s.Panicked(v)
//		}
//	}()
func (s *Session) Panicked(v any) { s.hookPanicked(hookGoroutine, v, nil) }
