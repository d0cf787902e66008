package journal

import "github.com/prometheus/client_golang/prometheus"

// metrics are the journal's Prometheus metrics. They always exist, so
// counting needs no nil checks; they are registered only when the options
// carry a Registerer.
type metrics struct {
	dropped     prometheus.Counter
	records     prometheus.Counter
	bytes       prometheus.Counter
	rotations   prometheus.Counter
	writeErrors prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "jdwpaccel", Subsystem: "journal", Name: "dropped_total",
			Help: "Journal records dropped because the writer could not keep up with the relay.",
		}),
		records: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "jdwpaccel", Subsystem: "journal", Name: "records_total",
			Help: "Journal records written (packets, session starts and ends).",
		}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "jdwpaccel", Subsystem: "journal", Name: "written_bytes_total",
			Help: "Bytes written to journal files.",
		}),
		rotations: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "jdwpaccel", Subsystem: "journal", Name: "rotations_total",
			Help: "Journal file rotations.",
		}),
		writeErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "jdwpaccel", Subsystem: "journal", Name: "write_errors_total",
			Help: "Failed writes to the journal file.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.dropped, m.records, m.bytes, m.rotations, m.writeErrors)
	}
	return m
}
