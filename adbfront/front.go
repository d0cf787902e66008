package adbfront

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/accept"
	"github.com/jdwpaccel/jdwpaccel/internal/adbwire"
	"github.com/jdwpaccel/jdwpaccel/internal/logkey"
	"github.com/rs/zerolog"
)

// Log field names of this package.
const (
	LogClient   = "client"   // the client's address
	LogUpstream = "upstream" // the adb server's address
	LogRequest  = "request"  // a host-protocol request
	LogLocal    = "local"    // a forward's local end, e.g. tcp:8600
	LogIdle     = "idle_timeout"
)

// Target is the device process a JDWP stream leads to.
type Target struct {
	Serial string // the device's serial ("" if it could not be learnt)
	PID    int
}

func (t Target) String() string { return fmt.Sprintf("adb:%s:%d", t.Serial, t.PID) }

// JDWPFunc runs one JDWP stream between a client (a debugger, ddmlib) and
// the VM through the adb server; jdwp:PID has been answered OKAY on both,
// and no JDWP byte has been exchanged yet. It owns both connections and
// returns when the stream ends.
type JDWPFunc func(ctx context.Context, client, vm net.Conn, t Target) error

// Config configures a Front.
type Config struct {
	// Upstream is the real adb server's address.
	Upstream string
	// JDWP runs JDWP streams; nil splices them like everything else.
	JDWP JDWPFunc
	// ForwardHost is the address intercepted forwards listen on
	// (127.0.0.1 when empty), as the adb server's own forwards do.
	ForwardHost string
	// Timeout bounds dialling the adb server and each exchange of the
	// front's own (10 s when zero); spliced streams are not bounded.
	Timeout time.Duration
	// IdleTimeout bounds how long a client connection may wait before
	// its next request is whole (DefaultIdleTimeout when zero): a client
	// that connects and sends nothing, or half a request, is closed.
	IdleTimeout time.Duration
	// DialRetry is how long a debugger attaching to one of the front's
	// forwards waits while its stream cannot be opened (the adb server
	// restarting, the device offline or not back yet after a restart),
	// trying again with a growing pause (DefaultDialRetry when zero;
	// negative for a single attempt). Then its connection is reset, as a
	// refused one, before any handshake.
	DialRetry time.Duration
	// Logger receives the front's logs.
	Logger zerolog.Logger
}

// Defaults of Config.
const (
	DefaultIdleTimeout = 30 * time.Second
	DefaultDialRetry   = time.Second
)

// Front is an adb server front. Safe for concurrent use.
type Front struct {
	cfg Config
	log zerolog.Logger
	ctx context.Context // Serve's context, for forward listeners

	wg sync.WaitGroup // counts connection and forward goroutines

	mu       sync.Mutex // guards forwards
	forwards map[string]*forward
}

// New returns a Front; Serve runs it.
func New(cfg Config) *Front {
	if cfg.ForwardHost == "" {
		cfg.ForwardHost = "127.0.0.1"
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.DialRetry == 0 {
		cfg.DialRetry = DefaultDialRetry
	}
	return &Front{
		cfg:      cfg,
		log:      cfg.Logger.With().Str(LogUpstream, cfg.Upstream).Logger(),
		forwards: map[string]*forward{},
	}
}

// Serve accepts clients on ln until ctx ends (nil) or ln fails for good
// (a shortage of descriptors is waited out: accept.Loop), then
// closes ln, the forwards' listeners and every connection, and waits for
// them.
func (f *Front) Serve(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f.mu.Lock()
	f.ctx = ctx
	f.mu.Unlock()
	defer f.wg.Wait()
	defer f.closeForwards()
	return accept.Loop(ctx, ln, f.log, func(conn net.Conn) { f.wg.Go(func() { f.serveConn(ctx, conn) }) })
}

// bufConn is a connection whose reads drain a bufio.Reader first.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// CloseWrite half-closes the underlying TCP connection.
func (c *bufConn) CloseWrite() error { return closeWrite(c.Conn) }

func closeWrite(c net.Conn) error {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Close()
}

// upstream is the front's connection to the adb server for one client.
type upstream struct {
	conn net.Conn
	r    *bufio.Reader
}

func (f *Front) dial(ctx context.Context) (*upstream, error) {
	d := net.Dialer{Timeout: f.cfg.Timeout}
	c, err := d.DialContext(ctx, "tcp", f.cfg.Upstream)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the adb server at %s (is it running? \"adb start-server\"): %w", f.cfg.Upstream, err)
	}
	return &upstream{conn: c, r: bufio.NewReader(c)}, nil
}

func (u *upstream) send(req string) error {
	_, err := u.conn.Write(adbwire.AppendMessage(nil, req))
	return err
}

