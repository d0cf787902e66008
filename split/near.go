package split

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/logkey"
	"github.com/jdwpaccel/jdwpaccel/internal/stat"
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
	// as relay.Session.VMInfo (an Agreed).
	Attach bool
	// Heartbeat offers the far end a heartbeat (FlagHeartbeat): set it
	// when the session's hooks start with NearHeartbeat(LinkTimeout, Link),
	// which sends the beats, since a far end that agreed ends a session
	// that stays silent.
	Heartbeat bool
	// LinkTimeout bounds how long the link may leave data unacknowledged
	// (TCP_USER_TIMEOUT) or, in a session with a heartbeat, bring nothing
	// from the far end, before the session ends (DefaultLinkTimeout when
	// zero; the heartbeat goes every third of it: NearHeartbeat).
	LinkTimeout time.Duration
	// ResumeWithin, when positive, offers the far end a resumable stream
	// (FlagResume): a session whose far end agreed outlives its link for
	// this long, while this end dials the far end again (resume.go). Zero
	// offers nothing: a session ends with its link.
	ResumeWithin time.Duration
	// ResumeBuffer bounds what a resumable session keeps unacknowledged
	// (DefaultResumeBuffer when zero).
	ResumeBuffer int
	// Compress offers the far end to compress each session's link
	// connections (FlagCompress, compress.go), unless Link measured the
	// link's round trip under CompressMinRTT.
	Compress bool
	// CompressMinRTT is the round trip under which a session's link is
	// not compressed: a local or LAN link carries a packet sooner than
	// the two ends compress and decompress it, which costs each packet
	// CPU on both ends (DefaultCompressMinRTT). Zero compresses whatever
	// the round trip.
	CompressMinRTT time.Duration
	// Link, when not nil, records the round trip of each connection's
	// preamble, and a session decides by the last ones recorded whether to
	// offer compression (see Compress, Link.RTT). Share one Link among the
	// Probe (which a near end runs at start), the Dialer and the
	// NearHeartbeat of one far end; nil measures nothing, and Compress
	// alone decides.
	Link *Link
	// Logger gets the resumable sessions' link losses and resumes. Every
	// other failure is returned, for the caller (the relay at an attach,
	// the near end's start-up check) to log once.
	Logger  zerolog.Logger
	Metrics *Metrics

	// dial, when not nil, opens the TCP connection instead of a
	// net.Dialer (a test's, from another network namespace).
	dial func(ctx context.Context, addr string) (net.Conn, error)
}

// DefaultCompressMinRTT is NearConfig.CompressMinRTT's default: the
// round trip under which the speculator too counts a link as fast
// (speculator.LowRTT). At 0 ms, a jdb step through split mode took 6-11%
// longer with the link compressed (bench/results/compress/).
const DefaultCompressMinRTT = 2 * time.Millisecond

// Link is what a near end measured of its link to one far end: the last
// round trips of its connections' preambles (the hello to the far end's
// reply, through any tunnel; TLS's handshake not included) and of its
// heartbeats (NearHeartbeat). Its methods may be called from any
// goroutine.
type Link struct {
	mu   sync.Mutex // guards last
	last stat.Floor // of the last linkSamples round trips
}

// linkSamples is how many of its last round trips a Link keeps: few, so
// that a link that became slower shows soon.
const linkSamples = 4

// RTT is the smallest of the last round trips measured (a busy end only
// lengthens one, as it answers or reads late), 0 before any.
func (l *Link) RTT() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last.Min()
}

func (l *Link) measured(d time.Duration) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.last.Window = linkSamples
	l.last.Add(d)
	l.mu.Unlock()
}

