// Package split owns split mode's transport: the link between a near end
// (jdwpaccel proxy --far, next to the IDE) and a far end (jdwpaccel far,
// next to the VM). Per debugger session the near end opens one stream to
// the far end: a short preamble (Hello, Reply: protocol version, token,
// status), then the JDWP handshake and JDWP packets exactly as between a
// debugger and a VM, so the far end is an ordinary relay (relay.Server)
// whose debugger is the near end, and the near end is an ordinary relay
// whose VM is reached through Dialer. The wire format is in PROTOCOL.md.
//
// The package owns the preamble codec, the far end's listener (TLS,
// token or pinned client certificate, version check: a connection that
// fails any of them is closed before a JDWP byte reaches the VM), the near
// end's dialer, the link's liveness (TCP_USER_TIMEOUT, the heartbeat and
// its read deadlines: heartbeat.go), the link's compression when both ends
// agree (compress.go: zstd per connection and direction, below the
// frames), the resumable stream that carries a session across links when
// both ends agree (resume.go, frame.go: the relay sessions above it see
// one connection), and their metrics. What runs on each end (speculator,
// pushed replies, journal) is the caller's: FarConfig.Hooks and the near
// relay's own hooks.
//
//	far := split.NewFar(split.FarConfig{Relay: relay.Config{DialVM: relay.DialTCP("127.0.0.1:5005")}})
//	go far.Serve(ctx, farListener)
//	near := relay.NewServer(relay.Config{DialVM: split.Dialer(split.NearConfig{Addr: "127.0.0.1:8720"})})
package split

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/accept"
	"github.com/jdwpaccel/jdwpaccel/internal/lograte"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/rs/zerolog"
)

// Log field names of this package.
const (
	LogNear         = "near"          // the near end's address, on the far end
	LogFar          = "far"           // the far end's address, on the near end
	LogPeerVersion  = "peer_protocol" // the other end's protocol version
	LogPeerSoftware = "peer_software" // the other end's jdwpaccel version
	LogNearHost     = "near_host"     // a refused near end's host, on the far end (refusals are logged per host)
)

// DefaultPreambleTimeout bounds the TLS handshake and the preamble of
// each link connection when the config says nothing.
const DefaultPreambleTimeout = 10 * time.Second

// lingerTimeout is how long a refused connection's bytes are read and
// dropped after the reply, so that closing it does not reset the
// connection before the peer read the reply.
const lingerTimeout = time.Second

// keepAlive probes an idle link, so that a link that died without a word
// (a cable, a NAT, a suspended laptop) ends its session in about 30 s;
// TCP_USER_TIMEOUT and the heartbeat bound it when data is in flight, or
// when TCP is fooled (heartbeat.go).
var keepAlive = net.KeepAliveConfig{Enable: true, Idle: 15 * time.Second, Interval: 5 * time.Second, Count: 3}

// FarConfig configures a far end.
type FarConfig struct {
	// Relay configures the relay of each session towards the VM: DialVM
	// (the VM next to the far end, directly or through the DDM holder),
	// bounds, logger, relay metrics.
	Relay relay.Config
	// Hooks, when not nil, replaces Relay.NewHooks: the far end's chain
	// (its speculator at zero RTT, then pushed replies).
	Hooks func(*relay.Session) relay.Hooks
	// TLS, when not nil, is the server TLS configuration (see ServerTLS);
	// nil is plain TCP, for a loopback listener reached through a tunnel.
	TLS *tls.Config
	// Token, when not empty, must be presented by every near end (or one
	// of Users' tokens).
	Token []byte
	// Users, when not empty, are the named users whose tokens, or pinned
	// client certificates (with TLS; see Users.RequestCerts), near ends
	// may present (with Token, as an unnamed user); each session's user
	// is in its log lines (LogUser) and its Agreed.
	Users *Users
	// Audit, when not nil, records refused connections (Auditor).
	Audit Auditor
	// Software is this end's jdwpaccel version, sent in the reply.
	Software string
	// Attach says this far end's hooks push the attach bundle (push.FarHooks
	// with a speculator): a near end that asks for it (FlagAttach) is told
	// so (ReplyAttach), and the session's hooks find it in
	// relay.Session.DebuggerInfo (an Agreed).
	Attach bool
	// Page, when not nil, serves the far end's live page to near ends
	// over the link (streams with FlagPage); nil refuses them.
	Page http.Handler
	// PreambleTimeout bounds the TLS handshake and the preamble
	// (DefaultPreambleTimeout when zero).
	PreambleTimeout time.Duration
	// LinkTimeout bounds how long a link may leave data unacknowledged
	// (TCP_USER_TIMEOUT) or, in a session with a heartbeat, bring nothing
	// from the near end, before the session ends (DefaultLinkTimeout when
	// zero). The near end's must not be longer (its heartbeat goes every
	// third of its own).
	LinkTimeout time.Duration
	// ResumeWithin, when positive, agrees to resumable streams (near ends
	// that offer FlagResume): such a session keeps its VM connection for
	// this long after its link is lost, for the near end to take it up
	// again (resume.go). Zero agrees to none.
	ResumeWithin time.Duration
	// ResumeBuffer bounds what a resumable session keeps unacknowledged
	// (DefaultResumeBuffer when zero).
	ResumeBuffer int
	// Compress agrees to compress the link connections of near ends that
	// offer it (FlagCompress, compress.go).
	Compress bool
	Logger   zerolog.Logger
	Metrics  *Metrics
}

