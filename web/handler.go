package web

import (
	"cmp"
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
)

//go:embed assets
var assetsFS embed.FS

// DefaultInterval is how often the live view refreshes.
const DefaultInterval = time.Second

// historyLen bounds the accelerator history kept for the page's chart.
const historyLen = 300

// Option adjusts NewHandler.
type Option func(*options)

type options struct {
	interval time.Duration
	role     string
}

// WithRole names what this monitor is the page of when it is not the
// proxy's own (e.g. "far end" for split mode's far end); the page shows it.
func WithRole(role string) Option { return func(o *options) { o.role = role } }

// Handler serves the monitor. Create it with NewHandler.
type Handler struct {
	mux      *http.ServeMux
	src      Source
	log      zerolog.Logger
	interval time.Duration
	role     string // WithRole
	// closed is closed by Close to end every event stream.
	closed    chan struct{}
	closeOnce sync.Once

	mu sync.Mutex // guards the fields below
	// snap is the last snapshot's JSON, shared by every event stream until
	// it is interval/2 old; nobody modifies it after it is stored.
	snap   []byte
	snapAt time.Time
	// history are accelerator samples, one per snapshot, oldest first, of
	// the run named run (AccelStats.Run).
	history []AccelPoint
	run     string
	// heaps caches heap summaries by VM, rebuilt when the generation or the
	// requested cell count changes.
	heaps map[string]heapCacheEntry
}

type heapCacheEntry struct {
	gen     uint64
	infoAt  time.Time
	cells   int
	summary []byte
}

// NewHandler returns the monitor's HTTP surface (API.md documents it):
//
//	GET /                              the page
//	GET /assets/...                    its scripts and styles (embedded)
//	GET /api/v1/                       APIIndex: the endpoints
//	GET /api/v1/vms                    []VM
//	GET /api/v1/sessions               []SessionJSON
//	GET /api/v1/vms/{vm}/threads       []Thread
//	GET /api/v1/vms/{vm}/heap?cells=N  HeapSummary
//	GET /api/v1/vms/{vm}/heap/segments HeapSegmentsJSON
//	GET /api/v1/accel                  AccelJSON
//	GET /api/v1/snapshot               Snapshot
//	GET /api/v1/events                 server-sent "snapshot" events
//	GET /metrics                       Prometheus metrics from reg (if reg is not nil)
//
// It starts no goroutines of its own; each event stream polls src on its
// request's goroutine, sharing snapshots with the other streams.
func NewHandler(src Source, reg *prometheus.Registry, log zerolog.Logger, opts ...Option) *Handler {
	o := options{interval: DefaultInterval}
	for _, f := range opts {
		f(&o)
	}
	h := &Handler{mux: http.NewServeMux(), src: src, log: log, interval: o.interval, role: o.role, closed: make(chan struct{}), heaps: map[string]heapCacheEntry{}}
	assets, err := fs.Sub(assetsFS, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	m := h.mux
	index, err := fs.ReadFile(assets, "index.html")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	m.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(h.page(index)) //nolint:errcheck // the client went away
	})
	m.Handle("GET /assets/", http.StripPrefix("/assets/", noCache(http.FileServerFS(assets))))
	m.HandleFunc("GET /api/v1/{$}", func(w http.ResponseWriter, r *http.Request) { h.writeJSON(w, apiIndex(reg != nil)) })
	m.HandleFunc("GET /api/v1/vms", func(w http.ResponseWriter, r *http.Request) { h.writeJSON(w, nonNil(src.VMs())) })
	m.HandleFunc("GET /api/v1/sessions", func(w http.ResponseWriter, r *http.Request) { h.writeJSON(w, sessionsJSON(src.Sessions())) })
	m.HandleFunc("GET /api/v1/accel", func(w http.ResponseWriter, r *http.Request) { h.writeJSON(w, h.accel()) })
	m.HandleFunc("GET /api/v1/vms/{vm}/threads", h.threads)
	m.HandleFunc("GET /api/v1/vms/{vm}/threads/{thread}/stack", h.stack)
	m.HandleFunc("GET /api/v1/vms/{vm}/heap", h.heap)
	m.HandleFunc("GET /api/v1/vms/{vm}/heap/segments", h.segments)
	m.HandleFunc("POST /api/v1/vms/{vm}/heap/request", h.requestHeap)
	m.HandleFunc("GET /api/v1/snapshot", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(h.snapshot(time.Now())) //nolint:errcheck // the client went away
	})
	m.HandleFunc("GET /api/v1/events", h.events)
	if reg != nil {
		m.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	}
	return h
}

// initialMarker is where page inserts the first snapshot: before the
// page's script, which renders it at once.
const initialMarker = `<script src="assets/app.js"></script>`

