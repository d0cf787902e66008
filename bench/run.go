// Package bench is jdwpaccel's measuring instrument: it runs IDE-like JDI
// workloads (bench/javavm) against real JVMs behind an emulated slow link
// (bench/link), directly and through the relay in several modes, and
// reports step times, serial round trips per step (the slope of step time
// against RTT), speedups, and whether every value the debugger saw through
// the proxy equals what it saw directly. In split mode (Mode.Split) the
// link sits between split mode's two ends, with the VM local to the far
// end.
package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench/javadebug"
	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/bench/link"
	"github.com/jdwpaccel/jdwpaccel/internal/logkey"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/speculator"
	"github.com/jdwpaccel/jdwpaccel/split"
	"github.com/rs/zerolog"
)

// Mode is one way of connecting the driver to the VM.
type Mode struct {
	// Name labels the mode in reports ("direct", "proxy", "speculate").
	Name string
	// Direct connects the driver straight to the link, without the relay.
	Direct bool
	// Copy puts a plain TCP byte copy where the relay would be: what any
	// extra hop costs, the floor for the relay's pass-through overhead.
	Copy bool
	// NewHooks gives each relay session its hooks; nil is pass-through.
	NewHooks func(*relay.Session) relay.Hooks
	// Split runs the mode as split mode: a far end (split.Far, with
	// FarHooks) local to the VM, the emulated link between it and the
	// near end (a relay with NewHooks that reaches the VM through
	// split.Dialer), and the driver attached to the near end. The hook
	// chains of both ends come from the caller (cmd/jdwpaccel's farChain
	// and nearChain, where pushed replies join them).
	Split    bool
	FarHooks func(*relay.Session) relay.Hooks
	// Push says both ends' chains push replies (package push), so the far
	// end sends the attach bundle first (split.FlagAttach).
	Push bool
	// Via, when set, puts the mode's own path (e.g. an adb server and a
	// device) in front of vmAddr, the link to the VM, and returns the
	// address the driver attaches to; what it starts lives until ctx ends.
	Via func(ctx context.Context, vmAddr string) (string, error)
	// Stats, when set, returns the accelerator's counters so far (such as
	// speculator.Speculator.Stats); it is called before and after each
	// cell, and the cell reports the difference.
	Stats func() speculator.Stats
	// PushedBytes, when set, returns the bytes split mode's far end pushed
	// so far (push.Stats.BytesSent); the cell reports them per stop.
	PushedBytes func() int64
	// Fresh, when set, gives each cell a mode of its own, made anew (its
	// accelerator has learned nothing): the cell measures a fresh proxy.
	// Without it, the mode's accelerator lives for the whole run, and its
	// cells after the first see what the earlier sessions taught it.
	Fresh func() Mode
}

// Accel is the accelerator's figures over one cell: the speculator's
// counters accumulated during it (see speculator.Stats).
type Accel struct {
	Belays          int64 `json:"belays"`
	Hits            int64 `json:"hits"`
	Misses          int64 `json:"misses"`
	RoundTripsSaved int64 `json:"round_trips_saved"`
	SpecSent        int64 `json:"speculative_sent"`
	SpecUsed        int64 `json:"speculative_used"`
	SpecWasted      int64 `json:"speculative_wasted"`
	SpecWithheld    int64 `json:"speculative_withheld,omitempty"`
	// WrittenBehind are state-setting commands answered at once
	// (write-behind); WriteBehindFailures those the VM contradicted.
	WrittenBehind       int64 `json:"written_behind,omitempty"`
	WriteBehindFailures int64 `json:"write_behind_failures,omitempty"`
}

// add adds b's counters to a's.
func (a *Accel) add(b *Accel) {
	a.Belays += b.Belays
	a.Hits += b.Hits
	a.Misses += b.Misses
	a.RoundTripsSaved += b.RoundTripsSaved
	a.SpecSent += b.SpecSent
	a.SpecUsed += b.SpecUsed
	a.SpecWasted += b.SpecWasted
	a.SpecWithheld += b.SpecWithheld
	a.WrittenBehind += b.WrittenBehind
	a.WriteBehindFailures += b.WriteBehindFailures
}

