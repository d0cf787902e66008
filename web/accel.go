package web

import (
	"slices"
	"time"
)

// SessionJSON is a Session as the API shows it.
type SessionJSON struct {
	ID       uint64     `json:"id"`
	Debugger string     `json:"debugger"`
	VM       string     `json:"vm"`
	Started  time.Time  `json:"started"`
	Ended    *time.Time `json:"ended,omitempty"`
	Open     bool       `json:"open"`
	Packets  uint64     `json:"packets"`
	Bytes    uint64     `json:"bytes"`
	Run      string     `json:"run,omitempty"`
	// Clients share the session's VM connection, each with its role.
	Clients []ClientJSON `json:"clients,omitempty"`
}

// ClientJSON is one client sharing a session (see Client).
type ClientJSON struct {
	Number   uint64    `json:"number"`
	Addr     string    `json:"addr"`
	Role     string    `json:"role"`
	ReadOnly bool      `json:"read_only,omitempty"`
	Since    time.Time `json:"since"`
	Requests int       `json:"requests"`
	Denied   int64     `json:"denied"`
}

func sessionsJSON(ss []Session) []SessionJSON {
	out := make([]SessionJSON, len(ss))
	for i, s := range ss {
		out[i] = SessionJSON{ID: s.ID, Debugger: s.Debugger, VM: s.VM, Started: s.Started, Open: s.Ended.IsZero(), Packets: s.Packets, Bytes: s.Bytes, Run: s.Run}
		for _, c := range s.Clients {
			out[i].Clients = append(out[i].Clients, ClientJSON(c))
		}
		if !s.Ended.IsZero() {
			t := s.Ended
			out[i].Ended = &t
		}
	}
	return out
}

// AccelJSON is the accelerator's figures. Latencies are seconds.
type AccelJSON struct {
	Enabled bool `json:"enabled"`
	// State is what speculation is doing: "speculating", "pass-through",
	// or what the source says (AccelStats.State), StateNote why.
	State           string      `json:"state"`
	StateNote       string      `json:"state_note,omitempty"`
	Hits            uint64      `json:"hits"`
	Misses          uint64      `json:"misses"`
	HitRatio        float64     `json:"hit_ratio"`
	Belays          uint64      `json:"belays"`
	RoundTripsSaved uint64      `json:"round_trips_saved"`
	Wasted          uint64      `json:"wasted"`
	Steps           uint64      `json:"steps"`
	StepLatency     LatencyJSON `json:"step_latency"`
	RecentSteps     []float64   `json:"recent_steps_seconds"`
	// Breakdowns are the recent steps with where their time went, LastStep
	// the latest with its commands (absent before the first step).
	Breakdowns []StepJSON      `json:"recent_steps"`
	LastStep   *StepDetailJSON `json:"last_step,omitempty"`
	// Run names the run the figures belong to, when the source has runs.
	Run     string       `json:"run,omitempty"`
	History []AccelPoint `json:"history"`
}

// StepJSON is a StepBreakdown; durations are seconds, At Unix
// milliseconds.
type StepJSON struct {
	At         int64   `json:"t"`
	Total      float64 `json:"total_seconds"`
	Run        float64 `json:"run_seconds"`
	VM         float64 `json:"vm_seconds"`
	Belay      float64 `json:"belay_seconds"`
	Cache      float64 `json:"cache_seconds"`
	Debugger   float64 `json:"debugger_seconds"`
	Idle       float64 `json:"idle_seconds"`
	RoundTrips int     `json:"round_trips"`
	Hits       int     `json:"hits"`
	Misses     int     `json:"misses"`
	Belays     int     `json:"belays"`
	Event      string  `json:"event"`
}

// StepDetailJSON is a StepDetail: the step and its waterfall.
type StepDetailJSON struct {
	StepJSON
	ResumeEnd float64           `json:"resume_end_seconds"`
	Commands  []StepCommandJSON `json:"commands"`
	Dropped   int               `json:"dropped,omitempty"`
}

