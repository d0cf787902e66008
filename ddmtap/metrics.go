package ddmtap

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jdwpaccel/jdwpaccel/ddm"
)

// Reason is why a DDM problem was counted: the closed label set of
// jdwpaccel_ddm_errors_total.
type Reason string

// DDM error reasons.
const (
	ReasonMalformed   Reason = "malformed"    // a chunk that does not match its layout
	ReasonChunkLength Reason = "chunk_length" // a chunk header running past its packet
	ReasonUnknownType Reason = "unknown_type" // a chunk type outside the catalogue
	ReasonFailChunk   Reason = "fail_chunk"   // the VM answered with FAIL
	ReasonJDWPError   Reason = "jdwp_error"   // the VM answered with a JDWP error
	ReasonTimeout     Reason = "timeout"      // a request that got no reply in time
	ReasonDial        Reason = "dial"         // the holder could not reach the VM
	ReasonProbeLost   Reason = "probe_lost"   // the VM closed the connection with a first probe unanswered
	ReasonPanic       Reason = "panic"        // the DDM client panicked on a goroutine of its own, outside a session (a bug)
)

var errorReasons = []Reason{ReasonMalformed, ReasonChunkLength, ReasonUnknownType, ReasonFailChunk, ReasonJDWPError, ReasonTimeout, ReasonDial, ReasonProbeLost, ReasonPanic}

// Metrics are the DDM tap's Prometheus metrics. Children are resolved once,
// so counting a chunk is an index and an atomic add. A nil *Metrics counts
// nothing.
type Metrics struct {
	chunks  [2][]prometheus.Counter // by Direction, then typeIndex; last is "other"
	errors  map[Reason]prometheus.Counter
	threads prometheus.Gauge
	heap    [3]prometheus.Gauge // size, allocated, max of the last HPIF
}

// NewMetrics creates the DDM metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	chunks := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "jdwpaccel", Name: "ddm_chunks_total",
		Help: "DDM chunks seen by the tap, by chunk type (known four-letter types, else other) and direction.",
	}, []string{"type", "direction"})
	errs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "jdwpaccel", Name: "ddm_errors_total",
		Help: "DDM problems counted and logged (never fatal), by reason.",
	}, []string{"reason"})
	threads := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "jdwpaccel", Name: "ddm_threads",
		Help: "Live threads known to the DDM monitors.",
	})
	heap := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "jdwpaccel", Name: "ddm_heap_bytes",
		Help: "Java heap of the last HPIF summary, by measure (size, allocated, max).",
	}, []string{"measure"})
	reg.MustRegister(chunks, errs, threads, heap)
	m := &Metrics{errors: make(map[Reason]prometheus.Counter, len(errorReasons)), threads: threads}
	for d := range m.chunks {
		dir := ddm.Direction(d).String()
		for _, t := range ddm.KnownTypes() {
			m.chunks[d] = append(m.chunks[d], chunks.WithLabelValues(t.String(), dir))
		}
		m.chunks[d] = append(m.chunks[d], chunks.WithLabelValues("other", dir))
	}
	for _, r := range errorReasons {
		m.errors[r] = errs.WithLabelValues(string(r))
	}
	for i, name := range []string{"size", "allocated", "max"} {
		m.heap[i] = heap.WithLabelValues(name)
	}
	return m
}

// typeIndex maps known types to their metric slot.
var typeIndex = func() map[ddm.Type]int {
	known := ddm.KnownTypes()
	m := make(map[ddm.Type]int, len(known))
	for i, t := range known {
		m[t] = i
	}
	return m
}()

func (m *Metrics) chunk(d ddm.Direction, t ddm.Type) {
	if m == nil {
		return
	}
	i, ok := typeIndex[t]
	if !ok {
		i = len(typeIndex)
	}
	m.chunks[d][i].Inc()
}

func (m *Metrics) error(reason Reason) {
	if m == nil {
		return
	}
	if c, ok := m.errors[reason]; ok {
		c.Inc()
	}
}

func (m *Metrics) threadsAdd(n int) {
	if m != nil && n != 0 {
		m.threads.Add(float64(n))
	}
}

func (m *Metrics) heapSummary(h ddm.HeapSummary) {
	if m == nil {
		return
	}
	m.heap[0].Set(float64(h.Size))
	m.heap[1].Set(float64(h.Allocated))
	m.heap[2].Set(float64(h.MaxSize))
}
