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

// Metrics counts link connections by end and outcome. A nil *Metrics
// counts nothing.
type Metrics struct {
	conns map[End]map[Outcome]prometheus.Counter
}

// NewMetrics registers the split metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "jdwpaccel",
		Subsystem: "split",
		Name:      "connections_total",
		Help:      "Connections between the near and far ends of split mode, by end (near: dialled, far: accepted) and how their preamble ended.",
	}, []string{"end", "outcome"})
	reg.MustRegister(vec)
	m := &Metrics{conns: map[End]map[Outcome]prometheus.Counter{}}
	for _, e := range []End{EndNear, EndFar} {
		m.conns[e] = map[Outcome]prometheus.Counter{}
		for _, o := range outcomes {
			m.conns[e][o] = vec.WithLabelValues(string(e), string(o))
		}
	}
	return m
}

func (m *Metrics) count(e End, o Outcome) {
	if m != nil {
		m.conns[e][o].Inc()
	}
}
