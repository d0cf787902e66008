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
	"github.com/jdwpaccel/jdwpaccel/bench/javadebug"
	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/journal"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/speculator"
	"github.com/jdwpaccel/jdwpaccel/split"
	"github.com/rs/zerolog"
)

const benchExamples = `
Examples:
  # the full matrix (takes several minutes: direct steps at 100 ms cost seconds each)
  jdwpaccel bench --out bench/out
  # one workload at two RTTs
  jdwpaccel bench --workloads Deep/idea-like --rtt 0ms,30ms --steps 6
  # the pooled server's 200 threads, a synchronous and a pipelined IDE
  jdwpaccel bench --workloads Server/idea-like,Server/idea-async --rtt 0ms,30ms --modes direct,speculate --steps 4 --warmup 1
  # where speculation is wasted: per command and rule, and the misses per stop, in bench/out/diag.txt
  jdwpaccel bench --workloads Deep/idea-like --rtt 30ms --modes direct,speculate --diagnose
  # split mode (jdwpaccel far next to the VM, proxy --far across the link) on a 1 MB/s link
  jdwpaccel bench --workloads Deep/idea-like --rtt 0ms,30ms,100ms --modes direct,speculate,split --bandwidth 1000000
  # an application-sized VM: the first stop through a fresh proxy and a learned one,
  # with the link's bytes and the first stop minus the VM's own start-up
  jdwpaccel bench --workloads BigApp/idea-like,BigApp/vscode-like --rtt 0ms,30ms --modes direct,speculate-fresh,speculate,split-fresh,split --steps 3 --warmup 1
  # Microsoft's java-debug (VS Code's Java debugger, built outside this repository by
  # bench/javadebug/build.sh) beside the vscode-like workload that mimics it
  jdwpaccel bench --java-debug /path/to/java-debug/jdwpaccel-peer --workloads Deep/java-debug,Deep/vscode-like --rtt 30ms,100ms --modes direct,speculate,split --breakpoints 1
  # split mode surviving a link that drops its connections every 2 s
  jdwpaccel bench --workloads Deep/idea-like --rtt 30ms --modes direct,split --steps 20 --drop-every 2s
  # soak: step Deep/idea-like through the proxy for 10 minutes at 5 ms RTT,
  # sampling RSS, goroutines and cache bytes every 5 s
  jdwpaccel bench --soak 10m --out bench/out/soak
`

