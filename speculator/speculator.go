package speculator

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/rs/zerolog"
)

// Config configures the speculator.
type Config struct {
	// CacheBytes bounds the reply bytes cached per session
	// (DefaultCacheBytes when zero).
	CacheBytes int64
	// MaxEntries bounds the cached replies per session (DefaultMaxEntries
	// when zero).
	MaxEntries int
	// MinRTT is the smallest measured round trip at which speculative
	// commands are sent; zero (the default) means at any RTT. Below it
	// the cache serves only replies to the debugger's own commands, which
	// costs the VM nothing. Independently, speculation pauses on links
	// under LowRTT while most of it goes unused (see speculating).
	MinRTT time.Duration
	// MaxInFlight bounds speculative commands awaiting replies per session
	// (DefaultMaxInFlight when zero).
	MaxInFlight int
	// LearnFile, if not "", is where what sessions learned about their
	// debugger's attach and stops is kept across proxy restarts (a JSON
	// file, mode 0600, read at New and rewritten as each session ends).
	// Either way it is kept in memory across the Speculator's sessions.
	LearnFile string
	// WriteBehind answers EventRequest.Set and Clear, VirtualMachine.Resume
	// and ThreadReference.Resume at once when the VM's reply is proven,
	// and sends them on pipelined (writebehind.go).
	WriteBehind bool
	// Bandwidth is the link's bandwidth to the VM in bytes per second,
	// which decides whether a class snapshot pays (snapshot.go); zero
	// assumes a slow link (1 MiB/s).
	Bandwidth int64
}

// Defaults.
const (
	DefaultCacheBytes  = 64 << 20
	DefaultMaxEntries  = 200_000
	DefaultMaxInFlight = 128
)

func (c *Config) fill() {
	if c.CacheBytes <= 0 {
		c.CacheBytes = DefaultCacheBytes
	}
	if c.MaxEntries <= 0 {
		c.MaxEntries = DefaultMaxEntries
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
}

// Stats is a snapshot of the speculator's counters over all sessions. It
// is the one source of these figures: the live page, the benchmark and the
// Prometheus metrics (counted at the same places) all show them.
type Stats struct {
	// Hits are cacheable debugger commands answered from the cache, Misses
	// those sent to the VM, Belays those held for a speculation in flight.
	Hits, Misses, Belays int64
	// SpecSent, SpecUsed and SpecWasted count speculative commands: sent,
	// whose reply served a debugger command, and whose reply was
	// invalidated, evicted or errored before any use. SpecWithheld counts
	// those predicted but not sent, because the IDs in them could not be
	// shown valid for the command.
	SpecSent, SpecUsed, SpecWasted, SpecWithheld int64
	// FramesConfirmed and FramesRefuted count speculative StackFrame
	// commands sent on a predicted frame ID that a Frames reply of the
	// same stop confirmed (servable) or refuted (dropped); those never
	// settled are wasted when the stop ends.
	FramesConfirmed, FramesRefuted int64
	// RoundTripsSaved counts debugger commands that did not wait for a
	// round trip of their own (hits and belays).
	RoundTripsSaved int64
	// WrittenBehind counts state-setting commands answered at once
	// (write-behind); WriteBehindFailures those the VM then answered
	// otherwise, each of which ended its session.
	WrittenBehind, WriteBehindFailures int64
	// Invalidations counts invalidations by reason (see Reasons).
	Invalidations map[string]int64
	CacheBytes    int64
	CacheEntries  int64
	// RTT and ServiceTime are the last estimates of any session.
	RTT, ServiceTime time.Duration
}

// Since returns the counters accumulated between prev and st (st's minus
// prev's). The levels (CacheBytes, CacheEntries, RTT, ServiceTime) are st's.
func (st Stats) Since(prev Stats) Stats {
	d := st
	d.Hits -= prev.Hits
	d.Misses -= prev.Misses
	d.Belays -= prev.Belays
	d.SpecSent -= prev.SpecSent
	d.SpecUsed -= prev.SpecUsed
	d.SpecWasted -= prev.SpecWasted
	d.SpecWithheld -= prev.SpecWithheld
	d.FramesConfirmed -= prev.FramesConfirmed
	d.FramesRefuted -= prev.FramesRefuted
	d.RoundTripsSaved -= prev.RoundTripsSaved
	d.WrittenBehind -= prev.WrittenBehind
	d.WriteBehindFailures -= prev.WriteBehindFailures
	d.Invalidations = make(map[string]int64, len(st.Invalidations))
	for r, n := range st.Invalidations {
		d.Invalidations[r] = n - prev.Invalidations[r]
	}
	return d
}

// Speculator creates the per-session interceptors and aggregates stats.
type Speculator struct {
	cfg      Config
	log      zerolog.Logger
	metrics  *Metrics
	profiles *profileStore // what earlier sessions learned (persist.go)
	noPrior  bool          // attach without the built-in prior (prior.go): tests' baseline
	snapAll  bool          // take every class snapshot the VM's suspension allows (snapshot.go): tests'

	hits, misses, belays atomic.Int64
	sent, used, wasted   atomic.Int64
	withheld             atomic.Int64
	wbAnswered, wbFailed atomic.Int64
	confirmed, refuted   atomic.Int64
	inval                [numReasons]atomic.Int64
	bytes, entries       atomic.Int64
	lastRTT, lastService atomic.Int64
	changed              signal // the counters above changed (Changed)
}

// signal is a change signal that costs one atomic load per change while
// nobody waits: wait returns a channel, closed at the next notify.
type signal struct {
	waiting atomic.Bool   // ch is not nil
	mu      sync.Mutex    // guards ch
	ch      chan struct{} // closed by notify; nil while nobody waits
}

func (s *signal) notify() {
	if !s.waiting.Load() {
		return
	}
	s.mu.Lock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
		s.waiting.Store(false)
	}
	s.mu.Unlock()
}

