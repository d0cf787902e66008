package share

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/accept"
	"github.com/jdwpaccel/jdwpaccel/internal/logkey"
	"github.com/jdwpaccel/jdwpaccel/internal/lograte"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/rs/zerolog"
)

// Config configures a Front.
type Config struct {
	// Logger receives the front's logs (the VM's fields already set).
	Logger zerolog.Logger
	// HandshakeTimeout bounds a client's JDWP handshake (10 s when zero).
	HandshakeTimeout time.Duration
	// MaxPacketSize bounds the packets of clients and of the relay
	// (jdwp.DefaultMaxPacketSize when zero).
	MaxPacketSize int
	// WriteQueueBytes bounds what waits to be written to one client
	// (and to the relay): the controller is waited for, as the relay waits
	// for a lone debugger, and an observer over it is dropped so that it
	// cannot stall the others (1 MiB when zero).
	WriteQueueBytes int
	// WriteTimeout bounds each write to a client (30 s when zero).
	WriteTimeout time.Duration
	// Metrics, if not nil, counts the protocol errors of clients, as the
	// relay counts a debugger's.
	Metrics *relay.Metrics
	// OnClient, if not nil, is told each client attaching and leaving
	// (the journal); called without the front's locks held.
	OnClient func(ev ClientEvent)
}

// ClientEvent is a client attaching (Left false) or leaving.
type ClientEvent struct {
	VM     string
	Client ClientInfo
	Left   bool
	How    string // how it left: dispose, closed, dropped
}

// Front shares one VM among the clients that reach it: it holds the VM's
// current hub, makes one (starting a relay session for it) for the first
// client, and another once the previous one ended.
type Front struct {
	cfg  Config
	vm   string
	done chan struct{} // closed by Close

	// mu guards hub, and orders a client's wg.Add before Close's wg.Wait:
	// serve checks done and adds under mu, Close closes done before it
	// takes mu.
	mu   sync.Mutex
	hub  *Hub
	wg   sync.WaitGroup // the clients being served
	next atomic.Uint64  // client numbers

	chMu sync.Mutex    // guards ch
	ch   chan struct{} // closed and replaced by changed

	denied    atomic.Int64 // commands refused by a rule, all clients
	orphaned  atomic.Int64 // suspending events no controller got, resumed by the hub
	closeOnce sync.Once
}

// NewFront returns a front for the VM named vm (for the journal and the
// page).
func NewFront(vm string, cfg Config) *Front {
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = 10 * time.Second
	}
	if cfg.MaxPacketSize <= 0 {
		cfg.MaxPacketSize = jdwp.DefaultMaxPacketSize
	}
	if cfg.WriteQueueBytes <= 0 {
		cfg.WriteQueueBytes = 1 << 20
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 30 * time.Second
	}
	return &Front{cfg: cfg, vm: vm, done: make(chan struct{}), ch: make(chan struct{})}
}

// Denied counts the commands refused by a rule since the front started.
func (f *Front) Denied() int64 { return f.denied.Load() }

// Orphaned counts the suspending events that no controller got (their
// request's client left), which the hub resumed.
func (f *Front) Orphaned() int64 { return f.orphaned.Load() }

// Clients lists the clients attached now, in attach order.
func (f *Front) Clients() []ClientInfo {
	f.mu.Lock()
	h := f.hub
	f.mu.Unlock()
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]ClientInfo, 0, len(h.clients))
	for _, c := range h.clients {
		out = append(out, c.info())
	}
	return out
}

// Close closes every client and the current hub's pipe, and waits for
// the clients' goroutines.
func (f *Front) Close() {
	f.closeOnce.Do(func() { close(f.done) })
	f.mu.Lock()
	h := f.hub
	f.mu.Unlock()
	if h != nil {
		h.pipe.Close()
		h.mu.Lock()
		for _, c := range h.clients {
			c.conn.Close()
		}
		h.mu.Unlock()
	}
	f.wg.Wait()
}

// isClosed reports whether Close began.
func (f *Front) isClosed() bool {
	select {
	case <-f.done:
		return true
	default:
		return false
	}
}

// Changed is closed when a client next attaches, leaves or changes role:
// a signal to wait on, then read Clients.
func (f *Front) Changed() <-chan struct{} {
	f.chMu.Lock()
	defer f.chMu.Unlock()
	return f.ch
}

func (f *Front) changed() {
	f.chMu.Lock()
	close(f.ch)
	f.ch = make(chan struct{})
	f.chMu.Unlock()
}

// hubEnded forgets h once its session ended.
func (f *Front) hubEnded(h *Hub) {
	f.mu.Lock()
	if f.hub == h {
		f.hub = nil
	}
	f.mu.Unlock()
}

