package discover

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHTTPAPI(t *testing.T) {
	a, b := startFakeVM(t, "vm-a"), startFakeVM(t, "vm-b")
	src := newTestSource()
	sel := listenLocal(t)
	m, _ := startManager(t, Config{Source: src, Selected: sel, PortBase: PortAuto})
	<-src.ready
	src.set(a.vm("a"), b.vm("b"))
	waitState(t, m, "two", func(s Snapshot) bool { return len(s.VMs) == 2 })

	mux := http.NewServeMux()
	mux.Handle(APIPrefix, Handler(m))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := &Client{Addr: strings.TrimPrefix(srv.URL, "http://")}
	ctx := context.Background()

	s, err := c.VMs(ctx)
	if err != nil || len(s.VMs) != 2 || s.Listen != sel.Addr().String() || s.Selected != "" || s.VMs[0].Port == 0 {
		t.Fatalf("%+v, %v", s, err)
	}
	st, err := c.Select(ctx, "vm-b")
	if err != nil || st.Key != "b" || !st.Selected {
		t.Fatalf("%+v, %v", st, err)
	}
	if got, err := askVia(sel.Addr().String()); err != nil || got != "vm-b" {
		t.Fatalf("%q, %v", got, err)
	}
	if _, err := c.Select(ctx, "nope"); err == nil || !strings.Contains(err.Error(), "no such VM") {
		t.Errorf("unknown VM: %v", err)
	}

	post := func(ct, origin string) int {
		req, _ := http.NewRequest("POST", srv.URL+APIPrefix+"select", strings.NewReader(`{"vm":"a"}`))
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post("text/plain", ""); code != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain: %d", code)
	}
	if code := post("application/json", "http://evil.example"); code != http.StatusForbidden {
		t.Errorf("cross-origin: %d", code)
	}
	if m.List().Selected != "b" {
		t.Fatal("a refused request changed the selection")
	}
	if code := post("application/json", srv.URL); code != http.StatusOK {
		t.Errorf("same origin: %d", code)
	}

	ln := listenLocal(t)
	addr := ln.Addr().String()
	ln.Close()
	if _, err := (&Client{Addr: addr}).VMs(ctx); !errors.Is(err, ErrNoProxy) {
		t.Errorf("no proxy: %v", err)
	}
}