// compress says whether a new session offers compression.
func (cfg NearConfig) compress() bool {
	if !cfg.Compress || cfg.Link == nil || cfg.CompressMinRTT <= 0 {
		return cfg.Compress
	}
	rtt := cfg.Link.RTT()
	return rtt == 0 || rtt >= cfg.CompressMinRTT
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
		if cfg.Heartbeat {
			flags |= FlagHeartbeat
		}
		if cfg.ResumeWithin > 0 {
			flags |= FlagResume
		}
		if cfg.compress() {
			flags |= FlagCompress
		} else if cfg.Compress {
			cfg.Logger.Debug().Str(LogFar, cfg.Addr).Dur(logkey.RTT, cfg.Link.RTT()).
				Msg("the link's round trip is under the compression threshold: this session's link goes uncompressed")
		}
		c, br, z, rep, err := connect(ctx, cfg, flags, Resume{})
		if err != nil {
			return relay.VMConn{}, err
		}
		// Only what this end asked for counts.
		agreed := Agreed{Flags: rep.Flags}
		if !cfg.Attach {
			agreed.Flags &^= ReplyAttach
		}
		if !cfg.Heartbeat {
			agreed.Flags &^= ReplyHeartbeat
		}
		if !cfg.Resume() {
			agreed.Flags &^= ReplyResume
		}
		if z == nil {
			agreed.Flags &^= ReplyCompress
		}
		if agreed.Heartbeat() {
			c.timeout = linkTimeout(cfg.LinkTimeout) // the far end answers NearHeartbeat's beats
		}
		if !agreed.Resumable() {
			if z != nil {
				return relay.VMConn{Conn: z, Handshaken: true, Info: agreed.Link()}, nil
			}
			return relay.VMConn{Conn: c, Handshaken: true, Reader: br, Info: agreed.Link()}, nil
		}
		st, err := nearStream(ctx, cfg, &leg{conn: c, br: br, z: z}, rep.Resume)
		if err != nil {
			return relay.VMConn{}, err
		}
		return relay.VMConn{Conn: st, Handshaken: true, Info: agreed.Link()}, nil
	}
}

// Resume says the near end offers resumable streams.
func (cfg NearConfig) Resume() bool { return cfg.ResumeWithin > 0 }

// nearStream makes the first link of a resumable session its stream, and
// reads the VM's handshake from it.
func nearStream(ctx context.Context, cfg NearConfig, first *leg, r Resume) (*stream, error) {
	timeout := first.conn.(*liveConn).timeout
	sc := streamConfig{
		end: EndNear, within: cfg.ResumeWithin, buffer: cfg.ResumeBuffer, linkTimeout: timeout,
		log: cfg.Logger.With().Str(LogFar, cfg.Addr).Str(LogLinkSession, r.Session.String()).Logger(),
		redial: func(ctx context.Context, rr Resume) (*leg, error) {
			flags := FlagReconnect
			if first.z != nil {
				// As the session's first connection: its hooks chose
				// how to send their payloads by it (relay.LinkInfo).
				flags |= FlagCompress
			}
			c, br, z, rep, err := connect(ctx, cfg, flags, rr)
			if err != nil {
				return nil, err
			}
			if rep.Flags&ReplyResume == 0 || rep.Resume.Session != rr.Session {
				c.Close()
				return nil, fmt.Errorf("%w: the far end at %s answered a reconnect for another session", ErrRefused, cfg.Addr)
			}
			c.timeout = timeout
			return &leg{conn: c, br: br, z: z, sent: rep.Resume.Received}, nil
		},
	}
	if sc.buffer <= 0 {
		sc.buffer = DefaultResumeBuffer
	}
	st := newStream(sc, r.Session, r.Secret, first.conn)
	st.start(first)
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(DefaultPreambleTimeout)
	}
	st.SetReadDeadline(deadline)
	if err := jdwp.ReadHandshake(st); err != nil {
		st.Close()
		return nil, fmt.Errorf("VM handshake through the far end at %s: %w", cfg.Addr, err)
	}
	st.SetReadDeadline(time.Time{})
	return st, nil
}

// Probe checks the link to the far end without starting a session: the
// far end's reply, or why it could not be had (unreachable, TLS, token,
// version skew).
func Probe(ctx context.Context, cfg NearConfig) (Reply, error) {
	c, _, _, rep, err := connect(ctx, cfg, FlagProbe, Resume{})
	if err == nil {
		c.Close()
	}
	return rep, err
}

