package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
	"time"

	"github.com/jdwpaccel/jdwpaccel/audit"
	"github.com/jdwpaccel/jdwpaccel/discover"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/split"
	"github.com/jdwpaccel/jdwpaccel/web"
	"github.com/rs/zerolog"
)

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
	page := web.NewHandler(st.monitorSource(), st.reg, log, web.WithRole(st.role), web.WithFeed(st.feed))
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
