package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench"
	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/rs/zerolog"
)

const benchExamples = `
Examples:
  # the full matrix (takes several minutes: direct steps at 100 ms cost seconds each)
  jdwpaccel bench --out bench/out
  # one workload at two RTTs
  jdwpaccel bench --workloads Deep/idea-like --rtt 0ms,30ms --steps 6
`

// benchModes returns the modes named in list, the direct baseline first.
func benchModes(list string, log zerolog.Logger) ([]bench.Mode, error) {
	all := map[string]func() bench.Mode{
		"direct": func() bench.Mode { return bench.Mode{Name: "direct", Direct: true} },
		"proxy":  func() bench.Mode { return bench.Mode{Name: "proxy"} },
		// tcp-copy is a plain byte-copy hop: the floor for any proxy.
		"tcp-copy": func() bench.Mode { return bench.Mode{Name: "tcp-copy", Copy: true} },
	}
	if speculateMode != nil {
		all["speculate"] = func() bench.Mode { return speculateMode(log) }
	}
	modes := []bench.Mode{all["direct"]()}
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if n == "direct" || n == "" {
			continue
		}
		mk, ok := all[n]
		if !ok {
			return nil, fmt.Errorf("unknown mode %q", n)
		}
		modes = append(modes, mk())
	}
	return modes, nil
}

// speculateMode builds the bench mode with speculation on; set by the
// speculator wiring.
var speculateMode func(log zerolog.Logger) bench.Mode

func parseRTTs(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range strings.Split(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil || d < 0 {
			return nil, fmt.Errorf("bad RTT %q", f)
		}
		out = append(out, d)
	}
	return out, nil
}

func parseWorkloads(s string) ([]bench.Workload, error) {
	var out []bench.Workload
	for _, f := range strings.Split(s, ",") {
		d, p, ok := strings.Cut(strings.TrimSpace(f), "/")
		if !ok {
			return nil, fmt.Errorf("bad workload %q: want DEBUGGEE/PROFILE", f)
		}
		out = append(out, bench.Workload{Debuggee: d, Profile: p})
	}
	return out, nil
}

// progressBar draws a one-line bar on a terminal, or plain lines elsewhere.
func progressBar(w io.Writer) func(done, total int, label string) {
	term := isTerminal(w)
	return func(done, total int, label string) {
		if !term {
			fmt.Fprintf(w, "[%d/%d] %s\n", done, total, label)
			return
		}
		const width = 30
		n := width * done / max(total, 1)
		fmt.Fprintf(w, "\r\033[K[%s%s] %d/%d %s", strings.Repeat("#", n), strings.Repeat(".", width-n), done, total, label)
		if done == total {
			fmt.Fprintln(w)
		}
	}
}

func cmdBench(ctx context.Context, e *env, args []string) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	rtts := fs.String("rtt", "0ms,1ms,10ms,30ms,100ms", "comma-separated link `RTTs`")
	modes := fs.String("modes", "direct,proxy,speculate", "comma-separated `modes`: direct, tcp-copy (a plain byte-copy hop, the floor for any proxy), proxy (speculation off), speculate")
	workloads := fs.String("workloads", "Deep/idea-like,Shallow/idea-like,Deep/vscode-like,Deep/jdb-min", "comma-separated `DEBUGGEE/PROFILE` list (debuggees: Deep, Shallow, NewClasses, ToStringWatch, HotSwap; profiles: jdb-min, idea-like, vscode-like)")
	steps := fs.Int("steps", 8, "measured steps per cell")
	warmup := fs.Int("warmup", 2, "warm-up stops per cell, not measured")
	out := fs.String("out", "bench/out", "`directory` for bench.json and bench.svg")
	var lf logFlags
	lf.register(fs)
	lf.level = "warn"
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: jdwpaccel bench [flags]\n\nRun IDE-like JDI workloads against real JVMs behind an emulated link, directly and through jdwpaccel,\nand report step times, serial round trips per step, speedups and the digest check.\n\nFlags:\n")
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), benchExamples)
	}
	if code, ok := parseFlags(fs, args, e); !ok {
		return code
	}
	log, err := lf.logger(e.stderr)
	if err != nil {
		fmt.Fprintf(e.stderr, "jdwpaccel bench: %v\n", err)
		return exitUsage
	}
	cfg := bench.Config{Steps: *steps, Warmup: *warmup, Log: log, Progress: progressBar(e.stderr)}
	if cfg.RTTs, err = parseRTTs(*rtts); err == nil {
		if cfg.Workloads, err = parseWorkloads(*workloads); err == nil {
			cfg.Modes, err = benchModes(*modes, log)
		}
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "jdwpaccel bench: %v\n", err)
		return exitUsage
	}
	if cfg.Build, err = javavm.Compile(ctx); err != nil {
		fmt.Fprintf(e.stderr, "jdwpaccel bench: building the Java workloads: %v\n", err)
		return exitError
	}
	rep, runErr := bench.Run(ctx, cfg)
	if rep != nil {
		rep.WriteTable(e.stdout)
		if err := writeReport(*out, rep); err != nil {
			fmt.Fprintf(e.stderr, "jdwpaccel bench: %v\n", err)
			return exitError
		}
		fmt.Fprintf(e.stdout, "\nwrote %s and %s\n", filepath.Join(*out, "bench.json"), filepath.Join(*out, "bench.svg"))
	}
	if runErr != nil {
		if errors.Is(runErr, bench.ErrDigestMismatch) {
			fmt.Fprintf(e.stderr, "\njdwpaccel bench: FAILED: %v:\n  %s\n", runErr, strings.Join(rep.Mismatches, "\n  "))
		} else {
			fmt.Fprintf(e.stderr, "jdwpaccel bench: %v\n", runErr)
		}
		return exitError
	}
	return exitOK
}

func writeReport(dir string, rep *bench.Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, write := range map[string]func(io.Writer) error{"bench.json": rep.WriteJSON, "bench.svg": rep.WriteSVG} {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		err = write(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}
