package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench/link"
	"github.com/jdwpaccel/jdwpaccel/internal/logkey"
)

const linkExamples = `
Examples:
  # a JVM debuggable on 127.0.0.1:5005, seen across a 100 ms link
  jdwpaccel link --to 127.0.0.1:5005 --listen 127.0.0.1:5105 --rtt 100ms --jitter 10ms
  # then attach the debugger (or jdwpaccel proxy --vm 127.0.0.1:5105) to 127.0.0.1:5105

  # a slow Wi-Fi-like link with a bandwidth cap of 2 MB/s
  jdwpaccel link --to 127.0.0.1:8600 --rtt 30ms --jitter 20ms --bandwidth 2M
`

// linkFlags are the flags of "jdwpaccel link".
type linkFlags struct {
	listen      string
	to          string
	allowRemote bool
	cfg         link.Config
	log         logFlags
}

func (lf *linkFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&lf.listen, "listen", "127.0.0.1:0", "accept clients on `ADDR` (port 0: any free port; the bound address is logged)")
	fs.StringVar(&lf.to, "to", "", "relay each client to `HOST:PORT` (required)")
	fs.BoolVar(&lf.allowRemote, "allow-remote", false, "allow a non-loopback --listen address")
	fs.DurationVar(&lf.cfg.RTT, "rtt", 0, "added round-trip `time`; each direction is delayed by half of it")
	fs.DurationVar(&lf.cfg.Jitter, "jitter", 0, "random part of the round trip: it stays within rtt ± `jitter`; order is kept")
	fs.Func("bandwidth", "link rate per direction in `BYTES/S` (suffixes k, M, G = ×1000 and Ki, Mi, Gi = ×1024); 0: unlimited", func(s string) error {
		v, err := parseRate(s)
		lf.cfg.Bandwidth = v
		return err
	})
	fs.Int64Var(&lf.cfg.Seed, "seed", 1, "seed of the jitter generator, for repeatable runs")
	fs.IntVar(&lf.cfg.Buffer, "buffer", 0, "bytes in flight per direction before backpressure (0: 1 MiB)")
	fs.BoolVar(&lf.cfg.NoSpin, "no-spin", false, "sleep on timers only: less CPU, up to ~1 ms later releases")
	fs.DurationVar(&lf.cfg.DropEvery, "drop-every", 0, "a link fault: close every connection carried every `duration`, as a tunnel that restarts (0: never)")
	lf.log.register(fs)
}

// parseRate parses a byte rate such as 250000, 2M or 512Ki.
func parseRate(s string) (int64, error) {
	mult := int64(1)
	num := s
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"k", 1e3}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}} {
		if strings.HasSuffix(s, u.suffix) {
			num, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	v, err := strconv.ParseInt(num, 10, 64)
	if err != nil || v < 0 || v > (1<<62)/mult {
		return 0, fmt.Errorf("bad rate %q: want a non-negative number of bytes per second, e.g. 250000, 2M or 512Ki", s)
	}
	return v * mult, nil
}

// cmdLink runs a slow-link emulator in front of a TCP service until ctx is
// cancelled.
func cmdLink(ctx context.Context, e *env, args []string) int {
	var lf linkFlags
	fs := flag.NewFlagSet("link", flag.ContinueOnError)
	lf.register(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: jdwpaccel link --to HOST:PORT [--rtt D] [--jitter D] [--bandwidth BYTES/S] [flags]\n\n"+
			"Emulate a slow link: relay each client that connects to --listen to --to,\n"+
			"delaying each direction by rtt/2 (± jitter/2) per chunk, scheduled by arrival\n"+
			"time so that pipelined traffic keeps its shape.\n\nFlags:\n")
		printFlags(fs)
		fmt.Fprint(fs.Output(), linkExamples)
	}
	if code, ok := parseFlags(fs, args, e); !ok {
		return code
	}
	log, err := lf.log.logger(e.stderr)
	if err != nil {
		fmt.Fprintf(e.stderr, "jdwpaccel link: %v\n", err)
		return exitUsage
	}
	if lf.to == "" {
		fmt.Fprint(e.stderr, "jdwpaccel link: --to HOST:PORT is required\n")
		return exitUsage
	}
	if _, _, err := net.SplitHostPort(lf.to); err != nil {
		fmt.Fprintf(e.stderr, "jdwpaccel link: bad --to %q: %v\n", lf.to, err)
		return exitUsage
	}
	if err := lf.cfg.Validate(); err != nil {
		fmt.Fprintf(e.stderr, "jdwpaccel link: %v\n", err)
		return exitUsage
	}
	if err := checkListen("--listen", lf.listen, lf.allowRemote, log); err != nil {
		fmt.Fprintf(e.stderr, "jdwpaccel link: %v\n", err)
		return exitUsage
	}

	l, err := link.Listen(ctx, lf.listen, lf.to, lf.cfg, log)
	if err != nil {
		log.Error().Err(err).Str(logkey.Listen, lf.listen).Msg("cannot listen")
		return exitError
	}
	log.Info().Str(logkey.Listen, l.Addr().String()).Str("to", lf.to).
		Dur(logkey.RTT, lf.cfg.RTT).Dur("jitter", lf.cfg.Jitter).Int64("bandwidth", lf.cfg.Bandwidth).Dur("drop_every", lf.cfg.DropEvery).
		Msg("link listening")
	<-ctx.Done()
	start := time.Now()
	if err := l.Close(); err != nil {
		log.Error().Err(err).Msg("link close failed")
		return exitError
	}
	log.Info().Dur("duration", time.Since(start)).Msg("link closed")
	return exitOK
}