// status reads OKAY, or FAIL and its message: ok, the FAIL message.
func (u *upstream) status() (ok bool, msg string, err error) {
	err = adbwire.ReadStatus(u.r)
	var fe *adbwire.FailError
	switch {
	case err == nil:
		return true, "", nil
	case errors.As(err, &fe):
		return false, fe.Message, nil
	case errors.Is(err, adbwire.ErrProtocol):
		return false, "", fmt.Errorf("adb server's answer: %w", err)
	}
	return false, "", fmt.Errorf("reading the adb server's answer: %w", err)
}

// query sends a host request on a connection of its own and returns the
// message after OKAY (or an error carrying the FAIL message).
func (f *Front) query(ctx context.Context, req string) (string, error) {
	u, err := f.dial(ctx)
	if err != nil {
		return "", err
	}
	defer u.conn.Close()
	u.conn.SetDeadline(time.Now().Add(f.cfg.Timeout))
	if err := u.send(req); err != nil {
		return "", err
	}
	ok, msg, err := u.status()
	if err != nil {
		return "", err
	}
	if !ok {
		return "", &adbwire.FailError{Message: msg}
	}
	b, err := adbwire.ReadMessage(u.r)
	return string(b), err
}

// writeFail answers FAIL with msg.
func writeFail(w io.Writer, msg string) error {
	_, err := w.Write(adbwire.AppendFail(nil, msg))
	return err
}

// serveConn serves one client connection: requests are read and
// forwarded one at a time until one hands the connection over to a stream.
func (f *Front) serveConn(ctx context.Context, client net.Conn) {
	log := f.log.With().Str(LogClient, client.RemoteAddr().String()).Logger()
	cr := bufio.NewReader(client)
	var up *upstream
	// upConn is the upstream connection to close when ctx ends (the
	// variable up is this goroutine's alone).
	var upMu sync.Mutex
	var upConn net.Conn
	setUp := func(c net.Conn) {
		upMu.Lock()
		upConn = c
		upMu.Unlock()
	}
	defer func() {
		if up != nil {
			up.conn.Close()
		}
	}()
	defer client.Close()
	stop := context.AfterFunc(ctx, func() {
		client.Close()
		upMu.Lock()
		if upConn != nil {
			upConn.Close()
		}
		upMu.Unlock()
	})
	defer stop()

	var sel *Selector // the transport this connection switched to
	var tportID uint64
	for {
		client.SetReadDeadline(time.Now().Add(f.cfg.IdleTimeout))
		raw, err := adbwire.ReadRequest(cr)
		var ne net.Error
		switch {
		case errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed):
			log.Debug().Msg("adb client left before its next request")
			return
		case errors.As(err, &ne) && ne.Timeout():
			log.Debug().Dur(LogIdle, f.cfg.IdleTimeout).Msg("adb client sent no whole request in time; closing its connection")
			return
		}
		client.SetReadDeadline(time.Time{})
		if err != nil {
			log.Error().Err(err).Msg("bad request from the adb client; closing its connection")
			return
		}
		req, err := ParseRequest(raw)
		if err != nil {
			log.Error().Err(err).Str(LogRequest, raw).Msg("unparsable request; answering FAIL and closing the connection")
			writeFail(client, err.Error()) //nolint:errcheck // closing anyway
			return
		}
		log.Debug().Str(LogRequest, raw).Msg("request")
		// The front's own forwards need no upstream connection of this
		// client's; everything else goes up it.
		if f.maybeForward(ctx, client, req, sel, log) {
			return
		}
		if up == nil {
			if up, err = f.dial(ctx); err != nil {
				log.Warn().Err(err).Str(LogRequest, raw).Msg("cannot reach the adb server; answering FAIL")
				writeFail(client, err.Error()) //nolint:errcheck // closing anyway
				return
			}
			setUp(up.conn)
		}
		if err := up.send(raw); err != nil {
			log.Warn().Err(err).Str(LogRequest, raw).Msg("adb server connection lost")
			return
		}
		switch {
		case req.Kind == KindTransport:
			ok, id, err := f.relayTransportAnswer(client, up, req.TPort)
			if err != nil {
				log.Warn().Err(err).Str(LogRequest, raw).Msg("transport switch failed")
				return
			}
			if !ok {
				return // FAIL relayed; the server closes
			}
			s := req.Sel
			sel, tportID = &s, id
			continue
		case req.Kind == KindJDWP && sel != nil:
			f.jdwpStream(ctx, client, cr, up, req.PID, *sel, tportID, log)
			up = nil // jdwpStream owns it
			return
		}
		f.splice(client, cr, up)
		return
	}
}

