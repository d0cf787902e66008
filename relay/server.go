// Package relay owns the proxy's sessions: it accepts a debugger, dials the
// VM, performs the JDWP handshake on both sides, classifies every packet
// (debugger command, VM reply paired with its command, VM event, DDM or
// other VM command, debugger reply) and forwards it unchanged, one writer
// per side. Feature packages plug in as Interceptors (which may answer,
// drop or inject packets) and Observers (which see every packet).
//
// The relay is where commands are paired with their answers: commands
// towards the VM, the debugger's and the proxy's own (Outbox.SendToVM),
// in the VM connection's retag.Table (Session.IDs), which also hands out
// the packet IDs of the proxy's own commands; the debugger commands the
// proxy answers itself, and the VM's commands to the debugger, in the
// session. A hook that needs per-command data keeps it in its Slot of the
// entry (Frame.SetData, Outbox.SendToVMData) and gets it back on the
// answer (Frame.Data), instead of keeping a pending map of its own.
//
// Hooks return what they send. All hook code of a session runs in the
// session's turn (Session.turn, a lock only the relay takes): interceptor
// and observer calls, lifecycle calls, and work hooks queue with
// Session.Do from goroutines of their own (timers, a client's loop). One
// turn runs at a time; what a hook sends goes to the session's one Outbox
// (Frame.Out, or Do's argument) and is applied by the relay when the hook
// returns, before the turn is given up: each packet is observed and
// queued for its peer's writer, in the order sent, before the packet the
// turn is for, except an answer to the debugger command of the turn,
// which follows that command. So:
//
//   - every packet, forwarded or injected, is observed exactly once, in
//     the turn that queued it, in the order the packets of each peer are
//     queued; a debugger command is observed before any answer to it, even
//     one sent from the VM's side at once (the speculator serving a belay);
//   - what a turn decides goes to the writers before any later turn's, so
//     a command the proxy sends towards the VM never overtakes, nor is
//     overtaken by, a debugger command handled after, or before, it;
//   - observers run under no hook's lock, and hooks need no lock of their
//     own for state only hook code touches.
//
// Each reader takes the turn for each packet it reads (a session with no
// hooks takes none), runs the hooks, applies the outbox and queues the
// packet, gives the turn up, and only then waits for room in the writer's
// queue. Nothing blocks inside a turn: hooks must not block (a Gate holds
// the debugger's packets back before the turn), and queueing copies into
// the writer's buffer. A reader blocked reading its peer holds no turn, so
// Do work never waits for a peer: Do runs it at once on the caller's
// goroutine if the turn is free, or leaves it to the goroutine holding the
// turn, which runs queued work before giving it up (Session.endTurn).
//
// Buffer ownership: each reader owns its Frame and its jdwp.Reader's
// buffer; the session's Outbox and the Frame its packets are observed in
// are owned by whoever holds the turn; each writer's queue is its own (see
// sideWriter). Forwarding allocates nothing per packet.
//
//	srv := relay.NewServer(relay.Config{DialVM: relay.DialTCP("127.0.0.1:5005")})
//	err := srv.Serve(ctx, listener)
package relay

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/lograte"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/retag"
	"github.com/rs/zerolog"
)

// A VMConn is a connection to the VM for a new session, as a Dialer
// returns it.
type VMConn struct {
	Conn net.Conn
	// Handshaken says the JDWP handshake was already exchanged on Conn.
	Handshaken bool
	// Hooks, if not nil, returns the hooks that come with the connection
	// (a client that shares it with the debugger, such as the DDM tap);
	// they run before Config.NewHooks's.
	Hooks func(s *Session) Hooks
	// Reader, if not nil, is the reader of Conn the session reads the VM
	// from, for a connection read before the session: it may already hold
	// the connection's next bytes (see ddmtap.Holder).
	Reader *bufio.Reader
	// IDs, if not nil, is the connection's packet ID table, for a
	// connection that carried the proxy's own commands before the session
	// (ddmtap.Holder creates it with the connection and hands it over
	// here). Nil means a fresh connection: the session creates one. Either
	// way it is the only source of the proxy's IDs towards this VM
	// (Session.IDs).
	IDs *retag.Table
	// Info is what the dialer agreed with the peer for the session's hooks
	// (Session.VMInfo): split mode's near end passes what it agreed with
	// the far end.
	Info LinkInfo
}

