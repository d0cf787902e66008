package web

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// TestAPIIndex checks that GET /api/v1/ lists the endpoints, and that
// every endpoint it lists as always there is served.
func TestAPIIndex(t *testing.T) {
	src := &heapRequestSource{FakeSource: NewManualFakeSource(1)}
	srv := httptest.NewServer(NewHandler(src, prometheus.NewRegistry(), zerolog.Nop()))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/api/v1/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var idx APIIndex
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /api/v1/: %s %s, want 200 JSON", resp.Status, resp.Header.Get("Content-Type"))
	}
	if err := json.NewDecoder(resp.Body).Decode(&idx); err != nil {
		t.Fatal(err)
	}
	if idx.Version != "v1" || len(idx.Endpoints) < 10 {
		t.Fatalf("index %+v: want v1 and the endpoints", idx)
	}
	seen := map[string]bool{}
	for _, ep := range idx.Endpoints {
		seen[ep.Path] = true
		if ep.Requires != "" || strings.Contains(ep.Path, "/events") {
			continue // mounted by the command; streams that do not end
		}
		path, _, _ := strings.Cut(strings.NewReplacer("{vm}", FakeVMID, "{thread}", "1").Replace(ep.Path), "?")
		req, _ := http.NewRequest(ep.Method, srv.URL+path, strings.NewReader("{}"))
		req.Header.Set("Content-Type", "application/json")
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode >= 400 {
			t.Errorf("%s %s (listed in the index): %s", ep.Method, path, r.Status)
		}
	}
	for _, p := range []string{"/api/v1/vms", "/api/v1/snapshot", "/api/v1/events", "/api/v1/discover/select", "/metrics"} {
		if !seen[p] {
			t.Errorf("the index lacks %s", p)
		}
	}
}