// relayTransportAnswer copies the answer to a transport switch: OKAY (and
// with tport the 8-byte transport ID), or FAIL and its message.
func (f *Front) relayTransportAnswer(client net.Conn, up *upstream, tport bool) (ok bool, id uint64, err error) {
	ok, msg, err := up.status()
	if err != nil {
		return false, 0, err
	}
	if !ok {
		return false, 0, writeFail(client, msg)
	}
	out := []byte("OKAY")
	if tport {
		var b [8]byte
		if _, err := io.ReadFull(up.r, b[:]); err != nil {
			return false, 0, fmt.Errorf("reading the transport ID: %w", err)
		}
		id = binary.LittleEndian.Uint64(b[:])
		out = append(out, b[:]...)
	}
	_, err = client.Write(out)
	return true, id, err
}

// splice copies both directions until both end, propagating half-closes.
func (f *Front) splice(client net.Conn, cr *bufio.Reader, up *upstream) {
	c := &bufConn{Conn: client, r: cr}
	u := &bufConn{Conn: up.conn, r: up.r}
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(u.Conn, c) //nolint:errcheck // ends when either side closes
		closeWrite(u.Conn)
	}()
	io.Copy(c.Conn, u) //nolint:errcheck // ends when either side closes
	closeWrite(c.Conn)
	<-done
	up.conn.Close()
}

// jdwpStream answers jdwp:PID and hands the stream to the JDWP function.
func (f *Front) jdwpStream(ctx context.Context, client net.Conn, cr *bufio.Reader, up *upstream, pid int, sel Selector, tportID uint64, log zerolog.Logger) {
	ok, msg, err := up.status()
	if err != nil {
		log.Warn().Err(err).Int(logkey.PID, pid).Msg("jdwp stream failed")
		up.conn.Close()
		return
	}
	if !ok {
		writeFail(client, msg) //nolint:errcheck // closing anyway
		up.conn.Close()
		return
	}
	if _, err := client.Write([]byte("OKAY")); err != nil {
		up.conn.Close()
		return
	}
	if tportID != 0 && sel.Kind != SelectSerial {
		sel = Selector{Kind: SelectTransportID, ID: tportID}
	}
	t := Target{Serial: f.serialOf(ctx, sel), PID: pid}
	f.runJDWP(ctx, &bufConn{Conn: client, r: cr}, &bufConn{Conn: up.conn, r: up.r}, t, log)
}

func (f *Front) runJDWP(ctx context.Context, client, vm net.Conn, t Target, log zerolog.Logger) {
	log = log.With().Str(logkey.Device, t.Serial).Int(logkey.PID, t.PID).Logger()
	if f.cfg.JDWP == nil {
		log.Info().Msg("JDWP stream: splicing")
		f.splice(client, bufio.NewReader(client), &upstream{conn: vm, r: bufio.NewReader(vm)})
		return
	}
	log.Info().Msg("JDWP stream: relaying through the accelerator")
	if err := f.cfg.JDWP(ctx, client, vm, t); err != nil {
		log.Info().Err(err).Msg("JDWP stream ended")
	}
}

// serialOf asks the adb server for the serial of the device sel picks
// ("" when it cannot say): log fields and the page name streams by it.
func (f *Front) serialOf(ctx context.Context, sel Selector) string {
	if sel.Kind == SelectSerial {
		return sel.Serial
	}
	s, err := f.query(ctx, sel.Prefix()+"get-serialno")
	if err != nil {
		f.log.Debug().Err(err).Stringer("selector", sel).Msg("cannot learn the device's serial")
		return ""
	}
	return s
}

// DialJDWP opens a new jdwp:PID stream to t through the adb server: for a
// JDWPFunc whose stream's VM closed before its handshake (the app or the
// device just restarted), to try again without the client knowing.
// t.Serial must be known.
func (f *Front) DialJDWP(ctx context.Context, t Target) (net.Conn, error) {
	if t.Serial == "" {
		return nil, errors.New("the device's serial is not known: cannot open another JDWP stream to it")
	}
	return f.dialJDWP(ctx, t.Serial, t.PID)
}

// dialJDWP opens a jdwp:PID stream to the device with serial through
// the adb server.
func (f *Front) dialJDWP(ctx context.Context, serial string, pid int) (net.Conn, error) {
	u, err := f.dial(ctx)
	if err != nil {
		return nil, err
	}
	u.conn.SetDeadline(time.Now().Add(f.cfg.Timeout))
	for _, req := range []string{"host:transport:" + serial, "jdwp:" + strconv.Itoa(pid)} {
		if err := u.send(req); err != nil {
			u.conn.Close()
			return nil, err
		}
		ok, msg, err := u.status()
		if err == nil && !ok {
			err = &adbwire.FailError{Message: msg}
		}
		if err != nil {
			u.conn.Close()
			return nil, fmt.Errorf("%s: %w", req, err)
		}
	}
	u.conn.SetDeadline(time.Time{})
	return &bufConn{Conn: u.conn, r: u.r}, nil
}