func (s *signal) wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
		s.waiting.Store(true)
	}
	return s.ch
}

// Changed is closed when a counter of Stats next changes: a signal to wait
// on (then read Stats) instead of polling.
func (sp *Speculator) Changed() <-chan struct{} { return sp.changed.wait() }

// New returns a Speculator; metrics may be nil.
func New(cfg Config, log zerolog.Logger, metrics *Metrics) *Speculator {
	cfg.fill()
	return &Speculator{cfg: cfg, log: log, metrics: metrics, profiles: newProfileStore(cfg.LearnFile, log)}
}

// Config returns the configuration in effect (defaults filled in).
func (sp *Speculator) Config() Config { return sp.cfg }

// NewSession returns the interceptor for one relay session.
func (sp *Speculator) NewSession(s *relay.Session) relay.Interceptor {
	return newSession(sp, s)
}

// Hooks returns relay hooks holding only this speculator's interceptor,
// for relay.Config.NewHooks.
func (sp *Speculator) Hooks(s *relay.Session) relay.Hooks {
	return relay.Hooks{Interceptors: []relay.Interceptor{sp.NewSession(s)}}
}

// Stats returns a snapshot of the counters.
func (sp *Speculator) Stats() Stats {
	st := Stats{
		Hits: sp.hits.Load(), Misses: sp.misses.Load(), Belays: sp.belays.Load(),
		SpecSent: sp.sent.Load(), SpecUsed: sp.used.Load(), SpecWasted: sp.wasted.Load(),
		SpecWithheld:  sp.withheld.Load(),
		WrittenBehind: sp.wbAnswered.Load(), WriteBehindFailures: sp.wbFailed.Load(),
		FramesConfirmed: sp.confirmed.Load(), FramesRefuted: sp.refuted.Load(),
		CacheBytes: sp.bytes.Load(), CacheEntries: sp.entries.Load(),
		RTT: time.Duration(sp.lastRTT.Load()), ServiceTime: time.Duration(sp.lastService.Load()),
		Invalidations: map[string]int64{},
	}
	st.RoundTripsSaved = st.Hits + st.Belays
	for r := reason(0); r < numReasons; r++ {
		st.Invalidations[r.String()] = sp.inval[r].Load()
	}
	return st
}

// Counting helpers: each updates the snapshot and the Prometheus metric.

func (sp *Speculator) countRequest(r requestResult) {
	switch r {
	case resultHit:
		sp.hits.Add(1)
	case resultMiss:
		sp.misses.Add(1)
	case resultBelay:
		sp.belays.Add(1)
	}
	sp.metrics.request(r)
	sp.changed.notify()
}

func (sp *Speculator) countSpec(o specOutcome, n int) {
	if n == 0 {
		return
	}
	switch o {
	case outcomeSent:
		sp.sent.Add(int64(n))
	case outcomeUsed:
		sp.used.Add(int64(n))
	case outcomeWasted:
		sp.wasted.Add(int64(n))
	case outcomeWithheld:
		sp.withheld.Add(int64(n))
	}
	sp.metrics.spec(o, n)
	sp.changed.notify()
}

func (sp *Speculator) countFramePredictions(confirmed, refuted int) {
	sp.confirmed.Add(int64(confirmed))
	sp.refuted.Add(int64(refuted))
	sp.metrics.framePredictions(confirmed, refuted)
	sp.changed.notify()
}

func (sp *Speculator) countInvalidation(r reason) {
	sp.inval[r].Add(1)
	sp.metrics.invalidation(r)
	sp.changed.notify()
}

func (sp *Speculator) addCache(bytes, entries int64) {
	sp.bytes.Add(bytes)
	sp.entries.Add(entries)
	sp.metrics.cache(bytes, entries)
	sp.changed.notify()
}

// countWriteBehind counts a command answered at once, or (failed) one the
// VM answered otherwise.
func (sp *Speculator) countWriteBehind(failed bool) {
	if failed {
		sp.wbFailed.Add(1)
	} else {
		sp.wbAnswered.Add(1)
	}
	sp.metrics.writeBehind(failed)
	sp.changed.notify()
}
