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
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench"
	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/bench/link"
	"github.com/jdwpaccel/jdwpaccel/ddmtap"
	"github.com/jdwpaccel/jdwpaccel/ddmtap/fakevm"
	"github.com/jdwpaccel/jdwpaccel/relay"
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
	pf := proxyFlags{speculate: true, maxPacket: 0, minRTT: "0s", journalRaw: 4096}
	pf.vm = "127.0.0.1:0" // every run dials its own link (bench.Run, demoKeep)
	st, err := buildStack(ctx, &pf, log)
	if err != nil {
		fmt.Fprintf(e.stderr, "jdwpaccel demo: %v\n", err)
		return exitError
	}
	// HotSpot speaks no DDM, so the page's thread and heap views are fed by
	// a fake Android VM (no real ART runs here), watched by a real DDM tap;
	// its name says it is simulated, and the page lists the real JVM first.
	ddm := &web.DDMSource{}
	if mon, err := startFakeAndroid(ctx, log, st); err != nil {
		log.Warn().Err(err).Msg("no fake Android VM for the page")
	} else {
		st.holder = mon
		ddm.Monitors = func() []*ddmtap.Monitor { return []*ddmtap.Monitor{mon.Monitor()} }
	}
	page := newDemoPage(ddm, st.spec)
	learnHooks := page.startRun("learning this debugger")
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
	// comes after the 0 and 1 ms ones). The accelerated side uses this
	// stack's speculator, so the page shows its sessions and figures. The
	// split row runs split mode's two ends, each with its own speculator:
	// the far end next to the VM, the link between it and the near end.
	accelMode := bench.Mode{Name: "jdwpaccel", NewHooks: learnHooks, Stats: st.spec.Stats}
	splitRow := splitMode("split", speculator.Config{Enabled: true}, log)
	cfg := bench.Config{
		RTTs:      []time.Duration{*rtt},
		Workloads: []bench.Workload{{Profile: *workload, Debuggee: javavm.Deep}},
		Build:     build, Log: log,
	}
	if *learn {
		say("first, one session per side on a 0 ms link, not measured: jdwpaccel learns this debugger")
		lc := cfg
		lc.RTTs = []time.Duration{0}
		lc.Modes, lc.Steps, lc.Warmup = []bench.Mode{{Name: "direct", Direct: true}, accelMode, splitRow}, 2, 0
		if _, err := bench.Run(ctx, lc); err != nil && !errors.Is(err, bench.ErrDigestMismatch) {
			fmt.Fprintf(e.stderr, "jdwpaccel demo: %v\n", err)
			return exitError
		}
	}
	accelMode.NewHooks = page.startRun("comparison run")
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
	direct, accel, splitCell := rep.Cells[0], rep.Cells[1], rep.Cells[2]
	say("")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tmedian step\t95% CI\tmin-max\t")
	for _, c := range rep.Cells {
		fmt.Fprintf(tw, "%s\t%.0f ms\t%.0f-%.0f ms\t%.0f-%.0f ms\t\n", c.Mode, c.MedianMS, c.MedianCI[0], c.MedianCI[1], c.MinMS, c.MaxMS)
	}
	tw.Flush()
	say("")
	if accel.Noise {
		say("speedup per step: ~%.1fx (noise: the 95%% intervals of the two medians overlap; try more --steps)", accel.Speedup)
	} else {
		say("speedup per step: %.1fx (95%% CI %.1f-%.1fx)", accel.Speedup, accel.SpeedupCI[0], accel.SpeedupCI[1])
	}
	approx := ""
	if splitCell.Noise {
		approx = "~"
	}
	say("split mode, speedup per step: %s%.1fx (jdwpaccel far next to the VM, proxy --far across the link)", approx, splitCell.Speedup)
	if *learn {
		say("measured as the README's Results table: after a session that learned this debugger, without the breakpoint stop and the first step")
	} else {
		say("measured on a first session (--learn=false): the steps in which jdwpaccel learns this debugger are included, so the speedup is lower than the README's Results table's")
	}
	if a := accel.Stats; a != nil {
		say("cache: %d hits, %d belays, %d misses; %d speculative commands, %d wasted",
			a.Hits, a.Belays, a.Misses, a.SpecSent, a.SpecWasted)
	}
	if !accel.DigestsMatch || !splitCell.DigestsMatch {
		say("digest check: FAILED, the debugger saw different values through jdwpaccel: %s", strings.Join(rep.Mismatches, "; "))
		return exitError
	}
	say("digest check: OK, the debugger saw identical values at all %d stops", len(direct.Digests))
	say("")
	self := selfCommand()
	if !*keep {
		printAttachHelp(out, self, build, *rtt, *listen, false)
		return exitOK
	}
	return demoKeep(ctx, out, self, build, *rtt, *listen, st, page.startRun("kept for your IDE"), log)
}

