package relay

import (
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/prometheus/client_golang/prometheus"
)

// Reason is why a session ended with a protocol or I/O error: the closed
// label set of jdwpaccel_protocol_errors_total.
type Reason string

// Protocol error reasons.
const (
	ReasonBadHandshake    Reason = "bad_handshake"
	ReasonShortPacket     Reason = "short_packet"
	ReasonOversizedPacket Reason = "oversized_packet"
	ReasonTruncated       Reason = "truncated"
	ReasonDialVM          Reason = "dial_vm"
	// ReasonVMBusy: the VM refused a second debugger while this server
	// had a session attached to it.
	ReasonVMBusy Reason = "vm_busy"
	// ReasonWriteTimeout: a peer did not take the proxy's bytes within the
	// write timeout.
	ReasonWriteTimeout Reason = "write_timeout"
	ReasonIO           Reason = "io"
	// ReasonWriteBehindFailed: the VM's reply to a command the proxy had
	// already answered (write-behind) differed from that answer; the
	// session is ended (Session.Fail) so the debugger does not go on with
	// a wrong picture.
	ReasonWriteBehindFailed Reason = "write_behind_failed"
	// ReasonHookPanic: a hook panicked in a session whose hooks ask not
	// to go on as pass-through (Hooks.EndOnPanic).
	ReasonHookPanic Reason = "hook_panic"
)

var protocolErrorReasons = []Reason{ReasonBadHandshake, ReasonShortPacket, ReasonOversizedPacket, ReasonTruncated, ReasonDialVM, ReasonVMBusy, ReasonWriteTimeout, ReasonIO, ReasonWriteBehindFailed, ReasonHookPanic}

// Metrics are the relay's Prometheus metrics. Label children are resolved
// once, here, so counting a packet is an array index and an atomic add.
type Metrics struct {
	packets  [2][numKinds]prometheus.Counter
	bytes    [2][numKinds]prometheus.Counter
	latency  [256]prometheus.Observer // by command set; unknown sets share "other"
	errors   map[Reason]prometheus.Counter
	sessions prometheus.Counter
	active   prometheus.Gauge
	panics   map[string]prometheus.Counter // by hook kind
	oversize prometheus.Counter
	overcap  prometheus.Counter
}

// NewMetrics creates the relay metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	packets := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "jdwpaccel", Name: "packets_total",
		Help: "JDWP packets relayed or injected, by direction and kind.",
	}, []string{"direction", "kind"})
	bytes := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "jdwpaccel", Name: "packet_bytes_total",
		Help: "Bytes of JDWP packets relayed or injected, by direction and kind.",
	}, []string{"direction", "kind"})
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "jdwpaccel", Name: "command_duration_seconds",
		Help:    "Time from a command leaving the proxy to the VM's reply arriving, by command set.",
		Buckets: prometheus.ExponentialBuckets(50e-6, 2.5, 14),
	}, []string{"command_set"})
	errs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "jdwpaccel", Name: "protocol_errors_total",
		Help: "Sessions ended by a protocol or I/O error, by reason.",
	}, []string{"reason"})
	sessions := prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "jdwpaccel", Name: "sessions_total",
		Help: "Debugger sessions accepted.",
	})
	active := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "jdwpaccel", Name: "sessions_active",
		Help: "Debugger sessions currently open.",
	})
	panics := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "jdwpaccel", Name: "hook_panics_total",
		Help: "Panics recovered from a session hook (interceptor, observer, their lifecycle calls, work run by Session.Do, a hook's own goroutine); each turns its session into plain pass-through.",
	}, []string{"hook"})
	oversize := prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "jdwpaccel", Name: "oversized_replies_total",
		Help: "VM replies above the maximum packet size, skipped and answered to the debugger with JDWP error INTERNAL (113).",
	})
	overcap := prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "jdwpaccel", Name: "connections_over_cap_total",
		Help: "Connections closed as soon as accepted because as many others had not sent their JDWP handshake yet (--max-handshakes).",
	})
	reg.MustRegister(packets, bytes, latency, errs, sessions, active, panics, oversize, overcap)

	m := &Metrics{errors: map[Reason]prometheus.Counter{}, sessions: sessions, active: active,
		panics: map[string]prometheus.Counter{}, oversize: oversize, overcap: overcap}
	for _, h := range []string{hookInterceptor, hookObserver, hookLifecycle, hookDo, hookGoroutine} {
		m.panics[h] = panics.WithLabelValues(h)
	}
	for d := ToVM; d <= ToDebugger; d++ {
		for k := Kind(0); k < numKinds; k++ {
			m.packets[d][k] = packets.WithLabelValues(d.String(), k.String())
			m.bytes[d][k] = bytes.WithLabelValues(d.String(), k.String())
		}
	}
	other := latency.WithLabelValues("other")
	for i := range m.latency {
		s := jdwp.CommandSet(i)
		if s.Known() {
			m.latency[i] = latency.WithLabelValues(s.String())
		} else {
			m.latency[i] = other
		}
	}
	for _, r := range protocolErrorReasons {
		m.errors[r] = errs.WithLabelValues(string(r))
	}
	return m
}

func (m *Metrics) count(f *Frame) {
	if m == nil {
		return
	}
	m.packets[f.Dir][f.Kind].Inc()
	m.bytes[f.Dir][f.Kind].Add(float64(len(f.Packet)))
	if f.Kind == KindReply && f.Latency > 0 {
		m.latency[f.Cmd.Set].Observe(f.Latency.Seconds())
	}
}

// ProtocolError counts an error of reason that ended a connection the
// relay's caller served (package share's clients).
func (m *Metrics) ProtocolError(reason Reason) { m.protocolError(reason) }

func (m *Metrics) protocolError(reason Reason) {
	if m == nil {
		return
	}
	if c, ok := m.errors[reason]; ok {
		c.Inc()
	}
}

func (m *Metrics) hookPanic(hook string) {
	if m == nil {
		return
	}
	if c, ok := m.panics[hook]; ok {
		c.Inc()
	}
}

func (m *Metrics) oversizedReply() {
	if m == nil {
		return
	}
	m.oversize.Inc()
}

func (m *Metrics) overCap() {
	if m == nil {
		return
	}
	m.overcap.Inc()
}