// LinkInfo is what a session's connection agreed, before the session, with
// a peer that speaks more than JDWP: split mode's ends, in their preamble.
// The zero value is a plain JDWP peer.
type LinkInfo struct {
	// Split: the connection is split mode's link to the other end (the
	// near end a far end serves, or the far end a near end dialled).
	Split bool
	// AttachBundle: the far end sends the replies to the attach's first
	// commands as one bundle, the session's first packet from it.
	AttachBundle bool
	// Heartbeat: the ends exchange heartbeats, and each ends a session
	// whose link stays silent too long.
	Heartbeat bool
	// Resumable: the session's stream outlives its link (a new link
	// takes it up).
	Resumable bool
	// Compressed: the link is compressed (its first connection, and so
	// every later one between the same ends), so the session's own
	// payloads (pushed bundles) go raw for the link to compress.
	Compressed bool
	// User is, on the far end, the name of the user whose credentials the
	// near end presented ("" for the unnamed token, or a far end without
	// users); each of the session's log lines carries it.
	User string
}

// A Dialer opens a connection to the VM for a new session.
type Dialer func(ctx context.Context) (VMConn, error)

// Plain makes a Dialer of a function that opens a plain connection (no
// handshake yet, no hooks).
func Plain(dial func(ctx context.Context) (net.Conn, error)) Dialer {
	return func(ctx context.Context) (VMConn, error) {
		c, err := dial(ctx)
		return VMConn{Conn: c}, err
	}
}

// ChainHooks returns a Config.NewHooks that runs each of fs (nil ones are
// skipped) and concatenates their interceptors and observers, in order.
func ChainHooks(fs ...func(s *Session) Hooks) func(s *Session) Hooks {
	return func(s *Session) Hooks {
		var h Hooks
		for _, f := range fs {
			if f == nil {
				continue
			}
			more := f(s)
			h.Interceptors = append(h.Interceptors, more.Interceptors...)
			h.Observers = append(h.Observers, more.Observers...)
			h.EndOnPanic = h.EndOnPanic || more.EndOnPanic
		}
		return h
	}
}

// Config configures a Server.
type Config struct {
	// DialVM opens a connection to the VM for a new session (Serve,
	// ServeConnInfo); a ServeWithVM session brings its own.
	DialVM Dialer
	// VM names the VM this server serves (a discovery key, an address),
	// as its sessions report it (Session.VM); optional.
	VM string
	// DialRetry is how long a new session keeps trying to reach the VM
	// (dial and, unless the connection is Handshaken, handshake) while it refuses or
	// drops connections, as HotSpot does for a few milliseconds after each
	// detach and a VM does while it starts (DefaultDialRetry when zero;
	// negative for a single attempt).
	DialRetry time.Duration
	// MaxPacketSize bounds packets from either peer
	// (jdwp.DefaultMaxPacketSize when zero). A VM reply above it is
	// skipped and the debugger gets a JDWP INTERNAL error reply instead;
	// any other packet above it ends the session.
	MaxPacketSize int
	// MaxOutstanding bounds each peer's commands awaiting an answer; at
	// the bound the proxy stops reading that peer until an answer goes
	// out, so a debugger flooding commands is pushed back on by TCP
	// instead of growing the proxy (DefaultMaxOutstanding when zero).
	MaxOutstanding int
	// WriteQueueBytes bounds the bytes queued for a peer: above it the
	// reader of the other peer stops reading until the writer catches up
	// (DefaultWriteQueueBytes when zero). Packets injected by hooks are
	// always queued.
	WriteQueueBytes int
	// WriteTimeout bounds each write to a peer; a peer that takes none of
	// the proxy's bytes for that long ends its session
	// (DefaultWriteTimeout when zero).
	WriteTimeout time.Duration
	// HandshakeTimeout bounds each side's handshake (10 s when zero).
	HandshakeTimeout time.Duration
	// MaxHandshakes bounds the connections Serve holds that have not sent
	// their JDWP handshake yet; one more is closed as soon as it is
	// accepted, with a log line at most every few seconds, so that
	// strangers opening connections and sending nothing cost a bounded
	// amount (DefaultMaxHandshakes when zero).
	MaxHandshakes int
	// NewHooks returns the hooks of a new session; nil means none.
	NewHooks func(s *Session) Hooks
	// Logger receives the relay's logs.
	Logger zerolog.Logger
	// Metrics may be nil.
	Metrics *Metrics
}

