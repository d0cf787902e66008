package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
)

type proxyFlags struct {
	vm          string
	listen      string
	allowRemote bool
	metricsAddr string
	maxPacket   int
	log         logFlags
}

func (p *proxyFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&p.vm, "vm", "", "the VM's JDWP address, `HOST:PORT` (required)")
	fs.StringVar(&p.listen, "listen", "127.0.0.1:8700", "where debuggers connect, `ADDR` (port 0 picks a free port and logs it)")
	fs.BoolVar(&p.allowRemote, "allow-remote", false, "allow listening on a non-loopback address (anyone who connects controls the VM)")
	fs.StringVar(&p.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://`ADDR`/metrics (loopback unless --allow-remote)")
	fs.IntVar(&p.maxPacket, "max-packet-size", jdwp.DefaultMaxPacketSize, "largest packet accepted from either peer, in `bytes`")
	p.log.register(fs)
}

const proxyExamples = `
Examples:
  # a JVM started with -agentlib:jdwp=transport=dt_socket,server=y,suspend=y,address=5005
  jdwpaccel proxy --vm 127.0.0.1:5005
  # then attach the IDE (or: jdb -attach 127.0.0.1:8700) to 127.0.0.1:8700

  # an Android app: forward its JDWP port with adb first
  adb forward tcp:8600 jdwp:$(adb shell pidof -s com.example.app)
  jdwpaccel proxy --vm 127.0.0.1:8600 --metrics-addr 127.0.0.1:9464
`

func cmdProxy(ctx context.Context, e *env, args []string) int {
	var pf proxyFlags
	fs := flag.NewFlagSet("proxy", flag.ContinueOnError)
	pf.register(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: jdwpaccel proxy --vm HOST:PORT [flags]\n\nRelay debuggers that connect to --listen to the VM at --vm.\n\nFlags:\n")
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), proxyExamples)
	}
	if code, ok := parseFlags(fs, args, e); !ok {
		return code
	}
	log, err := pf.log.logger(e.stderr)
	if err != nil {
		fmt.Fprintf(e.stderr, "jdwpaccel proxy: %v\n", err)
		return exitUsage
	}
	if pf.vm == "" {
		fmt.Fprint(e.stderr, "jdwpaccel proxy: --vm HOST:PORT is required\n")
		return exitUsage
	}
	if _, _, err := net.SplitHostPort(pf.vm); err != nil {
		fmt.Fprintf(e.stderr, "jdwpaccel proxy: bad --vm %q: %v\n", pf.vm, err)
		return exitUsage
	}
	if err := checkListen("--listen", pf.listen, pf.allowRemote, log); err != nil {
		fmt.Fprintf(e.stderr, "jdwpaccel proxy: %v\n", err)
		return exitUsage
	}
	if pf.metricsAddr != "" {
		if err := checkListen("--metrics-addr", pf.metricsAddr, pf.allowRemote, log); err != nil {
			fmt.Fprintf(e.stderr, "jdwpaccel proxy: %v\n", err)
			return exitUsage
		}
	}

	reg := newRegistry()
	cfg := relay.Config{
		DialVM:        relay.DialTCP(pf.vm),
		MaxPacketSize: pf.maxPacket,
		Logger:        log,
		Metrics:       relay.NewMetrics(reg),
	}
	if pf.metricsAddr != "" {
		mux := http.NewServeMux()
		mux.Handle("/metrics", metricsHandler(reg))
		if _, err := serveHTTP(ctx, pf.metricsAddr, mux, log, "metrics"); err != nil {
			log.Error().Err(err).Msg("cannot serve metrics")
			return exitError
		}
	}
	ln, err := net.Listen("tcp", pf.listen)
	if err != nil {
		log.Error().Err(err).Str(relay.LogListen, pf.listen).Msg("cannot listen")
		return exitError
	}
	log.Info().Str(relay.LogListen, ln.Addr().String()).Str(relay.LogVM, pf.vm).Msg("proxy listening; attach the debugger here")
	if err := relay.NewServer(cfg).Serve(ctx, ln); err != nil {
		log.Error().Err(err).Msg("proxy stopped")
		return exitError
	}
	log.Info().Msg("proxy shut down")
	return exitOK
}
