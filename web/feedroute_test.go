package web

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jdwpaccel/jdwpaccel/feed"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// feedEvent decodes an event's data, checking its id line.
func feedEvent(t *testing.T, e sseEvent) feed.Event {
	t.Helper()
	var fe feed.Event
	if err := json.Unmarshal([]byte(e.data), &fe); err != nil {
		t.Fatalf("event %+v: %v", e, err)
	}
	if e.name != "" || e.id != strconv.FormatUint(fe.ID, 10) {
		t.Fatalf("event %+v: want no name and id %d", e, fe.ID)
	}
	return fe
}

func openStream(t *testing.T, ctx context.Context, u string, header map[string]string) (*http.Response, *bufio.Reader) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == http.StatusOK && resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("Content-Type %q", resp.Header.Get("Content-Type"))
	}
	return resp, bufio.NewReader(resp.Body)
}

// TestVMEventsStream: over HTTP, a VM's event stream sends the history
// kept and then each event as it comes, each with its ID; a client that
// reconnects with Last-Event-ID (or ?after=) gets what followed, without
// loss or repeat; ?after=now only new events; a cursor that fell out of
// the history gets a reset event first. Unknown VMs and bad cursors are
// refused, and the guard keeps other hosts out.
func TestVMEventsStream(t *testing.T) {
	f := feed.New(feed.Config{Size: 8})
	src := NewManualFakeSource(1)
	h := NewHandler(src, prometheus.NewRegistry(), zerolog.Nop(), WithFeed(f))
	srv := httptest.NewServer(Guard(h, "127.0.0.1:0"))
	defer srv.Close()
	defer h.Close()
	base := srv.URL + "/api/v1/vms/" + url.PathEscape(FakeVMID) + "/events"
	for i := range 3 {
		f.DDMThread(FakeVMID, feed.KindDDMThreadStart, uint32(i+1), "t"+strconv.Itoa(i+1), time.Time{})
	}
	ctx, cancel := context.WithCancel(context.Background())
	resp, r := openStream(t, ctx, base, nil)
	var got []feed.Event
	for range 3 {
		e := readEvent(t, r)
		got = append(got, feedEvent(t, e))
	}
	if got[0].Kind != feed.KindDDMThreadStart || got[0].DDMThread != 1 || got[0].Name != "t1" || got[2].DDMThread != 3 {
		t.Fatalf("the history: %+v", got)
	}
	// Live: an event added now arrives.
	f.DDMThread(FakeVMID, feed.KindDDMThreadDeath, 2, "", time.Time{})
	e := readEvent(t, r)
	if fe := feedEvent(t, e); fe.Kind != feed.KindDDMThreadDeath || fe.ID != got[2].ID+1 {
		t.Fatalf("live event %+v after %d", fe, got[2].ID)
	}
	cursor := got[1].ID
	cancel()
	resp.Body.Close()

	// Reconnect after the second event: the third and the fourth, once.
	for _, hdr := range []map[string]string{{"Last-Event-ID": strconv.FormatUint(cursor, 10)}, nil} {
		u := base
		if hdr == nil {
			u += "?after=" + strconv.FormatUint(cursor, 10)
		}
		ctx, cancel := context.WithCancel(context.Background())
		resp, r := openStream(t, ctx, u, hdr)
		for want := cursor + 1; want <= cursor+3; want++ {
			e := readEvent(t, r)
			if fe := feedEvent(t, e); fe.ID != want {
				t.Fatalf("resumed (%v %s): event %d, want %d", hdr, u, fe.ID, want)
			}
			if want == cursor+2 {
				f.DDMThread(FakeVMID, feed.KindDDMThreadRename, 1, "renamed", time.Time{})
			}
		}
		cancel()
		resp.Body.Close()
		cursor = f.Newest(FakeVMID) - 2 // the next round resumes before the last two
	}

	// after=now: nothing of the history, the next event.
	ctx, cancel = context.WithCancel(context.Background())
	resp, r = openStream(t, ctx, base+"?after=now", nil)
	newest := f.Newest(FakeVMID)
	f.DDMThread(FakeVMID, feed.KindDDMThreadStart, 9, "new", time.Time{})
	e = readEvent(t, r)
	if fe := feedEvent(t, e); fe.ID != newest+1 || fe.DDMThread != 9 {
		t.Fatalf("after=now: %+v, want the event after %d", fe, newest)
	}
	cancel()
	resp.Body.Close()

	// A cursor that fell out of the 8 kept: a reset, then the oldest.
	for range 8 {
		f.DDMThread(FakeVMID, feed.KindDDMThreadStart, 10, "x", time.Time{})
	}
	ctx, cancel = context.WithCancel(context.Background())
	resp, r = openStream(t, ctx, base, map[string]string{"Last-Event-ID": strconv.FormatUint(got[0].ID, 10)})
	e = readEvent(t, r)
	var reset feed.Reset
	if e.name != "reset" || json.Unmarshal([]byte(e.data), &reset) != nil || reset.Reason != feed.ReasonLost || reset.After != got[0].ID || reset.Lost == 0 {
		t.Fatalf("want a reset, got %+v", e)
	}
	e = readEvent(t, r)
	if fe := feedEvent(t, e); fe.ID != reset.Oldest || fe.ID != got[0].ID+reset.Lost+1 {
		t.Fatalf("after the reset: %+v, want %+v's oldest", fe, reset)
	}
	cancel()
	resp.Body.Close()

	for _, c := range []struct {
		path, host string
		header     map[string]string
		want       int
	}{
		{"/api/v1/vms/nope/events", "", nil, http.StatusNotFound},
		{"/api/v1/vms/" + url.PathEscape(FakeVMID) + "/events?after=x", "", nil, http.StatusBadRequest},
		{"/api/v1/vms/" + url.PathEscape(FakeVMID) + "/events", "", map[string]string{"Last-Event-ID": "-3"}, http.StatusBadRequest},
		{"/api/v1/vms/" + url.PathEscape(FakeVMID) + "/events", "evil.example:80", nil, http.StatusMisdirectedRequest},
	} {
		req, _ := http.NewRequest("GET", srv.URL+c.path, nil)
		if c.host != "" {
			req.Host = c.host
		}
		for k, v := range c.header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("GET %s (Host %q): %s, want %d", c.path, c.host, resp.Status, c.want)
		}
	}
}

