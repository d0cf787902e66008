// Package push owns split mode's pushed-reply bundles: a far end next to
// the VM gathers, at each stop, the replies its speculator predicts the
// debugger will ask for, and sends them across the link to the near end
// (next to the debugger) before the stop event itself, so that the
// debugger's reads at the stop are answered from the near end's cache and
// a step costs about one round trip.
//
// Two hook factories, one per end, each installing its end's speculator
// session with the push logic around it (instead of the speculator's own
// Hooks):
//
//   - FarHooks, on the far end's relay session (its "debugger" is the near
//     end): the speculator speculates at every stop (speculator.ModeAlways).
//     A suspending stop event is held until the speculation it started is
//     done (or Config.MaxHold passes, or Config.MaxBytesPerStop is
//     reached); then one bundle of the stored speculative replies, then
//     the event, go out through the session's writer, in that order.
//     Replies stored later during the same stop follow in further bundles.
//     A stop is a suspending event at a location or a suspending
//     CLASS_PREPARE (the prepare rule's class reads). When the split
//     preamble agreed on it (the session's DebuggerInfo().AttachBundle),
//     the session starts with the attach bundle: the attach's prefetch,
//     sent as the session starts, its replies pushed before any VM packet.
//   - NearHooks, on the near end's relay session (its "VM" is the far
//     end): bundles are consumed (never reach the debugger), parsed and
//     offered to the near speculator's cache (speculator.ModeNear: the
//     near end sends nothing of its own but the attach's replay, and its
//     prefetch when there is no attach bundle) under the validity rules of
//     its own speculation: a record is stored only if nothing invalidated it
//     since its stop's event reached the near end. The commands the cache
//     answered are reported back (CmdUsage) before the debugger's next
//     resume, so the far end's learner learns from them as if it had seen
//     them. With the attach bundle agreed (the session's VMInfo), the
//     debugger's first command waits for it (Config.AttachWait at most).
//
// Each end is its speculator session's tap (speculator.Tap): the session
// tells it where its stops stand (stop n began, ended, its speculation
// idle) and, at the far end, each speculative reply stored; push never
// calls the session back for its state.
//
// On a link faster than speculator.LowRTT pushing does not pay: the near
// end times the far end's answers to its usage reports and sends the
// link's round trip in the next one; below LowRTT the far end goes quiet
// (speculator.ModeNever: no speculation, no held events) and the near end
// speculates on the stops that come without a bundle itself, as the
// IDE-side proxy does.
//
// The wire format (vendor command set 0xE1) is in PROTOCOL.md. Bandwidth
// is a budget: bodies are zstd-compressed, the bytes pushed per stop are
// capped, and under the cap the replies the learner says are most likely
// used go first.
package push

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Config configures both ends.
type Config struct {
	// MaxBytesPerStop caps the bundle bytes (as sent, compressed) the far
	// end pushes per stop (DefaultMaxBytesPerStop when zero).
	MaxBytesPerStop int
	// MaxHold bounds how long the far end holds a stop event while its
	// speculation runs (DefaultMaxHold when zero).
	MaxHold time.Duration
	// AttachWait bounds how long the near end holds the debugger's first
	// command for the attach bundle the far end agreed to send first
	// (DefaultAttachWait when zero).
	AttachWait time.Duration
	// Counters, if not nil, counts what both ends do (Counters.Stats).
	Counters *Counters
	// Metrics may be nil.
	Metrics *Metrics
}

// Defaults of Config.
const (
	DefaultMaxBytesPerStop = 256 << 10
	DefaultMaxHold         = 50 * time.Millisecond
	DefaultAttachWait      = time.Second
)

func (c *Config) fill() {
	if c.MaxBytesPerStop <= 0 {
		c.MaxBytesPerStop = DefaultMaxBytesPerStop
	}
	if c.MaxHold <= 0 {
		c.MaxHold = DefaultMaxHold
	}
	if c.AttachWait <= 0 {
		c.AttachWait = DefaultAttachWait
	}
	if c.Counters == nil {
		c.Counters = new(Counters)
	}
}

