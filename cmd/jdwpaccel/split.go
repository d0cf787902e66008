package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench"
	"github.com/jdwpaccel/jdwpaccel/internal/logkey"
	"github.com/jdwpaccel/jdwpaccel/push"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/speculator"
	"github.com/jdwpaccel/jdwpaccel/split"
	"github.com/jdwpaccel/jdwpaccel/staleid"
	"github.com/jdwpaccel/jdwpaccel/tunnel"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// ---- Split mode's hook chains: where pushed replies plug in ----------------

// farChain and nearChain are the hook chains of split mode's two ends, for
// "jdwpaccel far", "jdwpaccel proxy --far" and the split mode of bench and
// demo alike: the one place where pushed replies (package push) join them.
//
//	far:  push.FarHooks(sp, pc) (sp's session, speculating at zero RTT and
//	      pushing what it gathers after each stop), then rest
//	near: split.NearHeartbeat (the link's heartbeat, in a session that
//	      agreed on it), the stale-ID guard (package staleid: the near end
//	      is where the debugger is), push.NearHooks(sp, pc) (sp's session,
//	      serving pushed replies and sending nothing of its own), then rest
//
// sp is that end's speculator (nil with --speculate=false: the end is rest
// alone); rest is the end's chain without a speculator (journal, page). The
// push hooks install sp's session themselves, so rest must not.
func farChain(sp *speculator.Speculator, pc push.Config, rest func(*relay.Session) relay.Hooks) func(*relay.Session) relay.Hooks {
	return relay.ChainHooks(push.FarHooks(sp, pc), rest)
}

func nearChain(sp *speculator.Speculator, pc push.Config, link *split.Link, rest func(*relay.Session) relay.Hooks) func(*relay.Session) relay.Hooks {
	return relay.ChainHooks(split.NearHeartbeat(0, link), guarded(push.NearHooks(sp, pc)), rest)
}

// guarded puts the stale-ID guard (package staleid) in front of a
// speculating chain, which makes the VM hand out IDs the debugger was
// never sent; nil stays nil (no speculator, no guard).
func guarded(spec func(*relay.Session) relay.Hooks) func(*relay.Session) relay.Hooks {
	if spec == nil {
		return nil
	}
	return relay.ChainHooks(staleid.Hooks, spec)
}

// splitMode is split mode for bench and demo: the far end (speculating at
// zero RTT, pushing) next to the VM, the near end (spec) behind the link;
// the cell's cache figures are the near end's (what the debugger saw),
// its speculation figures both ends' (what the VM was asked on the
// proxies' own behalf), and the bytes the far end pushed.
func splitMode(name string, spec speculator.Config, log zerolog.Logger) bench.Mode {
	far := speculator.New(speculator.Config{CacheBytes: spec.CacheBytes}, log, nil)
	near := speculator.New(spec, log, nil)
	pc := push.Config{Counters: new(push.Counters)}
	stats := func() speculator.Stats {
		st, f := near.Stats(), far.Stats()
		st.SpecSent += f.SpecSent
		st.SpecUsed += f.SpecUsed
		st.SpecWasted += f.SpecWasted
		st.SpecWithheld += f.SpecWithheld
		return st
	}
	return bench.Mode{Name: name, Split: true, Push: true, FarHooks: farChain(far, pc, nil),
		NewHooks: nearChain(near, pc, nil, nil), Stats: stats,
		PushedBytes: func() int64 { return pc.Counters.Stats().BytesSent }}
}

// ---- The link's flags --------------------------------------------------------

// defaultFarListen is where "jdwpaccel far" listens by default.
const defaultFarListen = "127.0.0.1:8720"

// defaultFarHTTP is where the far end serves its page by default: not the
// proxy's, so both ends can run on one machine.
const defaultFarHTTP = "127.0.0.1:8791"