// Defaults of Config.
const (
	DefaultDialRetry       = time.Second
	DefaultMaxOutstanding  = 4096
	DefaultWriteQueueBytes = 1 << 20
	DefaultWriteTimeout    = 30 * time.Second
	DefaultMaxHandshakes   = 128
)

// overCapEvery is how often a connection closed over MaxHandshakes is
// logged at most.
const overCapEvery = 10 * time.Second

// TCP returns a function that opens a plain TCP connection to addr.
func TCP(addr string) func(ctx context.Context) (net.Conn, error) {
	return func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
}

// DialTCP returns a Dialer for a VM at addr.
func DialTCP(addr string) Dialer { return Plain(TCP(addr)) }

// Server accepts debuggers and relays each to its own VM connection.
type Server struct {
	cfg    Config
	nextID atomic.Uint64
	wg     sync.WaitGroup // counts the sessions Serve started
	active atomic.Int64   // sessions relaying (VM reached), to tell a busy VM from an absent one
	// handshakes holds a token per connection Serve accepted whose JDWP
	// handshake is still unread; its capacity is MaxHandshakes.
	handshakes chan struct{}
	overCap    *lograte.Limiter // thins the log lines of connections over the cap
}

// NewServer returns a Server with cfg.
func NewServer(cfg Config) *Server {
	if cfg.MaxPacketSize <= 0 {
		cfg.MaxPacketSize = jdwp.DefaultMaxPacketSize
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = 10 * time.Second
	}
	if cfg.DialRetry == 0 {
		cfg.DialRetry = DefaultDialRetry
	}
	if cfg.MaxOutstanding <= 0 {
		cfg.MaxOutstanding = DefaultMaxOutstanding
	}
	if cfg.WriteQueueBytes <= 0 {
		cfg.WriteQueueBytes = DefaultWriteQueueBytes
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	if cfg.MaxHandshakes <= 0 {
		cfg.MaxHandshakes = DefaultMaxHandshakes
	}
	return &Server{cfg: cfg, handshakes: make(chan struct{}, cfg.MaxHandshakes), overCap: lograte.New(overCapEvery, 1)}
}

// Serve accepts debuggers on ln until ctx is done or ln fails, then closes
// ln and every session and waits for them. It returns nil after ctx ends.
func (srv *Server) Serve(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	defer srv.wg.Wait()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		select {
		case srv.handshakes <- struct{}{}:
		default:
			srv.refuseOverCap(conn)
			continue
		}
		srv.wg.Add(1)
		go func() {
			defer srv.wg.Done()
			srv.serve(ctx, conn, LinkInfo{}, srv.cfg.DialVM, srv.cfg.DialRetry, func() { <-srv.handshakes }) //nolint:errcheck // logged inside
		}()
	}
}

// refuseOverCap closes a connection accepted while MaxHandshakes others
// have not sent their handshake yet.
func (srv *Server) refuseOverCap(conn net.Conn) {
	srv.cfg.Metrics.overCap()
	if ok, held, _ := srv.overCap.Allow(""); ok {
		srv.cfg.Logger.Warn().Str(LogDebugger, conn.RemoteAddr().String()).Int(LogMax, srv.cfg.MaxHandshakes).Int(LogSuppressed, held).
			Msg("too many connections in their JDWP handshake (clients that connect and send nothing?); closed a new one at once (suppressed: such closes not logged since the last line)")
	}
	refuse(conn)
}

// ServeConnInfo runs one session for a debugger connection the caller
// accepted, and agreed something with before the session (split mode's far
// end: what it agreed with the near end), which the session's hooks read
// as Session.DebuggerInfo. Such a debugger connection is a link (info.Split):
// its end without Dispose or Exit is logged at warn, as a link lost.
func (srv *Server) ServeConnInfo(ctx context.Context, debugger net.Conn, info LinkInfo) error {
	return srv.serve(ctx, debugger, info, srv.cfg.DialVM, srv.cfg.DialRetry, func() {})
}