// page is the index page with the current snapshot (and the first VM's
// heap map, if it has one) embedded as JSON, so that the page shows data
// as soon as it loads, before its event stream connects: a headless
// browser's --screenshot captures it. json.Marshal escapes <, > and &, so
// the JSON cannot end its script element.
func (h *Handler) page(index []byte) []byte {
	snap := h.snapshot(time.Now())
	var b strings.Builder
	i := strings.Index(string(index), initialMarker)
	if i < 0 {
		return index
	}
	b.Write(index[:i])
	b.WriteString(`<script id="initial-snapshot" type="application/json">`)
	b.Write(snap)
	b.WriteString("</script>\n")
	if vms := h.src.VMs(); len(vms) > 0 && h.src.Heap(vms[0].ID).Generation != 0 {
		b.WriteString(`<script id="initial-heap" type="application/json">`)
		b.Write(h.heapSummary(vms[0].ID, DefaultHeapCells))
		b.WriteString("</script>\n")
	}
	b.Write(index[i:])
	return []byte(b.String())
}

// Close ends the open event streams (and any opened later), so that an
// http.Server's Shutdown need not wait for them. The rest keeps working.
func (h *Handler) Close() {
	h.closeOnce.Do(func() { close(h.closed) })
}

// ServeHTTP implements http.Handler. Every response forbids framing; serve
// the handler behind Guard to refuse other sites' requests too.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	setSecurityHeaders(w.Header())
	h.mux.ServeHTTP(w, r)
}

func noCache(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		next.ServeHTTP(w, r)
	})
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func (h *Handler) writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		h.log.Debug().Err(err).Msg("web: write JSON")
	}
}

func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"error": msg}) //nolint:errcheck // the client went away
}

// knownVM reports whether id names one of the source's VMs, answering 404
// when it does not.
func (h *Handler) knownVM(w http.ResponseWriter, id string) bool {
	for _, v := range h.src.VMs() {
		if v.ID == id {
			return true
		}
	}
	writeError(w, http.StatusNotFound, "unknown vm")
	return false
}

func (h *Handler) threads(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("vm")
	if !h.knownVM(w, id) {
		return
	}
	h.writeJSON(w, sortedThreads(h.src.Threads(id)))
}

// sortedThreads sorts DDM threads by ID; threads from a JDWP
// conversation (all ID 0) keep the VM's order.
func sortedThreads(ts []Thread) []Thread {
	ts = slices.Clone(nonNil(ts))
	slices.SortStableFunc(ts, func(a, b Thread) int { return cmp.Compare(a.ID, b.ID) })
	return ts
}

func (h *Handler) stack(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("vm")
	if !h.knownVM(w, id) {
		return
	}
	ss, ok := h.src.(StackSource)
	if !ok {
		writeError(w, http.StatusNotFound, "no stacks here")
		return
	}
	st, ok := ss.Stack(id, r.PathValue("thread"))
	if !ok {
		writeError(w, http.StatusNotFound, "no stack known for this thread")
		return
	}
	st.Frames = nonNil(st.Frames)
	h.writeJSON(w, st)
}

func (h *Handler) heap(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("vm")
	if !h.knownVM(w, id) {
		return
	}
	cells := DefaultHeapCells
	if c := r.URL.Query().Get("cells"); c != "" {
		n, err := strconv.Atoi(c)
		if err != nil || n < 1 || n > MaxHeapCells {
			writeError(w, http.StatusBadRequest, "cells must be 1.."+strconv.Itoa(MaxHeapCells))
			return
		}
		cells = n
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(h.heapSummary(id, cells)) //nolint:errcheck // the client went away
}

// heapSummary is the cached JSON summary of a VM's heap.
func (h *Handler) heapSummary(id string, cells int) []byte {
	hp := h.src.Heap(id)
	h.mu.Lock()
	e, ok := h.heaps[id]
	h.mu.Unlock()
	if ok && e.gen == hp.Generation && e.cells == cells && e.infoAt.Equal(hp.Info.Updated) {
		// the summary carries the HPIF figures too, so a new HPIF also
		// rebuilds it; the page fetches it only for a new map.
		return e.summary
	}
	b, err := json.Marshal(SummarizeHeap(hp, cells))
	if err != nil {
		h.log.Error().Err(err).Msg("web: encode heap summary")
		return []byte("{}")
	}
	b = append(b, '\n')
	h.mu.Lock()
	h.heaps[id] = heapCacheEntry{gen: hp.Generation, infoAt: hp.Info.Updated, cells: cells, summary: b}
	h.mu.Unlock()
	return b
}

// HeapSegmentsJSON is the raw segment list: each segment's runs are flat
// pairs kind, units.
type HeapSegmentsJSON struct {
	Generation uint64            `json:"generation"`
	Segments   []HeapSegmentJSON `json:"segments"`
}

// HeapSegmentJSON is one segment; Runs alternate kind and unit count.
type HeapSegmentJSON struct {
	Start    uint64   `json:"start"`
	UnitSize uint32   `json:"unit_size"`
	Runs     []uint32 `json:"runs"`
}

func (h *Handler) segments(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("vm")
	if !h.knownVM(w, id) {
		return
	}
	hp := h.src.Heap(id)
	out := HeapSegmentsJSON{Generation: hp.Generation, Segments: make([]HeapSegmentJSON, len(hp.Segments))}
	for i, s := range hp.Segments {
		runs := make([]uint32, 0, 2*len(s.Runs))
		for _, r := range s.Runs {
			runs = append(runs, uint32(r.Kind), r.Units)
		}
		out.Segments[i] = HeapSegmentJSON{Start: s.Start, UnitSize: s.UnitSize, Runs: runs}
	}
	h.writeJSON(w, out)
}

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
}

