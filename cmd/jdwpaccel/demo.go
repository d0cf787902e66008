package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench"
	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/ddmtap"
	"github.com/jdwpaccel/jdwpaccel/demo"
	"github.com/jdwpaccel/jdwpaccel/speculator"
	"github.com/jdwpaccel/jdwpaccel/web"
	"github.com/rs/zerolog"
)

const demoExamples = `
Examples:
  jdwpaccel demo                 # about a minute; prints the side-by-side result
  jdwpaccel demo --rtt 100ms     # a cross-region link
  jdwpaccel demo --keep          # then keeps VM, link and proxy up for your IDE
`

func cmdDemo(ctx context.Context, e *env, args []string) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	rtt := fs.Duration("rtt", 30*time.Millisecond, "round-trip time of the emulated link")
	steps := fs.Int("steps", 6, "steps to measure on each side (after the breakpoint stop and one step, which are not measured)")
	learn := fs.Bool("learn", true, "first run one unmeasured session per side on a 0 ms link, so that jdwpaccel has learned this debugger as in the README's Results table; false measures a first session, learning included")
	workload := fs.String("profile", javavm.ProfileIdeaLike, "driver `profile`: jdb-min, idea-like or vscode-like")
	httpAddr := fs.String("http-addr", "127.0.0.1:0", "serve the live monitor page at `ADDR` (empty: off)")
	keep := fs.Bool("keep", false, "after the comparison, keep a VM, the link and the proxy running so you can attach an IDE")
	listen := fs.String("listen", "127.0.0.1:8700", "with --keep, where the proxy listens for your IDE")
	var lf logFlags
	lf.register(fs)
	lf.level = "warn"
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: jdwpaccel demo [flags]\n\nBuild the bundled deep debuggee (27 frames, 26 threads), put an emulated slow link in front of it, and\nstep it with an IntelliJ-like JDI client directly, through jdwpaccel and in split mode, side by side.\n\nFlags:\n")
		printFlags(fs)
		fmt.Fprint(fs.Output(), demoExamples)
	}
	if code, ok := parseFlags(fs, args, e); !ok {
		return code
	}
	log, err := lf.logger(e.stderr)
	if err != nil {
		fmt.Fprintf(e.stderr, "jdwpaccel demo: %v\n", err)
		return exitUsage
	}
	if *httpAddr != "" {
		if err := checkListen("--http-addr", *httpAddr, false, log); err != nil {
			fmt.Fprintf(e.stderr, "jdwpaccel demo: %v\n", err)
			return exitUsage
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := e.stdout
	say := func(format string, a ...any) { fmt.Fprintf(out, format+"\n", a...) }

	say("jdwpaccel demo: an IDE-like debugger (%s) stepping a 27-frame, 26-thread program over a %v link.", *workload, *rtt)
	say("building the bundled debuggees and the JDI driver (javac)...")
	build, err := javavm.Compile(ctx)
	if err != nil {
		fmt.Fprintf(e.stderr, "jdwpaccel demo: %v\n(the demo needs a JDK: sudo apt-get install -y openjdk-17-jdk-headless)\n", err)
		return exitError
	}

	// The accelerated side: one proxy stack, with the live page. The VM
	// address is filled in per run.
	pf := proxyFlags{speculate: true, writeBehind: true, maxPacket: 0, journalRaw: 4096} // as "proxy" and "bench" run by default
	pf.vm = "127.0.0.1:0"                                                                // every run dials its own link (bench.Run, demoKeep)
	st, err := buildStack(ctx, &pf, log)
	if err != nil {
		fmt.Fprintf(e.stderr, "jdwpaccel demo: %v\n", err)
		return exitError
	}
	// HotSpot speaks no DDM, so the page's thread and heap views are fed by
	// a fake Android VM (no real ART runs here), watched by a real DDM tap;
	// its name says it is simulated, and the page lists the real JVM first.
	ddm := &web.DDMSource{}
	if mon, err := demo.StartFakeAndroid(ctx, log, st.reg); err != nil {
		log.Warn().Err(err).Msg("no fake Android VM for the page")
	} else {
		st.holder = mon
		ddm.Monitors = func() []*ddmtap.Monitor { return []*ddmtap.Monitor{mon.Monitor()} }
	}
	page := demo.NewPage(ddm, st.spec)
	learnHooks := page.StartRun("learning this debugger")
	if *httpAddr != "" {
		url, err := servePage(ctx, *httpAddr, page, st, log)
		if err != nil {
			fmt.Fprintf(e.stderr, "jdwpaccel demo: %v\n", err)
			return exitError
		}
		say("live monitor (threads, heap, accelerator): %s", url)
	}

	// The comparison is one row of the benchmark, measured as the README's
	// Results table is: the same chain, the same statistics (the
	// breakpoint stop and one step not measured), the same digest check,
	// and accelerated sides that have already learned this debugger (the
	// table's speculators are shared across its cells, so its 30 ms cell
	// comes after the 0 and 1 ms ones, each of the same length as the
	// measured one). The accelerated side uses this
	// stack's speculator, so the page shows its sessions and figures. The
	// split row runs split mode's two ends, each with its own speculator:
	// the far end next to the VM, the link between it and the near end.
	accelMode := bench.Mode{Name: "jdwpaccel", NewHooks: learnHooks, Stats: st.spec.Stats}
	splitRow := splitMode("split", speculator.Config{WriteBehind: true}, log)
	cfg := bench.Config{
		RTTs:      []time.Duration{*rtt},
		Workloads: []bench.Workload{{Profile: *workload, Debuggee: javavm.Deep}},
		Build:     build, Log: log,
	}
	if *learn {
		say("first, one session per side on a 0 ms link, not measured: jdwpaccel learns this debugger")
		lc := cfg
		lc.RTTs = []time.Duration{0}
		lc.Modes, lc.Steps, lc.Warmup = []bench.Mode{{Name: "direct", Direct: true}, accelMode, splitRow}, *steps, 1
		if _, err := bench.Run(ctx, lc); err != nil && !errors.Is(err, bench.ErrDigestMismatch) {
			fmt.Fprintf(e.stderr, "jdwpaccel demo: %v\n", err)
			return exitError
		}
	}
	accelMode.NewHooks = page.StartRun("comparison run")
	cfg.Modes = []bench.Mode{{Name: "direct", Direct: true}, accelMode, splitRow}
	cfg.Steps, cfg.Warmup = *steps, 1
	cfg.Progress = func(done, total int, label string) {
		if done < total {
			say("run %d of %d: a fresh JVM behind a %v link, %s", done+1, total, *rtt, label)
		}
	}
	rep, err := bench.Run(ctx, cfg)
	if err != nil && !errors.Is(err, bench.ErrDigestMismatch) {
		fmt.Fprintf(e.stderr, "jdwpaccel demo: %v\n", err)
		return exitError
	}
	if !demo.PrintComparison(out, rep, *learn) {
		return exitError
	}
	self := demo.SelfCommand()
	if !*keep {
		demo.PrintAttachHelp(out, self, build, *rtt, *listen, false)
		return exitOK
	}
	if err := demo.Keep(ctx, out, self, build, *rtt, *listen, st.cfg, page.StartRun("kept for your IDE"), log); err != nil {
		return exitError
	}
	return exitOK
}

// servePage serves the demo's live page and /metrics at addr.
func servePage(ctx context.Context, addr string, page *demo.Page, st *stack, log zerolog.Logger) (string, error) {
	h := web.NewHandler(page, st.reg, log)
	context.AfterFunc(ctx, h.Close)
	mux := http.NewServeMux()
	mux.Handle("/", h)
	a, err := serveHTTP(ctx, addr, mux, log, "monitor")
	if err != nil {
		return "", err
	}
	return "http://" + a.String() + "/", nil
}
