package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/jdwpaccel/jdwpaccel/ddmtap"
	"github.com/jdwpaccel/jdwpaccel/discover"
	"github.com/jdwpaccel/jdwpaccel/feed"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/journal"
	"github.com/jdwpaccel/jdwpaccel/push"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/speculator"
	"github.com/jdwpaccel/jdwpaccel/split"
	"github.com/jdwpaccel/jdwpaccel/tunnel"
	"github.com/jdwpaccel/jdwpaccel/web"
	"github.com/jdwpaccel/jdwpaccel/web/convo"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

type proxyFlags struct {
	vm     string
	far    string     // split mode's near end: the far end's HOST:PORT instead of --vm
	link   splitFlags // split mode's TLS and token, with --far (and on the far end)
	listen string
	// readOnlyListen: a second address whose clients are all observers.
	readOnlyListen string
	allowRemote    bool
	metricsAddr    string
	httpAddr       string
	maxPacket      int
	maxHands       int

	speculate   bool
	writeBehind bool
	cacheBytes  int64
	minRTT      time.Duration
	learnFile   string
	journalList stringList
	journalFmt  string
	journalMax  int64
	journalRaw  int
	journalQ    int

	ddm ddmFlags
	vms vmFlags
	log logFlags

	httpDefault bool // --http-addr was not given: a busy default port only warns
}

func (p *proxyFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&p.vm, "vm", "", vmSpecHelp)
	fs.StringVar(&p.far, "far", "", "split mode: reach the VM through the far end (\"jdwpaccel far\", next to the VM) at `HOST:PORT`, instead of --vm")
	p.link.registerNear(fs)
	fs.StringVar(&p.listen, "listen", "127.0.0.1:8700", "where debuggers connect, `ADDR` (port 0 picks a free port and logs it); several may attach at once: the first controls the VM, the others observe")
	fs.StringVar(&p.readOnlyListen, "read-only-listen", "", "where read-only clients (tracers, agents, monitors) connect, `ADDR`: each is an observer of the VM --listen serves, even when it attaches first (empty: none)")
	p.registerRelay(fs, vmsDefaultHTTPAddr, "serve the live monitor page, JSON API (also used by \"jdwpaccel vms\" and \"select\") and /metrics at http://`ADDR`/ (loopback unless --allow-remote; empty: off)")
	fs.DurationVar(&p.minRTT, "speculate-min-rtt", 0, "send speculative commands only when the measured round trip is at least this `duration`; 0 adapts (speculation pauses on fast links while it goes unused); cached replies are served at any RTT")
	fs.BoolVar(&p.writeBehind, "write-behind", true, "with --speculate, answer EventRequest.Set/Clear and resumes at once when the VM's reply is proven, and send them on pipelined; a VM that answers otherwise ends the session")
	p.vms.register(fs)
}

