package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/jdwpaccel/jdwpaccel/audit"
	"github.com/jdwpaccel/jdwpaccel/bench"
	"github.com/jdwpaccel/jdwpaccel/discover"
	"github.com/jdwpaccel/jdwpaccel/push"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/speculator"
	"github.com/jdwpaccel/jdwpaccel/split"
	"github.com/jdwpaccel/jdwpaccel/staleid"
	"github.com/jdwpaccel/jdwpaccel/tunnel"
	"github.com/jdwpaccel/jdwpaccel/web"
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

func nearChain(sp *speculator.Speculator, pc push.Config, rest func(*relay.Session) relay.Hooks) func(*relay.Session) relay.Hooks {
	return relay.ChainHooks(split.NearHeartbeat(0), guarded(push.NearHooks(sp, pc)), rest)
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
		NewHooks: nearChain(near, pc, nil), Stats: stats,
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
	nc := split.NearConfig{Addr: far, Token: token, Software: software(), ResumeWithin: l.resumeWithin, Compress: l.compress,
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

// tunnelWait bounds how long a debugger that attaches waits for the
// tunnel (--far-tunnel) while it is down.
const tunnelWait = 20 * time.Second

// newTunnel is the near end's tunnel to the far end (--far-tunnel), whose
// checks are probes of the far end through it (a far end that answers
// to refuse counts as reached), and a dialer of the far end that waits
// for the tunnel first.
func newTunnel(line string, nc split.NearConfig, log zerolog.Logger, reg prometheus.Registerer) (*tunnel.Tunnel, relay.Dialer, error) {
	argv, err := tunnel.Split(line)
	if err != nil {
		return nil, nil, fmt.Errorf("--far-tunnel: %v", err)
	}
	if _, err := exec.LookPath(argv[0]); err != nil {
		return nil, nil, fmt.Errorf("--far-tunnel: %v", err)
	}
	check := func(ctx context.Context) error {
		_, err := split.Probe(ctx, nc)
		var skew *split.SkewError
		if errors.Is(err, split.ErrUnauthorized) || errors.As(err, &skew) {
			return nil
		}
		return err
	}
	tun := tunnel.New(tunnel.Config{Argv: argv, Addr: nc.Addr, Check: check,
		Logger: log.With().Str(relay.LogComponent, "tunnel").Logger(), Metrics: tunnel.NewMetrics(reg)})
	dial := split.Dialer(nc)
	return tun, func(ctx context.Context) (relay.VMConn, error) {
		wctx, cancel := context.WithTimeout(ctx, tunnelWait)
		err := tun.Wait(wctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			return relay.VMConn{}, fmt.Errorf("the tunnel to the far end (--far-tunnel) is not up after %v; its log lines say why", tunnelWait)
		}
		return dial(ctx)
	}, nil
}

// runTunnel runs st's tunnel, if any, until ctx is done, and waits up to
// its ready timeout for it to come up, so that the start probe goes
// through it. The returned function stops it and waits.
func runTunnel(ctx context.Context, st *stack, log zerolog.Logger) (stop func()) {
	if st.tunnel == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); st.tunnel.Run(ctx) }()
	wctx, wcancel := context.WithTimeout(ctx, tunnel.DefaultReadyTimeout)
	defer wcancel()
	if err := st.tunnel.Wait(wctx); err != nil && ctx.Err() == nil {
		log.Warn().Msg("the tunnel to the far end is not up yet; it is restarted until it is, and debuggers that attach wait for it")
	}
	return func() { cancel(); <-done }
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
		log.Info().Str(split.LogFar, nc.Addr).Str(split.LogPeerSoftware, rep.Software).Msg("far end reached")
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

func (p *proxyFlags) registerFar(fs *flag.FlagSet) {
	fs.StringVar(&p.vm, "vm", "", "the VM's JDWP address, `HOST:PORT` (next to this end: same host, pod or device host)")
	fs.StringVar(&p.listen, "listen", defaultFarListen, "where the near end (jdwpaccel proxy --far) connects, `ADDR`; loopback unless --allow-remote, which also needs TLS and a token or pinned certificate")
	p.link.registerFar(fs)
	p.registerRelay(fs, defaultFarHTTP, "serve the far end's live monitor page (DDM threads and heap, its speculator), JSON API and /metrics at http://`ADDR`/ (loopback unless --allow-remote; empty: off)")
}

// checkFar validates the far end's flags that need no I/O.
func (p *proxyFlags) checkFar(log zerolog.Logger) error {
	if p.vm == "" {
		return errors.New("--vm HOST:PORT is required")
	}
	if isDiscoverySpec(p.vm) {
		return fmt.Errorf("bad --vm %q: the far end serves one VM at HOST:PORT", p.vm)
	}
	if err := checkAddr("--vm", p.vm, false); err != nil {
		return err
	}
	if err := checkAddr("--listen", p.listen, true); err != nil {
		return err
	}
	if err := p.link.checkFar(p.listen, p.allowRemote, log); err != nil {
		return err
	}
	for _, a := range []struct{ name, addr string }{{"--metrics-addr", p.metricsAddr}, {"--http-addr", p.httpAddr}} {
		if a.addr == "" {
			continue
		}
		if err := checkAddr(a.name, a.addr, true); err != nil {
			return err
		}
		if err := checkListen(a.name, a.addr, p.allowRemote, log); err != nil {
			return err
		}
	}
	return nil
}

const farExamples = `
Examples:
  # next to the VM (its JDWP agent at 127.0.0.1:5005); listens on 127.0.0.1:8720
  jdwpaccel far --vm 127.0.0.1:5005
  # next to the IDE, through an ssh tunnel to the VM's host:
  ssh -N -L 8720:127.0.0.1:8720 vmhost &
  jdwpaccel proxy --far 127.0.0.1:8720      # attach the IDE to 127.0.0.1:8700

  # in a Kubernetes pod (the far end in the pod, or a sidecar):
  kubectl port-forward pod/app 8720:8720 &
  jdwpaccel proxy --far 127.0.0.1:8720

  # shared by several people: a token each (lines name:token, mode 0600), named in
  # the log, the journal and the audit log of attaches and state-changing commands
  jdwpaccel far --vm 127.0.0.1:5005 --users-file users --audit audit.jsonl

  # straight over the network: TLS 1.3 and a token (both ends get the same files)
  head -c 32 /dev/urandom | base64 > token && chmod 600 token
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 365 \
    -subj /CN=jdwpaccel-far -keyout far.key -out far.crt
  jdwpaccel far --vm 127.0.0.1:5005 --listen 0.0.0.0:8720 --allow-remote \
    --tls-cert far.crt --tls-key far.key --token-file token
  jdwpaccel proxy --far vmhost:8720 --far-cert far.crt --token-file token
`

func cmdFar(ctx context.Context, e *env, args []string) int {
	var pf proxyFlags
	fs := flag.NewFlagSet("far", flag.ContinueOnError)
	pf.registerFar(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: jdwpaccel far --vm HOST:PORT [flags]\n\nRun split mode's far end next to the VM: near ends (jdwpaccel proxy --far) connect to --listen,\nand each of their debugger sessions gets its own connection to the VM at --vm, relayed with\nthe speculator at zero distance and the DDM monitor.\n\nFlags:\n")
		printFlags(fs, "vm", "listen", "token-file", "users-file", "audit", "tls-cert", "tls-key", "http-addr")
		fmt.Fprint(fs.Output(), farExamples)
	}
	log, code, ok := parseStackFlags(fs, args, e, &pf, pf.checkFar)
	if !ok {
		return code
	}
	token, cert, pin, err := pf.link.readSecrets()
	if err != nil {
		fmt.Fprintf(e.stderr, "jdwpaccel far: %v\n", err)
		return exitUsage
	}
	var tc *tls.Config
	if cert != nil {
		tc = split.ServerTLS(*cert, pin)
	}
	fc := split.FarConfig{TLS: tc, Token: token}
	if pf.link.usersFile != "" {
		fc.Users = new(split.Users)
		if err := split.ReadUsersFile(pf.link.usersFile, fc.Users); err != nil {
			fmt.Fprintf(e.stderr, "jdwpaccel far: %v\n", err)
			return exitUsage
		}
		if fc.Users.HasCerts() {
			switch {
			case tc == nil:
				fmt.Fprintf(e.stderr, "jdwpaccel far: --users-file pins client certificates (sha256:…), which travel over TLS only: give --tls-cert and --tls-key\n")
				return exitUsage
			case pin != nil:
				fmt.Fprintf(e.stderr, "jdwpaccel far: --peer-cert lets in one certificate only, which would shut out the certificates of --users-file: pin that one in --users-file too, and leave --peer-cert out\n")
				return exitUsage
			}
			fc.Users.RequestCerts(tc)
		}
		if token != nil {
			if _, dup := fc.Users.Lookup(token); dup {
				fmt.Fprintf(e.stderr, "jdwpaccel far: the token of --token-file is also a user's in --users-file\n")
				return exitUsage
			}
		}
	}
	var al *audit.Log
	if pf.link.auditFile != "" {
		if al, err = audit.Open(pf.link.auditFile, log.With().Str(relay.LogComponent, "audit").Logger()); err != nil {
			fmt.Fprintf(e.stderr, "jdwpaccel far: %v\n", err)
			return exitUsage
		}
		defer al.Close()
		fc.Audit = al
	}
	return withStack(ctx, e, fs.Name(), &pf, log, func(ctx context.Context, st *stack) int {
		st.role, st.farState = "far end", new(farState)
		return runFar(ctx, &pf, st, fc, al, log)
	})
}

// runFar serves the far end with the link security in fc.
// al, when not nil, is the audit log, whose hooks join each session's.
func runFar(ctx context.Context, pf *proxyFlags, st *stack, fc split.FarConfig, al *audit.Log, log zerolog.Logger) int {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", pf.listen)
	if err != nil {
		log.Error().Err(err).Str(relay.LogListen, pf.listen).Msg("cannot listen")
		return exitError
	}
	url, err := st.serve(ctx, pf, log, nil)
	if err != nil {
		ln.Close()
		log.Error().Err(err).Msg("cannot serve HTTP")
		return exitError
	}
	if url != "" {
		log.Info().Str("url", url).Msg("live monitor")
	}
	fc.Relay = st.cfg
	fc.Hooks = farChain(st.spec, st.pushConfig(), st.observers)
	if al != nil {
		fc.Hooks = relay.ChainHooks(fc.Hooks, al.Hooks)
	}
	fc.Attach = st.spec != nil // push.FarHooks sends the attach bundle
	fc.Software = software()
	fc.Logger = log.With().Str(relay.LogComponent, "split").Logger()
	fc.Metrics = split.NewMetrics(st.reg)
	fc.PreambleTimeout = 10 * time.Second
	fc.ResumeWithin = pf.link.resumeWithin
	fc.Compress = pf.link.compress
	// The page travels over the link to near ends (behind the link's own
	// checks), which show it under /far/.
	page := web.NewHandler(st.monitorSource(), st.reg, log, web.WithRole(st.role))
	context.AfterFunc(ctx, page.Close)
	fc.Page = web.Guard(page, "127.0.0.1:0")
	warnNoLocalVM(pf.vm, discover.LocalListener, log)
	log.Info().Str(relay.LogListen, ln.Addr().String()).Str(relay.LogVM, pf.vm).Bool("tls", fc.TLS != nil).
		Bool("token", len(fc.Token) > 0).Int("users", fc.Users.Len()).Bool("audit", al != nil).Bool("speculate", pf.speculate).
		Msg("far end listening; point the near end here (jdwpaccel proxy --far)")
	if err := split.NewFar(fc).Serve(ctx, ln); err != nil {
		log.Error().Err(err).Msg("far end stopped")
		return exitError
	}
	log.Info().Msg("far end shut down")
	return exitOK
}
