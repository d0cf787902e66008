package split

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/rs/zerolog"
)

// NearConfig configures the near end's connections to a far end.
type NearConfig struct {
	// Addr is the far end's HOST:PORT (or a tunnel's: ssh -L, kubectl
	// port-forward).
	Addr string
	// TLS, when not nil, is the client TLS configuration (see ClientTLS);
	// nil is plain TCP.
	TLS *tls.Config
	// Token is presented to the far end; empty for none.
	Token []byte
	// Software is this end's jdwpaccel version, sent in the hello.
	Software string
	// Attach asks the far end for the attach bundle (FlagAttach): set it
	// when this end reads pushed bundles (push.NearHooks with a
	// speculator). What the far end agreed to reaches the session's hooks
	// as relay.Session.VMInfo.
	Attach bool
	// Logger is not written to: every failure is returned, for the caller
	// (the relay at an attach, the near end's start-up check) to log once.
	Logger  zerolog.Logger
	Metrics *Metrics
}

// SkewError is a far end of another protocol version.
type SkewError struct {
	Addr                      string
	Near, Far                 uint16
	NearSoftware, FarSoftware string
}

func (e *SkewError) Error() string {
	return fmt.Sprintf("version skew: this near end speaks split protocol %d (jdwpaccel %s), the far end at %s speaks %d (jdwpaccel %s); run the same jdwpaccel version on both ends",
		e.Near, e.NearSoftware, e.Addr, e.Far, e.FarSoftware)
}

// ErrUnauthorized is wrapped by the error for a far end that refused the
// near end's token.
var ErrUnauthorized = errors.New("split: unauthorized")

// ErrRefused is wrapped by the error for a far end that refused the
// connection for another reason.
var ErrRefused = errors.New("split: refused by the far end")

// Dialer returns a relay.Dialer that reaches the VM through the far end
// at cfg.Addr: it opens a link connection, sends the hello and the JDWP
// handshake at once, and returns the connection once the far end accepted
// it and the VM's handshake came back (one round trip, plus TLS's). A far
// end that is down or restarting refuses the connection, which the relay
// retries like a VM that is not listening yet.
func Dialer(cfg NearConfig) relay.Dialer {
	return func(ctx context.Context) (relay.VMConn, error) {
		var flags uint16
		if cfg.Attach {
			flags |= FlagAttach
		}
		c, br, rep, err := connect(ctx, cfg, flags)
		if err != nil {
			return relay.VMConn{}, err
		}
		// Only what this end asked for counts.
		info := relay.LinkInfo{AttachBundle: cfg.Attach && rep.Flags&ReplyAttach != 0}
		return relay.VMConn{Conn: c, Handshaken: true, Reader: br, Info: info}, nil
	}
}

// Probe checks the link to the far end without starting a session: the
// far end's reply, or why it could not be had (unreachable, TLS, token,
// version skew).
func Probe(ctx context.Context, cfg NearConfig) (Reply, error) {
	c, _, rep, err := connect(ctx, cfg, FlagProbe)
	if err == nil {
		c.Close()
	}
	return rep, err
}