func accelOf(st speculator.Stats) *Accel {
	return &Accel{
		Belays: st.Belays, Hits: st.Hits, Misses: st.Misses, RoundTripsSaved: st.RoundTripsSaved,
		SpecSent: st.SpecSent, SpecUsed: st.SpecUsed, SpecWasted: st.SpecWasted, SpecWithheld: st.SpecWithheld,
		WrittenBehind: st.WrittenBehind, WriteBehindFailures: st.WriteBehindFailures,
	}
}

// Workload is a driver profile on a debuggee.
type Workload struct {
	Profile  string `json:"profile"`
	Debuggee string `json:"debuggee"`
	// Breakpoints is how many breakpoints the driver sets at attach (0 or
	// 1: the debuggee's own; see javavm.DriverOptions.Breakpoints).
	Breakpoints int `json:"breakpoints,omitempty"`
}

// String is "Deep/idea-like", with " 5bp" appended for more than one
// breakpoint.
func (w Workload) String() string {
	if w.Breakpoints > 1 {
		return fmt.Sprintf("%s/%s %dbp", w.Debuggee, w.Profile, w.Breakpoints)
	}
	return w.Debuggee + "/" + w.Profile
}

// Config is a benchmark matrix.
type Config struct {
	RTTs      []time.Duration
	Modes     []Mode
	Workloads []Workload
	// Rounds is how many times each (workload, RTT) runs its modes, in
	// turn (direct, A, B, direct, A, B, ...), each mode's rounds pooled
	// into one cell (pool): a drift in the machine's speed during the run
	// then weighs on every mode alike, and no mode's figures rest on one
	// VM's. 0 and 1 run each once.
	Rounds int
	// Steps is the number of measured steps per cell, taken after Warmup
	// warm-up steps. The breakpoint stop before them is never measured:
	// its time runs from the VM's start, not from a step. A cell's driver
	// thus stops Steps+Warmup+1 times.
	Steps, Warmup int
	// Bandwidth limits the emulated link, in bytes per second in each
	// direction; 0 is unlimited.
	Bandwidth int64
	// Compress has split mode's ends compress their link (split.NearConfig
	// and FarConfig's Compress).
	Compress bool
	// DropEvery, when positive, makes the link of split-mode cells close
	// its connections every DropEvery (link.Config.DropEvery): their
	// sessions resume across each drop. Other cells' links carry the
	// debugger's session itself, which a drop would end: they get none.
	DropEvery time.Duration
	Build     *javavm.Build
	// JavaDebug is the java-debug peer (package javadebug) that runs the
	// workloads of profile javadebug.Profile; nil when none was built.
	JavaDebug *javadebug.Peer
	// Progress, when set, is called before each cell and once at the end.
	Progress func(done, total int, label string)
	Log      zerolog.Logger
}