// TestVMEventsWithoutFeed: a handler without a feed answers 404.
func TestVMEventsWithoutFeed(t *testing.T) {
	h := NewHandler(NewManualFakeSource(1), nil, zerolog.Nop())
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/api/v1/vms/"+url.PathEscape(FakeVMID)+"/events", nil))
	if w.Code != http.StatusNotFound {
		t.Fatalf("%d", w.Code)
	}
}

// streamWriter is a ResponseWriter for a stream handler running in a
// synctest bubble: it keeps what was written and flushed.
type streamWriter struct {
	hdr http.Header
	mu  sync.Mutex // guards the fields below
	buf strings.Builder
	// flushed is how much of buf was flushed.
	flushed int
}

func (w *streamWriter) Header() http.Header { return w.hdr }
func (w *streamWriter) WriteHeader(int)     {}
func (w *streamWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(b)
}
func (w *streamWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushed = w.buf.Len()
}

// flushedText is what was flushed.
func (w *streamWriter) flushedText() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()[:w.flushed]
}

// TestVMEventsKeepAliveAndEnd: in fake time, an idle stream writes a
// keepalive comment every KeepAlive and nothing before; each event is
// flushed as it is written; the stream ends when the client leaves and
// when the handler is closed (the server shutting down).
func TestVMEventsKeepAliveAndEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := feed.New(feed.Config{Size: 8})
		h := NewHandler(NewManualFakeSource(1), nil, zerolog.Nop(), WithFeed(f))
		serve := func(ctx context.Context) (*streamWriter, chan struct{}) {
			w := &streamWriter{hdr: http.Header{}}
			req := httptest.NewRequest("GET", "/api/v1/vms/"+url.PathEscape(FakeVMID)+"/events", nil).WithContext(ctx)
			done := make(chan struct{})
			go func() {
				defer close(done)
				h.ServeHTTP(w, req)
			}()
			return w, done
		}
		ctx, cancel := context.WithCancel(t.Context())
		w, done := serve(ctx)
		synctest.Wait()
		if got := w.flushedText(); got != "retry: 2000\n\n" {
			t.Fatalf("at start: %q", got)
		}
		time.Sleep(KeepAlive - time.Millisecond)
		synctest.Wait()
		if strings.Contains(w.flushedText(), "keepalive") {
			t.Fatal("a keepalive before KeepAlive")
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if n := strings.Count(w.flushedText(), ": keepalive\n\n"); n != 1 {
			t.Fatalf("after KeepAlive: %d keepalives in %q", n, w.flushedText())
		}
		f.DDMThread(FakeVMID, feed.KindDDMThreadStart, 1, "main", time.Time{})
		synctest.Wait()
		if got := w.flushedText(); !strings.HasSuffix(got, "\"name\":\"main\"}\n\n") {
			t.Fatalf("the event is not flushed: %q", got)
		}
		time.Sleep(2 * KeepAlive)
		synctest.Wait()
		if n := strings.Count(w.flushedText(), ": keepalive\n\n"); n != 3 {
			t.Fatalf("after 3 KeepAlive: %d keepalives", n)
		}
		cancel() // the client leaves
		synctest.Wait()
		select {
		case <-done:
		default:
			t.Fatal("the stream goes on after the client left")
		}

		_, done = serve(t.Context())
		synctest.Wait()
		h.Close() // the server shuts down
		synctest.Wait()
		select {
		case <-done:
		default:
			t.Fatal("the stream goes on after Close")
		}
	})
}