// registerRelay registers the flags the proxy and the far end share: the
// relay, its speculator, journal, DDM monitor, HTTP servers and logs.
func (p *proxyFlags) registerRelay(fs *flag.FlagSet, httpDefault, httpHelp string) {
	fs.BoolVar(&p.allowRemote, "allow-remote", false, "allow listening on a non-loopback address (anyone who connects controls the VM)")
	fs.StringVar(&p.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://`ADDR`/metrics (loopback unless --allow-remote)")
	fs.StringVar(&p.httpAddr, "http-addr", httpDefault, httpHelp)
	bytesVar(fs, &p.maxPacket, "max-packet-size", jdwp.DefaultMaxPacketSize, "largest packet accepted from either peer, in `bytes` (units: KiB, MiB)")
	fs.IntVar(&p.maxHands, "max-handshakes", relay.DefaultMaxHandshakes, "most `connections` held before their handshake (JDWP, or on the far end TLS and preamble); more are closed at once")
	fs.BoolVar(&p.speculate, "speculate", true, "answer the debugger from a speculative cache; false is pure byte-for-byte pass-through")
	bytesVar(fs, &p.cacheBytes, "cache-bytes", speculator.DefaultCacheBytes, "bound on cached reply `bytes` per session (units: KiB, MiB, GiB)")
	fs.StringVar(&p.learnFile, "learn-file", "", "keep what sessions learned about each debugger's attach and stops in this `PATH` (mode 0600) across proxy restarts; empty: in memory only")
	fs.Var(&p.journalList, "journal", "write a journal of every session to `PATH` (format from the extension: .jsonl, .perfetto.json, .pcapng); give it several times for several files, e.g. one of each format")
	fs.StringVar(&p.journalFmt, "journal-format", "", "journal `format` of a single --journal: jsonl, perfetto or pcapng (default: from the extension)")
	bytesVar(fs, &p.journalMax, "journal-max-bytes", 0, "rotate the journal at this many `bytes` (units: KiB, MiB, GiB; 0: never)")
	bytesVar(fs, &p.journalRaw, "journal-raw-bytes", 4096, "keep up to this many raw `bytes` of each packet in the journal (units: KiB; negative: none)")
	fs.IntVar(&p.journalQ, "journal-queue", 8192, "journal records buffered between the relay and the file; beyond it records are dropped, counted and reported")
	p.ddm.register(fs)
	p.log.register(fs)
}

const proxyExamples = `
Examples:
  # a JVM started with -agentlib:jdwp=transport=dt_socket,server=y,suspend=y,address=5005
  jdwpaccel proxy --vm 127.0.0.1:5005
  # then attach the IDE (or: jdb -attach 127.0.0.1:8700) to 127.0.0.1:8700

  # with the live monitor page and a journal for Perfetto
  jdwpaccel proxy --vm 127.0.0.1:5005 --http-addr 127.0.0.1:8780 --journal session.perfetto.json

  # every JVM with a JDWP agent on this machine: each gets a port from 8701,
  # and 8700 reaches the one chosen with "jdwpaccel select" (or the only one)
  jdwpaccel proxy --vm scan:
  jdwpaccel vms

  # the debuggable apps of an Android device, through the local adb server
  jdwpaccel proxy --vm adb:
  # or one app: adb forward tcp:8600 jdwp:$(adb shell pidof -s com.example.app)
  jdwpaccel proxy --vm 127.0.0.1:8600

  # split mode: "jdwpaccel far --vm 127.0.0.1:5005" runs next to the VM (listening on
  # 127.0.0.1:8720); reach it through a tunnel (ssh -L 8720:127.0.0.1:8720 vmhost) and
  jdwpaccel proxy --far 127.0.0.1:8720
  # or let the proxy run the tunnel, and restart it whenever it drops
  jdwpaccel proxy --far 127.0.0.1:8720 --far-tunnel 'kubectl port-forward pod/app 8720:8720'
`

// stack is a relay configuration with every feature the flags ask for.
type stack struct {
	cfg    relay.Config
	reg    *prometheus.Registry
	spec   *speculator.Speculator // nil with --speculate=false
	holder *ddmtap.Holder         // nil with --ddm=false or discovery
	// stopHolder ends holder and waits for it (setupDDM); nil without one.
	stopHolder func()
	vmDDM      *ddmVMs          // with discovery: per-VM holders; nil with --ddm=false
	journal    *journal.Journal // nil without --journal
	tracker    *web.SessionTracker
	convo      *convo.Watcher    // threads and stacks from the debuggers' conversations
	feed       *feed.Feed        // each VM's live events (GET /api/v1/vms/{vm}/events)
	vmSpec     string            // --vm
	manager    *discover.Manager // with discovery, once runProxy made it; before serve
	near       *split.NearConfig // with --far: how the near end reaches the far end
	tunnel     *tunnel.Tunnel    // with --far-tunnel: the tunnel to the far end, run by runProxy
	// fronts shares each VM among its clients (package share).
	fronts fronts
	// observers makes the hooks of a session but its speculator's.
	observers    func(*relay.Session) relay.Hooks
	pushMetrics  *push.Metrics  // registered by pushConfig
	pushCounters *push.Counters // made by pushConfig
	// role names the page when it is not the proxy's own ("far end"),
	// and farState, on the far end, says whether it pushes.
	role     string
	farState *farState
}

// pushConfig configures the pushed replies of split mode's end; its
// metrics are registered once, by the first call.
func (st *stack) pushConfig() push.Config {
	if st.pushMetrics == nil {
		st.pushMetrics = push.NewMetrics(st.reg)
		st.pushCounters = new(push.Counters)
	}
	return push.Config{Metrics: st.pushMetrics, Counters: st.pushCounters}
}

// buildStack wires the speculator, the journal, the session tracker and
// the DDM tap into a relay configuration for the VM at pf.vm. Background
// work (the DDM holder) runs until ctx ends; close the journal when done.
func buildStack(ctx context.Context, pf *proxyFlags, log zerolog.Logger) (*stack, error) {
	name := pf.vm
	if pf.far != "" {
		name = "far:" + pf.far
	}
	st := &stack{reg: newRegistry(), tracker: web.NewSessionTracker(), vmSpec: name}
	st.tracker.VMOf = func(*relay.Session) string { return name }
	st.convo = convo.NewWatcher(st.tracker.VMName)
	st.feed = feed.New(feed.Config{VMOf: st.tracker.VMName, Names: st.convo})
	st.cfg = relay.Config{
		DialVM:        relay.DialTCP(pf.vm),
		MaxPacketSize: pf.maxPacket,
		MaxHandshakes: pf.maxHands,
		Logger:        log,
		Metrics:       relay.NewMetrics(st.reg),
	}
	if pf.speculate {
		st.spec = speculator.New(speculator.Config{CacheBytes: pf.cacheBytes, MinRTT: pf.minRTT, LearnFile: pf.learnFile, WriteBehind: pf.writeBehind},
			log.With().Str(relay.LogComponent, "speculator").Logger(), speculator.NewMetrics(st.reg))
	}
	j, err := pf.openJournal(log, st.reg)
	if err != nil {
		return nil, err
	}
	st.journal = j
	if j != nil {
		st.fronts.onClient = journalClients(j)
	}
	var cacheBytes int64 // per session: none without speculation
	if st.spec != nil {
		cacheBytes = pf.cacheBytes
	}
	mem := newMemoryLimiter(cacheBytes) // nil: no limit (tests, GOMEMLIMIT)
	// observers is the chain without the speculator: split mode's ends
	// put their own speculator sessions (package push) in front of it.
	st.observers = func(*relay.Session) relay.Hooks {
		var h relay.Hooks
		if mem != nil {
			h.Observers = append(h.Observers, mem)
		}
		if st.journal != nil {
			h.Observers = append(h.Observers, st.journal)
		}
		// the feed after convo: a stop's names include what its session
		// learned up to it
		h.Observers = append(h.Observers, st.tracker, st.convo, st.feed)
		return h
	}
	var specHooks func(*relay.Session) relay.Hooks
	if st.spec != nil {
		specHooks = guarded(st.spec.Hooks)
	}
	st.cfg.NewHooks = relay.ChainHooks(specHooks, st.observers)
	if pf.far != "" {
		// Split mode's near end: the VM is reached through the far end,
		// which also runs the DDM monitor.
		nc, err := pf.link.nearConfig(pf.far, log, st.reg)
		if err != nil {
			return nil, usageError{err}
		}
		nc.Attach = st.spec != nil // push.NearHooks reads the attach bundle
		nc.Heartbeat = true        // nearChain beats
		st.near = &nc
		st.cfg.DialVM = split.Dialer(nc)
		if pf.link.tunnel != "" {
			if st.tunnel, st.cfg.DialVM, err = newTunnel(pf.link.tunnel, nc, log, st.reg); err != nil {
				return nil, usageError{err}
			}
		}
		st.cfg.NewHooks = nearChain(st.spec, st.pushConfig(), nc.Link, st.observers)
		return st, nil
	}
	if isDiscoverySpec(pf.vm) {
		// Each VM found gets its own relay server, and DDM holder and
		// monitor (see relayServeFunc, started by runProxy).
		st.tracker.VMOf = nil // each VM's server names it (relay.Config.VM)
		if pf.ddm.mode != ddmOff {
			st.vmDDM = newDDMVMs(pf.ddm, st.reg, st.feed)
		}
		return st, nil
	}
	st.holder, st.stopHolder = setupDDM(ctx, log, st.reg, pf.vm, pf.ddm, &st.cfg, ddmThreadsTo(st.feed, name))
	st.cfg.DialVM = explainDial(st.cfg.DialVM, pf.vm)
	return st, nil
}

// monitorSource is what the live page shows for this stack.
func (st *stack) monitorSource() *web.DDMSource {
	return &web.DDMSource{
		Monitors: func() []*ddmtap.Monitor {
			switch {
			case st.holder != nil:
				return []*ddmtap.Monitor{st.holder.Monitor()}
			case st.vmDDM != nil:
				return st.vmDDM.mons.List()
			}
			return nil
		},
		Served:       st.servedVMs,
		Conversation: st.convo,
		AccelFunc:    st.accel,
		SessionsFunc: st.sessions,
	}
}

// sessions are the tracked sessions, each open one with the clients that
// share its VM now.
func (st *stack) sessions() []web.Session {
	return withClients(st.tracker.Sessions(), st.fronts.clients)
}

// accel is the page's figures of the speculator (none with
// --speculate=false), with the tracked steps.
func (st *stack) accel() web.AccelStats {
	var a web.AccelStats
	if st.spec != nil {
		a = web.AccelFromStats(st.spec.Stats())
	}
	st.tracker.AddSteps(&a)
	if st.farState != nil && st.spec != nil && st.pushCounters != nil {
		a.State, a.StateNote = st.farState.observe(st.spec.Stats(), st.pushCounters.Stats())
	}
	return a
}

// servedVMs are the VMs the proxy serves: the one --vm names, or every VM
// discovery found (scan, adb, static), each with where to attach to it.
func (st *stack) servedVMs() []web.VM {
	if !isDiscoverySpec(st.vmSpec) {
		return []web.VM{{ID: st.vmSpec, Addr: st.vmSpec, Kind: discover.KindStatic}}
	}
	if st.manager == nil {
		return nil
	}
	snap := st.manager.List()
	out := make([]web.VM, 0, len(snap.VMs))
	for _, v := range snap.VMs {
		vm := web.VM{ID: v.Key, Addr: v.Addr, Kind: v.Kind, App: v.Name, PID: uint32(max(v.PID, 0))}
		if vm.Addr == "" && v.Serial != "" {
			vm.Addr = "adb " + v.Serial
		}
		var notes []string
		if v.Listen != "" {
			notes = append(notes, "attach at "+v.Listen)
		}
		if v.Selected && snap.Listen != "" {
			notes = append(notes, "selected: "+snap.Listen+" reaches it")
		}
		if v.SuspendOnStart && v.Sessions == 0 {
			notes = append(notes, "waits for a debugger (suspend=y)")
		}
		vm.Status = strings.Join(notes, "; ")
		out = append(out, vm)
	}
	return out
}

// serve starts the metrics and monitor HTTP servers the flags ask for and
// returns the monitor's URL ("" without one).
func (st *stack) serve(ctx context.Context, pf *proxyFlags, log zerolog.Logger, extra map[string]http.Handler) (string, error) {
	var url string
	if pf.httpAddr != "" {
		h := web.NewHandler(st.monitorSource(), st.reg, log, web.WithRole(st.role), web.WithFeed(st.feed))
		context.AfterFunc(ctx, h.Close)
		mux := http.NewServeMux()
		mux.Handle("/", h)
		for pattern, eh := range extra {
			mux.Handle(pattern, eh)
		}
		addr, err := serveHTTP(ctx, pf.httpAddr, mux, log, "monitor")
		switch {
		case err != nil && pf.httpDefault:
			log.Warn().Err(err).Str("addr", pf.httpAddr).Msg("cannot serve the live monitor on its default address; going on without it (set --http-addr)")
		case err != nil:
			return "", err
		default:
			url = "http://" + addr.String() + "/"
		}
	}
	if pf.metricsAddr != "" && pf.metricsAddr != pf.httpAddr {
		mux := http.NewServeMux()
		mux.Handle("/metrics", metricsHandler(st.reg))
		if _, err := serveHTTP(ctx, pf.metricsAddr, mux, log, "metrics"); err != nil {
			return "", err
		}
	}
	return url, nil
}

// parseStackFlags parses args with fs into pf (and whatever else fs
// fills), builds the logger and runs check. It returns the exit code and
// false when the command must stop (--help, a usage error).
func parseStackFlags(fs *flag.FlagSet, args []string, e *env, pf *proxyFlags, check func(zerolog.Logger) error) (zerolog.Logger, int, bool) {
	if code, ok := parseFlags(fs, args, e); !ok {
		return zerolog.Nop(), code, false
	}
	pf.httpDefault = true
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "http-addr" {
			pf.httpDefault = false
		}
	})
	log, err := pf.log.logger(e.stderr)
	if err == nil {
		err = check(log)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "jdwpaccel %s: %v\n", fs.Name(), err)
		return zerolog.Nop(), exitUsage, false
	}
	return log, exitOK, true
}