// Cell is the result of one (workload, mode, RTT).
type Cell struct {
	Workload string  `json:"workload"`
	Mode     string  `json:"mode"`
	RTTMS    float64 `json:"rtt_ms"`
	Stops    int     `json:"stops"`
	MedianMS float64 `json:"median_step_ms"`
	MinMS    float64 `json:"min_step_ms"`
	MaxMS    float64 `json:"max_step_ms"`
	P95MS    float64 `json:"p95_step_ms"`
	// MedianCI is the 95% bootstrap confidence interval of MedianMS.
	MedianCI [2]float64 `json:"median_step_ci95_ms"`
	// StepMS are the measured steps' times, in stop order.
	StepMS  []float64 `json:"step_ms"`
	BurstMS float64   `json:"median_burst_ms"`
	// FirstStopMS is the time to the first stop: from the driver's attach
	// to the end of its work at the breakpoint stop (its state shown), one
	// sample per cell; FirstStopSpeedup is the direct cell's over it.
	FirstStopMS      float64 `json:"first_stop_ms"`
	FirstStopSpeedup float64 `json:"first_stop_speedup_vs_direct,omitempty"`
	// VMRunMS is how much of FirstStopMS the VM ran (the driver's
	// javavm.Summary.VMRunMS); at a zero RTT, the VM's own start-up.
	VMRunMS float64 `json:"vm_run_ms"`
	// FirstStopNetMS is FirstStopMS minus the VM's own start-up
	// (Report.VMStartupMS) and FirstStopNetSpeedup the direct cell's over
	// it: the part of the wait a debugger and its link cause. Zero when
	// the run had no cell at 0 ms to measure the start-up, or the first
	// stop took less than it (the start-up varies from VM to VM).
	FirstStopNetMS      float64 `json:"first_stop_minus_vm_startup_ms,omitempty"`
	FirstStopNetSpeedup float64 `json:"first_stop_minus_vm_startup_speedup_vs_direct,omitempty"`
	// FirstStopWaitMS is FirstStopMS minus this cell's own VMRunMS: the
	// time to the first stop while the VM was not running, which the
	// debugger, the link and the proxy spent; FirstStopWaitSpeedup is the
	// direct cell's over it. Unlike FirstStopNetMS it does not carry the
	// VM's start-up from one VM to another, which varies by as much as a
	// second on a loaded machine; it leaves out the round trips spent
	// waiting for the VM's events while it ran (a handful).
	FirstStopWaitMS      float64 `json:"first_stop_minus_vm_run_ms"`
	FirstStopWaitSpeedup float64 `json:"first_stop_minus_vm_run_speedup_vs_direct,omitempty"`
	// FirstStopUpBytes and FirstStopDownBytes are the bytes the link
	// carried up to the first stop, towards the VM and back.
	FirstStopUpBytes   int64 `json:"first_stop_link_bytes_up"`
	FirstStopDownBytes int64 `json:"first_stop_link_bytes_down"`
	// LoadedClasses and AllClassesReplyBytes are the driver's (BigApp
	// only): the classes loaded after the last stop and the size of the
	// AllClassesWithGeneric reply listing them.
	LoadedClasses        int   `json:"loaded_classes,omitempty"`
	AllClassesReplyBytes int64 `json:"all_classes_reply_bytes,omitempty"`
	// Speedup is the direct cell's median over this cell's, and SpeedupCI
	// its 95% bootstrap confidence interval.
	Speedup   float64    `json:"speedup_vs_direct,omitempty"`
	SpeedupCI [2]float64 `json:"speedup_ci95,omitzero"`
	// Noise is set when the confidence intervals of this cell's median and
	// the direct cell's overlap: the difference between them (the speedup,
	// or slowdown) is within the noise of the measurement, not a result.
	Noise bool   `json:"noise,omitempty"`
	Stats *Accel `json:"accelerator,omitempty"`
	// PushedBytesPerStop is what split mode's far end pushed across the
	// link per stop of the cell (bundles as sent: compressed, or raw on a
	// compressed link).
	PushedBytesPerStop float64 `json:"pushed_bytes_per_stop,omitempty"`
	// DigestsMatch is false when any stop's digest differs from the
	// direct run's at the same RTT.
	DigestsMatch bool `json:"digests_match"`
	// LinkBytesUp and LinkBytesDown are the bytes the emulated link carried
	// during the cell, towards the VM (or the far end) and back: the
	// attach, every stop and the detach.
	LinkBytesUp   int64 `json:"link_bytes_up"`
	LinkBytesDown int64 `json:"link_bytes_down"`
	// LinkDrops is how many times the link dropped its connections during
	// the cell (Config.DropEvery).
	LinkDrops int64 `json:"link_drops,omitempty"`
	// JavaDebug is what java-debug decided at attach (java-debug cells
	// only; of a pooled cell, its first round's: Report.RoundCells has
	// every round's).
	JavaDebug *JavaDebugCell `json:"java_debug,omitempty"`
	// Rounds is how many rounds the cell pools (Config.Rounds): its steps
	// are theirs, its first stop's figures and link bytes their medians,
	// its accelerator's counters their sums.
	Rounds int `json:"rounds,omitempty"`
	// Round is the round a cell of Report.RoundCells ran in, from 1.
	Round   int      `json:"round,omitempty"`
	Digests []string `json:"-"`
}