// connect opens one link connection and exchanges the preamble (and,
// without FlagProbe, the JDWP handshake).
func connect(ctx context.Context, cfg NearConfig, flags uint16) (net.Conn, *bufio.Reader, Reply, error) {
	d := net.Dialer{KeepAliveConfig: keepAlive, Timeout: DefaultPreambleTimeout}
	raw, err := d.DialContext(ctx, "tcp", cfg.Addr)
	if err != nil {
		cfg.Metrics.count(EndNear, OutcomeUnreachable)
		return nil, nil, Reply{}, fmt.Errorf("far end %s: %w", cfg.Addr, err)
	}
	fail := func(o Outcome, err error) (net.Conn, *bufio.Reader, Reply, error) {
		raw.Close()
		cfg.Metrics.count(EndNear, o)
		return nil, nil, Reply{}, err
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(DefaultPreambleTimeout)
	}
	raw.SetDeadline(deadline)
	conn := raw
	if cfg.TLS != nil {
		tc := tls.Client(raw, cfg.TLS)
		if err := tc.HandshakeContext(ctx); err != nil {
			err = fmt.Errorf("TLS handshake with the far end at %s failed (is it a far end with --tls-cert, whose certificate is the one given to --far-cert?): %w", cfg.Addr, err)
			return fail(OutcomeTLS, err)
		}
		conn = tc
	}
	msg := AppendHello(make([]byte, 0, 64+len(cfg.Token)), Hello{Version: ProtocolVersion, Software: cfg.Software, Flags: flags, Token: cfg.Token})
	if flags&(FlagProbe|FlagPage) == 0 {
		msg = append(msg, jdwp.Handshake...)
	}
	if _, err := conn.Write(msg); err != nil {
		return fail(OutcomeUnreachable, fmt.Errorf("far end %s: %w", cfg.Addr, err))
	}
	br := bufio.NewReaderSize(conn, 64<<10)
	rep, err := ReadReply(br)
	if err != nil {
		o := OutcomeBadPreamble
		switch {
		case errors.Is(err, ErrTLSRecord):
			err = fmt.Errorf("the far end at %s speaks TLS: give this end its certificate with --far-cert: %w", cfg.Addr, err)
		case errors.Is(err, ErrNotSplit):
			err = fmt.Errorf("%s is not a jdwpaccel far end (a VM or a near end?): %w", cfg.Addr, err)
		case cfg.TLS != nil && tlsAlert(err):
			// TLS 1.3 verifies the client's certificate after the
			// client's handshake returned: the refusal comes here.
			o = OutcomeTLS
			err = fmt.Errorf("the far end at %s refused this end in the TLS handshake (does it pin a client certificate with --peer-cert? give this end that certificate with --tls-cert and --tls-key): %w", cfg.Addr, err)
		case cfg.TLS == nil && closedEarly(err):
			// A TLS far end closes a plain connection without a word.
			o = OutcomeTLS
			err = fmt.Errorf("the far end at %s closed the connection without answering (a far end with TLS closes plain connections: give this end --far-cert; or it is not a jdwpaccel far end): %w", cfg.Addr, err)
		default:
			o = OutcomeUnreachable
			err = fmt.Errorf("far end %s: no answer to the preamble: %w", cfg.Addr, err)
		}
		return fail(o, err)
	}
	switch {
	case rep.Version != ProtocolVersion || rep.Status == StatusVersionSkew:
		err := &SkewError{Addr: cfg.Addr, Near: ProtocolVersion, Far: rep.Version, NearSoftware: cfg.Software, FarSoftware: rep.Software}
		return fail(OutcomeVersionSkew, err)
	case rep.Status == StatusUnauthorized:
		err := fmt.Errorf("%w: the far end at %s refused this end: %s", ErrUnauthorized, cfg.Addr, rep.Message)
		if len(cfg.Token) == 0 {
			err = fmt.Errorf("%w: the far end at %s wants a token and this end has none: give it the far end's token file with --token-file", ErrUnauthorized, cfg.Addr)
		}
		return fail(OutcomeUnauthorized, err)
	case rep.Status != StatusAccepted:
		err := fmt.Errorf("%w: the far end at %s answered %v: %s", ErrRefused, cfg.Addr, rep.Status, rep.Message)
		return fail(OutcomeBadPreamble, err)
	}
	switch {
	case flags&FlagPage != 0:
		cfg.Metrics.count(EndNear, OutcomePage)
	case flags&FlagProbe != 0:
		cfg.Metrics.count(EndNear, OutcomeProbe)
	default:
		// The far end answers the handshake once it reached the VM; a far
		// end that cannot reach it closes the connection, which the relay
		// retries (and reports) as it does for a VM it cannot reach.
		if err := jdwp.ReadHandshake(br); err != nil {
			raw.Close()
			return nil, nil, rep, fmt.Errorf("VM handshake through the far end at %s: %w", cfg.Addr, err)
		}
		cfg.Metrics.count(EndNear, OutcomeAccepted)
	}
	raw.SetDeadline(time.Time{})
	return conn, br, rep, nil
}

// tlsAlert reports whether err is an alert the TLS peer sent.
func tlsAlert(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "remote error"
}

// closedEarly reports whether err is the peer closing or resetting the
// connection.
func closedEarly(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}