// benchModes returns the modes named in list, the direct baseline first.
// The speculate mode's speculator has the configuration spec. The journal
// mode writes every session it relays to journalPath; call closeAll after
// the run to flush it.
func benchModes(list, journalPath string, spec speculator.Config, log zerolog.Logger) (modes []bench.Mode, closeAll func() error, err error) {
	var jr *journal.Journal
	closeAll = func() error {
		if jr == nil {
			return nil
		}
		if n := jr.Dropped(); n > 0 {
			log.Warn().Uint64("dropped", n).Msg("the journal could not keep up")
		}
		return jr.Close()
	}
	all := map[string]func() (bench.Mode, error){
		"direct": func() (bench.Mode, error) { return bench.Mode{Name: "direct", Direct: true}, nil },
		"proxy":  func() (bench.Mode, error) { return bench.Mode{Name: "proxy"}, nil },
		// tcp-copy is a plain byte-copy hop: the floor for any proxy.
		"tcp-copy": func() (bench.Mode, error) { return bench.Mode{Name: "tcp-copy", Copy: true}, nil },
		"speculate": func() (bench.Mode, error) {
			sp := speculator.New(spec, log, nil)
			return bench.Mode{Name: "speculate", NewHooks: guarded(sp.Hooks), Stats: sp.Stats}, nil
		},
		// speculate-fresh is speculate with a new speculator for each
		// cell: a fresh proxy, which has learned nothing from the cells
		// before (speculate keeps one for the whole run).
		"speculate-fresh": func() (bench.Mode, error) {
			return bench.Mode{Name: "speculate-fresh", Fresh: func() bench.Mode {
				sp := speculator.New(spec, log, nil)
				return bench.Mode{NewHooks: guarded(sp.Hooks), Stats: sp.Stats}
			}}, nil
		},
		// split is split mode: the far end (speculating at zero RTT) next
		// to the VM, the link between it and the near end (speculating as
		// the speculate mode does); the cell's figures are the near end's.
		"split": func() (bench.Mode, error) {
			return splitMode("split", spec, log), nil
		},
		// split-fresh is split with both ends made anew for each cell.
		"split-fresh": func() (bench.Mode, error) {
			return bench.Mode{Name: "split-fresh", Fresh: func() bench.Mode { return splitMode("split-fresh", spec, log) }}, nil
		},
		// journal is the pass-through proxy with the journal on: against
		// "proxy", what journaling costs the relay.
		"journal": func() (bench.Mode, error) {
			if jr == nil {
				var err error
				if jr, err = journal.Open(journal.Options{Path: journalPath, Logger: log}); err != nil {
					return bench.Mode{}, err
				}
			}
			return bench.Mode{Name: "journal", NewHooks: func(*relay.Session) relay.Hooks {
				return relay.Hooks{Observers: []relay.Observer{jr}}
			}}, nil
		},
	}
	// speculate-journal is speculate with the journal on: what "jdwpaccel
	// journal steps" shows of the speculator's critical path.
	all["speculate-journal"] = func() (bench.Mode, error) {
		if jr == nil {
			var err error
			if jr, err = journal.Open(journal.Options{Path: journalPath, Logger: log}); err != nil {
				return bench.Mode{}, err
			}
		}
		sp := speculator.New(spec, log, nil)
		spHooks := guarded(sp.Hooks)
		return bench.Mode{Name: "speculate-journal", Stats: sp.Stats, NewHooks: func(s *relay.Session) relay.Hooks {
			h := spHooks(s)
			h.Observers = append(h.Observers, jr)
			return h
		}}, nil
	}
	// split-journal is split with the journal on at the near end.
	all["split-journal"] = func() (bench.Mode, error) {
		if jr == nil {
			var err error
			if jr, err = journal.Open(journal.Options{Path: journalPath, Logger: log}); err != nil {
				return bench.Mode{}, err
			}
		}
		m := splitMode("split-journal", spec, log)
		near := m.NewHooks
		m.NewHooks = func(s *relay.Session) relay.Hooks {
			h := near(s)
			h.Observers = append(h.Observers, jr)
			return h
		}
		return m, nil
	}
	for name, mk := range adbBenchModes(log) {
		all[name] = mk
	}
	modes = []bench.Mode{{Name: "direct", Direct: true}}
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if n == "direct" || n == "" {
			continue
		}
		mk, ok := all[n]
		if !ok {
			return nil, closeAll, fmt.Errorf("unknown mode %q", n)
		}
		m, err := mk()
		if err != nil {
			return nil, closeAll, err
		}
		modes = append(modes, m)
	}
	return modes, closeAll, nil
}

// writeDiag writes d's tallies to path.
func writeDiag(path string, d *speculator.Diag) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := d.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

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

