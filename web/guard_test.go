package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"
)

// guardRequest sends one request through Guard(NewHandler(...), listen)
// and returns the recorder and whether the request reached the handler's
// heap-request endpoint (the page's only state-changing one).
func guardRequest(t *testing.T, listen, method, target, host, origin string) (*httptest.ResponseRecorder, bool) {
	t.Helper()
	src := &heapRequestSource{FakeSource: NewManualFakeSource(1)}
	h := Guard(NewHandler(src, nil, zerolog.Nop()), listen)
	var body *strings.Reader
	if method == http.MethodPost {
		body = strings.NewReader("{}")
	} else {
		body = strings.NewReader("")
	}
	r := httptest.NewRequest(method, target, body)
	r.Host = host
	if method == http.MethodPost {
		r.Header.Set("Content-Type", "application/json")
	}
	if origin != "" {
		r.Header.Set("Origin", origin)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w, src.requests() > 0
}

func TestGuardHost(t *testing.T) {
	cases := []struct {
		listen, host string
		ok           bool
	}{
		{"127.0.0.1:8790", "127.0.0.1:8790", true},
		{"127.0.0.1:8790", "localhost:8790", true},
		{"127.0.0.1:8790", "LOCALHOST", true},
		{"127.0.0.1:8790", "127.3.4.5:1", true},
		{"127.0.0.1:8790", "[::1]:8790", true},
		{"127.0.0.1:8790", "evil.example", false},
		{"127.0.0.1:8790", "evil.example:8790", false},
		{"127.0.0.1:8790", "localhost.evil.example:8790", false},
		{"127.0.0.1:8790", "10.0.0.1:8790", false},
		{"127.0.0.1:8790", "", false},
		// --allow-remote with a given address: that address too.
		{"192.168.1.5:8790", "192.168.1.5:8790", true},
		{"192.168.1.5:8790", "127.0.0.1:8790", true},
		{"192.168.1.5:8790", "evil.example:8790", false},
		{"devbox.lan:8790", "DevBox.lan:8790", true},
		// --allow-remote on every interface: IP literals, never names.
		{"0.0.0.0:8790", "10.1.2.3:8790", true},
		{"[::]:8790", "[fe80::1]:8790", true},
		{":8790", "10.1.2.3", true},
		{"0.0.0.0:8790", "evil.example:8790", false},
	}
	for _, c := range cases {
		t.Run(c.listen+" "+c.host, func(t *testing.T) {
			w, _ := guardRequest(t, c.listen, http.MethodGet, "/api/v1/vms", c.host, "")
			if ok := w.Code == http.StatusOK; ok != c.ok {
				t.Errorf("GET with Host %q on %s: %d, want allowed=%v", c.host, c.listen, w.Code, c.ok)
			}
			if !c.ok && w.Code != http.StatusMisdirectedRequest {
				t.Errorf("refused with %d, want 421", w.Code)
			}
		})
	}
}

// TestGuardStateChangingRequests checks the Origin of POSTs: a page of
// another site, including one that rebound its name to 127.0.0.1, cannot
// change anything.
func TestGuardStateChangingRequests(t *testing.T) {
	const heap = "/api/v1/vms/" + FakeVMID + "/heap/request"
	cases := []struct {
		name, host, origin string
		code               int
	}{
		{"no origin (curl, jdwpaccel select)", "127.0.0.1:8790", "", http.StatusAccepted},
		{"the page itself", "127.0.0.1:8790", "http://127.0.0.1:8790", http.StatusAccepted},
		{"the page through localhost", "127.0.0.1:8790", "http://localhost:8790", http.StatusAccepted},
		{"DNS rebinding", "evil.example:8790", "http://evil.example:8790", http.StatusMisdirectedRequest},
		{"another site", "127.0.0.1:8790", "http://evil.example", http.StatusForbidden},
		{"another site over https", "localhost:8790", "https://evil.example:8790", http.StatusForbidden},
		{"opaque origin", "127.0.0.1:8790", "null", http.StatusForbidden},
		{"another local program", "127.0.0.1:8790", "http://127.0.0.1:9999", http.StatusForbidden},
		{"another local program through localhost", "localhost:8790", "http://localhost:3000", http.StatusForbidden},
		{"loopback on the default port", "127.0.0.1:8790", "http://127.0.0.1", http.StatusForbidden},
		{"this port over https", "127.0.0.1:8790", "https://127.0.0.1:8790", http.StatusForbidden},
		{"the page through another loopback address", "127.0.0.1:8790", "http://127.0.0.2:8790", http.StatusAccepted},
		{"not a URL", "127.0.0.1:8790", "::::", http.StatusForbidden},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, reached := guardRequest(t, "127.0.0.1:8790", http.MethodPost, heap, c.host, c.origin)
			if w.Code != c.code {
				t.Errorf("POST with Host %q, Origin %q: %d, want %d", c.host, c.origin, w.Code, c.code)
			}
			if want := c.code == http.StatusAccepted; reached != want {
				t.Errorf("request reached the VM: %v, want %v", reached, want)
			}
		})
	}
}

// TestSecurityHeaders checks that every response, refusals and errors
// included, forbids framing.
func TestSecurityHeaders(t *testing.T) {
	check := func(t *testing.T, w *httptest.ResponseRecorder) {
		t.Helper()
		if got := w.Header().Get("X-Frame-Options"); got != "DENY" {
			t.Errorf("%d response: X-Frame-Options %q, want DENY", w.Code, got)
		}
		if got := w.Header().Get("Content-Security-Policy"); !strings.Contains(got, "frame-ancestors 'none'") {
			t.Errorf("%d response: Content-Security-Policy %q, want frame-ancestors 'none'", w.Code, got)
		}
	}
	for _, c := range []struct{ method, target, host, origin string }{
		{http.MethodGet, "/", "127.0.0.1:1", ""},
		{http.MethodGet, "/assets/app.js", "127.0.0.1:1", ""},
		{http.MethodGet, "/api/v1/snapshot", "127.0.0.1:1", ""},
		{http.MethodGet, "/nope", "127.0.0.1:1", ""},
		{http.MethodGet, "/", "evil.example", ""},
		{http.MethodPost, "/api/v1/vms/x/heap/request", "127.0.0.1:1", "http://evil.example"},
	} {
		t.Run(c.method+" "+c.target+" "+c.host, func(t *testing.T) {
			w, _ := guardRequest(t, "127.0.0.1:1", c.method, c.target, c.host, c.origin)
			check(t, w)
		})
	}
	// The handler alone (without Guard) sets them too.
	t.Run("handler", func(t *testing.T) {
		w := httptest.NewRecorder()
		NewHandler(NewManualFakeSource(1), nil, zerolog.Nop()).ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
		check(t, w)
	})
}

// heapRequestSource is a fake source that counts heap requests.
type heapRequestSource struct {
	*FakeSource
	mu sync.Mutex // guards n
	n  int
}

func (s *heapRequestSource) RequestHeap(string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	return nil
}

func (s *heapRequestSource) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}
