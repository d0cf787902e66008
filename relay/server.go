// Package relay owns the proxy's sessions: it accepts a debugger, dials the
// VM, performs the JDWP handshake on both sides, classifies every packet
// (debugger command, VM reply paired with its command, VM event, DDM or
// other VM command, debugger reply) and forwards it unchanged, one writer
// per side. Feature packages plug in as Interceptors (which may answer,
// drop or inject packets) and Observers (which see every packet).
//
//	srv := relay.NewServer(relay.Config{DialVM: relay.DialTCP("127.0.0.1:5005")})
//	err := srv.Serve(ctx, listener)
package relay

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/rs/zerolog"
)

// Config configures a Server.
type Config struct {
	// DialVM opens a connection to the VM for a new session.
	DialVM func(ctx context.Context) (net.Conn, error)
	// VMHandshakeDone says DialVM returns connections on which the JDWP
	// handshake has already been exchanged.
	VMHandshakeDone bool
	// MaxPacketSize bounds packets from either peer
	// (jdwp.DefaultMaxPacketSize when zero).
	MaxPacketSize int
	// HandshakeTimeout bounds each side's handshake (10 s when zero).
	HandshakeTimeout time.Duration
	// NewHooks returns the hooks of a new session; nil means none.
	NewHooks func(s *Session) Hooks
	// Logger receives the relay's logs.
	Logger zerolog.Logger
	// Metrics may be nil.
	Metrics *Metrics
}

// DialTCP returns a DialVM function for a VM at addr.
func DialTCP(addr string) func(ctx context.Context) (net.Conn, error) {
	return func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
}

// Server accepts debuggers and relays each to its own VM connection.
type Server struct {
	cfg    Config
	nextID atomic.Uint64
	wg     sync.WaitGroup // counts running sessions
}

// NewServer returns a Server with cfg.
func NewServer(cfg Config) *Server {
	if cfg.MaxPacketSize <= 0 {
		cfg.MaxPacketSize = jdwp.DefaultMaxPacketSize
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = 10 * time.Second
	}
	return &Server{cfg: cfg}
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
		srv.wg.Add(1)
		go func() {
			defer srv.wg.Done()
			srv.ServeConn(ctx, conn) //nolint:errcheck // logged inside
		}()
	}
}

// ServeConn runs one session for an accepted debugger connection until it
// ends, and returns the error that ended it (nil for an orderly close).
func (srv *Server) ServeConn(ctx context.Context, debugger net.Conn) error {
	id := srv.nextID.Add(1)
	log := srv.cfg.Logger.With().Uint64(LogSession, id).Str(LogDebugger, debugger.RemoteAddr().String()).Logger()
	m := srv.cfg.Metrics

	fail := func(reason string, err error, msg string) error {
		m.protocolError(reason)
		log.Error().Err(err).Str(LogReason, reason).Msg(msg)
		return err
	}

	debugger.SetDeadline(time.Now().Add(srv.cfg.HandshakeTimeout))
	dbr := bufio.NewReaderSize(debugger, 64<<10)
	if err := jdwp.ReadHandshake(dbr); err != nil {
		debugger.Close()
		return fail(classify(err), err, "debugger handshake failed; closing its connection")
	}

	vm, err := srv.cfg.DialVM(ctx)
	if err != nil {
		debugger.Close()
		return fail(ReasonDialVM, err, "cannot reach the VM; closing the debugger connection")
	}
	vmr := bufio.NewReaderSize(vm, 64<<10)
	if !srv.cfg.VMHandshakeDone {
		vm.SetDeadline(time.Now().Add(srv.cfg.HandshakeTimeout))
		err := jdwp.WriteHandshake(vm)
		if err == nil {
			err = jdwp.ReadHandshake(vmr)
		}
		if err != nil {
			vm.Close()
			debugger.Close()
			return fail(classify(err), fmt.Errorf("VM handshake: %w", err), "VM handshake failed; closing both connections")
		}
		vm.SetDeadline(time.Time{})
	}
	if err := jdwp.WriteHandshake(debugger); err != nil {
		vm.Close()
		debugger.Close()
		return fail(ReasonIO, err, "cannot answer the debugger's handshake")
	}
	debugger.SetDeadline(time.Time{})

	s := &Session{
		ID:         id,
		log:        log.With().Str(LogVM, vm.RemoteAddr().String()).Logger(),
		debugger:   debugger,
		vm:         vm,
		toVM:       sideWriter{bw: bufio.NewWriterSize(vm, 64<<10), conn: vm},
		toDbg:      sideWriter{bw: bufio.NewWriterSize(debugger, 64<<10), conn: debugger},
		maxPacket:  srv.cfg.MaxPacketSize,
		metrics:    m,
		vmPending:  make(map[uint32]pending, 64),
		dbgPending: make(map[uint32]pending, 8),
	}
	s.inFlightCond = sync.NewCond(&s.inFlightMu)
	if srv.cfg.NewHooks != nil {
		s.hooks = srv.cfg.NewHooks(s)
	}
	return s.run(ctx, jdwp.NewReader(dbr, s.maxPacket), jdwp.NewReader(vmr, s.maxPacket))
}

// run relays until either side ends, then shuts the session down.
func (s *Session) run(ctx context.Context, dbr, vmr *jdwp.Reader) error {
	if m := s.metrics; m != nil {
		m.sessions.Inc()
		m.active.Inc()
		defer m.active.Dec()
	}
	for _, o := range s.hooks.Observers {
		if so, ok := o.(SessionObserver); ok {
			so.SessionStart(s)
		}
	}
	s.log.Info().Msg("debugger session started")

	stop := context.AfterFunc(ctx, s.close)
	defer stop()

	errc := make(chan error, 2)
	go func() { errc <- s.readDebugger(dbr) }()
	go func() { errc <- s.readVM(vmr) }()
	first := <-errc
	s.close()
	second := <-errc

	for _, ic := range s.hooks.Interceptors {
		ic.Close(s)
	}
	err := first
	if reason := classify(first); reason != "" {
		s.metrics.protocolError(reason)
		s.log.Error().Err(first).Str(LogReason, reason).Msg("session ended by an error; both connections closed")
	} else {
		err = nil
		s.log.Info().Msg("debugger session ended")
	}
	_ = second // the second reader fails only because the first closed the connections
	for _, o := range s.hooks.Observers {
		if so, ok := o.(SessionObserver); ok {
			so.SessionEnd(s, err)
		}
	}
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
