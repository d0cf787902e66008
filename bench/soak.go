package bench

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/bench/link"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/rs/zerolog"
)

// SoakConfig is a long run of one workload through the relay, to watch the
// process's memory, goroutines and cache over time.
type SoakConfig struct {
	// Duration is how long the workload steps.
	Duration time.Duration
	// Interval is the time between samples (default 5 s).
	Interval time.Duration
	// RTT is the link's round trip (the workload runs through a link, then
	// the relay).
	RTT      time.Duration
	Workload Workload
	// SessionSteps is how many steps one debugger session takes before it
	// detaches and the next one attaches to the same VM (default 1000), so
	// that a soak covers both long sessions and session turnover.
	SessionSteps int
	// NewHooks gives each relay session its hooks (the speculator's).
	NewHooks func(*relay.Session) relay.Hooks
	// Cache, when set, reports the bytes and entries the accelerator
	// caches now.
	Cache func() (bytes, entries int64)
	// CacheLimit is the configured bound on cached bytes per session
	// (--cache-bytes), for the report.
	CacheLimit int64
	// RSSBound, when not 0, is what the process's RSS must stay within
	// (the bound the proxy promises for one session): see
	// SoakReport.OverBound.
	RSSBound int64
	Build    *javavm.Build
	// Progress, when set, is called with each sample.
	Progress func(SoakSample)
	Log      zerolog.Logger
}

// SoakSample is the process's state at one moment of a soak.
type SoakSample struct {
	ElapsedS     float64 `json:"elapsed_s"`
	RSSBytes     int64   `json:"rss_bytes"`
	HeapBytes    uint64  `json:"go_heap_bytes"`
	Goroutines   int     `json:"goroutines"`
	CacheBytes   int64   `json:"cache_bytes"`
	CacheEntries int64   `json:"cache_entries"`
	// Steps and Sessions (debugger sessions started) are counted since the
	// start.
	Steps    int `json:"steps"`
	Sessions int `json:"sessions"`
	// MedianStepMS is the median step time since the previous sample
	// (0 without a step).
	MedianStepMS float64 `json:"median_step_ms"`
}

// SoakReport is a whole soak.
type SoakReport struct {
	Started    time.Time    `json:"started"`
	Machine    string       `json:"machine"`
	Workload   string       `json:"workload"`
	RTTMS      float64      `json:"rtt_ms"`
	DurationS  float64      `json:"duration_s"`
	IntervalS  float64      `json:"interval_s"`
	CacheLimit int64        `json:"cache_limit_bytes"`
	RSSBound   int64        `json:"rss_bound_bytes,omitempty"`
	Samples    []SoakSample `json:"samples"`
	// MaxRSSBytes is the largest RSS sampled; Steps and Sessions the
	// totals (the last session is cut short by the end).
	MaxRSSBytes int64 `json:"max_rss_bytes"`
	Steps       int   `json:"steps"`
	Sessions    int   `json:"sessions"`
}

// OverBound says whether the largest RSS sampled exceeded RSSBound.
func (r *SoakReport) OverBound() bool { return r.RSSBound > 0 && r.MaxRSSBytes > r.RSSBound }

// soakState is what the workload reports to the sampler.
type soakState struct {
	mu       sync.Mutex // guards the fields below
	steps    int
	sessions int
	recent   []float64 // step times since the last sample
}