// Far is a far end: it accepts near ends, checks each one's preamble and
// relays it to its own VM connection.
type Far struct {
	cfg  FarConfig
	srv  *relay.Server
	page *pageServer    // nil without FarConfig.Page
	wg   sync.WaitGroup // counts the connections Serve is serving
	// preambles holds a token per connection Serve accepted whose TLS
	// handshake and preamble are not done; its capacity is
	// Relay.MaxHandshakes.
	preambles chan struct{}
	// refusals thins the log lines of refused connections, per remote
	// host: strangers must not fill the log.
	refusals *lograte.Limiter

	mu       sync.Mutex                // guards sessions; never held while taking a stream's lock
	sessions map[SessionID]heldSession // resumable sessions, until their relay session ends
	// users is FarConfig.Users with FarConfig.Token as the unnamed user;
	// empty when the far end asks for no token. Read-only.
	users *Users
}

// refusalEvery is how often refusals of one remote host are logged at
// most, and refusalHosts how many hosts are told apart (more share one
// line).
const (
	refusalEvery = time.Minute
	refusalHosts = 256
)

// NewFar returns a far end with cfg.
func NewFar(cfg FarConfig) *Far {
	if cfg.PreambleTimeout <= 0 {
		cfg.PreambleTimeout = DefaultPreambleTimeout
	}
	rc := cfg.Relay
	if cfg.Hooks != nil {
		rc.NewHooks = cfg.Hooks
	}
	rc.NewHooks = relay.ChainHooks(farHeartbeat, rc.NewHooks)
	n := rc.MaxHandshakes
	if n <= 0 {
		n = relay.DefaultMaxHandshakes
	}
	if cfg.ResumeBuffer <= 0 {
		cfg.ResumeBuffer = DefaultResumeBuffer
	}
	return &Far{cfg: cfg, srv: relay.NewServer(rc), preambles: make(chan struct{}, n), refusals: lograte.New(refusalEvery, refusalHosts),
		sessions: map[SessionID]heldSession{}, users: farUsers(cfg)}
}

// Close releases the far end's page server; Serve calls it when it
// returns.
func (f *Far) Close() {
	if f.page != nil {
		f.page.close()
	}
}

// Serve accepts near ends on ln until ctx is done or ln fails for good (a
// shortage of descriptors is waited out: accept.Loop), then closes ln and
// every session and waits for them. It returns nil after ctx ends.
func (f *Far) Serve(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if f.cfg.Page != nil && f.page == nil {
		f.page = newPageServer(f.cfg.Page)
	}
	defer f.Close()
	defer f.wg.Wait()
	return accept.Loop(ctx, ln, f.cfg.Logger, func(c net.Conn) {
		select {
		case f.preambles <- struct{}{}:
		default:
			f.cfg.Metrics.count(EndFar, OutcomeOverCap)
			f.refused(c, f.cfg.Logger, OutcomeOverCap, nil,
				"too many link connections in their TLS handshake or preamble (clients that connect and send nothing?); closed a new one at once")
			c.Close()
			return
		}
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetKeepAliveConfig(keepAlive) //nolint:errcheck // best effort
		}
		f.wg.Go(func() {
			f.serve(ctx, c, func() { <-f.preambles }) //nolint:errcheck // logged inside
		})
	})
}

