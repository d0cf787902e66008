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
	if err != nil || l.level == "" {
		return zerolog.Nop(), fmt.Errorf("bad --log-level %q", l.level)
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
		return zerolog.Nop(), fmt.Errorf("bad --log-format %q", l.format)
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
// it is allowed.
func checkListen(what, addr string, allowRemote bool, log zerolog.Logger) error {
	if isLoopback(addr) {
		return nil
	}
	if !allowRemote {
		return fmt.Errorf("%s %q is not a loopback address: anyone who can connect gets full control of the VM; pass --allow-remote to accept that", what, addr)
	}
	log.Warn().Str("addr", addr).Str("what", what).Msg("listening on a non-loopback address: anyone who can reach it can control the debugged VM")
	return nil
}

// usageError marks errors that should exit with code 2.
type usageError struct{ error }

func parseFlags(fs *flag.FlagSet, args []string, e *env) (code int, ok bool) {
	fs.SetOutput(e.stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK, false
		}
		return exitUsage, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(e.stderr, "jdwpaccel %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return exitUsage, false
	}
	return 0, true
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
	srv := &http.Server{Handler: web.Guard(h, addr), ReadHeaderTimeout: 10 * time.Second}
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

func parseDurationFlag(name, v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("bad %s %q: %v", name, v, err)
	}
	return d, nil
}