// ServeWithVM runs one session for a debugger with a VM connection the
// caller opened already (the adb front's jdwp:PID stream), instead of one
// from Config.DialVM. If the VM drops that connection before its handshake
// (the app or the device just restarted), redial, when not nil, opens
// another for each retry, for Config.DialRetry as Config.DialVM would;
// without it there is one attempt. It closes both connections before it
// returns.
func (srv *Server) ServeWithVM(ctx context.Context, debugger net.Conn, vm VMConn, redial Dialer) error {
	defer vm.Conn.Close()
	used := false // the session's calls of dial are all on this goroutine
	dial := func(ctx context.Context) (VMConn, error) {
		if !used {
			used = true
			return vm, nil
		}
		return redial(ctx)
	}
	retry := srv.cfg.DialRetry
	if redial == nil {
		retry = -1
	}
	return srv.serve(ctx, debugger, LinkInfo{}, dial, retry, func() {})
}

// serve runs one session for debugger, reaching the VM with dial (retried
// for retry); handshaken is called once the debugger's handshake has been
// read, or failed.
func (srv *Server) serve(ctx context.Context, debugger net.Conn, info LinkInfo, dial Dialer, retry time.Duration, handshaken func()) error {
	id := srv.nextID.Add(1)
	lc := srv.cfg.Logger.With().Uint64(LogSession, id).Str(LogDebugger, debugger.RemoteAddr().String())
	if info.User != "" {
		lc = lc.Str(LogUser, info.User) // split mode's far end: who came in
	}
	log := lc.Logger()
	m := srv.cfg.Metrics

	fail := func(reason Reason, err error, msg string) error {
		log.Error().Err(err).Str(LogReason, string(reason)).Msg(msg)
		m.protocolError(reason) // after the log line: tests wait on the count, then read the log
		return err
	}

	debugger.SetDeadline(time.Now().Add(srv.cfg.HandshakeTimeout))
	// Read straight from the connection, exactly the handshake's bytes:
	// the packet buffer is allocated only for a client that sent one.
	err := jdwp.ReadHandshake(debugger)
	if err != nil {
		if !retryable(err) && !errors.Is(err, os.ErrDeadlineExceeded) {
			// Bytes after a bad handshake are still unread: drop them
			// first, so that the close is an end of stream, not a reset.
			drain(debugger)
		}
		debugger.Close()
		handshaken()
		if retryable(err) {
			// A client that connected and left (a port probe, a
			// debugger giving up): nothing for a user to fix.
			log.Info().Err(err).Str(LogReason, string(classify(err))).Msg("client closed its connection before the JDWP handshake")
			m.protocolError(classify(err))
			return err
		}
		return fail(classify(err), err, "debugger handshake failed (is a non-JDWP client using this port?); closing its connection")
	}
	handshaken()

	vc, vmr, attempts, err := srv.reachVM(ctx, dial, retry)
	vm := vc.Conn
	if err != nil {
		refuse(debugger)
		switch {
		case ctx.Err() != nil:
			log.Info().Msg("shutting down; refused the debugger")
			return nil
		case srv.active.Load() > 0 && retryable(err):
			log.Warn().Err(err).Str(LogReason, string(ReasonVMBusy)).Int(LogAttempts, attempts).
				Msg("the VM refused a second debugger while another is attached through this proxy (a JDWP VM takes one debugger at a time); refused this one")
			m.protocolError(ReasonVMBusy)
			return err
		case errors.Is(err, syscall.ECONNREFUSED):
			return fail(ReasonDialVM, err, "cannot reach the VM (is it running and listening for a debugger?); refused the debugger")
		case retryable(err):
			return fail(ReasonDialVM, err, "cannot reach the VM: its connection closed before the handshake; refused the debugger")
		}
		return fail(classify(err), err, "VM handshake failed; refused the debugger")
	}
	if err := jdwp.WriteHandshake(debugger); err != nil {
		vm.Close()
		debugger.Close()
		return fail(ReasonIO, err, "cannot answer the debugger's handshake")
	}
	debugger.SetDeadline(time.Time{})
	dbr := bufio.NewReaderSize(debugger, 64<<10)

	s := &Session{
		ID:             id,
		vmName:         srv.cfg.VM,
		log:            log.With().Str(LogVM, vm.RemoteAddr().String()).Logger(),
		debugger:       debugger,
		vm:             vm,
		toVM:           newSideWriter(vm, srv.cfg.WriteTimeout, srv.cfg.WriteQueueBytes),
		toDbg:          newSideWriter(debugger, srv.cfg.WriteTimeout, srv.cfg.WriteQueueBytes),
		maxPacket:      srv.cfg.MaxPacketSize,
		maxOutstanding: srv.cfg.MaxOutstanding,
		metrics:        m,
		dbgPending:     make(map[uint32]pending, 8),
		awaiting:       make(map[uint32]pending, 8),
		ids:            vc.IDs,
		debuggerInfo:   info,
		vmInfo:         vc.Info,
		room:           [2]chan struct{}{make(chan struct{}, 1), make(chan struct{}, 1)},
		ended:          make(chan struct{}),
		done:           make(chan struct{}),
	}
	if s.ids == nil {
		s.ids = retag.NewTable()
	}
	srv.active.Add(1)
	defer srv.active.Add(-1)
	s.hooks = ChainHooks(vc.Hooks, srv.cfg.NewHooks)(s)
	s.ownIDs = vc.IDs != nil || len(s.hooks.Interceptors) > 0
	s.turnOn = len(s.hooks.Interceptors) > 0 || len(s.hooks.Observers) > 0
	for _, ic := range s.hooks.Interceptors {
		if g, ok := ic.(Gate); ok {
			s.gates = append(s.gates, g)
		}
	}
	return s.run(ctx, jdwp.NewReader(dbr, s.maxPacket), jdwp.NewReader(vmr, s.maxPacket))
}