// splitFlags secure split mode's link. On the far end peerCert pins the
// near end's client certificate; on the near end (--far-cert) it pins the
// far end's certificate, and turns TLS on.
type splitFlags struct {
	tokenFile       string
	tlsCert, tlsKey string
	peerCert        string
	resumeWithin    time.Duration // a session outlives its lost link this long; 0: not at all
	compress        bool          // offer (near end) or agree to (far end) zstd on the link
	compressMinRTT  time.Duration // near end: no zstd on a link whose round trip is under this
	usersFile       string        // far end: named users' tokens
	auditFile       string        // far end: the audit log
	tunnel          string        // near end: the tunnel command (--far-tunnel)
}

func (l *splitFlags) registerResume(fs *flag.FlagSet, with string) {
	fs.DurationVar(&l.resumeWithin, "resume-within", split.DefaultResumeWithin, with+"a debugger session outlives a lost link for this `DURATION`: the far end keeps the VM connection, the near end the debugger's and dials again, and the session goes on where it stopped (0: a session ends with its link)")
	fs.BoolVar(&l.compress, "compress", true, with+"compress the link with zstd in both directions when the other end agrees (--compress=false: send it as it is)")
}

func (l *splitFlags) registerNear(fs *flag.FlagSet) {
	fs.StringVar(&l.peerCert, "far-cert", "", "with --far: the far end's TLS certificate (PEM `FILE`, its --tls-cert), pinned: the link uses TLS 1.3 and accepts exactly this certificate")
	fs.StringVar(&l.tokenFile, "token-file", "", "with --far: present the shared token in `FILE` (mode 0600) to the far end")
	fs.StringVar(&l.tlsCert, "tls-cert", "", "with --far-cert: this end's TLS client certificate (PEM `FILE`), for a far end that pins it with --peer-cert")
	fs.StringVar(&l.tlsKey, "tls-key", "", "with --tls-cert: its private key (PEM `FILE`, mode 0600)")
	l.registerResume(fs, "with --far: ")
	fs.DurationVar(&l.compressMinRTT, "compress-min-rtt", split.DefaultCompressMinRTT, "with --far and --compress: leave uncompressed the sessions of a link whose round trip (the smallest of the last four measured: at the start probe, at each connection to the far end and by the heartbeat) is under this `DURATION` (a local or LAN link carries a packet sooner than both ends compress it); 0: compress whatever the round trip")
	fs.StringVar(&l.tunnel, "far-tunnel", "", "with --far: run this `COMMAND` (kubectl port-forward, ssh -N -L) to open --far, and restart it when it exits or the far end stops answering through it; split into words like a shell would, but run without a shell (for one: sh -c '...')")
}

func (l *splitFlags) registerFar(fs *flag.FlagSet) {
	fs.StringVar(&l.tlsCert, "tls-cert", "", "serve TLS 1.3 with this certificate (PEM `FILE`; the near end pins the same file with --far-cert)")
	fs.StringVar(&l.tlsKey, "tls-key", "", "the private key of --tls-cert (PEM `FILE`, mode 0600)")
	fs.StringVar(&l.tokenFile, "token-file", "", "near ends must present the shared token in `FILE` (mode 0600, at least 16 bytes); the near end gets the same file")
	fs.StringVar(&l.peerCert, "peer-cert", "", "near ends must present exactly this TLS client certificate (PEM `FILE`, the near end's --tls-cert)")
	l.registerResume(fs, "")
	fs.StringVar(&l.usersFile, "users-file", "", "near ends must present the token or TLS client certificate of one of the users in `FILE` (mode 0600; lines name:token, each token at least 16 bytes, or name:sha256:FINGERPRINT of the certificate, with TLS); each user's near end gets a token file with its own token, or its certificate. With --token-file, that token is an unnamed user's")
	fs.StringVar(&l.auditFile, "audit", "", "append who attached when, from where, and their state-changing commands to `FILE` (JSON Lines, created 0600)")
}

// checkUnused refuses link flags without --far.
func (l *splitFlags) checkUnused(with string) error {
	if l.tokenFile != "" || l.tlsCert != "" || l.tlsKey != "" || l.peerCert != "" {
		return fmt.Errorf("--far-cert, --token-file, --tls-cert and --tls-key secure the link to a far end: they go with --far, not %s", with)
	}
	if l.tunnel != "" {
		return fmt.Errorf("--far-tunnel opens the link to a far end: it goes with --far, not %s", with)
	}
	return nil
}

