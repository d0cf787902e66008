package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/jdwpaccel/jdwpaccel/ddmtap"
	"github.com/jdwpaccel/jdwpaccel/ddmtap/fakevm"
	"github.com/jdwpaccel/jdwpaccel/discover"
	"github.com/jdwpaccel/jdwpaccel/feed"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// ddmMode is the --ddm flag: off, on (DDM only for VMs known or found to
// be Android runtimes) or force (every VM is assumed to speak DDM).
type ddmMode uint8

const (
	ddmOff ddmMode = iota
	ddmOn
	ddmForce
)

func (m *ddmMode) String() string {
	if m == nil {
		return "true"
	}
	return [...]string{"false", "true", "force"}[*m]
}

func (m *ddmMode) Set(s string) error {
	switch s {
	case "false", "0", "off":
		*m = ddmOff
	case "true", "1", "on":
		*m = ddmOn
	case "force":
		*m = ddmForce
	default:
		return fmt.Errorf("want true, false or force, not %q", s)
	}
	return nil
}

// IsBoolFlag lets --ddm stand alone, as before it took force.
func (m *ddmMode) IsBoolFlag() bool { return true }

// takes lets "--ddm force" (and --ddm false, ...) be written without "=".
func (m *ddmMode) takes(word string) bool { return new(ddmMode).Set(word) == nil }

// ddmFlags are the proxy's DDM monitor flags.
type ddmFlags struct {
	mode      ddmMode
	poll      time.Duration
	timeout   time.Duration
	reconnect time.Duration
}

func (f *ddmFlags) register(fs *flag.FlagSet) {
	f.mode = ddmOn
	fs.Var(&f.mode, "ddm", "monitor threads and heap over DDM: `true|false|force`. true: only VMs found through adb, or whose reply to the debugger's VirtualMachine.Version names an Android runtime, get DDM (and are then held between debuggers); force: every VM is sent DDM at once (HotSpot can crash on it)")
	fs.DurationVar(&f.poll, "ddm-poll", 4*time.Second, "DDM thread status poll `interval`")
	fs.DurationVar(&f.timeout, "ddm-timeout", 5*time.Second, "how long a DDM request may go unanswered before its feature is marked unsupported")
	fs.DurationVar(&f.reconnect, "ddm-reconnect-delay", time.Second, "pause before reconnecting to a DDM VM after a debugger detaches")
}

// setupDDM starts the DDM holder for the VM at vmAddr and wires it into cfg
// (cfg.DialVM dials through it). The holder runs until ctx ends or stop is
// called; stop ends it (disabling what it enabled on a held connection and
// closing it) and waits for it: call it once the relay server has
// returned. onThread (may be nil) gets the monitor's thread changes from
// the holder's start. With DDM disabled it changes nothing and returns nil
// and a no-op stop.
func setupDDM(ctx context.Context, log zerolog.Logger, reg prometheus.Registerer, vmAddr string, f ddmFlags, cfg *relay.Config,
	onThread func(ddmtap.ThreadChange)) (h *ddmtap.Holder, stop func()) {
	if f.mode == ddmOff {
		return nil, func() {}
	}
	h = ddmtap.NewHolder(ddmtap.HolderConfig{
		OnThreadChange:   onThread,
		Addr:             vmAddr,
		KnownDDM:         f.mode == ddmForce,
		Logger:           log,
		Metrics:          ddmtap.NewMetrics(reg),
		Options:          ddmtap.Options{PollInterval: f.poll, ReplyTimeout: f.timeout},
		ReconnectDelay:   f.reconnect,
		HandshakeTimeout: cfg.HandshakeTimeout,
	})
	cfg.DialVM = h.Dial // the held connection, with the DDM tap as its hooks
	hctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.Run(hctx) //nolint:errcheck // Run returns nil when hctx ends
	}()
	return h, func() {
		cancel()
		<-done
	}
}

// ddmVMs gives each VM discovery finds its own DDM holder and monitor.
type ddmVMs struct {
	flags   ddmFlags
	metrics *ddmtap.Metrics // shared by every VM's monitor (no per-VM labels)
	mons    *ddmtap.Monitors
	feed    *feed.Feed // gets each monitor's thread changes
}

func newDDMVMs(f ddmFlags, reg prometheus.Registerer, fd *feed.Feed) *ddmVMs {
	return &ddmVMs{flags: f, metrics: ddmtap.NewMetrics(reg), mons: ddmtap.NewMonitors(), feed: fd}
}

// ddmThreadsTo records a DDM monitor's thread changes as VM vm's events
// in fd.
func ddmThreadsTo(fd *feed.Feed, vm string) func(ddmtap.ThreadChange) {
	return func(c ddmtap.ThreadChange) {
		k := feed.KindDDMThreadStart
		switch c.Kind {
		case ddmtap.ThreadRenamed:
			k = feed.KindDDMThreadRename
		case ddmtap.ThreadDied:
			k = feed.KindDDMThreadDeath
		}
		fd.DDMThread(vm, k, c.ID, c.Name, c.Time)
	}
}