func cmdProxy(ctx context.Context, e *env, args []string) int {
	var pf proxyFlags
	fs := flag.NewFlagSet("proxy", flag.ContinueOnError)
	pf.register(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: jdwpaccel proxy --vm HOST:PORT [flags]\n\nRelay debuggers that connect to --listen to the VM at --vm, accelerating them.\n\nFlags:\n")
		printFlags(fs, "vm", "far", "listen", "http-addr", "journal")
		fmt.Fprint(fs.Output(), proxyExamples)
	}
	log, code, ok := parseStackFlags(fs, args, e, &pf, pf.check)
	if !ok {
		return code
	}
	return withStack(ctx, e, fs.Name(), &pf, log, func(ctx context.Context, st *stack) int {
		return runProxy(ctx, &pf, st, log, e)
	})
}

// withStack builds the relay stack for pf, runs run with it and closes the
// journal afterwards; a stack that cannot be built is a usage error or a
// runtime failure, reported as command name's.
func withStack(ctx context.Context, e *env, name string, pf *proxyFlags, log zerolog.Logger, run func(context.Context, *stack) int) int {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := buildStack(ctx, pf, log)
	if err != nil {
		fmt.Fprintf(e.stderr, "jdwpaccel %s: %v\n", name, err)
		if errors.As(err, new(usageError)) {
			return exitUsage
		}
		return exitError
	}
	code := run(ctx, st)
	if st.stopHolder != nil {
		st.stopHolder() // the relay server has returned: the holder's clean shutdown
	}
	if st.journal != nil {
		if err := st.journal.Close(); err != nil {
			log.Error().Err(err).Msg("journal not written completely")
			code = exitError
		}
	}
	return code
}

