package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/jdwpaccel/jdwpaccel/web"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
)

// logFlags are the logging flags every long-running command has.
type logFlags struct {
	level  string
	format string
}

func (l *logFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&l.level, "log-level", "info", "log level: `trace|debug|info|warn|error`")
	fs.StringVar(&l.format, "log-format", "auto", "log format on stderr: `json|console|auto` (auto: console on a terminal)")
}

// logger builds the root logger writing to w.
func (l *logFlags) logger(w io.Writer) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(l.level)
	if err != nil || l.level == "" || l.level == "disabled" || l.level == "panic" || l.level == "fatal" {
		return zerolog.Nop(), fmt.Errorf("bad --log-level %q: want trace, debug, info, warn or error", l.level)
	}
	switch l.format {
	case "json":
	case "console":
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly}
	case "auto":
		if isTerminal(w) {
			w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly}
		}
	default:
		return zerolog.Nop(), fmt.Errorf("bad --log-format %q: want json, console or auto", l.format)
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger(), nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// isLoopback reports whether a listen address binds only loopback.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkListen refuses a non-loopback address unless allowed, and warns when
// it is allowed. what is the flag ("--listen", "--http-addr",
// "--metrics-addr"); the message says what that address would expose.
func checkListen(what, addr string, allowRemote bool, log zerolog.Logger) error {
	if isLoopback(addr) {
		return nil
	}
	risk := "anyone who can connect gets full control of the VM"
	warning := "listening on a non-loopback address: anyone who can reach it can control the debugged VM"
	if what == "--metrics-addr" {
		risk = "anyone who can connect can read the proxy's metrics (sessions, commands, latencies, VM names)"
		warning = "serving metrics on a non-loopback address: anyone who can reach it can read them"
	}
	if !allowRemote {
		return fmt.Errorf("%s %q is not a loopback address: %s; pass --allow-remote to accept that", what, addr, risk)
	}
	log.Warn().Str("addr", addr).Str("what", what).Msg(warning)
	return nil
}

// usageError marks errors that should exit with code 2.
type usageError struct{ error }

// parseFlags parses a command's flags, which take no positional
// arguments. ok is false when the command must exit with code: after help
// (-h, --help: the usage on stdout, exit 0) or a usage error (the error and
// a pointer to --help on stderr, exit 2).
func parseFlags(fs *flag.FlagSet, args []string, e *env) (code int, ok bool) {
	args = joinOptionalValues(fs, args)
	if code, ok := parseWith(fs, e, func() error { return fs.Parse(args) }); !ok {
		return code, false
	}
	if fs.NArg() > 0 {
		return usageFailure(e, fs.Name(), fmt.Errorf("unexpected argument %q", fs.Arg(0))), false
	}
	return 0, true
}

// parseWith runs parse (which calls fs.Parse) with the flag package's own
// output silenced, then prints help or a usage error as parseFlags says.
func parseWith(fs *flag.FlagSet, e *env, parse func() error) (code int, ok bool) {
	fs.SetOutput(io.Discard)
	err := parse()
	fs.SetOutput(e.stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(e.stdout)
		fs.Usage()
		fs.SetOutput(e.stderr)
		return exitOK, false
	case err != nil:
		return usageFailure(e, fs.Name(), err), false
	}
	return 0, true
}

// usageFailure prints a usage error of a command and where to find its
// usage, and returns exitUsage.
func usageFailure(e *env, cmd string, err error) int {
	fmt.Fprintf(e.stderr, "jdwpaccel %s: %v\nRun \"jdwpaccel %s --help\" for usage.\n", cmd, dashDash(err), cmd)
	return exitUsage
}

// stringList is a flag that may be given several times.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(v string) error {
	if v == "" {
		return errors.New("empty value")
	}
	*l = append(*l, v)
	return nil
}

// version is the module version of this build, and its VCS revision.
func version() (v, revision string) {
	v, revision = "(devel)", "unknown"
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return
	}
	if bi.Main.Version != "" {
		v = bi.Main.Version
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			revision = s.Value
		}
	}
	return
}

func cmdVersion(_ context.Context, e *env, args []string) int {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: jdwpaccel version\n       jdwpaccel --version\n\nPrint the version of this build, its VCS revision and the Go version that\nbuilt it. It takes no flags.\n")
	}
	if code, ok := parseFlags(fs, args, e); !ok {
		return code
	}
	v, rev := version()
	bi, _ := debug.ReadBuildInfo()
	goV := "unknown"
	if bi != nil {
		goV = bi.GoVersion
	}
	fmt.Fprintf(e.stdout, "jdwpaccel %s (revision %s, %s)\n", v, rev, goV)
	return exitOK
}

// newRegistry returns a private registry with the process, Go and build
// info collectors.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	v, rev := version()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace:   "jdwpaccel",
			Name:        "build_info",
			Help:        "Always 1; the labels say which build is running.",
			ConstLabels: prometheus.Labels{"version": v, "revision": rev},
		}, func() float64 { return 1 }),
	)
	return reg
}

// serveHTTP serves h on addr until ctx ends, behind web.Guard: requests
// must be addressed to localhost, or to addr itself when it is not loopback
// (which checkListen allowed only with --allow-remote).
func serveHTTP(ctx context.Context, addr string, h http.Handler, log zerolog.Logger, what string) (net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	// The Guard compares a POST's Origin with the port the listener got
	// (--http-addr may say 0), and its host with the one asked for (a
	// name, which the listener's address would have resolved).
	guardAddr := ln.Addr().String()
	if host, _, err := net.SplitHostPort(addr); err == nil {
		_, port, _ := net.SplitHostPort(guardAddr)
		guardAddr = net.JoinHostPort(host, port)
	}
	srv := &http.Server{Handler: web.Guard(h, guardAddr), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(shut) //nolint:errcheck
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Str("what", what).Msg("HTTP server failed")
		}
	}()
	log.Info().Str("addr", ln.Addr().String()).Str("what", what).Msg("serving HTTP")
	return ln.Addr(), nil
}

func metricsHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
}