// refused logs a refused connection at warn, at most once per
// refusalEvery for its remote host, with the number of refusals from that
// host not logged since.
func (f *Far) refused(c net.Conn, log zerolog.Logger, o Outcome, err error, msg string) {
	host := c.RemoteAddr().String()
	if h, _, splitErr := net.SplitHostPort(host); splitErr == nil {
		host = h
	}
	ok, held, as := f.refusals.Allow(host)
	if !ok {
		return
	}
	if as == lograte.Other {
		host = "(one of many hosts)"
	}
	log.Warn().Err(err).Str(relay.LogReason, string(o)).Str(LogNearHost, host).Int(relay.LogSuppressed, held).
		Msg(msg + " (suppressed: refusals from this host not logged since its last line)")
	if f.cfg.Audit != nil {
		f.cfg.Audit.Refused(host, string(o), held)
	}
}

// serve serves one link connection: TLS (if configured), the preamble,
// then the session, until it ends, and returns the error that ended it;
// preambleDone is called once the preamble was read and checked, or
// failed.
func (f *Far) serve(ctx context.Context, c net.Conn, preambleDone func()) error {
	var once sync.Once
	done := func() { once.Do(preambleDone) }
	defer done()
	log := f.cfg.Logger.With().Str(LogNear, c.RemoteAddr().String()).Logger()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	if sc, ok := c.(syscall.Conn); ok {
		setUserTimeout(sc, linkTimeout(f.cfg.LinkTimeout)) //nolint:errcheck // best effort: the heartbeat bounds it too
	}
	c.SetDeadline(time.Now().Add(f.cfg.PreambleTimeout))
	conn := c
	if f.cfg.TLS != nil {
		tc := tls.Server(c, f.cfg.TLS)
		if err := tc.HandshakeContext(ctx); err != nil {
			stop()
			f.cfg.Metrics.count(EndFar, OutcomeTLS)
			f.refused(c, log, OutcomeTLS, err,
				"TLS handshake with a near end failed (a near end without --far-cert, or with a certificate other than the pinned one?); closed before any JDWP byte")
			linger(c)
			return err
		}
		conn = tc
	}
	h, err := ReadHello(conn)
	if err != nil {
		stop()
		msg := "a link connection did not start with a valid split preamble; closed before any JDWP byte"
		switch {
		case errors.Is(err, ErrDebuggerHandshake):
			msg = "a JDWP debugger connected to the far end directly; attach it to the near end (jdwpaccel proxy --far) instead; closed"
		case errors.Is(err, ErrTLSRecord):
			msg = "a near end spoke TLS to this far end, which has no --tls-cert; closed"
		}
		f.cfg.Metrics.count(EndFar, OutcomeBadPreamble)
		f.refused(c, log, OutcomeBadPreamble, err, msg)
		linger(conn)
		return err
	}
	// The token first: a near end that does not hold it learns nothing of
	// this end (its Reply echoes the Hello's version, without software),
	// and what it sent (its software string) is not logged.
	userName, known := f.users.authenticate(conn, h.Token)
	if f.users.Len() > 0 && !known {
		what := "a wrong token"
		if len(h.Token) == 0 {
			what = "no token"
		}
		stop()
		f.cfg.Metrics.count(EndFar, OutcomeUnauthorized)
		f.refused(c, log, OutcomeUnauthorized, nil, "a near end presented "+what+"; closed before any JDWP byte")
		conn.Write(AppendReply(nil, Reply{Version: h.Version, Status: StatusUnauthorized, Message: "the far end refused the token (give the near end the far end's --token-file)"})) //nolint:errcheck // closing anyway
		linger(conn)
		return fmt.Errorf("%w: a near end presented %s", ErrUnauthorized, what)
	}
	done()
	if userName != "" {
		log = log.With().Str(LogUser, userName).Logger()
	}
	log = log.With().Uint16(LogPeerVersion, h.Version).Str(LogPeerSoftware, h.Software).Logger()
	refuse := func(st Status, o Outcome, text string) error {
		stop()
		f.cfg.Metrics.count(EndFar, o)
		conn.Write(AppendReply(nil, Reply{Version: ProtocolVersion, Status: st, Software: f.cfg.Software, Message: text})) //nolint:errcheck // closing anyway
		linger(conn)
		return errors.New(text)
	}
	if h.Version != ProtocolVersion {
		text := fmt.Sprintf("version skew: the near end speaks split protocol %d (jdwpaccel %s), this far end speaks %d (jdwpaccel %s); run the same jdwpaccel version on both ends",
			h.Version, h.Software, ProtocolVersion, f.cfg.Software)
		log.Error().Str(relay.LogReason, string(OutcomeVersionSkew)).Msg(text + "; closed")
		return refuse(StatusVersionSkew, OutcomeVersionSkew, text)
	}
	if h.Flags&FlagProbe != 0 {
		stop()
		f.cfg.Metrics.count(EndFar, OutcomeProbe)
		// At start, and every 15 s from a near end that runs its tunnel.
		log.Debug().Msg("a near end checked the link")
		conn.Write(AppendReply(nil, Reply{Version: ProtocolVersion, Status: StatusAccepted, Software: f.cfg.Software})) //nolint:errcheck // its end is the probe's
		linger(conn)
		return nil
	}
	if h.Flags&FlagPage != 0 {
		if f.page == nil {
			log.Info().Msg("a near end asked for the far end's page, which this far end does not serve; closed")
			return refuse(StatusRefused, OutcomeBadPreamble, "this far end serves no page")
		}
		stop()
		if _, err := conn.Write(AppendReply(nil, Reply{Version: ProtocolVersion, Status: StatusAccepted, Software: f.cfg.Software})); err != nil {
			c.Close()
			return err
		}
		c.SetDeadline(time.Time{})
		f.cfg.Metrics.count(EndFar, OutcomePage)
		f.page.serve(conn)
		return nil
	}
	if h.Flags&FlagReconnect != 0 {
		stop()
		return f.reconnect(c, conn, h, userName, log)
	}
	agreed := Agreed{User: userName}
	if h.Flags&FlagResume != 0 && f.cfg.ResumeWithin > 0 {
		agreed.Flags |= ReplyResume
	}
	if h.Flags&FlagAttach != 0 && f.cfg.Attach {
		agreed.Flags |= ReplyAttach
	}
	if h.Flags&FlagHeartbeat != 0 {
		agreed.Flags |= ReplyHeartbeat
	}
	if h.Flags&FlagCompress != 0 && f.cfg.Compress {
		agreed.Flags |= ReplyCompress
	}
	var resume Resume
	if agreed.Resumable() {
		resume = newResume()
	}
	if _, err := conn.Write(AppendReply(nil, Reply{Version: ProtocolVersion, Status: StatusAccepted, Software: f.cfg.Software, Flags: agreed.Flags, Resume: resume})); err != nil {
		stop()
		c.Close()
		return err
	}
	c.SetDeadline(time.Time{})
	stop()
	f.cfg.Metrics.count(EndFar, OutcomeAccepted)
	if agreed.Resumable() {
		log = log.With().Str(LogLinkSession, resume.Session.String()).Logger()
	}
	log.Debug().Bool("attach_bundle", agreed.AttachBundle()).Bool("heartbeat", agreed.Heartbeat()).Bool("resumable", agreed.Resumable()).
		Bool("compressed", agreed.Compressed()).Msg("near end accepted")
	var timeout time.Duration
	if agreed.Heartbeat() {
		timeout = linkTimeout(f.cfg.LinkTimeout) // the near end beats
		conn = &liveConn{Conn: conn, timeout: timeout}
	}
	if !agreed.Resumable() {
		if agreed.Compressed() {
			// The near end sent the JDWP handshake before it knew.
			conn = newZconn(conn, nil, len(jdwp.Handshake), f.cfg.Metrics.compressedAt(EndFar))
		}
		return f.srv.ServeConnInfo(ctx, conn, agreed.Link())
	}
	st := newStream(streamConfig{end: EndFar, within: f.cfg.ResumeWithin, buffer: f.cfg.ResumeBuffer, linkTimeout: timeout, log: log},
		resume.Session, resume.Secret, conn)
	f.mu.Lock()
	f.sessions[resume.Session] = heldSession{st: st, user: userName}
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.sessions, resume.Session)
		f.mu.Unlock()
		st.Close()
	}()
	// The near end sent the JDWP handshake before it knew the stream
	// would be framed: it comes unframed, then frames do.
	first := &leg{conn: conn, br: bufio.NewReaderSize(conn, 64<<10), rawIn: len(jdwp.Handshake)}
	if agreed.Compressed() {
		first.z = newZconn(conn, first.br, first.rawIn, f.cfg.Metrics.compressedAt(EndFar))
	}
	st.start(first)
	return f.srv.ServeConnInfo(ctx, st, agreed.Link())
}