// check validates the flags that need no I/O.
func (pf *proxyFlags) check(log zerolog.Logger) error {
	switch {
	case pf.vm != "" && pf.far != "":
		return errors.New("give --vm (the VM) or --far (split mode: the far end next to the VM), not both")
	case pf.far != "":
		if err := pf.link.checkNear(pf.far, log); err != nil {
			return err
		}
	case pf.vm == "":
		return errors.New("--vm HOST:PORT is required (or --far HOST:PORT in split mode)")
	default:
		if err := pf.link.checkUnused("--vm"); err != nil {
			return err
		}
		if !isDiscoverySpec(pf.vm) {
			if err := checkAddr("--vm", pf.vm, false); err != nil {
				return err
			}
		}
	}
	for _, a := range []struct{ name, addr string }{{"--listen", pf.listen}, {"--read-only-listen", pf.readOnlyListen}, {"--metrics-addr", pf.metricsAddr}, {"--http-addr", pf.httpAddr}} {
		if a.addr == "" && a.name != "--listen" {
			continue
		}
		if err := checkAddr(a.name, a.addr, true); err != nil {
			return err
		}
		if err := checkListen(a.name, a.addr, pf.allowRemote, log); err != nil {
			return err
		}
	}
	return nil
}

func runProxy(ctx context.Context, pf *proxyFlags, st *stack, log zerolog.Logger, e *env) int {
	defer runTunnel(ctx, st, log)()
	if st.near != nil && !probeFar(ctx, *st.near, log) {
		return exitError
	}
	ln, err := net.Listen("tcp", pf.listen)
	if err != nil {
		log.Error().Err(err).Str(relay.LogListen, pf.listen).Msg("cannot listen")
		return exitError
	}
	var roLn net.Listener // --read-only-listen: every client there is an observer
	if pf.readOnlyListen != "" {
		if roLn, err = net.Listen("tcp", pf.readOnlyListen); err != nil {
			ln.Close()
			log.Error().Err(err).Str(relay.LogListen, pf.readOnlyListen).Msg("cannot listen (--read-only-listen)")
			return exitError
		}
		log.Info().Str(relay.LogListen, roLn.Addr().String()).Msg("read-only clients attach here: each is an observer, even the first")
	}
	var manager *discover.Manager
	extra := map[string]http.Handler{}
	if isDiscoverySpec(pf.vm) {
		var namer discover.AppNamer
		if st.vmDDM != nil {
			namer = st.vmDDM.mons
		}
		manager, err = newVMManager(pf.vm, pf.vms, ln, relayServeFunc(st.cfg, st.vmDDM, &st.fronts), namer, log, st.reg)
		if err != nil {
			ln.Close()
			fmt.Fprintf(e.stderr, "jdwpaccel proxy: %v\n", err)
			return exitUsage
		}
		extra[discover.APIPrefix] = discover.Handler(manager)
		st.manager = manager
	}
	if st.near != nil {
		extra["/far/"] = farPage(*st.near)
	}
	url, err := st.serve(ctx, pf, log, extra)
	if err != nil {
		ln.Close()
		log.Error().Err(err).Msg("cannot serve HTTP")
		return exitError
	}
	if url != "" {
		log.Info().Str("url", url).Msg("live monitor")
		if st.near != nil {
			log.Info().Str("url", url+"far/").Msg("the far end's live monitor (DDM threads and heap), over the link")
		}
	}
	if pf.far == "" && manager == nil {
		warnNoLocalVM(pf.vm, discover.LocalListener, log)
	}
	log.Info().Str(relay.LogListen, ln.Addr().String()).Str(relay.LogVM, st.vmSpec).Bool("speculate", pf.speculate).
		Msg("proxy listening; attach the debugger here")
	if manager != nil {
		err = manager.Run(ctx)
	} else {
		err = st.fronts.serve(ctx, st.cfg, st.vmSpec, ln, roLn)
	}
	if err != nil {
		log.Error().Err(err).Msg("proxy stopped")
		return exitError
	}
	log.Info().Msg("proxy shut down")
	return exitOK
}