// connect opens one link connection and exchanges the preamble (and,
// for a session that is not resumable, the JDWP handshake; a resumable
// session's is in its stream). When flags has FlagCompress and the far
// end agreed, it returns the connection compressed too (z; nil
// otherwise), which the session must read and write through. The connection's reads have no
// deadline of their own until the caller sets its timeout. It logs
// nothing: its caller (the relay, once per attach after its retries;
// probeFar) logs the error, which says what is known.
func connect(ctx context.Context, cfg NearConfig, flags uint16, resume Resume) (*liveConn, *bufio.Reader, *zconn, Reply, error) {
	dial := cfg.dial
	if dial == nil {
		d := net.Dialer{KeepAliveConfig: keepAlive, Timeout: DefaultPreambleTimeout}
		dial = func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
	}
	raw, err := dial(ctx, cfg.Addr)
	if err != nil {
		cfg.Metrics.count(EndNear, OutcomeUnreachable)
		return nil, nil, nil, Reply{}, fmt.Errorf("far end %s: %w", cfg.Addr, err)
	}
	if sc, ok := raw.(syscall.Conn); ok {
		setUserTimeout(sc, linkTimeout(cfg.LinkTimeout)) //nolint:errcheck // best effort: the heartbeat bounds it too
	}
	fail := func(o Outcome, err error) (*liveConn, *bufio.Reader, *zconn, Reply, error) {
		raw.Close()
		cfg.Metrics.count(EndNear, o)
		return nil, nil, nil, Reply{}, err
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
			if closedEarly(err) {
				// Retried by the relay, like a VM not listening yet.
				return fail(OutcomeUnreachable, fmt.Errorf("the far end at %s, or the tunnel to it, closed the connection in the TLS handshake (the far end is down or restarting behind a tunnel that accepts for it, or it is not a far end with --tls-cert): %w", cfg.Addr, err))
			}
			err = fmt.Errorf("TLS handshake with the far end at %s failed (is it a far end with --tls-cert, whose certificate is the one given to --far-cert?): %w", cfg.Addr, err)
			return fail(OutcomeTLS, err)
		}
		conn = tc
	}
	msg := AppendHello(make([]byte, 0, 128+len(cfg.Token)), Hello{Version: ProtocolVersion, Software: cfg.Software, Flags: flags, Token: cfg.Token, Resume: resume})
	if flags&(FlagProbe|FlagPage|FlagReconnect) == 0 {
		msg = append(msg, jdwp.Handshake...)
	}
	sent := time.Now()
	if _, err := conn.Write(msg); err != nil {
		return fail(OutcomeUnreachable, fmt.Errorf("far end %s: %w", cfg.Addr, err))
	}
	lc := &liveConn{Conn: conn}
	br := bufio.NewReaderSize(lc, 64<<10)
	rep, err := ReadReply(br)
	if err == nil {
		cfg.Link.measured(time.Since(sent))
	}
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
			// A far end down behind a tunnel (which accepts, then
			// closes) and a TLS far end (which closes a plain
			// connection without a word) look the same from here.
			o = OutcomeUnreachable
			err = fmt.Errorf("the far end at %s, or the tunnel to it, closed the connection without answering: the far end is down or restarting behind a tunnel that accepts for it, or it has TLS (then give this end --far-cert): %w", cfg.Addr, err)
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
	case rep.Status == StatusGone:
		err := fmt.Errorf("%w: the far end at %s: %s", ErrSessionGone, cfg.Addr, rep.Message)
		return fail(OutcomeResumeRefused, err)
	case rep.Status != StatusAccepted && flags&FlagReconnect != 0:
		err := fmt.Errorf("%w: the far end at %s refused to take the session up again: %s", ErrRefused, cfg.Addr, rep.Message)
		return fail(OutcomeResumeRefused, err)
	case rep.Status != StatusAccepted:
		err := fmt.Errorf("%w: the far end at %s answered %v: %s", ErrRefused, cfg.Addr, rep.Status, rep.Message)
		return fail(OutcomeBadPreamble, err)
	}
	var z *zconn
	if flags&FlagCompress != 0 && rep.Flags&ReplyCompress != 0 {
		z = newZconn(lc, br, 0, cfg.Metrics.compressedAt(EndNear))
	}
	switch {
	case flags&FlagPage != 0:
		cfg.Metrics.count(EndNear, OutcomePage)
	case flags&FlagProbe != 0:
		cfg.Metrics.count(EndNear, OutcomeProbe)
	case flags&FlagReconnect != 0:
		cfg.Metrics.count(EndNear, OutcomeResumed)
	case flags&FlagResume != 0 && rep.Flags&ReplyResume != 0:
		cfg.Metrics.count(EndNear, OutcomeAccepted) // the handshake is in the stream
	default:
		// The far end answers the handshake once it reached the VM; a far
		// end that cannot reach it closes the connection, which the relay
		// retries (and reports) as it does for a VM it cannot reach.
		var hs io.Reader = br
		if z != nil {
			hs = z
		}
		if err := jdwp.ReadHandshake(hs); err != nil {
			raw.Close()
			return nil, nil, nil, rep, fmt.Errorf("VM handshake through the far end at %s: %w", cfg.Addr, err)
		}
		cfg.Metrics.count(EndNear, OutcomeAccepted)
	}
	raw.SetDeadline(time.Time{})
	return lc, br, z, rep, nil
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
