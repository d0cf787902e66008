package relay

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/accept"
	"github.com/jdwpaccel/jdwpaccel/internal/lograte"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/retag"
	"github.com/rs/zerolog"
)

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

// OverCapEvery is how often a connection closed over MaxHandshakes is
// logged at most (by the relay server and the sharing hub in front of it).
const OverCapEvery = 10 * time.Second

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
	return &Server{cfg: cfg, handshakes: make(chan struct{}, cfg.MaxHandshakes), overCap: lograte.New(OverCapEvery, 1)}
}

// Serve accepts debuggers on ln until ctx is done or ln fails for good (a
// shortage of descriptors is waited out: accept.Loop), then closes ln and
// every session and waits for them. It returns nil after ctx ends.
func (srv *Server) Serve(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer srv.wg.Wait()
	return accept.Loop(ctx, ln, srv.cfg.Logger, func(conn net.Conn) {
		select {
		case srv.handshakes <- struct{}{}:
		default:
			srv.refuseOverCap(conn)
			return
		}
		srv.wg.Go(func() {
			srv.serve(ctx, conn, LinkInfo{}, srv.cfg.DialVM, srv.cfg.DialRetry, func() { <-srv.handshakes }) //nolint:errcheck // logged inside
		})
	})
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
	s.out.s = s
	srv.active.Add(1)
	defer srv.active.Add(-1)
	// The turn is held from before the hooks are made until the session
	// started (run): a hook that hands the session to a goroutine of its
	// own may call Do at once, whose work then waits for the hooks to be
	// in place and the session's start observed.
	s.turn.Lock()
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
