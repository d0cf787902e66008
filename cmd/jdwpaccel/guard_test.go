package main

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"testing"

	"github.com/rs/zerolog"
)

// TestServeHTTPOriginPort: with --http-addr on port 0, a POST's Origin is
// compared with the port the listener got: the page's own passes, a page
// of another local program (another port) does not.
func TestServeHTTPOriginPort(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	addr, err := serveHTTP(ctx, "127.0.0.1:0", ok, zerolog.Nop(), "test")
	if err != nil {
		t.Fatal(err)
	}
	hostport := addr.String()
	_, p, _ := net.SplitHostPort(hostport)
	port, _ := strconv.Atoi(p)
	for _, c := range []struct {
		origin string
		code   int
	}{
		{"http://" + hostport, http.StatusNoContent},
		{"http://localhost:" + strconv.Itoa(port+1), http.StatusForbidden},
	} {
		req, _ := http.NewRequest(http.MethodPost, "http://"+hostport+"/", nil)
		req.Header.Set("Origin", c.origin)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.code {
			t.Errorf("POST with Origin %s: %d, want %d", c.origin, resp.StatusCode, c.code)
		}
	}
}