// JavaDebugCell is java-debug's decision from timing in one cell: the
// latency it measured at attach (its VM_DEATH EventRequest.Set) and
// whether that made it go asynchronous (above 15 ms under VS Code's
// default jdwp.async "auto"; above 10 ms it also leaves toString() and
// collection sizes out of its Variables view).
type JavaDebugCell struct {
	Version   string `json:"version"`
	LatencyMS int    `json:"latency_ms"`
	Async     bool   `json:"async"`
}

// Slope is the least-squares fit of median step time against RTT for one
// workload and mode: RoundTrips is the number of serial round trips a step
// costs. FirstStopRoundTrips and FirstStopInterceptMS are the same fit of
// the time to the first stop.
type Slope struct {
	Workload            string  `json:"workload"`
	Mode                string  `json:"mode"`
	RoundTrips          float64 `json:"serial_round_trips_per_step"`
	InterceptMS         float64 `json:"intercept_ms"`
	FirstStopRoundTrips float64 `json:"serial_round_trips_to_first_stop"`
	// FirstStopWaitRoundTrips fits the first stop minus the cell's own VM
	// run (Cell.FirstStopWaitMS): free of the VM's start-up, which varies
	// from VM to VM, but without the few round trips spent waiting for the
	// VM's events while it ran.
	FirstStopWaitRoundTrips float64 `json:"serial_round_trips_to_first_stop_minus_vm_run"`
	FirstStopInterceptMS    float64 `json:"first_stop_intercept_ms"`
}

// Report is the whole matrix.
type Report struct {
	Started   time.Time `json:"started"`
	Machine   string    `json:"machine"`
	Steps     int       `json:"steps"`
	Warmup    int       `json:"warmup"`
	Bandwidth int64     `json:"bandwidth_bytes_per_s,omitempty"`
	Rounds    int       `json:"rounds,omitempty"`
	Cells     []Cell    `json:"cells"`
	// RoundCells are the cells of every round as run, before pooling
	// (Config.Rounds above 1 only).
	RoundCells []Cell `json:"round_cells,omitempty"`
	// VMStartupMS is, per workload, the VM's own start-up: the median over
	// its cells at 0 ms RTT (every mode's) of how long the VM ran before
	// the first stop. With no link latency, that is the VM's own time.
	VMStartupMS map[string]float64 `json:"vm_startup_ms,omitempty"`
	Slopes      []Slope            `json:"slopes"`
	Mismatches  []string           `json:"digest_mismatches"`
}

// ErrDigestMismatch is returned (with the full report) when a proxied run
// saw a value that differs from the direct run: speed bought with a wrong
// value is a bug.
var ErrDigestMismatch = errors.New("bench: a proxied run saw different values than the direct run")

