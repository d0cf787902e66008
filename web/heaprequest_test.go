package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/ddmtap"
	"github.com/jdwpaccel/jdwpaccel/ddmtap/fakevm"
	"github.com/rs/zerolog"
)

// TestRequestHeap: the page's "request heap" POST makes the DDM monitor
// ask a (fake Dalvik) VM for its heap, and the heap then appears; bad
// requests are refused.
func TestRequestHeap(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	vm, err := fakevm.Listen("127.0.0.1:0", fakevm.Config{Profile: fakevm.Dalvik, Seed: 3, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	go vm.Serve(ctx) //nolint:errcheck // ends with ctx
	h := ddmtap.NewHolder(ddmtap.HolderConfig{Addr: vm.Addr(), KnownDDM: true, Logger: zerolog.Nop()})
	done := make(chan struct{})
	go func() { h.Run(ctx); close(done) }() //nolint:errcheck // ends with ctx
	defer func() { cancel(); <-done }()
	mon := h.Monitor()
	if _, err := mon.Wait(ctx, func(s ddmtap.Snapshot) bool { return s.Connected && s.Identity.PID != 0 }); err != nil {
		t.Fatalf("monitor never connected: %v", err)
	}
	src := &DDMSource{Monitors: func() []*ddmtap.Monitor { return []*ddmtap.Monitor{mon} }}
	srv := httptest.NewServer(NewHandler(src, nil, zerolog.Nop()))
	defer srv.Close()

	post := func(vmID, ct string) int {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL+"/api/v1/vms/"+vmID+"/heap/request", strings.NewReader("{}"))
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(mon.Name(), "text/plain"); code != http.StatusUnsupportedMediaType {
		t.Errorf("form-style POST: %d, want 415", code)
	}
	if code := post("nope", "application/json"); code != http.StatusConflict {
		t.Errorf("unknown VM: %d, want 409", code)
	}
	if s := mon.Snapshot(); len(s.HeapInfo) != 0 {
		t.Fatalf("heap info before any request: %+v", s.HeapInfo)
	}
	if code := post(mon.Name(), "application/json"); code != http.StatusAccepted {
		t.Fatalf("heap request: %d, want 202", code)
	}
	if _, err := mon.Wait(ctx, func(s ddmtap.Snapshot) bool { return len(s.HeapInfo) > 0 }); err != nil {
		t.Fatalf("no heap info after the request: %v", err)
	}
	noReq := httptest.NewServer(NewHandler(NewManualFakeSource(1), nil, zerolog.Nop()))
	defer noReq.Close()
	req, _ := http.NewRequest("POST", noReq.URL+"/api/v1/vms/x/heap/request", strings.NewReader("{}"))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotImplemented {
		t.Errorf("source without heap requests: %d, want 501", resp.StatusCode)
	}
}
