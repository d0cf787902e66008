package tunnel

import "github.com/prometheus/client_golang/prometheus"

// Why a tunnel command ended: the closed label set of
// jdwpaccel_tunnel_ends_total.
const (
	EndExited  = "exited"   // it exited by itself
	EndNotUp   = "not_up"   // the far end did not answer through it within ReadyTimeout
	EndSilent  = "silent"   // the far end stopped answering through it
	EndStopped = "shutdown" // the near end shut down
)

var endReasons = []string{EndExited, EndNotUp, EndSilent, EndStopped}

// Metrics counts a tunnel's starts and ends and says whether it is up. A
// nil *Metrics counts nothing.
type Metrics struct {
	starts prometheus.Counter
	ends   map[string]prometheus.Counter
	up     prometheus.Gauge
}

// NewMetrics registers the tunnel metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		starts: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "jdwpaccel", Subsystem: "tunnel", Name: "starts_total",
			Help: "Times the near end started its tunnel command (--far-tunnel)."}),
		up: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "jdwpaccel", Subsystem: "tunnel", Name: "up",
			Help: "1 while the far end answers through the tunnel (--far-tunnel), else 0."}),
		ends: map[string]prometheus.Counter{},
	}
	ends := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "jdwpaccel", Subsystem: "tunnel", Name: "ends_total",
		Help: "Ends of the tunnel command (--far-tunnel), by why it ended."}, []string{"reason"})
	for _, r := range endReasons {
		m.ends[r] = ends.WithLabelValues(r)
	}
	reg.MustRegister(m.starts, m.up, ends)
	return m
}

func (m *Metrics) started() {
	if m != nil {
		m.starts.Inc()
	}
}

func (m *Metrics) ended(reason string) {
	if m != nil {
		m.ends[reason].Inc()
	}
}

func (m *Metrics) setUp(v bool) {
	if m == nil {
		return
	}
	if v {
		m.up.Set(1)
	} else {
		m.up.Set(0)
	}
}
