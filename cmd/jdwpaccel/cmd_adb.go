package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"

	"github.com/jdwpaccel/jdwpaccel/adbfront"
	"github.com/jdwpaccel/jdwpaccel/ddmtap"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/speculator"
	"github.com/jdwpaccel/jdwpaccel/web"
	"github.com/rs/zerolog"
)

// adbFlags are the flags of "jdwpaccel adb"; the relay's settings live in
// a proxyFlags so that buildStack wires them as for the proxy.
type adbFlags struct {
	pf       proxyFlags
	upstream string
	ddm      bool
}

func (a *adbFlags) register(fs *flag.FlagSet) {
	p := &a.pf
	fs.StringVar(&p.listen, "listen", "127.0.0.1:5038", "where adb clients connect (adb -P PORT, ANDROID_ADB_SERVER_PORT=PORT, Android Studio's manually managed adb server port), `ADDR`")
	fs.StringVar(&a.upstream, "upstream", "127.0.0.1:5037", "the real adb server, `HOST:PORT`")
	fs.BoolVar(&p.allowRemote, "allow-remote", false, "allow listening on a non-loopback address (anyone who connects controls the devices)")
	fs.StringVar(&p.httpAddr, "http-addr", vmsDefaultHTTPAddr, "serve the live monitor page, JSON API and /metrics at http://`ADDR`/ (empty: off)")
	fs.StringVar(&p.metricsAddr, "metrics-addr", "", "serve Prometheus metrics alone at http://`ADDR`/metrics")
	fs.IntVar(&p.maxPacket, "max-packet-size", jdwp.DefaultMaxPacketSize, "largest JDWP packet accepted from either peer, in `bytes`")
	fs.BoolVar(&p.speculate, "speculate", true, "answer the debugger from a speculative cache; false is pure pass-through")
	fs.Int64Var(&p.cacheBytes, "cache-bytes", speculator.DefaultCacheBytes, "bound on cached reply `bytes` per session")
	fs.StringVar(&p.learnFile, "learn-file", "", "keep what sessions learned about each debugger's attach and stops in this `PATH` (mode 0600) across restarts; empty: in memory only")
	fs.DurationVar(&p.minRTT, "speculate-min-rtt", 0, "send speculative commands only when the measured round trip is at least this `duration`; 0 adapts")
	fs.Var(&p.journalList, "journal", "write a journal of every JDWP stream to `PATH` (.jsonl, .perfetto.json, .pcapng); repeatable")
	fs.StringVar(&p.journalFmt, "journal-format", "", "journal `format`: jsonl, perfetto or pcapng (default: from the extension)")
	fs.Int64Var(&p.journalMax, "journal-max-bytes", 0, "rotate the journal at this many `bytes` (0: never)")
	fs.IntVar(&p.journalRaw, "journal-raw-bytes", 4096, "keep up to this many raw `bytes` of each packet in the journal (negative: none)")
	fs.IntVar(&p.journalQ, "journal-queue", 8192, "journal records buffered between the relay and the file")
	fs.BoolVar(&a.ddm, "ddm", true, "decode the DDM traffic of the JDWP streams (Android Studio's own thread and heap requests) into the live page; the front never sends DDM itself")
	p.log.register(fs)
}

const adbExamples = `
Examples:
  # the real adb server stays on 5037; the front listens on 5038
  adb start-server
  jdwpaccel adb
  adb -P 5038 devices                 # any adb command, through the front
  ANDROID_ADB_SERVER_PORT=5038 studio # or: Settings > Build, Execution, Deployment > Debugger >
                                      # Android Studio: "Use existing manually managed server", port 5038
  # a plain debugger: the front executes the forward itself and relays it
  adb -P 5038 forward tcp:8600 jdwp:$(adb shell pidof -s com.example.app)
  jdb -attach 127.0.0.1:8600
`