// Serve serves one client connection until it leaves, and closes it. It
// reads the client's handshake, joins it to the VM's hub and answers the
// handshake once the hub's session reached the VM. A read-only client is
// an observer even when it comes first. start is called once, before the
// handshake is answered: when there is no hub (or the last one ended),
// with the relay's end of a new hub's pipe, with which start must run a
// relay session without blocking (started is then true); when c joins a
// running hub, with nil (a caller that opened a VM connection for this
// client closes it then).
func (f *Front) Serve(ctx context.Context, conn net.Conn, readOnly bool, start func(debugger net.Conn)) (started bool, err error) {
	return f.serve(ctx, conn, readOnly, start, func() {})
}

// serve is Serve, calling handshaken once the client's handshake was read
// (or failed).
func (f *Front) serve(ctx context.Context, conn net.Conn, readOnly bool, start func(debugger net.Conn), handshaken func()) (started bool, err error) {
	f.mu.Lock()
	if f.isClosed() {
		f.mu.Unlock()
		handshaken()
		conn.Close()
		return false, net.ErrClosed
	}
	f.wg.Add(1)
	f.mu.Unlock()
	defer f.wg.Done()
	conn.SetDeadline(time.Now().Add(f.cfg.HandshakeTimeout))
	err = jdwp.ReadHandshake(conn)
	handshaken()
	if err != nil {
		f.badHandshake(conn, err)
		return false, err
	}
	c := &Client{
		Number: f.next.Add(1), conn: conn, addr: conn.RemoteAddr().String(), readOnly: readOnly, since: time.Now(),
		w: newWriter(conn, f.cfg.WriteTimeout), requests: map[int32]request{}, threadSuspends: map[uint64]int{}, pinned: map[uint64]int{},
	}
	c.log = f.cfg.Logger.With().Uint64(LogClient, c.Number).Str(LogDebugger, c.addr).Logger()
	var h *Hub
	for {
		var pipe net.Conn // the relay's end, for a hub made for c
		f.mu.Lock()
		h = f.hub
		if h == nil {
			a, b := net.Pipe()
			h, pipe = newHub(f, b), a
			f.hub = h
		}
		f.mu.Unlock()
		if h.join(c) { // a new hub always takes its first client
			if pipe != nil {
				started = true
				start(&pipeConn{Conn: pipe, remote: conn.RemoteAddr()})
				go h.connect()
			} else {
				start(nil)
			}
			break
		}
		// Its last client left: wait for its end, then make another.
		<-h.over
		f.hubEnded(h)
	}
	select {
	case <-h.ready:
	case <-ctx.Done():
		h.leave(c, "closed")
		refuse(conn)
		return started, ctx.Err()
	}
	if h.readyErr != nil {
		h.leave(c, "refused")
		refuse(conn)
		return started, h.readyErr
	}
	if err := jdwp.WriteHandshake(conn); err != nil {
		h.leave(c, "dropped")
		return started, err
	}
	conn.SetDeadline(time.Time{})
	h.mu.Lock()
	role := c.role
	h.mu.Unlock()
	c.log.Info().Str(LogRole, role.String()).Bool(LogReadOnly, readOnly).Msg("client attached")
	f.event(ClientEvent{Client: c.info()})
	f.changed()
	go c.w.run() //nolint:errcheck // a failed write ends the client's reader too (its connection closes)
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	c.read(h, jdwp.NewReader(bufio.NewReaderSize(conn, 64<<10), f.cfg.MaxPacketSize))
	<-c.w.exited
	conn.Close()
	f.event(ClientEvent{Client: c.info(), Left: true, How: c.left})
	return started, nil
}

// badHandshake closes a client whose handshake failed, and logs and
// counts it as the relay does a debugger's.
func (f *Front) badHandshake(conn net.Conn, err error) {
	reason := relay.Classify(err)
	log := f.cfg.Logger.With().Str(LogDebugger, conn.RemoteAddr().String()).Str(LogReason, string(reason)).Logger()
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		log.Warn().Err(err).Msg("client sent no JDWP handshake in time; closed its connection")
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || relay.PeerGone(err):
		// A port probe, a debugger giving up: nothing for a user to fix.
		log.Info().Err(err).Msg("client closed its connection before the JDWP handshake")
	default:
		drain(conn) // bytes after a bad handshake: an end of stream, not a reset
		log.Error().Err(err).Msg("client's JDWP handshake failed (is a non-JDWP client using this port?); closing its connection")
	}
	conn.Close()
	f.cfg.Metrics.ProtocolError(reason)
}

// drain half-closes c and drops what its peer still sends (64 KiB and
// half a second at most), so that the close that follows is not a reset.
func drain(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	c.SetReadDeadline(time.Now().Add(lingerTimeout))
	io.CopyN(io.Discard, c, 64<<10)
}

func (f *Front) event(ev ClientEvent) {
	if f.cfg.OnClient != nil {
		ev.VM = f.vm
		f.cfg.OnClient(ev)
	}
}