// flagGiven reports whether the flag was set on the command line.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// javaDebugWorkloads loads the java-debug peer in dir, if any, and settles
// the java-debug workloads: with a peer, Deep/java-debug joins the default
// list (explicit lists are kept as given); without one, the java-debug
// workloads listed are skipped with a note (the peer is built from another
// project's source, outside the repository, so CI has none).
func javaDebugWorkloads(dir string, wls []bench.Workload, explicit bool, note io.Writer) (*javadebug.Peer, []bench.Workload, error) {
	if dir != "" {
		peer, err := javadebug.Load(dir)
		if err != nil {
			return nil, nil, err
		}
		if !explicit {
			wls = append(wls, bench.Workload{Debuggee: javavm.Deep, Profile: javadebug.Profile})
		}
		return peer, wls, nil
	}
	kept := wls[:0:0]
	for _, w := range wls {
		if w.Profile == javadebug.Profile {
			fmt.Fprintf(note, "jdwpaccel bench: skipping %s: no java-debug build (--java-debug DIR; bench/javadebug/build.sh makes one)\n", w)
			continue
		}
		kept = append(kept, w)
	}
	if len(kept) == 0 {
		return nil, nil, errors.New("no workload left to run")
	}
	return nil, kept, nil
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
	modes := fs.String("modes", "direct,proxy,speculate", "comma-separated `modes`: direct, tcp-copy (a plain byte-copy hop, the floor for any proxy), proxy (speculation off), journal (proxy with the journal on), speculate (one speculator for the whole run: its cells after the first see what earlier sessions taught it), speculate-fresh (a new speculator per cell: a fresh proxy), speculate-journal (speculate with the journal on), split (split mode: jdwpaccel far next to the VM, the link between it and proxy --far), split-fresh (split with both ends new per cell), split-journal (split with the journal on at the near end), adb (a real adb server and a fake device in front of the link: the adb server's own forward), adb-front (the same through \"jdwpaccel adb\" with speculation)")
	journalPath := fs.String("journal", filepath.Join(os.TempDir(), "jdwpaccel-bench.jsonl"), "where the journal mode writes its journal (`PATH`)")
	workloads := fs.String("workloads", "Deep/idea-like,Shallow/idea-like,Deep/vscode-like,Deep/jdb-min", "comma-separated `DEBUGGEE/PROFILE` list (debuggees: Deep, Shallow, NewClasses, ToStringWatch, HotSwap, Server (200 pooled worker threads), BigApp (15,000+ classes loaded before the first stop, 40 pool threads, 30 classes watched at attach, variables three levels deep; its VM takes seconds to start, so it is not in the default list); profiles: jdb-min, idea-like, idea-async (idea-like with its reads sent from 8 JDI threads at once, as IntelliJ's async JDI), vscode-like, java-debug (Microsoft's java-debug itself, driven as VS Code's UI drives it: needs --java-debug, and is added to the default list when it is given))")
	javaDebugDir := fs.String("java-debug", os.Getenv(javadebug.DirEnv), "`directory` of a java-debug build made by bench/javadebug/build.sh (default $"+javadebug.DirEnv+"): runs the java-debug workloads; without it they are skipped")
	breakpoints := fs.Int("breakpoints", 5, "breakpoints the driver sets at attach, as an IDE sets all of its own, up to as many as the debuggee has (Deep: 5, BigApp: 3, the others 1); the extra ones are never hit")
	steps := fs.Int("steps", 8, "measured steps per cell (after the breakpoint stop and the warm-up steps)")
	warmup := fs.Int("warmup", 2, "warm-up steps per cell after the breakpoint stop, not measured")
	rounds := fs.Int("rounds", 1, "run each workload and RTT's modes this many times, in turn (direct, A, B, direct, A, B, ...), pooling each mode's steps: a drift in the machine's speed then weighs on every mode alike (for differences of a few percent, as at 0 ms)")
	out := fs.String("out", "bench/out", "`directory` for bench.json and bench.svg (soak.json and soak.svg with --soak)")
	soak := fs.Duration("soak", 0, "instead of the matrix, step one workload (the first of --workloads if given, else Deep/idea-like) through the proxy with speculation for this `duration` (first --rtt if given, else 5ms), sampling the process's RSS, goroutines and cache bytes")
	soakInterval := fs.Duration("soak-interval", 5*time.Second, "time between soak samples")
	cacheBytes := new(int64)
	bytesVar(fs, cacheBytes, "cache-bytes", speculator.DefaultCacheBytes, "bound on cached reply `bytes` per session of the speculate mode and the soak (units: KiB, MiB, GiB)")
	minRTT := fs.Duration("speculate-min-rtt", 0, "the speculate mode sends speculative commands only when the measured round trip is at least this `duration`; 0 adapts (as the proxy's flag)")
	bandwidth := new(int64)
	bytesVar(fs, bandwidth, "bandwidth", 0, "limit the emulated link to this many `bytes` per second in each direction (units: KiB, MiB, kB, MB; 0: unlimited)")
	dropEvery := fs.Duration("drop-every", 0, "a link fault for split-mode cells: the link closes its connections every `duration`, and their sessions resume across each drop (other modes' links carry the debugger's session itself: no drops there); 0: none")
	compress := fs.Bool("compress", true, fmt.Sprintf("split mode's ends compress their link (as their --compress), unless the near end's start probe measured its round trip under %v (proxy --far's default --compress-min-rtt)", split.DefaultCompressMinRTT))
	writeBehind := fs.Bool("write-behind", true, "the speculate mode answers state-setting commands at once when proven (as the proxy's flag)")
	diagnose := fs.Bool("diagnose", false, "tally the speculate mode's speculative commands (sent, used, wasted) by command and rule, and its misses by stop, into diag.txt in --out")
	var lf logFlags
	lf.register(fs)
	lf.level = "warn"
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: jdwpaccel bench [flags]\n\nRun IDE-like JDI workloads against real JVMs behind an emulated link, directly and through jdwpaccel,\nand report step times, serial round trips per step, speedups and the digest check.\n\nFlags:\n")
		printFlags(fs)
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
	if *soak > 0 {
		o := soakOptions{duration: *soak, interval: *soakInterval, cacheBytes: *cacheBytes, out: *out,
			rtt: "5ms", workload: "Deep/idea-like"}
		fs.Visit(func(f *flag.Flag) { // flags given explicitly replace the soak's defaults
			switch f.Name {
			case "rtt":
				o.rtt = *rtts
			case "workloads":
				o.workload = *workloads
			}
		})
		return benchSoak(ctx, e, log, o)
	}
	if *bandwidth < 0 || *dropEvery < 0 || *rounds < 1 {
		fmt.Fprintf(e.stderr, "jdwpaccel bench: bad --bandwidth %d, --drop-every %v or --rounds %d\n", *bandwidth, *dropEvery, *rounds)
		return exitUsage
	}
	cfg := bench.Config{Steps: *steps, Warmup: *warmup, Rounds: *rounds, Bandwidth: *bandwidth, DropEvery: *dropEvery, Compress: *compress, Log: log, Progress: progressBar(e.stderr)}
	if cfg.RTTs, err = parseRTTs(*rtts); err == nil {
		if cfg.Workloads, err = parseWorkloads(*workloads); err == nil && *breakpoints < 1 {
			err = fmt.Errorf("bad --breakpoints %d", *breakpoints)
		}
		if err == nil {
			cfg.JavaDebug, cfg.Workloads, err = javaDebugWorkloads(*javaDebugDir, cfg.Workloads, flagGiven(fs, "workloads"), e.stderr)
		}
		for i := range cfg.Workloads {
			cfg.Workloads[i].Breakpoints = min(*breakpoints, javavm.MaxBreakpoints(cfg.Workloads[i].Debuggee))
			if cfg.Workloads[i].Profile == javadebug.Profile {
				cfg.Workloads[i].Breakpoints = 1 // java-debug sets the debuggee's own only (bench.runJavaDebug)
			}
		}
		if err == nil {
			var closeJournal func() error
			// The speculator is told the emulated link's bandwidth (which
			// decides whether a class snapshot pays); unlimited leaves it
			// to its own assumption.
			spec := speculator.Config{CacheBytes: *cacheBytes, MinRTT: *minRTT, WriteBehind: *writeBehind, Bandwidth: *bandwidth}
			cfg.Modes, closeJournal, err = benchModes(*modes, *journalPath, spec, log)
			defer func() {
				if err := closeJournal(); err != nil {
					log.Error().Err(err).Msg("journal not written completely")
				}
			}()
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
	var diag *speculator.Diag
	if *diagnose {
		var stop func()
		diag, stop = speculator.Diagnose()
		defer stop()
	}
	rep, runErr := bench.Run(ctx, cfg)
	if rep != nil {
		rep.WriteTable(e.stdout)
		if *dropEvery > 0 {
			writeDrops(e.stdout, rep)
		}
		if err := writeReport(*out, rep); err != nil {
			fmt.Fprintf(e.stderr, "jdwpaccel bench: %v\n", err)
			return exitError
		}
		fmt.Fprintf(e.stdout, "\nwrote %s and %s\n", filepath.Join(*out, "bench.json"), filepath.Join(*out, "bench.svg"))
	}
	if diag != nil {
		path := filepath.Join(*out, "diag.txt")
		if err := writeDiag(path, diag); err != nil {
			fmt.Fprintf(e.stderr, "jdwpaccel bench: %v\n", err)
			return exitError
		}
		fmt.Fprintf(e.stdout, "wrote %s\n", path)
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

// writeDrops reports how split-mode cells fared with --drop-every: the
// drops, whether every stop's digest still equals the direct run's, and
// the time lost per drop (the steps' time beyond their median, over the
// drops).
func writeDrops(w io.Writer, rep *bench.Report) {
	fmt.Fprintf(w, "\nlink drops (split mode):\n")
	for _, c := range rep.Cells {
		if c.LinkDrops == 0 {
			continue
		}
		lost := 0.0
		for _, ms := range c.StepMS {
			lost += max(ms-c.MedianMS, 0)
		}
		fmt.Fprintf(w, "  %s %s %gms: %d steps, %d drops, digests equal: %v, about %.0f ms lost per drop\n",
			c.Workload, c.Mode, c.RTTMS, c.Stops, c.LinkDrops, c.DigestsMatch, lost/float64(c.LinkDrops))
	}
}

func writeReport(dir string, rep *bench.Report) error {
	return writeFiles(dir, map[string]func(io.Writer) error{"bench.json": rep.WriteJSON, "bench.svg": rep.WriteSVG})
}

// writeFiles creates dir and writes each named file in it.
func writeFiles(dir string, files map[string]func(io.Writer) error) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, write := range files {
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

// soakOptions are the flags of "jdwpaccel bench --soak".
type soakOptions struct {
	duration, interval time.Duration
	cacheBytes         int64
	rtt, workload, out string
}

// benchSoak runs the soak and writes its table, soak.json and soak.svg.
func benchSoak(ctx context.Context, e *env, log zerolog.Logger, o soakOptions) int {
	rtts, err := parseRTTs(o.rtt)
	if err != nil {
		fmt.Fprintf(e.stderr, "jdwpaccel bench: %v\n", err)
		return exitUsage
	}
	wls, err := parseWorkloads(o.workload)
	if err != nil {
		fmt.Fprintf(e.stderr, "jdwpaccel bench: %v\n", err)
		return exitUsage
	}
	build, err := javavm.Compile(ctx)
	if err != nil {
		fmt.Fprintf(e.stderr, "jdwpaccel bench: building the Java workloads: %v\n", err)
		return exitError
	}
	sp := speculator.New(speculator.Config{CacheBytes: o.cacheBytes}, log, nil)
	// The soak's sessions follow each other: the process holds one at a
	// time, under the limit the proxy sets for one (memory.go).
	if mem := newMemoryLimiter(o.cacheBytes); mem != nil {
		mem.add(1)
	}
	bound := memoryBound(o.cacheBytes, 1)
	fmt.Fprintf(e.stderr, "soak: %s through jdwpaccel at %v RTT for %v, a sample every %v\n", wls[0], rtts[0], o.duration, o.interval)
	rep, runErr := bench.Soak(ctx, bench.SoakConfig{
		Duration: o.duration, Interval: o.interval, RTT: rtts[0], Workload: wls[0],
		NewHooks: guarded(sp.Hooks), CacheLimit: o.cacheBytes, RSSBound: bound, Build: build, Log: log,
		Cache: func() (int64, int64) { s := sp.Stats(); return s.CacheBytes, s.CacheEntries },
		Progress: func(s bench.SoakSample) {
			fmt.Fprintf(e.stderr, "  %5.0f s  RSS %6.1f MiB  goroutines %4d  cache %6.2f MiB  steps %6d\n",
				s.ElapsedS, float64(s.RSSBytes)/(1<<20), s.Goroutines, float64(s.CacheBytes)/(1<<20), s.Steps)
		},
	})
	if rep != nil {
		rep.WriteTable(e.stdout)
		if err := writeFiles(o.out, map[string]func(io.Writer) error{"soak.json": rep.WriteJSON, "soak.svg": rep.WriteSVG}); err != nil {
			fmt.Fprintf(e.stderr, "jdwpaccel bench: %v\n", err)
			return exitError
		}
		fmt.Fprintf(e.stdout, "\nwrote %s and %s\n", filepath.Join(o.out, "soak.json"), filepath.Join(o.out, "soak.svg"))
	}
	if runErr != nil {
		fmt.Fprintf(e.stderr, "jdwpaccel bench: soak: %v\n", runErr)
		return exitError
	}
	if rep.OverBound() {
		fmt.Fprintf(e.stderr, "jdwpaccel bench: soak: max RSS %.1f MiB over the bound of %.1f MiB for one session with --cache-bytes %d\n",
			float64(rep.MaxRSSBytes)/(1<<20), float64(bound)/(1<<20), o.cacheBytes)
		return exitError
	}
	return exitOK
}
