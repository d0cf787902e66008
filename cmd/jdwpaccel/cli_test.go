package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// servedAddrs reads the addresses of the HTTP servers ("monitor",
// "metrics") from a proxy's JSON log.
func servedAddrs(t *testing.T, logs *lockedBuffer) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, line := range strings.Split(logs.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["message"] == "serving HTTP" {
			what, _ := rec["what"].(string)
			addr, _ := rec["addr"].(string)
			out[what] = addr
		}
	}
	return out
}

// httpDo sends one request to addr with the given Host and Origin (none
// when empty) and returns the response's status and headers.
func httpDo(t *testing.T, method, addr, path, host, origin, body string) (int, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body) //nolint:errcheck // only the status matters
	return resp.StatusCode, resp.Header
}

// TestHTTPServersRefuseOtherSites checks both HTTP servers of the proxy
// (the page and API, and --metrics-addr) against DNS rebinding and
// cross-site requests: another Host is refused, a rebinding POST to the VM
// selection is refused, and every response forbids framing.
func TestHTTPServersRefuseOtherSites(t *testing.T) {
	_, logs := startProxy(t, "scan:1", "--vm-port-base", "0", "--metrics-addr", "localhost:0")
	addrs := servedAddrs(t, logs)
	mon, met := addrs["monitor"], addrs["metrics"]
	if mon == "" || met == "" {
		t.Fatalf("servers %v: want monitor and metrics; log:\n%s", addrs, logs)
	}
	port := mon[strings.LastIndex(mon, ":"):]

	for _, c := range []struct {
		name, addr, path string
	}{
		{"page", mon, "/"},
		{"API", mon, "/api/v1/snapshot"},
		{"discovery API", mon, "/api/v1/discover/vms"},
		{"metrics on the page server", mon, "/metrics"},
		{"metrics server", met, "/metrics"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if code, _ := httpDo(t, http.MethodGet, c.addr, c.path, "", "", ""); code != http.StatusOK {
				t.Errorf("GET %s with its own Host: %d, want 200", c.path, code)
			}
			if code, _ := httpDo(t, http.MethodGet, c.addr, c.path, "localhost"+port, "", ""); code != http.StatusOK {
				t.Errorf("GET %s with Host localhost: %d, want 200", c.path, code)
			}
			code, h := httpDo(t, http.MethodGet, c.addr, c.path, "evil.example", "", "")
			if code != http.StatusMisdirectedRequest && code != http.StatusForbidden {
				t.Errorf("GET %s with Host evil.example: %d, want 421 or 403", c.path, code)
			}
			if h.Get("X-Frame-Options") != "DENY" || !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
				t.Errorf("GET %s: X-Frame-Options %q, Content-Security-Policy %q; want DENY and frame-ancestors 'none'",
					c.path, h.Get("X-Frame-Options"), h.Get("Content-Security-Policy"))
			}
		})
	}

	const sel = "/api/v1/discover/select"
	t.Run("rebinding POST", func(t *testing.T) {
		// A page of evil.example whose name now resolves to 127.0.0.1:
		// its Origin matches its Host, which is not ours.
		code, _ := httpDo(t, http.MethodPost, mon, sel, "evil.example"+port, "http://evil.example"+port, `{"vm":""}`)
		if code == http.StatusOK {
			t.Errorf("POST %s from a rebound page: %d, want it refused", sel, code)
		}
	})
	t.Run("cross-site POST", func(t *testing.T) {
		code, _ := httpDo(t, http.MethodPost, mon, sel, "", "http://evil.example", `{"vm":""}`)
		if code != http.StatusForbidden {
			t.Errorf("POST %s with Origin evil.example: %d, want 403", sel, code)
		}
	})
	t.Run("same-site POST", func(t *testing.T) {
		code, _ := httpDo(t, http.MethodPost, mon, sel, "", "http://"+mon, `{"vm":""}`)
		if code != http.StatusOK {
			t.Errorf("POST %s from the page: %d, want 200", sel, code)
		}
	})
}