// Log field names.
const (
	LogDebugger = "debugger"
	LogReadOnly = "read_only"
	LogReason   = "reason"
)

// refuse closes a client before answering its handshake, with a reset
// where the connection allows it (as the relay refuses a debugger when the
// VM cannot be reached).
func refuse(c net.Conn) {
	if l, ok := c.(interface{ SetLinger(int) error }); ok {
		l.SetLinger(0)
	}
	c.Close()
}

// pipeConn is the relay's end of a hub's pipe, naming the hub's first
// client as its remote address (for the relay's logs).
type pipeConn struct {
	net.Conn
	remote net.Addr
}

func (p *pipeConn) RemoteAddr() net.Addr { return p.remote }

// Listener is a net.Listener for relay.Server.Serve that shares one VM
// among the clients it accepts: Accept returns only the hub ends of new
// shared sessions, while clients arriving during a session join it.
type Listener struct {
	ln    net.Listener
	ro    net.Listener // nil, or where every client is an observer
	front *Front
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
	start sync.Once
	errMu sync.Mutex // guards err
	err   error      // why the accept loop of ln stopped
	// handshakes holds a token per client whose handshake is unread.
	handshakes chan struct{}
	overCap    *lograte.Limiter // thins the log of clients closed over cap(handshakes)
}

// NewListener shares the VM of front among the clients accepted on ln,
// and on readOnly (nil: none), whose clients are all observers.
// maxHandshakes bounds the clients held before their handshake (as
// relay.Config.MaxHandshakes; DefaultMaxHandshakes when zero).
func NewListener(ln, readOnly net.Listener, front *Front, maxHandshakes int) *Listener {
	if maxHandshakes <= 0 {
		maxHandshakes = relay.DefaultMaxHandshakes
	}
	return &Listener{ln: ln, ro: readOnly, front: front, conns: make(chan net.Conn), done: make(chan struct{}), handshakes: make(chan struct{}, maxHandshakes),
		overCap: lograte.New(relay.OverCapEvery, 1)}
}

// Serve runs srv's sessions for the clients of ln and readOnly (see
// NewListener) until ctx ends, as srv.Serve(ctx, ln) runs them for one
// debugger at a time; then it closes front.
func Serve(ctx context.Context, srv *relay.Server, front *Front, ln, readOnly net.Listener, maxHandshakes int) error {
	defer front.Close()
	return srv.Serve(ctx, NewListener(ln, readOnly, front, maxHandshakes))
}

// Accept returns the relay's end of the next shared session.
func (l *Listener) Accept() (net.Conn, error) {
	l.start.Do(func() {
		go l.acceptLoop(l.ln, false)
		if l.ro != nil {
			go l.acceptLoop(l.ro, true)
		}
	})
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		l.errMu.Lock()
		defer l.errMu.Unlock()
		if l.err != nil {
			return nil, l.err
		}
		return nil, net.ErrClosed
	}
}

// Close closes the listener(s); sessions end with the relay server's
// context, and their clients with them.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.done) })
	if l.ro != nil {
		l.ro.Close()
	}
	return l.ln.Close()
}

// Addr is the address of the listener of clients that may control.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

func (l *Listener) acceptLoop(ln net.Listener, readOnly bool) {
	err := accept.Loop(context.Background(), ln, l.front.cfg.Logger, func(conn net.Conn) {
		select {
		case l.handshakes <- struct{}{}:
		default:
			if ok, held, _ := l.overCap.Allow(""); ok {
				l.front.cfg.Logger.Warn().Str(LogDebugger, conn.RemoteAddr().String()).Int(LogMax, cap(l.handshakes)).Int(logkey.Suppressed, held).
					Msg("too many connections in their JDWP handshake (clients that connect and send nothing?); closed a new one at once (suppressed: such closes not logged since the last line)")
			}
			refuse(conn)
			return
		}
		go l.serve(conn, readOnly)
	})
	if ln == l.ln {
		l.errMu.Lock()
		l.err = err
		l.errMu.Unlock()
		l.once.Do(func() { close(l.done) })
	} else if !errors.Is(err, net.ErrClosed) {
		l.front.cfg.Logger.Error().Err(err).Str(logkey.Listen, ln.Addr().String()).
			Msg("the read-only listener stopped accepting: observers cannot attach until the proxy restarts")
	}
}

// LogMax is the bound a refused connection went over.
const LogMax = "max"

func (l *Listener) serve(conn net.Conn, readOnly bool) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-l.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	var once sync.Once
	release := func() { once.Do(func() { <-l.handshakes }) }
	defer release()
	l.front.serve(ctx, conn, readOnly, func(debugger net.Conn) { //nolint:errcheck // logged inside
		if debugger == nil {
			return // joined a running session
		}
		select {
		case l.conns <- debugger:
		case <-l.done:
			debugger.Close()
		}
	}, release)
}