// reachVM dials the VM and exchanges the handshake (unless the connection
// is Handshaken), retrying for retry while the VM refuses or drops
// connections. It returns the number of attempts made.
func (srv *Server) reachVM(ctx context.Context, dial Dialer, retry time.Duration) (VMConn, *bufio.Reader, int, error) {
	deadline := time.Now().Add(retry)
	backoff := 5 * time.Millisecond
	for attempt := 1; ; attempt++ {
		vm, vmr, err := srv.tryVM(ctx, dial)
		if err == nil {
			return vm, vmr, attempt, nil
		}
		wait := min(backoff, time.Until(deadline))
		if ctx.Err() != nil || !retryable(err) || wait <= 0 {
			return VMConn{}, nil, attempt, err
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return VMConn{}, nil, attempt, err
		}
		backoff = min(2*backoff, 100*time.Millisecond)
	}
}

// tryVM is one attempt of reachVM.
func (srv *Server) tryVM(ctx context.Context, dial Dialer) (VMConn, *bufio.Reader, error) {
	dctx, cancel := context.WithTimeout(ctx, srv.cfg.HandshakeTimeout)
	defer cancel()
	vc, err := dial(dctx)
	if err != nil {
		return VMConn{}, nil, err
	}
	vm := vc.Conn
	vmr := vc.Reader
	if vmr == nil {
		vmr = bufio.NewReaderSize(vm, 64<<10)
	}
	if !vc.Handshaken {
		vm.SetDeadline(time.Now().Add(srv.cfg.HandshakeTimeout))
		err := jdwp.WriteHandshake(vm)
		if err == nil {
			err = jdwp.ReadHandshake(vmr)
		}
		if err != nil {
			vm.Close()
			return VMConn{}, nil, fmt.Errorf("VM handshake: %w", err)
		}
		vm.SetDeadline(time.Time{})
	}
	return vc, vmr, nil
}

// retryable reports whether a failure to reach the VM may be the VM not
// listening yet, or again: a refused connection, or one accepted and then
// closed or reset before the handshake.
func retryable(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// drain ends a connection whose peer broke the protocol before its
// session: it half-closes it and reads and drops what the peer still
// sends, up to 64 KiB and for lingerTimeout at most, so that the close
// that follows does not reset the connection.
func drain(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite() //nolint:errcheck // closing anyway
	}
	c.SetReadDeadline(time.Now().Add(lingerTimeout))
	io.CopyN(io.Discard, c, 64<<10) //nolint:errcheck // dropped
}

// refuse closes a debugger connection before answering its handshake, with
// a TCP reset where the connection allows it, so the debugger reports a
// refused or reset connection rather than a handshake cut short.
func refuse(c net.Conn) {
	if l, ok := c.(interface{ SetLinger(int) error }); ok {
		l.SetLinger(0)
	}
	c.Close()
}

// run relays until either side ends, then shuts the session down.
func (s *Session) run(ctx context.Context, dbr, vmr *jdwp.Reader) error {
	if m := s.metrics; m != nil {
		m.sessions.Inc()
		m.active.Inc()
		defer m.active.Dec()
	}
	s.beginTurn()
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