// StepCommandJSON is one command of a step's waterfall; times are seconds
// from the resume, End 0 when unanswered.
type StepCommandJSON struct {
	Cmd    string  `json:"cmd"`
	Start  float64 `json:"start_seconds"`
	End    float64 `json:"end_seconds"`
	Served string  `json:"served"`
}

func stepJSON(b StepBreakdown) StepJSON {
	return StepJSON{
		At: b.At.UnixMilli(), Total: b.Total.Seconds(), Run: b.Run.Seconds(), VM: b.VM.Seconds(), Belay: b.Belay.Seconds(),
		Cache: b.Cache.Seconds(), Debugger: b.Debugger.Seconds(), Idle: b.Idle.Seconds(), RoundTrips: b.RoundTrips,
		Hits: b.Hits, Misses: b.Misses, Belays: b.Belays, Event: b.Event,
	}
}

// servedNames name how a step's command was answered.
var servedNames = map[string]string{"forwarded": "miss", "cache_hit": "hit", "belay": "belay"}

// LatencyJSON are latency percentiles in seconds.
type LatencyJSON struct {
	P50 float64 `json:"p50_seconds"`
	P90 float64 `json:"p90_seconds"`
	P99 float64 `json:"p99_seconds"`
	Max float64 `json:"max_seconds"`
}

// AccelPoint is one sample of the accelerator's history.
type AccelPoint struct {
	T      int64   `json:"t"` // Unix milliseconds
	P50    float64 `json:"p50_seconds"`
	P99    float64 `json:"p99_seconds"`
	Hits   uint64  `json:"hits"`
	Misses uint64  `json:"misses"`
}

func accelJSON(a AccelStats) AccelJSON {
	j := AccelJSON{
		Enabled: a.Enabled, State: a.State, StateNote: a.StateNote, Hits: a.Hits, Misses: a.Misses, Belays: a.Belays,
		RoundTripsSaved: a.RoundTripsSaved, Wasted: a.Wasted, Steps: a.Steps,
		StepLatency: LatencyJSON{
			P50: a.StepLatency.P50.Seconds(), P90: a.StepLatency.P90.Seconds(),
			P99: a.StepLatency.P99.Seconds(), Max: a.StepLatency.Max.Seconds(),
		},
		RecentSteps: make([]float64, len(a.RecentSteps)),
		Breakdowns:  make([]StepJSON, len(a.StepBreakdowns)),
		Run:         a.Run,
	}
	for i, b := range a.StepBreakdowns {
		j.Breakdowns[i] = stepJSON(b)
	}
	if l := a.LastStep; l != nil {
		d := &StepDetailJSON{StepJSON: stepJSON(l.StepBreakdown), ResumeEnd: l.ResumeEnd.Seconds(), Commands: make([]StepCommandJSON, len(l.Commands)), Dropped: l.Dropped}
		for i, c := range l.Commands {
			served := servedNames[c.Served.String()]
			if served == "" {
				served = c.Served.String()
			}
			d.Commands[i] = StepCommandJSON{Cmd: c.Cmd.String(), Start: c.Start.Seconds(), End: c.End.Seconds(), Served: served}
		}
		j.LastStep = d
	}
	if n := a.Hits + a.Misses; n > 0 {
		j.HitRatio = float64(a.Hits) / float64(n)
	}
	switch {
	case j.State != "":
	case a.Enabled:
		j.State = "speculating"
	default:
		j.State = "pass-through"
	}
	for i, d := range a.RecentSteps {
		j.RecentSteps[i] = d.Seconds()
	}
	return j
}

// accel is the accelerator's figures with the history so far.
func (h *Handler) accel() AccelJSON {
	j := accelJSON(h.src.Accel())
	h.mu.Lock()
	j.History = slices.Clone(h.history)
	h.mu.Unlock()
	j.History = nonNil(j.History)
	return j
}
