package demo

import (
	"context"
	"fmt"
	"io"
	"net"
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
	"github.com/jdwpaccel/jdwpaccel/share"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// StartFakeAndroid serves a fake Dalvik VM with thread churn and a DDM
// holder watching it (its metrics registered in reg), for the page, until
// ctx ends.
func StartFakeAndroid(ctx context.Context, log zerolog.Logger, reg prometheus.Registerer) (*ddmtap.Holder, error) {
	vm, err := fakevm.Listen("127.0.0.1:0", fakevm.Config{
		Profile: fakevm.Dalvik, Seed: 7, Threads: 12, AppName: FakeAppName,
		ChurnInterval: 700 * time.Millisecond, GCInterval: 3 * time.Second, HeapObjects: 4000, Logger: zerolog.Nop(),
	})
	if err != nil {
		return nil, err
	}
	go vm.Serve(ctx) //nolint:errcheck // ends with ctx
	h := ddmtap.NewHolder(ddmtap.HolderConfig{
		Addr: vm.Addr(), KnownDDM: true, Logger: log, Metrics: ddmtap.NewMetrics(reg),
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

// PrintAttachHelp tells the user how to attach an IDE; self is how to run
// jdwpaccel (see SelfCommand).
func PrintAttachHelp(out io.Writer, self string, build *javavm.Build, rtt time.Duration, listen string, running bool) {
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

// SelfCommand is how the user runs this program again: "go run
// ./cmd/jdwpaccel" when it was built by go run (its executable is in a
// go-build directory), "jdwpaccel" when that name on PATH is this
// executable, and its absolute path otherwise.
func SelfCommand() string {
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

// Keep keeps a Deep VM, the link and a relay server with cfg (its DialVM
// and NewHooks are Keep's) and hooks running on listen until ctx ends.
// The VM's agent listens on a fixed port, and the link dials it with
// VM.Dial, so debuggers can attach one after another. What fails is
// printed on out and returned.
func Keep(ctx context.Context, out io.Writer, self string, build *javavm.Build, rtt time.Duration, listen string, cfg relay.Config, hooks func(*relay.Session) relay.Hooks, log zerolog.Logger) error {
	vm, err := javavm.Start(ctx, build, javavm.Deep, javavm.VMOptions{FixedPort: true})
	if err != nil {
		fmt.Fprintf(out, "cannot start the debuggee: %v\n", err)
		return err
	}
	defer vm.Stop()
	lln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintf(out, "cannot start the link: %v\n", err)
		return err
	}
	lk, err := link.Serve(ctx, lln, vm.Dial, link.Config{RTT: rtt, Seed: 1}, log)
	if err != nil {
		lln.Close()
		fmt.Fprintf(out, "cannot start the link: %v\n", err)
		return err
	}
	defer lk.Close()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		fmt.Fprintf(out, "cannot listen on %s: %v\n", listen, err)
		return err
	}
	PrintAttachHelp(out, self, build, rtt, ln.Addr().String(), true)
	fmt.Fprintln(out, "Press Ctrl-C to stop.")
	cfg.DialVM = relay.DialTCP(lk.Addr().String())
	cfg.NewHooks = hooks
	front := share.NewFront(lk.Addr().String(), share.Config{Logger: cfg.Logger, MaxPacketSize: cfg.MaxPacketSize, Metrics: cfg.Metrics})
	return share.Serve(ctx, relay.NewServer(cfg), front, ln, nil, cfg.MaxHandshakes)
}

// PrintComparison prints the benchmark's comparison of the demo (cells:
// direct, through jdwpaccel, split mode) on out: each mode's median step,
// the speedups, how they were measured (learned: after a session that
// learned this debugger), the cache's figures and the digest check, which
// it returns (false: the debugger saw different values through
// jdwpaccel).
func PrintComparison(out io.Writer, rep *bench.Report, learned bool) bool {
	say := func(format string, a ...any) { fmt.Fprintf(out, format+"\n", a...) }
	direct, accel, splitCell := rep.Cells[0], rep.Cells[1], rep.Cells[2]
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tmedian step\t95% CI\tmin-max\t")
	for _, c := range rep.Cells {
		fmt.Fprintf(tw, "%s\t%.0f ms\t%.0f-%.0f ms\t%.0f-%.0f ms\t\n", c.Mode, c.MedianMS, c.MedianCI[0], c.MedianCI[1], c.MinMS, c.MaxMS)
	}
	tw.Flush()
	fmt.Fprintln(out)
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
	if learned {
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
		return false
	}
	say("digest check: OK, the debugger saw identical values at all %d stops", len(direct.Digests))
	fmt.Fprintln(out)
	return true
}
