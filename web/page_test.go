package web

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// runSource is a FakeSource with runs, a hostile app name and a stack.
type runSource struct {
	*FakeSource
	mu  sync.Mutex // guards run
	run string
}

func (s *runSource) Accel() AccelStats {
	a := s.FakeSource.Accel()
	s.mu.Lock()
	a.Run = s.run
	s.mu.Unlock()
	return a
}

func (s *runSource) VMs() []VM {
	vms := s.FakeSource.VMs()
	vms[0].App = `</script><script>alert(1)</script>`
	return vms
}

func (s *runSource) Stack(vm, thread string) (ThreadStack, bool) {
	if vm != FakeVMID || thread != "0x1" {
		return ThreadStack{}, false
	}
	return ThreadStack{Thread: "0x1", Name: "main", From: ThreadsJDWP, Frames: []StackFrame{{Class: "Main", Method: "run", Line: 7}}}, true
}

func (s *runSource) CurrentStack(vm string) (ThreadStack, bool) { return s.Stack(vm, "0x1") }

// TestHistoryRuns: a source's new run starts the accelerator history over.
func TestHistoryRuns(t *testing.T) {
	src := &runSource{FakeSource: NewManualFakeSource(1), run: "first"}
	h := NewHandler(src, nil, zerolog.Nop(), WithInterval(10*time.Millisecond))
	t0 := time.Now()
	for i := range 3 {
		h.snapshot(t0.Add(time.Duration(i) * time.Second))
	}
	if j := h.accel(); len(j.History) != 3 || j.Run != "first" {
		t.Fatalf("history %d, run %q", len(j.History), j.Run)
	}
	src.mu.Lock()
	src.run = "second"
	src.mu.Unlock()
	h.snapshot(t0.Add(10 * time.Second))
	if j := h.accel(); len(j.History) != 1 || j.Run != "second" {
		t.Fatalf("after the new run: history %d, run %q", len(j.History), j.Run)
	}
}

// TestPageEmbedsSnapshot: the page carries the first snapshot (with the
// current stack) and heap map as JSON that no app name can break out of.
func TestPageEmbedsSnapshot(t *testing.T) {
	src := &runSource{FakeSource: NewManualFakeSource(1)}
	srv := httptest.NewServer(NewHandler(src, prometheus.NewRegistry(), zerolog.Nop()))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	page := string(b)
	if strings.Contains(page, "<script>alert(1)") {
		t.Fatal("the app name broke out of the embedded JSON")
	}
	extract := func(id string) string {
		start := strings.Index(page, `<script id="`+id+`" type="application/json">`)
		if start < 0 {
			t.Fatalf("no %s in the page", id)
		}
		rest := page[start:]
		rest = rest[strings.Index(rest, ">")+1:]
		return rest[:strings.Index(rest, "</script>")]
	}
	var s Snapshot
	if err := json.Unmarshal([]byte(extract("initial-snapshot")), &s); err != nil {
		t.Fatal(err)
	}
	if len(s.VMs) != 1 || s.VMs[0].App != `</script><script>alert(1)</script>` || len(s.Threads[FakeVMID]) == 0 || len(s.Stacks[FakeVMID].Frames) != 1 {
		t.Fatalf("embedded snapshot %+v", s)
	}
	var hs HeapSummary
	if err := json.Unmarshal([]byte(extract("initial-heap")), &hs); err != nil || hs.Generation == 0 {
		t.Fatalf("embedded heap %+v: %v", hs, err)
	}
	if !strings.Contains(page, `<script src="assets/app.js"></script>`) {
		t.Fatal("the page lost its script")
	}
}

func TestStackEndpoint(t *testing.T) {
	src := &runSource{FakeSource: NewManualFakeSource(1)}
	srv := httptest.NewServer(NewHandler(src, nil, zerolog.Nop()))
	defer srv.Close()
	for path, want := range map[string]int{
		"/api/v1/vms/" + FakeVMID + "/threads/0x1/stack": http.StatusOK,
		"/api/v1/vms/" + FakeVMID + "/threads/0x2/stack": http.StatusNotFound,
		"/api/v1/vms/nope/threads/0x1/stack":             http.StatusNotFound,
	} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		var st ThreadStack
		json.NewDecoder(resp.Body).Decode(&st) //nolint:errcheck // checked through st
		resp.Body.Close()
		if resp.StatusCode != want || want == http.StatusOK && (st.Name != "main" || len(st.Frames) != 1) {
			t.Errorf("GET %s: %d %+v", path, resp.StatusCode, st)
		}
	}
}