// Run runs the matrix. Every (workload, RTT) runs its direct mode first, so
// the first mode in cfg.Modes must be the direct one.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if len(cfg.Modes) == 0 || !cfg.Modes[0].Direct {
		return nil, errors.New("bench: the first mode must be the direct baseline")
	}
	for _, w := range cfg.Workloads {
		if w.Profile == javadebug.Profile && cfg.JavaDebug == nil {
			return nil, fmt.Errorf("%w: %s", ErrNoJavaDebug, w)
		}
	}
	rep := &Report{Started: time.Now(), Machine: machine(), Steps: cfg.Steps, Warmup: cfg.Warmup, Bandwidth: cfg.Bandwidth}
	rounds := max(cfg.Rounds, 1)
	rep.Rounds = rounds
	total := len(cfg.Workloads) * len(cfg.RTTs) * len(cfg.Modes) * rounds
	done := 0
	for _, w := range cfg.Workloads {
		for _, rtt := range cfg.RTTs {
			runs := make([][]*Cell, len(cfg.Modes)) // per mode, its rounds' cells
			for round := range rounds {
				var direct *Cell
				for i, m := range cfg.Modes {
					label := fmt.Sprintf("%s %s rtt=%v", w, m.Name, rtt)
					if rounds > 1 {
						label += fmt.Sprintf(" round %d/%d", round+1, rounds)
					}
					if cfg.Progress != nil {
						cfg.Progress(done, total, label)
					}
					c, err := measureCell(ctx, cfg, w, m, rtt)
					if err != nil {
						return rep, fmt.Errorf("%s: %w", label, err)
					}
					if direct == nil {
						direct = c
					}
					c.DigestsMatch = slices.Equal(c.Digests, direct.Digests)
					if !c.DigestsMatch {
						rep.Mismatches = append(rep.Mismatches, fmt.Sprintf("%s: %s", label, firstDifference(direct.Digests, c.Digests)))
					}
					runs[i] = append(runs[i], c)
					if rounds > 1 {
						rc := *c
						rc.Round = round + 1
						rep.RoundCells = append(rep.RoundCells, rc)
					}
					done++
				}
			}
			var direct *Cell
			for i := range cfg.Modes {
				c := pool(runs[i])
				if direct == nil {
					direct = c
				} else {
					c.compareTo(direct)
				}
				rep.Cells = append(rep.Cells, *c)
			}
		}
	}
	if cfg.Progress != nil {
		cfg.Progress(done, total, "done")
	}
	rep.Slopes = slopes(rep.Cells)
	rep.subtractStartup()
	if len(rep.Mismatches) > 0 {
		return rep, ErrDigestMismatch
	}
	return rep, nil
}

// measureCell runs one cell of mode m (a mode of its own if m.Fresh),
// with the accelerator's figures over it.
func measureCell(ctx context.Context, cfg Config, w Workload, m Mode, rtt time.Duration) (*Cell, error) {
	if m.Fresh != nil {
		fresh := m.Fresh()
		fresh.Name = m.Name
		m = fresh
	}
	var before speculator.Stats
	if m.Stats != nil {
		before = m.Stats()
	}
	var pushedBefore int64
	if m.PushedBytes != nil {
		pushedBefore = m.PushedBytes()
	}
	c, err := runCell(ctx, cfg, w, m, rtt)
	if err != nil {
		return nil, err
	}
	if m.Stats != nil {
		c.Stats = accelOf(m.Stats().Since(before))
	}
	if m.PushedBytes != nil && c.Stops > 0 {
		c.PushedBytesPerStop = float64(m.PushedBytes()-pushedBefore) / float64(c.Stops)
	}
	return c, nil
}

// compareTo sets c's speedups over the direct cell of its workload and
// RTT.
func (c *Cell) compareTo(direct *Cell) {
	if c.FirstStopMS > 0 {
		c.FirstStopSpeedup = direct.FirstStopMS / c.FirstStopMS
	}
	if c.FirstStopWaitMS > 0 {
		c.FirstStopWaitSpeedup = direct.FirstStopWaitMS / c.FirstStopWaitMS
	}
	if c.MedianMS > 0 {
		c.Speedup = direct.MedianMS / c.MedianMS
		c.SpeedupCI = speedupCI(direct.StepMS, c.StepMS)
		c.Noise = overlap(direct.MedianCI, c.MedianCI)
	}
}

