package web

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

func newTestServer(t *testing.T, src Source, reg *prometheus.Registry, opts ...Option) *httptest.Server {
	t.Helper()
	h := NewHandler(src, reg, zerolog.Nop(), opts...)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	t.Cleanup(h.Close) // runs first: ends event streams so Close does not wait
	return srv
}

func get(t *testing.T, url string) (int, http.Header, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	code, hd, b := get(t, url)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, code, b)
	}
	if ct := hd.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("GET %s: content type %q", url, ct)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v in %s", url, err, b)
	}
}

func TestAPI(t *testing.T) {
	src := NewManualFakeSource(1)
	src.Advance(3)
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "jdwpaccel_test_total", Help: "A test counter."})
	reg.MustRegister(c)
	c.Add(3)
	srv := newTestServer(t, src, reg)
	u := srv.URL

	var vms []VM
	getJSON(t, u+"/api/v1/vms", &vms)
	if len(vms) != 1 || vms[0].ID != FakeVMID || !vms[0].DDM || vms[0].PID != 4242 {
		t.Fatalf("vms = %+v", vms)
	}

	var threads []Thread
	getJSON(t, u+"/api/v1/vms/"+FakeVMID+"/threads", &threads)
	if len(threads) < 10 || threads[0].Name != "main" || threads[0].ID != 1 {
		t.Fatalf("threads = %+v", threads)
	}
	for i := 1; i < len(threads); i++ {
		if threads[i-1].ID >= threads[i].ID {
			t.Fatalf("threads not sorted by ID: %d then %d", threads[i-1].ID, threads[i].ID)
		}
	}

	var heap HeapSummary
	getJSON(t, u+"/api/v1/vms/"+FakeVMID+"/heap?cells=1000", &heap)
	if heap.Generation != 1 || heap.Info == nil || heap.Map.Cells == 0 || heap.Map.Cells > 1000 || len(heap.Map.Kinds) != heap.Map.Cells {
		t.Fatalf("heap = gen %d info %v map %d cells", heap.Generation, heap.Info, heap.Map.Cells)
	}
	if len(heap.Stats) < 5 || len(heap.Histogram.Series) < 5 || len(heap.Kinds) != 9 {
		t.Fatalf("heap stats %d series %d kinds %d", len(heap.Stats), len(heap.Histogram.Series), len(heap.Kinds))
	}

	var segs HeapSegmentsJSON
	getJSON(t, u+"/api/v1/vms/"+FakeVMID+"/heap/segments", &segs)
	var segBytes uint64
	for _, s := range segs.Segments {
		if len(s.Runs)%2 != 0 {
			t.Fatalf("odd runs array in segment %x", s.Start)
		}
		for i := 1; i < len(s.Runs); i += 2 {
			segBytes += uint64(s.Runs[i]) * uint64(s.UnitSize)
		}
	}
	if len(segs.Segments) != heap.Segments || segBytes != heap.TotalBytes {
		t.Fatalf("segments: %d segments %d bytes, summary says %d and %d", len(segs.Segments), segBytes, heap.Segments, heap.TotalBytes)
	}

	var accel AccelJSON
	getJSON(t, u+"/api/v1/accel", &accel)
	if !accel.Enabled || accel.Hits == 0 || accel.Steps == 0 || accel.StepLatency.P50 <= 0 || accel.StepLatency.P99 < accel.StepLatency.P50 || len(accel.RecentSteps) == 0 {
		t.Fatalf("accel = %+v", accel)
	}
	if want := float64(accel.Hits) / float64(accel.Hits+accel.Misses); accel.HitRatio != want {
		t.Fatalf("hit ratio %v, want %v", accel.HitRatio, want)
	}

	var sessions []SessionJSON
	getJSON(t, u+"/api/v1/sessions", &sessions)
	if len(sessions) != 1 || !sessions[0].Open || sessions[0].VM != FakeVMID || sessions[0].Packets == 0 {
		t.Fatalf("sessions = %+v", sessions)
	}

	var snap Snapshot
	getJSON(t, u+"/api/v1/snapshot", &snap)
	if len(snap.Threads[FakeVMID]) != len(threads) || snap.Heaps[FakeVMID].Generation != 1 || snap.Heaps[FakeVMID].Info == nil || len(snap.Accel.History) != 1 {
		t.Fatalf("snapshot = %+v", snap)
	}

	code, hd, body := get(t, u+"/metrics")
	if code != 200 || !strings.Contains(string(body), "jdwpaccel_test_total 3") {
		t.Fatalf("metrics: %d %s", code, body)
	}
	if hd.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatal("no nosniff header")
	}

	code, hd, body = get(t, u+"/")
	if code != 200 || !strings.HasPrefix(hd.Get("Content-Type"), "text/html") || !strings.Contains(string(body), `id="heapmap"`) {
		t.Fatalf("page: %d %s", code, hd.Get("Content-Type"))
	}
	for _, a := range []string{"/assets/app.js", "/assets/style.css"} {
		if code, _, body := get(t, u+a); code != 200 || len(body) < 1000 {
			t.Fatalf("%s: %d, %d bytes", a, code, len(body))
		}
	}
}

