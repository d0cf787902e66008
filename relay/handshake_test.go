package relay_test

import (
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
)

// heapPerSilentConn opens n connections to a proxy that send nothing,
// waits until the proxy serves each one (a goroutine per connection,
// blocked in the handshake), and returns the heap growth per connection.
func heapPerSilentConn(t *testing.T, n int) float64 {
	t.Helper()
	r := newRig(t, nil, func(c *relay.Config) { c.MaxHandshakes = n })
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	base := runtime.NumGoroutine()
	conns := make([]net.Conn, 0, n)
	for range n {
		c, err := net.Dial("tcp", r.proxy.String())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	jdwptest.Eventually(t, "the proxy to serve every connection", func() (bool, string) {
		g := runtime.NumGoroutine() - base
		return g >= n, fmt.Sprintf("%d goroutines more, want %d", g, n)
	})
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	for _, c := range conns {
		c.Close()
	}
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n)
}

// TestSilentConnectionsCostLittle: a connection that has not sent its
// JDWP handshake costs the proxy no packet buffer (64 KiB); what it costs
// (its goroutine's stack aside) is the socket and a few small structures.
func TestSilentConnectionsCostLittle(t *testing.T) {
	const n = 400
	per := heapPerSilentConn(t, n)
	t.Logf("heap per silent connection: %.0f bytes (%d connections)", per, n)
	if per > 16<<10 {
		t.Fatalf("each silent connection costs %.0f bytes of heap, want under 16 KiB (no packet buffer before the handshake)", per)
	}
}

// TestHandshakeCap: connections beyond MaxHandshakes still in their
// handshake are closed at once, with one log line for a burst of them;
// once a connection completes its handshake (or goes), its place is free.
func TestHandshakeCap(t *testing.T) {
	const limit = 3
	r := newRig(t, nil, func(c *relay.Config) { c.MaxHandshakes = limit })
	silent := make([]net.Conn, limit)
	for i := range silent {
		silent[i] = r.dial()
	}
	for range 5 {
		c, err := net.Dial("tcp", r.proxy.String())
		if err != nil {
			continue // reset before the dial returned: closed at once
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(jdwptest.Timeout))
		if n, err := c.Read(make([]byte, 1)); err == nil {
			t.Fatalf("a connection over the cap read %d bytes; want it closed", n)
		} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatal("a connection over the cap was kept open")
		}
	}
	jdwptest.Eventually(t, "connections over the cap counted", func() (bool, string) {
		n := counter(t, r.reg, "jdwpaccel_connections_over_cap_total")
		return n == 5, fmt.Sprint(n)
	})
	if lines := strings.Count(r.logs.String(), "connections in their JDWP handshake"); lines != 1 {
		t.Fatalf("%d log lines for 5 connections over the cap, want 1:\n%s", lines, r.logs)
	}
	// One of the silent connections handshakes: a new one gets its place.
	if err := jdwp.WriteHandshake(silent[0]); err != nil {
		t.Fatal(err)
	}
	r.acceptVM()
	if err := jdwp.ReadHandshake(silent[0]); err != nil {
		t.Fatal(err)
	}
	dbg, _ := r.connect()
	dbg.Close()
}