func (l *splitFlags) checkPair() error {
	if (l.tlsCert == "") != (l.tlsKey == "") {
		return errors.New("--tls-cert and --tls-key go together")
	}
	if l.resumeWithin < 0 {
		return fmt.Errorf("--resume-within %v: give 0 (a session ends with its link) or a positive duration", l.resumeWithin)
	}
	return nil
}

// checkNear validates the near end's link flags; a plain link over the
// network is allowed (the far end may sit behind a tunnel's far side) but
// warned about.
func (l *splitFlags) checkNear(far string, log zerolog.Logger) error {
	if err := checkAddr("--far", far, false); err != nil {
		return err
	}
	if err := l.checkPair(); err != nil {
		return err
	}
	if l.compressMinRTT < 0 {
		return fmt.Errorf("--compress-min-rtt %v: give 0 (compress whatever the round trip) or a positive duration", l.compressMinRTT)
	}
	if l.tlsCert != "" && l.peerCert == "" {
		return errors.New("--tls-cert needs --far-cert: a client certificate is sent over TLS only, and TLS needs the far end's certificate to pin")
	}
	if l.tunnel != "" {
		if _, err := tunnel.Split(l.tunnel); err != nil {
			return fmt.Errorf("--far-tunnel: %v", err)
		}
	}
	if !isLoopback(far) && l.peerCert == "" {
		log.Warn().Str(split.LogFar, far).Msg("the link to the far end is plain TCP over the network: anyone on the path can read it and take over the VM; use TLS (--far-cert) or a tunnel (ssh -L, kubectl port-forward)")
	}
	return nil
}

// checkFar validates the far end's link flags against its listen address:
// beyond loopback it needs --allow-remote, TLS, and a token or a pinned
// client certificate.
func (l *splitFlags) checkFar(listen string, allowRemote bool, log zerolog.Logger) error {
	if err := l.checkPair(); err != nil {
		return err
	}
	if l.peerCert != "" && l.tlsCert == "" {
		return errors.New("--peer-cert needs TLS: --tls-cert and --tls-key")
	}
	if isLoopback(listen) {
		return nil
	}
	switch {
	case !allowRemote:
		return fmt.Errorf("--listen %q is not a loopback address: the far end gives whoever reaches it full control of the VM; keep it on loopback and reach it through a tunnel (ssh -L, kubectl port-forward), or pass --allow-remote with TLS (--tls-cert, --tls-key) and --token-file or --peer-cert", listen)
	case l.tlsCert == "":
		return fmt.Errorf("--listen %q is not a loopback address: it needs TLS (--tls-cert, --tls-key)", listen)
	case l.tokenFile == "" && l.usersFile == "" && l.peerCert == "":
		return fmt.Errorf("--listen %q is not a loopback address: it needs --token-file, --users-file or --peer-cert, so that only your near end gets in", listen)
	}
	log.Warn().Str("addr", listen).Msg("the far end listens on a non-loopback address: a near end with the token or certificate gets full control of the VM")
	return nil
}

// readSecrets reads the token and, with TLS, this end's key pair and the
// pinned certificate of the other end.
func (l *splitFlags) readSecrets() (token []byte, cert *tls.Certificate, pin []byte, err error) {
	if l.tokenFile != "" {
		if token, err = split.ReadTokenFile(l.tokenFile); err != nil {
			return nil, nil, nil, err
		}
	}
	if l.tlsCert != "" {
		if err := ownerOnly(l.tlsKey); err != nil {
			return nil, nil, nil, err
		}
		c, err := tls.LoadX509KeyPair(l.tlsCert, l.tlsKey)
		if err != nil {
			return nil, nil, nil, err
		}
		cert = &c
	}
	if l.peerCert != "" {
		if pin, err = split.ReadCertificate(l.peerCert); err != nil {
			return nil, nil, nil, err
		}
	}
	return token, cert, pin, nil
}

// ownerOnly refuses a secret file that others can read.
func ownerOnly(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("%s has mode %04o: others can read this private key; chmod 600 %s", path, perm, path)
	}
	return nil
}