// Stats is a snapshot of Counters.
type Stats struct {
	// Far end.
	Stops      int64 // stops held for a bundle
	Bundles    int64 // bundles sent
	BytesSent  int64 // bundle packet bytes sent (jdwpaccel_push_bytes_total)
	RawBytes   int64 // their record bytes before compression
	Records    int64 // records sent
	Capped     int64 // records left out by MaxBytesPerStop
	HoldExpiry int64 // stops whose event was released by MaxHold
	// Near end.
	BundlesReceived int64
	BundlesStale    int64 // bundles whose stop had ended: dropped whole
	BundlesBad      int64 // bundles that did not parse (their session was closed)
	Stored          int64 // records stored in the cache
	StaleRecords    int64 // records invalidated since their stop: not stored
	Duplicates      int64 // records whose reply was cached already
	Unusable        int64 // records the cache cannot hold (not cacheable)
	UsageReports    int64 // CmdUsage bodies sent back
}

// Counters count both ends' work; share one among sessions. Safe for
// concurrent use.
type Counters struct {
	stops, bundles, bytes, raw, records, capped, expiry atomic.Int64
	received, stale, bad, stored, staleRecs, dups       atomic.Int64
	unusable, usage                                     atomic.Int64
}

// Stats returns a snapshot.
func (c *Counters) Stats() Stats {
	return Stats{
		Stops: c.stops.Load(), Bundles: c.bundles.Load(), BytesSent: c.bytes.Load(), RawBytes: c.raw.Load(),
		Records: c.records.Load(), Capped: c.capped.Load(), HoldExpiry: c.expiry.Load(),
		BundlesReceived: c.received.Load(), BundlesStale: c.stale.Load(), BundlesBad: c.bad.Load(),
		Stored: c.stored.Load(), StaleRecords: c.staleRecs.Load(), Duplicates: c.dups.Load(),
		Unusable: c.unusable.Load(), UsageReports: c.usage.Load(),
	}
}

// Record outcomes, the label values of jdwpaccel_push_records_total.
const (
	outcomeSent     = "sent"
	outcomeCapped   = "capped"
	outcomeStored   = "stored"
	outcomeStale    = "stale"
	outcomeDup      = "duplicate"
	outcomeUnusable = "unusable"
	numOutcomes     = 6
)

var outcomeNames = [numOutcomes]string{outcomeSent, outcomeCapped, outcomeStored, outcomeStale, outcomeDup, outcomeUnusable}

// Metrics are the push metrics, shared by all sessions.
type Metrics struct {
	bytes   prometheus.Counter
	bundles prometheus.Counter
	records map[string]prometheus.Counter
	bad     prometheus.Counter
}

// NewMetrics creates the push metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		bytes: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "jdwpaccel", Name: "push_bytes_total",
			Help: "Bytes of pushed-reply bundles the far end sent across the split link (packets as sent, compressed)."}),
		bundles: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "jdwpaccel", Name: "push_bundles_total",
			Help: "Pushed-reply bundles the far end sent."}),
		bad: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "jdwpaccel", Name: "push_bad_bundles_total",
			Help: "Pushed-reply bundles or usage reports that did not parse; each closed its session."}),
		records: map[string]prometheus.Counter{},
	}
	recs := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "jdwpaccel", Name: "push_records_total",
		Help: "Pushed replies by outcome: sent or capped (far end); stored, stale, duplicate or unusable (near end)."}, []string{"outcome"})
	for _, o := range outcomeNames {
		m.records[o] = recs.WithLabelValues(o)
	}
	reg.MustRegister(m.bytes, m.bundles, m.bad, recs)
	return m
}

func (m *Metrics) sent(bytes, records int) {
	if m != nil {
		m.bytes.Add(float64(bytes))
		m.bundles.Inc()
		m.records[outcomeSent].Add(float64(records))
	}
}

func (m *Metrics) record(outcome string, n int) {
	if m != nil && n > 0 {
		m.records[outcome].Add(float64(n))
	}
}

func (m *Metrics) badBundle() {
	if m != nil {
		m.bad.Inc()
	}
}