// subtractStartup sets VMStartupMS from the cells at 0 ms RTT, and each
// cell of their workloads' first stop minus it, with its speedup over the
// direct cell at the same RTT.
func (r *Report) subtractStartup() {
	runs := map[string][]float64{}
	for _, c := range r.Cells {
		if c.RTTMS == 0 && c.VMRunMS > 0 {
			runs[c.Workload] = append(runs[c.Workload], c.VMRunMS)
		}
	}
	for w, v := range runs {
		if r.VMStartupMS == nil {
			r.VMStartupMS = map[string]float64{}
		}
		r.VMStartupMS[w] = spreadOf(v).Median
	}
	type key struct {
		workload string
		rtt      float64
	}
	direct := map[key]float64{}
	for i := range r.Cells {
		c := &r.Cells[i]
		vm, ok := r.VMStartupMS[c.Workload]
		if !ok || c.FirstStopMS <= vm {
			continue
		}
		c.FirstStopNetMS = c.FirstStopMS - vm
		k := key{c.Workload, c.RTTMS}
		if c.Mode == r.directMode() {
			direct[k] = c.FirstStopNetMS
		} else if d, ok := direct[k]; ok {
			c.FirstStopNetSpeedup = d / c.FirstStopNetMS
		}
	}
}

// directMode is the name of the run's direct mode: that of its first cell.
func (r *Report) directMode() string {
	if len(r.Cells) == 0 {
		return ""
	}
	return r.Cells[0].Mode
}

func firstDifference(want, got []string) string {
	for i := range min(len(want), len(got)) {
		if want[i] != got[i] {
			return fmt.Sprintf("stop %d digest %.12s, direct %.12s", i, got[i], want[i])
		}
	}
	return fmt.Sprintf("%d stops, direct %d", len(got), len(want))
}

// runCell starts a fresh VM behind a link (and the relay, unless direct),
// runs the driver, and tears everything down.
func runCell(ctx context.Context, cfg Config, w Workload, m Mode, rtt time.Duration) (*Cell, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	vm, err := javavm.Start(ctx, cfg.Build, w.Debuggee, javavm.VMOptions{})
	if err != nil {
		return nil, err
	}
	defer vm.Stop()
	cfg.Log.Debug().Int(logkey.PID, vm.Pid()).Str(logkey.VM, vm.Addr()).Str("debuggee", w.Debuggee).Msg("debuggee JVM started")
	behind := vm.Addr() // what the link leads to
	if m.Split {
		if behind, err = startFar(ctx, behind, m.FarHooks, m.Push, cfg.Compress, cfg.Log); err != nil {
			return nil, err
		}
	}
	lc := link.Config{RTT: rtt, Seed: 1, Bandwidth: cfg.Bandwidth}
	if m.Split {
		lc.DropEvery = cfg.DropEvery
	}
	lk, err := link.Listen(ctx, "127.0.0.1:0", behind, lc, cfg.Log)
	if err != nil {
		return nil, err
	}
	defer lk.Close()
	addr := lk.Addr().String()
	switch {
	case m.Split:
		nc := split.NearConfig{Addr: addr, Attach: m.Push, ResumeWithin: split.DefaultResumeWithin, Logger: cfg.Log,
			Compress: cfg.Compress, CompressMinRTT: split.DefaultCompressMinRTT, Link: new(split.Link)}
		// As the near end does at start (proxy --far): the probe's round
		// trip decides whether the link is compressed.
		if _, err = split.Probe(ctx, nc); err == nil {
			addr, err = startRelay(ctx, split.Dialer(nc), m.NewHooks, cfg.Log)
		}
	case m.Via != nil:
		addr, err = m.Via(ctx, addr)
	case m.Copy:
		addr, err = startCopy(ctx, addr)
	case !m.Direct:
		addr, err = startRelay(ctx, relay.DialTCP(addr), m.NewHooks, cfg.Log)
	}
	if err != nil {
		return nil, err
	}
	// The driver counts its stops from the breakpoint stop (stop 0) and
	// flags the first Warmup of them; the breakpoint stop is warm-up here
	// too, so Steps steps are measured. It holds after the first stop
	// while the link's bytes are taken.
	var first link.Stats
	var res *javavm.DriverResult
	var jd *JavaDebugCell
	if w.Profile == javadebug.Profile {
		res, jd, err = runJavaDebug(ctx, cfg, w, addr, func() { first = lk.Bytes() })
	} else {
		res, err = javavm.RunDriver(ctx, cfg.Build, javavm.DriverOptions{
			Addr: addr, Profile: w.Profile, Debuggee: w.Debuggee, Steps: cfg.Steps + cfg.Warmup, Warmup: cfg.Warmup + 1,
			Breakpoints: w.Breakpoints, AfterFirstStop: func() { first = lk.Bytes() },
		})
	}
	if err != nil {
		select {
		case <-vm.Done():
			return nil, fmt.Errorf("%w (the debuggee JVM exited; its output:\n%s)", err, vm.Output())
		default:
		}
		return nil, err
	}
	if l := res.Summary.JavaDebugLatencyMS; l != nil && jd == nil {
		// vscode-like decides from timing as java-debug does.
		jd = &JavaDebugCell{Version: "vscode-like over " + res.Summary.JDI + " JDI", LatencyMS: *l, Async: res.Summary.JavaDebugAsync}
	}
	lk.Close() // the cell's last bytes are delivered or dropped
	total := lk.Bytes()
	steady := res.Steady()
	ms := make([]float64, 0, len(steady))
	burst := make([]float64, 0, len(steady))
	for _, s := range steady {
		ms = append(ms, s.MS)
		burst = append(burst, s.BurstMS)
	}
	c := &Cell{
		Workload: w.String(), Mode: m.Name, RTTMS: float64(rtt) / float64(time.Millisecond),
		BurstMS:     quantile(burst, 0.5),
		FirstStopMS: res.Summary.FirstStopMS, Digests: res.Digests(), LinkDrops: lk.Drops(),
		VMRunMS: res.Summary.VMRunMS, FirstStopWaitMS: res.Summary.FirstStopMS - res.Summary.VMRunMS,
		FirstStopUpBytes: first.AToB, FirstStopDownBytes: first.BToA, LinkBytesUp: total.AToB, LinkBytesDown: total.BToA,
		LoadedClasses: res.Summary.LoadedClasses, AllClassesReplyBytes: res.Summary.AllClassesReplyBytes,
		JavaDebug: jd, Rounds: 1,
	}
	c.setSteps(ms)
	return c, nil
}