func TestAPIErrors(t *testing.T) {
	srv := newTestServer(t, NewManualFakeSource(1), nil)
	for _, tc := range []struct {
		path string
		code int
	}{
		{"/api/v1/vms/nope/threads", http.StatusNotFound},
		{"/api/v1/vms/nope/heap", http.StatusNotFound},
		{"/api/v1/vms/nope/heap/segments", http.StatusNotFound},
		{"/api/v1/vms/" + FakeVMID + "/heap?cells=0", http.StatusBadRequest},
		{"/api/v1/vms/" + FakeVMID + "/heap?cells=x", http.StatusBadRequest},
		{"/api/v1/vms/" + FakeVMID + "/heap?cells=99999999", http.StatusBadRequest},
		{"/metrics", http.StatusNotFound}, // no registry
		{"/nothing", http.StatusNotFound},
		{"/assets/nothing.js", http.StatusNotFound},
	} {
		t.Run(tc.path, func(t *testing.T) {
			if code, _, body := get(t, srv.URL+tc.path); code != tc.code {
				t.Fatalf("GET %s = %d %s, want %d", tc.path, code, body, tc.code)
			}
		})
	}
	resp, err := http.Post(srv.URL+"/api/v1/vms", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST = %d", resp.StatusCode)
	}
}

// emptySource has nothing to show.
type emptySource struct{}

func (emptySource) VMs() []VM                  { return nil }
func (emptySource) Threads(vm string) []Thread { return nil }
func (emptySource) Heap(vm string) Heap        { return Heap{} }
func (emptySource) Accel() AccelStats          { return AccelStats{} }
func (emptySource) Sessions() []Session        { return nil }

func TestAPIEmpty(t *testing.T) {
	srv := newTestServer(t, emptySource{}, nil)
	for _, p := range []string{"/api/v1/vms", "/api/v1/sessions"} {
		if _, _, b := get(t, srv.URL+p); strings.TrimSpace(string(b)) != "[]" {
			t.Fatalf("%s = %s, want []", p, b)
		}
	}
	var a AccelJSON
	getJSON(t, srv.URL+"/api/v1/accel", &a)
	if a.HitRatio != 0 || a.History == nil || a.RecentSteps == nil {
		t.Fatalf("accel = %+v", a)
	}
}

// sseEvent is one server-sent event as a client reads it.
type sseEvent struct {
	id, name, data string
}

// readEvent reads one server-sent event, skipping comments.
func readEvent(t *testing.T, r *bufio.Reader) sseEvent {
	t.Helper()
	var e sseEvent
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("event stream: %v", err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "":
			if e != (sseEvent{}) {
				return e
			}
		case strings.HasPrefix(line, "id: "):
			e.id = line[len("id: "):]
		case strings.HasPrefix(line, "event: "):
			e.name = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			e.data += line[len("data: "):]
		}
	}
}

func TestEvents(t *testing.T) {
	src := NewManualFakeSource(2)
	srv := newTestServer(t, src, nil, WithInterval(20*time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/v1/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	r := bufio.NewReader(resp.Body)
	snap := func() Snapshot {
		e := readEvent(t, r)
		if e.name != "snapshot" {
			t.Fatalf("event %q", e.name)
		}
		var s Snapshot
		if err := json.Unmarshal([]byte(e.data), &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	first := snap()
	if len(first.VMs) != 1 || len(first.Threads[FakeVMID]) == 0 {
		t.Fatalf("first snapshot: %+v", first)
	}
	hits := first.Accel.Hits
	src.Advance(1)
	// The stream keeps going and soon shows the step.
	for i := 0; ; i++ {
		s := snap()
		if s.Accel.Hits > hits {
			if len(s.Accel.History) < 2 {
				t.Fatalf("history has %d points", len(s.Accel.History))
			}
			break
		}
		if i > 200 {
			t.Fatal("stream never showed the new step")
		}
	}
}

// TestEventsClose: Close ends open streams, so server shutdown is prompt.
func TestEventsClose(t *testing.T) {
	h := NewHandler(NewManualFakeSource(3), nil, zerolog.Nop(), WithInterval(time.Hour))
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/api/v1/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	readEvent(t, r) // the first snapshot is immediate
	h.Close()
	if _, err := io.ReadAll(r); err != nil {
		t.Fatalf("stream did not end cleanly: %v", err)
	}
}

func TestFakeSourceDeterministic(t *testing.T) {
	a, b := NewManualFakeSource(42), NewManualFakeSource(42)
	a.Advance(20)
	b.Advance(20)
	ta, tb := a.Threads(FakeVMID), b.Threads(FakeVMID)
	if len(ta) != len(tb) {
		t.Fatalf("%d vs %d threads", len(ta), len(tb))
	}
	for i := range ta {
		if ta[i] != tb[i] {
			t.Fatalf("thread %d: %+v vs %+v", i, ta[i], tb[i])
		}
	}
	if a.Accel().Hits != b.Accel().Hits || a.Heap(FakeVMID).Generation != b.Heap(FakeVMID).Generation {
		t.Fatal("accel or heap differ")
	}
	// And it churns: threads come and go, CPU time grows.
	c := NewManualFakeSource(42)
	before := c.Threads(FakeVMID)
	c.Advance(20)
	after := c.Threads(FakeVMID)
	if before[len(before)-1].ID == after[len(after)-1].ID {
		t.Fatal("no new threads after 20 steps")
	}
	var cpu0, cpu1 uint32
	for _, t := range before {
		cpu0 += t.UTime + t.STime
	}
	for _, t := range after {
		cpu1 += t.UTime + t.STime
	}
	if cpu1 <= cpu0 {
		t.Fatal("CPU time did not grow")
	}
	if c.Threads("other") != nil || c.Heap("other").Generation != 0 {
		t.Fatal("unknown VM has data")
	}
}