// nearConfig is how the near end reaches the far end at far.
func (l *splitFlags) nearConfig(far string, log zerolog.Logger, reg prometheus.Registerer) (split.NearConfig, error) {
	token, cert, pin, err := l.readSecrets()
	if err != nil {
		return split.NearConfig{}, err
	}
	nc := split.NearConfig{Addr: far, Token: token, Software: software(), ResumeWithin: l.resumeWithin,
		Compress: l.compress, CompressMinRTT: l.compressMinRTT, Link: new(split.Link),
		Logger: log.With().Str(relay.LogComponent, "split").Logger(), Metrics: split.NewMetrics(reg)}
	if pin != nil {
		nc.TLS = split.ClientTLS(pin, cert)
	}
	return nc, nil
}

// software names this build in the split preamble.
func software() string {
	v, rev := version()
	if rev == "unknown" {
		return v
	}
	return fmt.Sprintf("%s (%.12s)", v, rev)
}

// farPage serves the far end's page, fetched over the link, under the
// near end's /far/ (the page's own links are relative, so they stay
// under it). The near end's Guard has checked the request's host and
// origin; the far end's sees a request for localhost with no origin.
func farPage(nc split.NearConfig) http.Handler {
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(&url.URL{Scheme: "http", Host: "far-end"})
			r.Out.Host = "localhost"
			r.Out.Header.Del("Origin")
		},
		Transport: split.PageTransport(nc),
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, "the far end's page cannot be reached: "+err.Error(), http.StatusBadGateway)
		},
	}
	return http.StripPrefix("/far", rp)
}

// probeFar checks the link once at start, so that a wrong address, token
// or version shows before any debugger attaches. It returns false, after
// one error line, when waiting cannot help: the far end refused this end
// (its token), speaks another protocol version, or is no far end at all;
// a far end that cannot be reached yet only gets a warning.
func probeFar(ctx context.Context, nc split.NearConfig, log zerolog.Logger) bool {
	pctx, cancel := context.WithTimeout(ctx, split.DefaultPreambleTimeout)
	defer cancel()
	rep, err := split.Probe(pctx, nc)
	var skew *split.SkewError
	switch {
	case ctx.Err() != nil:
	case errors.Is(err, split.ErrUnauthorized), errors.As(err, &skew), errors.Is(err, split.ErrNotSplit):
		log.Error().Err(err).Str(split.LogFar, nc.Addr).Msg("the far end cannot be used; stopping")
		return false
	case err != nil:
		log.Warn().Err(err).Str(split.LogFar, nc.Addr).Msg("cannot reach the far end yet; each debugger that attaches tries again")
	default:
		e := log.Info().Str(split.LogFar, nc.Addr).Str(split.LogPeerSoftware, rep.Software)
		if nc.Link != nil {
			e = e.Dur(logkey.RTT, nc.Link.RTT())
		}
		e.Msg("far end reached")
	}
	return true
}

// ---- jdwpaccel far -----------------------------------------------------------

// farState tells from the far end's figures whether it pushes: each time
// the page asks, a far end that held a stop for a bundle or sent
// speculation of its own since is pushing; one that only relayed the near
// end's misses is quiet (push/PROTOCOL.md: on a link faster than
// speculator.LowRTT it neither speculates nor holds events, and the near
// end speculates itself). Without traffic it says what it said last.
type farState struct {
	mu         sync.Mutex // guards the fields below
	spec       speculator.Stats
	push       push.Stats
	state, why string
}

func (f *farState) observe(spec speculator.Stats, ps push.Stats) (state, why string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case ps.Stops > f.push.Stops || spec.SpecSent > f.spec.SpecSent:
		f.state, f.why = "pushing", "the far end speculates next to the VM and pushes the replies to the near end"
	case spec.Misses > f.spec.Misses:
		f.state, f.why = "quiet", "the link to the near end is faster than 2 ms: pushing would not pay, so the far end neither speculates nor holds events, and the near end speculates itself"
	}
	f.spec, f.push = spec, ps
	return f.state, f.why
}
