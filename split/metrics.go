package split

import "github.com/prometheus/client_golang/prometheus"

// Outcome is how a link connection's preamble ended: the closed label set
// of jdwpaccel_split_connections_total.
type Outcome string

// Outcomes.
const (
	OutcomeAccepted     Outcome = "accepted"
	OutcomeProbe        Outcome = "probe"
	OutcomePage         Outcome = "page"
	OutcomeVersionSkew  Outcome = "version_skew"
	OutcomeUnauthorized Outcome = "unauthorized"
	OutcomeTLS          Outcome = "tls_failed"
	OutcomeBadPreamble  Outcome = "bad_preamble"
	OutcomeUnreachable  Outcome = "unreachable"
	// OutcomeOverCap: the far end closed the connection at once, as many
	// others were still in their TLS handshake or preamble.
	OutcomeOverCap Outcome = "over_cap"
	// OutcomeResumed: a reconnect took a resumable session up again.
	OutcomeResumed Outcome = "resumed"
	// OutcomeResumeRefused: a reconnect was refused: the far end does not
	// hold the session, or the secret or sequence number is wrong.
	OutcomeResumeRefused Outcome = "resume_refused"
)

var outcomes = []Outcome{OutcomeAccepted, OutcomeProbe, OutcomePage, OutcomeVersionSkew, OutcomeUnauthorized, OutcomeTLS, OutcomeBadPreamble, OutcomeUnreachable, OutcomeOverCap, OutcomeResumed, OutcomeResumeRefused}

// End names an end of the link: the label "end".
type End string

// Ends.
const (
	EndNear End = "near"
	EndFar  End = "far"
)

// Metrics counts link connections by end and outcome, and the bytes of
// compressed connections. A nil *Metrics counts nothing.
type Metrics struct {
	conns      map[End]map[Outcome]prometheus.Counter
	compressed map[End]compressedCounters
}

// compressedCounters count one end's compressed connections' bytes: the
// stream's (before compression, after decompression) and the wire's. Nil
// counters count nothing.
type compressedCounters struct {
	streamSent, wireSent, streamReceived, wireReceived prometheus.Counter
}

// compressedAt returns the counters of end e (none for a nil m).
func (m *Metrics) compressedAt(e End) compressedCounters {
	if m == nil {
		return compressedCounters{}
	}
	return m.compressed[e]
}

// add adds n to c, if c is not nil.
func add(c prometheus.Counter, n int) {
	if c != nil && n > 0 {
		c.Add(float64(n))
	}
}

// NewMetrics registers the split metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "jdwpaccel",
		Subsystem: "split",
		Name:      "connections_total",
		Help:      "Connections between the near and far ends of split mode, by end (near: dialled, far: accepted) and how their preamble ended.",
	}, []string{"end", "outcome"})
	bytes := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "jdwpaccel",
		Subsystem: "split",
		Name:      "compressed_bytes_total",
		Help:      "Bytes of the compressed link connections of split mode, by end, direction (sent, received) and form (stream: the session's bytes; wire: as compressed on the link).",
	}, []string{"end", "direction", "form"})
	reg.MustRegister(vec, bytes)
	m := &Metrics{conns: map[End]map[Outcome]prometheus.Counter{}, compressed: map[End]compressedCounters{}}
	for _, e := range []End{EndNear, EndFar} {
		m.conns[e] = map[Outcome]prometheus.Counter{}
		for _, o := range outcomes {
			m.conns[e][o] = vec.WithLabelValues(string(e), string(o))
		}
		m.compressed[e] = compressedCounters{
			streamSent: bytes.WithLabelValues(string(e), "sent", "stream"), wireSent: bytes.WithLabelValues(string(e), "sent", "wire"),
			streamReceived: bytes.WithLabelValues(string(e), "received", "stream"), wireReceived: bytes.WithLabelValues(string(e), "received", "wire"),
		}
	}
	return m
}

func (m *Metrics) count(e End, o Outcome) {
	if m != nil {
		m.conns[e][o].Inc()
	}
}