// servePage serves the demo's live page and /metrics at addr.
func servePage(ctx context.Context, addr string, page *demoPage, st *stack, log zerolog.Logger) (string, error) {
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

// selfCommand is how the user runs this program again: "go run
// ./cmd/jdwpaccel" when it was built by go run (its executable is in a
// go-build directory), "jdwpaccel" when that name on PATH is this
// executable, and its absolute path otherwise.
func selfCommand() string {
	exe, err := os.Executable()
	if err != nil {
		return "jdwpaccel"
	}
	return selfCommandFor(exe, exec.LookPath)
}

func selfCommandFor(exe string, lookPath func(string) (string, error)) string {
	if strings.Contains(filepath.ToSlash(exe), "/go-build") {
		return "go run ./cmd/jdwpaccel"
	}
	if p, err := lookPath("jdwpaccel"); err == nil {
		a, aerr := os.Stat(p)
		b, berr := os.Stat(exe)
		if aerr == nil && berr == nil && os.SameFile(a, b) {
			return "jdwpaccel"
		}
	}
	return exe
}

// startFakeAndroid serves a fake Dalvik VM with thread churn and a DDM
// holder watching it, for the page.
func startFakeAndroid(ctx context.Context, log zerolog.Logger, st *stack) (*ddmtap.Holder, error) {
	vm, err := fakevm.Listen("127.0.0.1:0", fakevm.Config{
		Profile: fakevm.Dalvik, Seed: 7, Threads: 12, AppName: demoFakeAppName,
		ChurnInterval: 700 * time.Millisecond, GCInterval: 3 * time.Second, HeapObjects: 4000, Logger: zerolog.Nop(),
	})
	if err != nil {
		return nil, err
	}
	go vm.Serve(ctx) //nolint:errcheck // ends with ctx
	h := ddmtap.NewHolder(ddmtap.HolderConfig{
		Addr: vm.Addr(), KnownDDM: true, Logger: log, Metrics: ddmtap.NewMetrics(st.reg),
		Options: ddmtap.Options{PollInterval: time.Second, ReplyTimeout: 3 * time.Second},
	})
	go h.Run(ctx) //nolint:errcheck // ends with ctx
	go func() {
		t := time.NewTicker(3 * time.Second)
		defer t.Stop()
		for {
			h.Monitor().RequestHeap() //nolint:errcheck // unsupported features are shown as such
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return h, nil
}

// printAttachHelp tells the user how to attach an IDE; self is how to run
// jdwpaccel (see selfCommand).
func printAttachHelp(out io.Writer, self string, build *javavm.Build, rtt time.Duration, listen string, running bool) {
	if running {
		fmt.Fprintf(out, "The deep debuggee is waiting behind a %v link and jdwpaccel listens on %s. Attach your IDE there\n", rtt, listen)
		fmt.Fprintf(out, "(as often as you like: the VM listens again on the same port after each debugger leaves):\n")
	} else {
		fmt.Fprintf(out, "To try it with your IDE, run \"%s demo --keep\", or set it up by hand, each in its own terminal:\n", self)
		if strings.HasPrefix(self, "go run") {
			fmt.Fprintf(out, "  (from the repository's root; or build it once: go build -o jdwpaccel ./cmd/jdwpaccel, then use ./jdwpaccel)\n")
		}
		fmt.Fprintf(out, "  java -agentlib:jdwp=transport=dt_socket,server=y,suspend=y,address=127.0.0.1:5005 -cp %s Deep\n", build.Classes)
		fmt.Fprintf(out, "  %s link --listen 127.0.0.1:5006 --to 127.0.0.1:5005 --rtt %v\n", self, rtt)
		fmt.Fprintf(out, "  %s proxy --vm 127.0.0.1:5006 --listen %s --http-addr 127.0.0.1:8780\n", self, listen)
		fmt.Fprintf(out, "  (split mode instead of the last line: the far end next to the VM, the link in front of it, the near end)\n")
		fmt.Fprintf(out, "  %s far --vm 127.0.0.1:5005 --listen 127.0.0.1:8720\n", self)
		fmt.Fprintf(out, "  %s link --listen 127.0.0.1:5007 --to 127.0.0.1:8720 --rtt %v\n", self, rtt)
		fmt.Fprintf(out, "  %s proxy --far 127.0.0.1:5007 --listen %s --http-addr 127.0.0.1:8780\n", self, listen)
		fmt.Fprintf(out, "then attach your IDE to %s:\n", listen)
	}
	host, port, _ := net.SplitHostPort(listen)
	fmt.Fprintf(out, "  jdb:      jdb -connect com.sun.jdi.SocketAttach:hostname=%s,port=%s\n", host, port)
	fmt.Fprintf(out, "  IntelliJ / Android Studio: Run > Edit Configurations > + > Remote JVM Debug, host %s, port %s\n", host, port)
	fmt.Fprintf(out, "  VS Code:  launch.json {\"type\": \"java\", \"request\": \"attach\", \"hostName\": %q, \"port\": %s}\n", host, port)
	fmt.Fprintf(out, "  and set a breakpoint at Deep.java line %d (the source is in %s).\n", mustLine(javavm.Deep), build.Source)
}

func mustLine(debuggee string) int {
	n, _ := javavm.BreakpointLine(debuggee)
	return n
}

// demoKeep keeps a Deep VM, the link and the proxy running on listen until
// the user interrupts. The VM's agent listens on a fixed port, and the link
// dials it with VM.Dial, so debuggers can attach one after another.
func demoKeep(ctx context.Context, out io.Writer, self string, build *javavm.Build, rtt time.Duration, listen string, st *stack, hooks func(*relay.Session) relay.Hooks, log zerolog.Logger) int {
	vm, err := javavm.Start(ctx, build, javavm.Deep, javavm.VMOptions{FixedPort: true})
	if err != nil {
		fmt.Fprintf(out, "cannot start the debuggee: %v\n", err)
		return exitError
	}
	defer vm.Stop()
	lln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintf(out, "cannot start the link: %v\n", err)
		return exitError
	}
	lk, err := link.Serve(ctx, lln, vm.Dial, link.Config{RTT: rtt, Seed: 1}, log)
	if err != nil {
		lln.Close()
		fmt.Fprintf(out, "cannot start the link: %v\n", err)
		return exitError
	}
	defer lk.Close()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		fmt.Fprintf(out, "cannot listen on %s: %v\n", listen, err)
		return exitError
	}
	printAttachHelp(out, self, build, rtt, ln.Addr().String(), true)
	fmt.Fprintln(out, "Press Ctrl-C to stop.")
	cfg := st.cfg
	cfg.DialVM = relay.DialTCP(lk.Addr().String())
	cfg.NewHooks = hooks
	if err := relay.NewServer(cfg).Serve(ctx, ln); err != nil {
		return exitError
	}
	return exitOK
}