// heldSession is a resumable session the far end holds, and the user who
// opened it: only that user may take it up again.
type heldSession struct {
	st   *stream
	user string
}

// newResume draws a session's ID and secret.
func newResume() Resume {
	var r Resume
	rand.Read(r.Session[:]) //nolint:errcheck // never fails (crypto/rand)
	rand.Read(r.Secret[:])  //nolint:errcheck // never fails
	return r
}

// reconnect serves a connection that takes a resumable session up again:
// the session must be one this far end holds, the secret its own, and the
// near end's Received no older than what it acknowledged; anything else is
// refused (the session goes on waiting for its near end). The token, if
// any, was checked already.
func (f *Far) reconnect(c, conn net.Conn, h Hello, user string, log zerolog.Logger) error {
	refuse := func(st Status, err error, text string) error {
		f.cfg.Metrics.count(EndFar, OutcomeResumeRefused)
		conn.Write(AppendReply(nil, Reply{Version: ProtocolVersion, Status: st, Software: f.cfg.Software, Message: text})) //nolint:errcheck // closing anyway
		linger(conn)
		return fmt.Errorf("%s: %w", text, err)
	}
	log = log.With().Str(LogLinkSession, h.Resume.Session.String()).Logger()
	f.mu.Lock()
	held, ok := f.sessions[h.Resume.Session]
	f.mu.Unlock()
	st := held.st
	if ok && held.user != user {
		// Another user's token: the session is not theirs to take up,
		// whatever else they hold.
		err := fmt.Errorf("user %q asked for a session of user %q", user, held.user)
		f.refused(c, log, OutcomeResumeRefused, err, "a reconnect for a held session was refused (the session goes on waiting for its near end)")
		return refuse(StatusRefused, err, "the far end refused to take the session up again")
	}
	if !ok {
		log.Info().Msg("a near end asked for a session this far end does not hold (it restarted, or the session ended); refused")
		return refuse(StatusGone, ErrSessionGone, "this far end does not hold the session (it restarted since, or the session ended: its link stayed down longer than --resume-within)")
	}
	var timeout time.Duration
	if st.cfg.linkTimeout > 0 {
		timeout = st.cfg.linkTimeout
		conn = &liveConn{Conn: conn, timeout: timeout}
	}
	l := &leg{conn: conn, br: bufio.NewReaderSize(conn, 64<<10)}
	flags := ReplyResume
	if h.Flags&FlagCompress != 0 && f.cfg.Compress {
		flags |= ReplyCompress
		l.z = newZconn(conn, l.br, 0, f.cfg.Metrics.compressedAt(EndFar))
	}
	recv, err := st.takeOver(l, h.Resume)
	switch {
	case errors.Is(err, ErrSessionGone):
		log.Info().Msg("a near end asked for a session that has ended; refused")
		return refuse(StatusGone, err, "the session has ended")
	case err != nil:
		// The token was right: a near end that lost its state, or
		// someone who holds the token and not the session.
		f.refused(c, log, OutcomeResumeRefused, err, "a reconnect for a held session was refused (the session goes on waiting for its near end)")
		return refuse(StatusRefused, err, "the far end refused to take the session up again")
	}
	c.SetDeadline(time.Time{})
	f.cfg.Metrics.count(EndFar, OutcomeResumed)
	_, werr := conn.Write(AppendReply(nil, Reply{Version: ProtocolVersion, Status: StatusAccepted, Software: f.cfg.Software, Flags: flags,
		Resume: Resume{Session: h.Resume.Session, Received: recv}}))
	st.start(l) // a failed write fails the link's reads too: the session waits again
	return werr
}

// linger ends a refused connection: it closes the writing half, reads and
// drops what the peer still sends for up to lingerTimeout (so the close
// does not reset the connection and destroy the reply before the peer
// read it), then closes.
func linger(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite() //nolint:errcheck // closing anyway
	}
	c.SetReadDeadline(time.Now().Add(lingerTimeout))
	io.CopyN(io.Discard, c, 64<<10) //nolint:errcheck // dropped
	c.Close()
}