func cmdADB(ctx context.Context, e *env, args []string) int {
	var af adbFlags
	fs := flag.NewFlagSet("adb", flag.ContinueOnError)
	af.register(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: jdwpaccel adb [--listen 127.0.0.1:5038] [--upstream 127.0.0.1:5037] [flags]\n\nFront the adb server: every request goes to it unchanged, except the JDWP streams\n(jdwp:PID, and forwards to jdwp:PID), which run through the accelerator.\n\nFlags:\n")
		printFlags(fs)
		fmt.Fprint(fs.Output(), adbExamples)
	}
	pf := &af.pf
	log, code, ok := parseStackFlags(fs, args, e, pf, af.check)
	if !ok {
		return code
	}
	pf.vm = "adb-front" // only names the stack; each stream brings its VM connection
	pf.ddm.mode = ddmOff
	return withStack(ctx, e, fs.Name(), pf, log, func(ctx context.Context, st *stack) int {
		return runADBFront(ctx, &af, st, log)
	})
}

func (af *adbFlags) check(log zerolog.Logger) error {
	if _, _, err := net.SplitHostPort(af.upstream); err != nil {
		return fmt.Errorf("bad --upstream %q: %v", af.upstream, err)
	}
	if af.upstream == af.pf.listen {
		return fmt.Errorf("--upstream %s is the front's own --listen address", af.upstream)
	}
	for _, a := range []struct{ name, addr string }{{"--listen", af.pf.listen}, {"--metrics-addr", af.pf.metricsAddr}, {"--http-addr", af.pf.httpAddr}} {
		if a.addr == "" && a.name != "--listen" {
			continue
		}
		if err := checkListen(a.name, a.addr, af.pf.allowRemote, log); err != nil {
			return err
		}
	}
	return nil
}

func runADBFront(ctx context.Context, af *adbFlags, st *stack, log zerolog.Logger) int {
	pf := &af.pf
	ln, err := net.Listen("tcp", pf.listen)
	if err != nil {
		log.Error().Err(err).Str(relay.LogListen, pf.listen).Msg("cannot listen")
		return exitError
	}
	var dm *ddmtap.Metrics
	if af.ddm {
		dm = ddmtap.NewMetrics(st.reg)
	}
	st.tracker.VMOf = nil // each of the relay's servers names its VM (relay.Config.VM)
	fr := adbfront.NewRelay(st.cfg, dm)
	fr.OnClient(st.fronts.onClient)
	if pf.httpAddr != "" {
		src := &web.DDMSource{
			Monitors:     fr.Monitors().List,
			AccelFunc:    st.accel,
			SessionsFunc: func() []web.Session { return withClients(st.tracker.Sessions(), fr.Clients) },
		}
		h := web.NewHandler(src, st.reg, log)
		context.AfterFunc(ctx, h.Close)
		mux := http.NewServeMux()
		mux.Handle("/", h)
		addr, err := serveHTTP(ctx, pf.httpAddr, mux, log, "monitor")
		switch {
		case err != nil && pf.httpDefault:
			log.Warn().Err(err).Str("addr", pf.httpAddr).Msg("cannot serve the live monitor on its default address; going on without it (set --http-addr)")
		case err != nil:
			ln.Close()
			log.Error().Err(err).Msg("cannot serve HTTP")
			return exitError
		default:
			log.Info().Str("url", "http://"+addr.String()+"/").Msg("live monitor")
		}
	}
	if pf.metricsAddr != "" && pf.metricsAddr != pf.httpAddr {
		mux := http.NewServeMux()
		mux.Handle("/metrics", metricsHandler(st.reg))
		if _, err := serveHTTP(ctx, pf.metricsAddr, mux, log, "metrics"); err != nil {
			ln.Close()
			log.Error().Err(err).Msg("cannot serve HTTP")
			return exitError
		}
	}
	front := adbfront.New(adbfront.Config{
		Upstream: af.upstream,
		JDWP:     fr.Serve,
		Logger:   log.With().Str(relay.LogComponent, "adbfront").Logger(),
	})
	fr.SetRedial(front.DialJDWP)
	log.Info().Str(relay.LogListen, ln.Addr().String()).Str(adbfront.LogUpstream, af.upstream).Bool("speculate", pf.speculate).
		Msg("adb front listening; point adb clients here")
	if err := front.Serve(ctx, ln); err != nil {
		log.Error().Err(err).Msg("adb front stopped")
		return exitError
	}
	log.Info().Msg("adb front shut down")
	return exitOK
}