// Soak runs cfg.Workload continuously for cfg.Duration on one VM behind a
// link and a relay in this process, and samples the process every
// cfg.Interval: RSS (VmRSS of /proc/self/status), Go heap, goroutines, and
// the accelerator's cache. Debugger sessions of cfg.SessionSteps steps
// follow each other on the same VM.
func Soak(ctx context.Context, cfg SoakConfig) (*SoakReport, error) {
	if cfg.Interval <= 0 {
		cfg.Interval = 5 * time.Second
	}
	if cfg.SessionSteps <= 0 {
		cfg.SessionSteps = 1000
	}
	if cfg.Workload == (Workload{}) {
		cfg.Workload = Workload{Debuggee: javavm.Deep, Profile: javavm.ProfileIdeaLike}
	}
	rep := &SoakReport{
		Started: time.Now(), Machine: machine(), Workload: cfg.Workload.String(),
		RTTMS: float64(cfg.RTT) / float64(time.Millisecond), DurationS: cfg.Duration.Seconds(),
		IntervalS: cfg.Interval.Seconds(), CacheLimit: cfg.CacheLimit, RSSBound: cfg.RSSBound,
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	vm, err := javavm.Start(ctx, cfg.Build, cfg.Workload.Debuggee, javavm.VMOptions{FixedPort: true})
	if err != nil {
		return nil, err
	}
	defer vm.Stop()
	// The link dials with vm.Dial, which waits for the agent to listen
	// again after a session ends.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	lk, err := link.Serve(ctx, ln, vm.Dial, link.Config{RTT: cfg.RTT, Seed: 1}, cfg.Log)
	if err != nil {
		ln.Close()
		return nil, err
	}
	defer lk.Close()
	// The relay ends with the run, closing the last session as a proxy
	// shutdown does; the driver then sees its VM disconnect and exits.
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	addr, err := startRelay(runCtx, relay.DialTCP(lk.Addr().String()), cfg.NewHooks, cfg.Log)
	if err != nil {
		return nil, err
	}

	var st soakState
	start := time.Now()
	sample := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		s := SoakSample{
			ElapsedS: time.Since(start).Seconds(), RSSBytes: rss(), HeapBytes: ms.HeapAlloc,
			Goroutines: runtime.NumGoroutine(),
		}
		if cfg.Cache != nil {
			s.CacheBytes, s.CacheEntries = cfg.Cache()
		}
		st.mu.Lock()
		s.Steps, s.Sessions = st.steps, st.sessions
		if len(st.recent) > 0 {
			s.MedianStepMS = quantile(st.recent, 0.5)
		}
		st.recent = st.recent[:0]
		st.mu.Unlock()
		rep.Samples = append(rep.Samples, s)
		rep.MaxRSSBytes = max(rep.MaxRSSBytes, s.RSSBytes)
		if cfg.Progress != nil {
			cfg.Progress(s)
		}
	}
	sample()

	end := time.AfterFunc(cfg.Duration, stopRun)
	defer end.Stop()
	done := make(chan error, 1)
	go func() { done <- soakWorkload(ctx, runCtx, cfg, addr, &st) }()
	tick := time.NewTicker(cfg.Interval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			sample()
		case err := <-done:
			sample()
			st.mu.Lock()
			rep.Steps, rep.Sessions = st.steps, st.sessions
			st.mu.Unlock()
			if ctx.Err() != nil {
				return rep, ctx.Err()
			}
			return rep, err
		}
	}
}

// soakWorkload runs debugger sessions one after the other until run ends.
// A session cut short by the end of run is the normal end; a driver that
// does not exit by itself within driverGrace after it is killed.
func soakWorkload(ctx, run context.Context, cfg SoakConfig, addr string, st *soakState) error {
	dctx, kill := context.WithCancel(ctx)
	defer kill()
	grace := context.AfterFunc(run, func() { time.AfterFunc(driverGrace, kill) })
	defer grace()
	for run.Err() == nil {
		st.mu.Lock()
		st.sessions++
		st.mu.Unlock()
		_, err := javavm.RunDriver(dctx, cfg.Build, javavm.DriverOptions{
			Addr: addr, Profile: cfg.Workload.Profile, Debuggee: cfg.Workload.Debuggee,
			Steps: cfg.SessionSteps, Warmup: 1,
			OnStop: func(s javavm.Stop) {
				if s.Warmup {
					return
				}
				st.mu.Lock()
				st.steps++
				st.recent = append(st.recent, s.MS)
				st.mu.Unlock()
			},
		})
		if err != nil && run.Err() == nil {
			return err
		}
	}
	return nil
}

// driverGrace is how long the last driver may take to exit after the soak
// closed its session.
const driverGrace = 10 * time.Second

// rss is this process's resident set size from /proc/self/status (VmRSS),
// 0 where there is none.
func rss() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			f := strings.Fields(v) // "12345 kB"
			if len(f) == 2 && f[1] == "kB" {
				if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					return n << 10
				}
			}
		}
	}
	return 0
}
