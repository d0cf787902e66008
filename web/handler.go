package web

import (
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/jdwpaccel/jdwpaccel/feed"
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
	interval  time.Duration
	role      string
	feed      *feed.Feed    // WithFeed
	keepAlive time.Duration // KeepAlive, or a test's
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
	// feed serves the VMs' event streams (WithFeed); nil: none.
	feed      *feed.Feed
	keepAlive time.Duration
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
//	GET /api/v1/vms/{vm}/events        server-sent feed.Events (WithFeed)
//	GET /metrics                       Prometheus metrics from reg (if reg is not nil)
//
// It starts no goroutines of its own; each event stream polls src on its
// request's goroutine, sharing snapshots with the other streams.
func NewHandler(src Source, reg *prometheus.Registry, log zerolog.Logger, opts ...Option) *Handler {
	o := options{interval: DefaultInterval, keepAlive: KeepAlive}
	for _, f := range opts {
		f(&o)
	}
	h := &Handler{mux: http.NewServeMux(), src: src, log: log, interval: o.interval, role: o.role, feed: o.feed, keepAlive: o.keepAlive, closed: make(chan struct{}), heaps: map[string]heapCacheEntry{}}
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
	m.HandleFunc("GET /api/v1/vms/{vm}/events", h.vmEvents)
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