func sessionsJSON(ss []Session) []SessionJSON {
	out := make([]SessionJSON, len(ss))
	for i, s := range ss {
		out[i] = SessionJSON{ID: s.ID, Debugger: s.Debugger, VM: s.VM, Started: s.Started, Open: s.Ended.IsZero(), Packets: s.Packets, Bytes: s.Bytes, Run: s.Run}
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

// Snapshot is what each server-sent event carries: everything the page
// shows except the heap map, which it fetches when HeapGenerations change.
type Snapshot struct {
	Time time.Time `json:"time"`
	// Role is what this monitor is the page of, when not the proxy's own
	// (WithRole): "far end".
	Role     string               `json:"role,omitempty"`
	VMs      []VM                 `json:"vms"`
	Sessions []SessionJSON        `json:"sessions"`
	Accel    AccelJSON            `json:"accel"`
	Threads  map[string][]Thread  `json:"threads"`
	Heaps    map[string]HeapBrief `json:"heaps"`
	// Stacks are, by VM, the stack of the thread of the latest stop, when
	// known (see StackSource).
	Stacks map[string]ThreadStack `json:"stacks"`
}

// HeapBrief is a VM's HPIF summary and map generation.
type HeapBrief struct {
	Generation uint64        `json:"generation"`
	Info       *HeapInfoJSON `json:"info,omitempty"`
}

// snapshot returns the current snapshot's JSON, rebuilding it when the
// cached one is interval/2 old, and records an accelerator history sample
// each time it rebuilds.
func (h *Handler) snapshot(now time.Time) []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.snap != nil && now.Sub(h.snapAt) < h.interval/2 {
		return h.snap
	}
	a := h.src.Accel()
	if a.Run != h.run {
		h.history, h.run = h.history[:0], a.Run // a new run starts its own history
	}
	h.history = append(h.history, AccelPoint{T: now.UnixMilli(), P50: a.StepLatency.P50.Seconds(), P99: a.StepLatency.P99.Seconds(), Hits: a.Hits, Misses: a.Misses})
	if len(h.history) > historyLen {
		h.history = slices.Delete(h.history, 0, len(h.history)-historyLen)
	}
	s := Snapshot{
		Time: now, Role: h.role, VMs: nonNil(h.src.VMs()), Sessions: sessionsJSON(h.src.Sessions()), Accel: accelJSON(a),
		Threads: map[string][]Thread{}, Heaps: map[string]HeapBrief{}, Stacks: map[string]ThreadStack{},
	}
	ss, _ := h.src.(StackSource)
	s.Accel.History = slices.Clone(h.history)
	for _, vm := range s.VMs {
		s.Threads[vm.ID] = sortedThreads(h.src.Threads(vm.ID))
		hp := h.src.Heap(vm.ID)
		s.Heaps[vm.ID] = HeapBrief{Generation: hp.Generation, Info: heapInfoJSON(hp.Info)}
		if ss != nil {
			if st, ok := ss.CurrentStack(vm.ID); ok {
				st.Frames = nonNil(st.Frames)
				s.Stacks[vm.ID] = st
			}
		}
	}
	b, err := json.Marshal(s)
	if err != nil {
		h.log.Error().Err(err).Msg("web: encode snapshot")
		return []byte("{}")
	}
	h.snap, h.snapAt = b, now
	return b
}

// events streams snapshots as server-sent events until the client leaves.
func (h *Handler) events(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write([]byte("retry: 2000\n\n")); err != nil {
		return
	}
	h.log.Debug().Str("remote", r.RemoteAddr).Msg("web: event stream opened")
	defer h.log.Debug().Str("remote", r.RemoteAddr).Msg("web: event stream closed")
	t := time.NewTicker(h.interval)
	defer t.Stop()
	for {
		b := h.snapshot(time.Now())
		if err := writeEvent(w, "snapshot", b); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-h.closed:
			return
		case <-t.C:
		}
	}
}

// writeEvent writes one server-sent event; data must hold no newline
// (json.Marshal output does not).
func writeEvent(w http.ResponseWriter, name string, data []byte) error {
	if _, err := w.Write([]byte("event: " + name + "\ndata: ")); err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	_, err := w.Write([]byte("\n\n"))
	return err
}

// requestHeap asks a VM for a heap picture. It takes only a JSON POST, which
// a page of another origin cannot send without a preflight this server
// never answers.
func (h *Handler) requestHeap(w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		http.Error(w, "want Content-Type: application/json", http.StatusUnsupportedMediaType)
		return
	}
	hr, ok := h.src.(HeapRequester)
	if !ok {
		http.Error(w, "heap requests are not supported here", http.StatusNotImplemented)
		return
	}
	if err := hr.RequestHeap(r.PathValue("vm")); err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}