// setSteps sets the cell's steps to ms, and their figures.
func (c *Cell) setSteps(ms []float64) {
	sp := spreadOf(ms)
	c.StepMS = ms
	c.Stops, c.MedianMS, c.MinMS, c.MaxMS, c.MedianCI = len(ms), sp.Median, sp.Min, sp.Max, sp.CI
	c.P95MS = quantile(slices.Clone(ms), 0.95)
}

// ErrNoJavaDebug is returned for a java-debug workload when the run has no
// java-debug peer (Config.JavaDebug).
var ErrNoJavaDebug = errors.New("bench: a java-debug workload needs a java-debug build (bench/javadebug/build.sh, then --java-debug DIR)")

// runJavaDebug runs a java-debug session as a cell's driver: the debuggee's
// own breakpoint only (java-debug resolves breakpoints by source file, and
// the debuggees' extra ones lie in other classes of the same file).
func runJavaDebug(ctx context.Context, cfg Config, w Workload, addr string, afterFirst func()) (*javavm.DriverResult, *JavaDebugCell, error) {
	if cfg.JavaDebug == nil {
		return nil, nil, ErrNoJavaDebug
	}
	r, err := cfg.JavaDebug.Run(ctx, cfg.Build, javadebug.Options{
		Addr: addr, Debuggee: w.Debuggee, Steps: cfg.Steps + cfg.Warmup, Warmup: cfg.Warmup + 1, AfterFirstStop: afterFirst,
	})
	if err != nil {
		return nil, nil, err
	}
	cfg.Log.Debug().Int("latency_ms", r.LatencyMS).Bool("async", r.Async).Msg("java-debug attached")
	return &r.DriverResult, &JavaDebugCell{Version: cfg.JavaDebug.Version, LatencyMS: r.LatencyMS, Async: r.Async}, nil
}