// start gives vm a DDM holder dialling with dial (cfg dials through it
// then) unless it is a scanned local JVM; stop ends it (see
// ddmtap.Monitors.Start). start returns a no-op stop and leaves cfg alone
// when the VM gets no holder.
func (d *ddmVMs) start(ctx context.Context, vm discover.VM, dial discover.DialFunc, cfg *relay.Config) (stop func()) {
	if vm.Kind == discover.KindScan {
		// Scanned VMs are local JVMs with a dt_socket agent, which never
		// speak DDM. A held connection would gain nothing, and would
		// release a suspend=y VM if the proxy exited before any debugger
		// came: scanning must leave VMs alone.
		return func() {}
	}
	h, stop := d.mons.Start(ctx, ddmtap.HolderConfig{
		OnThreadChange:   ddmThreadsTo(d.feed, vm.Key),
		Addr:             vm.Key,
		KnownDDM:         vm.Kind == discover.KindADB || d.flags.mode == ddmForce,
		Dial:             dial,
		Logger:           cfg.Logger,
		Metrics:          d.metrics,
		Options:          ddmtap.Options{PollInterval: d.flags.poll, ReplyTimeout: d.flags.timeout},
		ReconnectDelay:   d.flags.reconnect,
		HandshakeTimeout: cfg.HandshakeTimeout,
	})
	cfg.DialVM = h.Dial // the held connection, with the DDM tap as its hooks
	return stop
}

const fakeVMExamples = `
Examples:
  # a modern ART that ignores heap requests, with thread churn every 500 ms
  jdwpaccel fakevm --profile art --churn 500ms
  # then, since nothing tells the proxy that this address is a DDM VM:
  jdwpaccel proxy --ddm=force --vm <the address printed>
`

// cmdFakeVM serves a fake DDM VM for demos and benchmarks.
func cmdFakeVM(ctx context.Context, e *env, args []string) int {
	var (
		profile, listen string
		seed            uint64
		threads         int
		churn, gc       time.Duration
		objects         int
		waitDbg         bool
		lf              logFlags
	)
	fs := flag.NewFlagSet("fakevm", flag.ContinueOnError)
	fs.StringVar(&profile, "profile", "dalvik", "VM behaviour: `design2007|dalvik|art`")
	fs.StringVar(&listen, "listen", "127.0.0.1:0", "JDWP listen `ADDR`")
	fs.Uint64Var(&seed, "seed", 1, "random seed (same seed, same threads and heaps)")
	fs.IntVar(&threads, "threads", 3, "threads besides main at start")
	fs.DurationVar(&churn, "churn", time.Second, "thread birth/death `interval` (0: none)")
	fs.DurationVar(&gc, "gc", 5*time.Second, "garbage collection `interval` (0: only on request)")
	fs.IntVar(&objects, "heap-objects", 2000, "objects per heap walk")
	fs.BoolVar(&waitDbg, "wait-for-debugger", false, "announce WAIT until a debugger (non-DDM packet) arrives")
	lf.register(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: jdwpaccel fakevm [flags]\n\nServe a fake DDM-speaking VM (no real Dalvik/ART) for demos and benchmarks.\n\nIt answers DDM and only a few VirtualMachine commands (Version, IDSizes, AllThreads,\nSuspend, Resume, Dispose): it is for the DDM monitor and the live page, not for a debugger.\nA JDI debugger such as jdb cannot attach to it (jdb fails at attach with\nUnsupportedOperationException); debug a real JVM or Android app instead.\n\nFlags:\n")
		printFlags(fs)
		fmt.Fprint(fs.Output(), fakeVMExamples)
	}
	if code, ok := parseFlags(fs, args, e); !ok {
		return code
	}
	log, err := lf.logger(e.stderr)
	if err != nil {
		fmt.Fprintf(e.stderr, "jdwpaccel fakevm: %v\n", err)
		return exitUsage
	}
	p, err := fakevm.ParseProfile(profile)
	if err != nil {
		fmt.Fprintf(e.stderr, "jdwpaccel fakevm: %v\n", err)
		return exitUsage
	}
	if err := checkListen("--listen", listen, false, log); err != nil {
		fmt.Fprintf(e.stderr, "jdwpaccel fakevm: %v\n", err)
		return exitUsage
	}
	if threads == 0 {
		threads = -1 // fakevm: 0 means the default
	}
	vm, err := fakevm.Listen(listen, fakevm.Config{
		Profile: p, Seed: seed, Threads: threads, ChurnInterval: churn, GCInterval: gc,
		HeapObjects: objects, WaitForDebugger: waitDbg, Logger: log,
	})
	if err != nil {
		log.Error().Err(err).Str(relay.LogListen, listen).Msg("cannot listen")
		return exitError
	}
	ths := vm.Threads()
	names := make([]string, len(ths))
	for i, th := range ths {
		names[i] = th.Name
	}
	fmt.Fprintf(e.stdout, "fake %s VM listening on %s, with %d threads (%s)\n", p, vm.Addr(), len(ths), strings.Join(names, ", "))
	err = vm.Serve(ctx)
	st := vm.Stats()
	log.Info().Int("connections", st.Connections).Int("non_ddm_packets", st.NonDDMPackets).Int("gcs", st.GCs).
		Int("live_threads", st.LiveThreads).Msg("fake VM served")
	if err != nil {
		log.Error().Err(err).Msg("fake VM stopped")
		return exitError
	}
	return exitOK
}
