package link

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/rs/zerolog"
)

// --- helpers ---------------------------------------------------------------

// server is a loopback TCP server running handle for each connection. Its
// cleanup closes the listener and every connection and waits for handlers.
type server struct {
	ln    net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex // guards conns
	conns []net.Conn
}

func startServer(t testing.TB, handle func(c *net.TCPConn)) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{ln: ln}
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.wg.Go(func() { handle(c.(*net.TCPConn)) })
		}
	})
	t.Cleanup(s.close)
	return s
}

func (s *server) addr() string { return s.ln.Addr().String() }

func (s *server) close() {
	s.ln.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// echo copies everything back, then half-closes and closes.
func echo(c *net.TCPConn) {
	io.Copy(c, c)
	c.CloseWrite()
	c.Close()
}

func startLink(t testing.TB, cfg Config, target string) *Link {
	t.Helper()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)
	l, err := Listen(context.Background(), "127.0.0.1:0", target, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func dial(t testing.TB, addr string) *net.TCPConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(20 * time.Second)) // nothing in a test waits forever
	return c.(*net.TCPConn)
}

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t testing.TB) (*net.TCPConn, *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type res struct {
		c   net.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := ln.Accept()
		ch <- res{c, err}
	}()
	a := dial(t, ln.Addr().String())
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Cleanup(func() { r.c.Close() })
	r.c.SetDeadline(time.Now().Add(20 * time.Second))
	return a, r.c.(*net.TCPConn)
}

// roundTrips measures n ping-pongs of a 16-byte message over c, after a
// short warm-up, and returns them sorted.
func roundTrips(t testing.TB, c net.Conn, n int) []time.Duration {
	t.Helper()
	msg := make([]byte, 16)
	got := make([]byte, 16)
	var out []time.Duration
	for i := range n + 3 {
		binary.BigEndian.PutUint64(msg, uint64(i))
		start := time.Now()
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, got); err != nil {
			t.Fatal(err)
		}
		d := time.Since(start)
		if !bytes.Equal(got, msg) {
			t.Fatalf("echo %x, want %x", got, msg)
		}
		if i >= 3 {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out
}

func median(d []time.Duration) time.Duration { return d[len(d)/2] }

// --- timing tests ----------------------------------------------------------

// Timing tests run on loopback with real sockets. Scheduling delays on a
// loaded machine only ever make a round trip later, never earlier, so each
// timing test checks a lower bound on every sample and an upper bound on the
// best of a few attempts: an emulator that is systematically late (or sleeps
// per packet) fails every attempt, a busy CI machine rarely fails all three.
const attempts = 3

// rttCheck is one self-check of a link's added round trip.
type rttCheck struct {
	// base and via are the sorted round trips through the zero-delay
	// baseline link and through the link under test, sampled alternately.
	base, via []time.Duration
	// added is min(via) - min(base): the link's delay with the cost of the
	// hop itself (two loopback connections and the relay goroutines) taken
	// out. Load only ever makes a round trip later, so the minima are the
	// samples least disturbed by it.
	added time.Duration
}

func (c rttCheck) String() string {
	return fmt.Sprintf("baseline min %v median %v; via link min %v median %v max %v; added %v",
		c.base[0], median(c.base), c.via[0], median(c.via), c.via[len(c.via)-1], c.added)
}

// checkAddedRTT measures n round trips through base (a link with no delay
// to the same echo server) and through via, alternately, so that both see
// the same load, and checks that via adds want ± tol to a round trip and
// that no round trip through via took less than want.
func checkAddedRTT(t testing.TB, base, via *Link, want, tol time.Duration, n int) (rttCheck, error) {
	t.Helper()
	bc := dial(t, base.Addr().String())
	vc := dial(t, via.Addr().String())
	roundTrips(t, bc, 0) // connections set up, targets dialled
	roundTrips(t, vc, 0)
	var c rttCheck
	for range n {
		c.base = append(c.base, roundTrips(t, bc, 1)...)
		c.via = append(c.via, roundTrips(t, vc, 1)...)
	}
	slices.Sort(c.base)
	slices.Sort(c.via)
	c.added = c.via[0] - c.base[0]
	switch {
	case c.via[0] < want:
		return c, fmt.Errorf("a round trip through the link took %v, less than RTT %v", c.via[0], want)
	case absDur(c.added-want) > tol:
		return c, fmt.Errorf("added round trip %v, want %v ± %v", c.added, want, tol)
	}
	return c, nil
}

// selfCheckTol is how far the link's added round trip may be from its
// configured RTT: the link's own lateness (timer plus spin).
const selfCheckTol = 300 * time.Microsecond

// TestSelfCheckRTT: a 30 ms link adds 30 ms ± 0.3 ms to a round trip of
// small messages, against a zero-delay link measured in the same run; so
// does a 1 ms link (whose whole delay is within the spin window: the
// precise sleep, then the yield loop).
func TestSelfCheckRTT(t *testing.T) {
	for _, rtt := range []time.Duration{30 * time.Millisecond, time.Millisecond} {
		t.Run(rtt.String(), func(t *testing.T) {
			es := startServer(t, echo)
			base := startLink(t, Config{}, es.addr())
			via := startLink(t, Config{RTT: rtt}, es.addr())
			var err error
			for try := range attempts {
				var c rttCheck
				c, err = checkAddedRTT(t, base, via, rtt, selfCheckTol, 41)
				t.Logf("attempt %d: %v (want %v ± %v)", try+1, c, rtt, selfCheckTol)
				if err == nil {
					return
				}
			}
			t.Error(err)
		})
	}
}

// TestSelfCheckRTTCatchesWrongDelay tests the check: links whose delay is
// 1 ms off (31 ms or 29 ms configured) fail a check for 30 ms. The 31 ms
// link must fail every one of TestSelfCheckRTT's attempts; a 29 ms link
// always fails the lower bound, so one attempt shows it.
func TestSelfCheckRTTCatchesWrongDelay(t *testing.T) {
	const want = 30 * time.Millisecond
	es := startServer(t, echo)
	base := startLink(t, Config{}, es.addr())
	for _, tc := range []struct {
		rtt   time.Duration
		tries int
	}{{31 * time.Millisecond, attempts}, {29 * time.Millisecond, 1}} {
		rtt := tc.rtt
		t.Run(rtt.String(), func(t *testing.T) {
			via := startLink(t, Config{RTT: rtt}, es.addr())
			for try := range tc.tries {
				c, err := checkAddedRTT(t, base, via, want, selfCheckTol, 41)
				t.Logf("attempt %d: %v: %v", try+1, c, err)
				if err == nil {
					t.Fatalf("a %v link passed the check for %v ± %v: %v", rtt, want, selfCheckTol, c)
				}
			}
		})
	}
}

func absDur(d time.Duration) time.Duration { return max(d, -d) }

// TestPipelining: 100 requests written back to back get all their replies in
// about one RTT, not 100. The second variant spaces the writes 200 µs apart,
// so that they reach the link as separate chunks: an emulator that delays
// each chunk in turn (sleep per packet) fails it.
func TestPipelining(t *testing.T) {
	for _, spacing := range []time.Duration{0, 200 * time.Microsecond} {
		t.Run(fmt.Sprintf("spacing=%v", spacing), func(t *testing.T) { testPipelining(t, spacing) })
	}
}

func testPipelining(t *testing.T, spacing time.Duration) {
	const rtt = 30 * time.Millisecond
	const n, size = 100, 32
	es := startServer(t, echo)
	l := startLink(t, Config{RTT: rtt}, es.addr())
	c := dial(t, l.Addr().String())
	roundTrips(t, c, 1) // connection set up, target dialled

	span := time.Duration(n-1) * spacing
	want := make([]byte, 0, n*size)
	msg := make([]byte, size)
	got := make([]byte, n*size)
	best := time.Duration(1<<63 - 1)
	for try := range attempts {
		want = want[:0]
		start := time.Now()
		for i := range n {
			for time.Since(start) < time.Duration(i)*spacing {
				runtime.Gosched() // timers are too coarse for 200 µs
			}
			binary.BigEndian.PutUint32(msg, uint32(try*n+i))
			want = append(want, msg...)
			if _, err := c.Write(msg); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := io.ReadFull(c, got); err != nil {
			t.Fatal(err)
		}
		elapsed := time.Since(start)
		t.Logf("attempt %d: %d pipelined requests over %v, all replies after %v (RTT %v)", try+1, n, span, elapsed, rtt)
		if !bytes.Equal(got, want) {
			t.Fatal("replies differ from requests")
		}
		if elapsed < span+rtt {
			t.Fatalf("replies after %v, less than span+RTT %v", elapsed, span+rtt)
		}
		best = min(best, elapsed)
		if best < span+2*rtt {
			return
		}
	}
	t.Errorf("%d pipelined round trips took %v (best of %d), want less than %v", n, best, attempts, span+2*rtt)
}

// TestJitterKeepsOrderAndBounds: with jitter on, a stream of small writes comes
// back intact and in order, and round trips vary but stay within RTT ± Jitter.
func TestJitterKeepsOrderAndBounds(t *testing.T) {
	const rtt, jitter = 20 * time.Millisecond, 10 * time.Millisecond
	es := startServer(t, echo)
	l := startLink(t, Config{RTT: rtt, Jitter: jitter, Seed: 7}, es.addr())

	c := dial(t, l.Addr().String())
	rts := roundTrips(t, c, 40)
	lo, p10, p50, p90 := rts[0], rts[len(rts)/10], median(rts), rts[len(rts)*9/10]
	t.Logf("round trips with jitter: min %v p10 %v median %v p90 %v max %v", lo, p10, p50, p90, rts[len(rts)-1])
	if lo < rtt-jitter {
		t.Errorf("shortest round trip %v is below RTT-Jitter %v", lo, rtt-jitter)
	}
	// The median, not the maximum: a loaded machine adds a tail.
	if p50 > rtt+jitter {
		t.Errorf("median round trip %v is above RTT+Jitter %v", p50, rtt+jitter)
	}
	if p90-p10 < jitter/4 {
		t.Errorf("round trips p10..p90 spread over %v only; jitter %v has no effect", p90-p10, jitter)
	}

	// Order: many small writes, paced a little so that they become separate
	// chunks with separate jitter draws.
	const n = 3000
	errc := make(chan error, 1)
	go func() {
		var b [4]byte
		for i := range n {
			binary.BigEndian.PutUint32(b[:], uint32(i))
			if _, err := c.Write(b[:]); err != nil {
				errc <- err
				return
			}
			if i%100 == 0 {
				time.Sleep(time.Millisecond) // pacing, not synchronisation
			}
		}
		errc <- c.CloseWrite()
	}()
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if len(got) != 4*n {
		t.Fatalf("got %d bytes back, want %d", len(got), 4*n)
	}
	for i := range n {
		if v := binary.BigEndian.Uint32(got[4*i:]); v != uint32(i) {
			t.Fatalf("value %d at position %d: stream reordered", v, i)
		}
	}
}

// TestBandwidth: a 1 MB transfer at 4 MB/s takes about 250 ms.
func TestBandwidth(t *testing.T) {
	const size, rate = 1_000_000, 4_000_000
	want := time.Duration(size * int64(time.Second) / rate)
	sink := startServer(t, func(c *net.TCPConn) {
		n, _ := io.Copy(io.Discard, c)
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], uint64(n))
		c.Write(b[:])
		c.Close()
	})
	l := startLink(t, Config{Bandwidth: rate}, sink.addr())
	c := dial(t, l.Addr().String())
	data := make([]byte, size)
	start := time.Now()
	if _, err := c.Write(data); err != nil {
		t.Fatal(err)
	}
	c.CloseWrite()
	var b [8]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	if n := binary.BigEndian.Uint64(b[:]); n != size {
		t.Fatalf("sink got %d bytes, want %d", n, size)
	}
	t.Logf("%d bytes at %d B/s: %v (ideal %v)", size, rate, elapsed, want)
	if elapsed < want-5*time.Millisecond || elapsed > want*13/10 {
		t.Errorf("transfer took %v, want about %v (-5ms/+30%%)", elapsed, want)
	}
}

// --- close handling ----------------------------------------------------------

// TestHalfCloseBothWays: the client's half-close reaches the server after the
// data and after the one-way delay; the server's reply and close come back.
func TestHalfCloseBothWays(t *testing.T) {
	const rtt = 40 * time.Millisecond
	type seen struct {
		data []byte
		at   time.Time
	}
	got := make(chan seen, 1)
	srv := startServer(t, func(c *net.TCPConn) {
		data, _ := io.ReadAll(c)
		got <- seen{data, time.Now()}
		c.Write([]byte("bye"))
		c.Close()
	})
	l := startLink(t, Config{RTT: rtt}, srv.addr())
	c := dial(t, l.Addr().String())
	start := time.Now()
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	reply, err := io.ReadAll(c)
	end := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	s := <-got
	if string(s.data) != "hello" {
		t.Errorf("server got %q, want %q", s.data, "hello")
	}
	if d := s.at.Sub(start); d < rtt/2 {
		t.Errorf("server saw EOF after %v, before the one-way delay %v", d, rtt/2)
	}
	if string(reply) != "bye" {
		t.Errorf("client got %q, want %q", reply, "bye")
	}
	if end < rtt {
		t.Errorf("client saw the server's close after %v, before one RTT %v", end, rtt)
	}
}

// TestQueuedDataDeliveredBeforeClose: a client that writes and closes at once
// still gets all its bytes delivered; Pipe then ends cleanly by itself.
func TestQueuedDataDeliveredBeforeClose(t *testing.T) {
	const rtt = 60 * time.Millisecond
	client, a := tcpPair(t)
	b, server := tcpPair(t)
	done := make(chan error, 1)
	var st Stats
	go func() {
		var err error
		st, err = Pipe(context.Background(), a, b, Config{RTT: rtt})
		done <- err
	}()
	data := bytes.Repeat([]byte("0123456789abcdef"), 8192) // 128 KiB
	start := time.Now()
	if _, err := client.Write(data); err != nil {
		t.Fatal(err)
	}
	client.Close()
	got, err := io.ReadAll(server)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < rtt/2 {
		t.Errorf("EOF after %v, before the one-way delay %v", d, rtt/2)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("server got %d bytes, want %d identical", len(got), len(data))
	}
	server.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Pipe: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Pipe did not end after both sides closed")
	}
	if st.AToB != int64(len(data)) || st.BToA != 0 {
		t.Errorf("stats %+v, want AToB=%d BToA=0", st, len(data))
	}
}

// TestServerCloseReachesClient: the target closing first ends the client's
// stream after the delay, and the session ends.
func TestServerCloseReachesClient(t *testing.T) {
	const rtt = 20 * time.Millisecond
	client, a := tcpPair(t)
	b, server := tcpPair(t)
	done := make(chan error, 1)
	go func() {
		_, err := Pipe(context.Background(), a, b, Config{RTT: rtt})
		done <- err
	}()
	server.Write([]byte("greeting"))
	server.Close()
	got, err := io.ReadAll(client)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "greeting" {
		t.Fatalf("client got %q", got)
	}
	client.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Pipe did not end after both sides closed")
	}
}

// TestPipeCancel: cancelling the context ends Pipe at once, even with data
// queued for seconds and a peer that never reads.
func TestPipeCancel(t *testing.T) {
	client, a := tcpPair(t)
	b, _ := tcpPair(t) // the target never reads
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Pipe(ctx, a, b, Config{RTT: 10 * time.Second})
		done <- err
	}()
	if _, err := client.Write(make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // let the bytes be queued (not a synchronisation)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Pipe returned %v, want context.Canceled", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Pipe did not return after cancel")
	}
}

// TestDialFailureClosesClient: a target that refuses makes the link close the
// client's connection instead of leaving it hanging.
func TestDialFailureClosesClient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	l := startLink(t, Config{RTT: time.Millisecond}, dead)
	c := dial(t, l.Addr().String())
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = c.Read(make([]byte, 1))
	if err == nil {
		t.Fatal("read succeeded from a link whose target is down")
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("client connection left open after the dial failed")
	}
}

func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		es := startServer(t, echo)
		// A target that accepts and never reads, for backpressure.
		block := make(chan struct{})
		bh := startServer(t, func(c *net.TCPConn) { <-block })
		slow := startLink(t, Config{RTT: 4 * time.Second}, es.addr())
		stuck := startLink(t, Config{}, bh.addr())

		for range 3 {
			c := dial(t, slow.Addr().String())
			if _, err := c.Write(make([]byte, 1000)); err != nil {
				t.Fatal(err)
			}
			defer c.Close()
		}
		c := dial(t, stuck.Addr().String())
		defer c.Close()
		wrote := make(chan struct{})
		go func() {
			defer close(wrote)
			c.Write(make([]byte, 16<<20)) // blocks until the link is closed
		}()

		jdwptest.Eventually(t, "sessions to start", func() (bool, string) {
			return stuck.nextID.Load() == 1 && slow.nextID.Load() == 3, fmt.Sprintf("stuck %d, slow %d", stuck.nextID.Load(), slow.nextID.Load())
		})
		start := time.Now()
		slow.Close()
		stuck.Close()
		if d := time.Since(start); d > time.Second {
			t.Errorf("Close took %v with data queued", d)
		}
		c.Close()
		<-wrote
		close(block)
		es.close()
		bh.close()
	}()
	jdwptest.Eventually(t, "goroutines to end", func() (bool, string) { // no signal: polled
		n := runtime.NumGoroutine()
		return n <= before, fmt.Sprintf("%d goroutines, %d before", n, before)
	})
}

// --- unit tests of the schedule ----------------------------------------------

func TestSchedulerMonotoneAndBounded(t *testing.T) {
	cfg := Config{RTT: 10 * time.Millisecond, Jitter: 6 * time.Millisecond, Seed: 3}
	s := newScheduler(cfg, 0)
	t0 := time.Now()
	var prev time.Time
	spread := map[time.Duration]bool{}
	for i := range 2000 {
		arr := t0.Add(time.Duration(i) * 100 * time.Microsecond)
		r := s.next(arr, 10)
		if r.Before(prev) {
			t.Fatalf("chunk %d released at %v, before the previous %v", i, r.Sub(t0), prev.Sub(t0))
		}
		prev = r
		d := r.Sub(arr)
		if d > cfg.RTT/2+cfg.Jitter/2 {
			t.Fatalf("chunk %d delayed %v, above RTT/2+Jitter/2", i, d)
		}
		spread[d.Round(time.Millisecond)] = true
	}
	if len(spread) < 3 {
		t.Errorf("delays take %d distinct values only; jitter not applied", len(spread))
	}
	// Same seed and stream: same schedule; another stream: another one.
	a, b, c := newScheduler(cfg, 5), newScheduler(cfg, 5), newScheduler(cfg, 6)
	same, diff := true, false
	for i := range 50 {
		arr := t0.Add(time.Duration(i) * 10 * time.Millisecond)
		ra, rb, rc := a.next(arr, 1), b.next(arr, 1), c.next(arr, 1)
		same = same && ra.Equal(rb)
		diff = diff || !ra.Equal(rc)
	}
	if !same || !diff {
		t.Errorf("seeding: same stream equal=%v, other stream differs=%v", same, diff)
	}
}

func TestSchedulerBandwidth(t *testing.T) {
	s := newScheduler(Config{RTT: 2 * time.Millisecond, Bandwidth: 1000}, 0)
	t0 := time.Now()
	// Two chunks arriving together: the second waits for the first.
	if got, want := s.next(t0, 500).Sub(t0), 500*time.Millisecond+time.Millisecond; got != want {
		t.Errorf("first release after %v, want %v", got, want)
	}
	if got, want := s.next(t0, 250).Sub(t0), 750*time.Millisecond+time.Millisecond; got != want {
		t.Errorf("second release after %v, want %v", got, want)
	}
	// After an idle gap, transmission starts at arrival.
	t1 := t0.Add(10 * time.Second)
	if got, want := s.next(t1, 1).Sub(t1), time.Millisecond+time.Millisecond; got != want {
		t.Errorf("after a gap, release after %v, want %v", got, want)
	}
	// Sub-nanosecond remainders accumulate instead of being lost.
	s = newScheduler(Config{Bandwidth: 3}, 0)
	var last time.Time
	for range 3 {
		last = s.next(t0, 1)
	}
	if got := last.Sub(t0); got != time.Second {
		t.Errorf("3 bytes at 3 B/s end after %v, want 1s", got)
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []Config{{RTT: -1}, {Jitter: -1}, {Bandwidth: -1}, {Buffer: -1}} {
		if err := c.Validate(); !errors.Is(err, ErrBadConfig) {
			t.Errorf("Validate(%+v) = %v, want ErrBadConfig", c, err)
		}
		if _, err := Listen(context.Background(), "127.0.0.1:0", "127.0.0.1:1", c, zerolog.Nop()); !errors.Is(err, ErrBadConfig) {
			t.Errorf("Listen(%+v) = %v, want ErrBadConfig", c, err)
		}
	}
	if err := (Config{RTT: time.Second, Jitter: 3 * time.Second, Bandwidth: 1}).Validate(); err != nil {
		t.Errorf("valid config rejected: %v", err)
	}
}

// TestSmallBuffer: a buffer much smaller than the data still relays everything
// (the ring wraps and backpressure holds the sender).
func TestSmallBuffer(t *testing.T) {
	es := startServer(t, echo)
	l := startLink(t, Config{RTT: 2 * time.Millisecond, Buffer: 1000}, es.addr())
	c := dial(t, l.Addr().String())
	data := make([]byte, 100_000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	go func() {
		c.Write(data)
		c.CloseWrite()
	}()
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("got %d bytes back, want %d identical", len(got), len(data))
	}
}

// TestDropEvery: a link with DropEvery closes the connections it carries
// at each tick, counts the drop, and carries new connections after it.
func TestDropEvery(t *testing.T) {
	target, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	go func() {
		for {
			c, err := target.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }() //nolint:errcheck // an echo until the drop
		}
	}()
	lk, err := Listen(context.Background(), "127.0.0.1:0", target.Addr().String(), Config{DropEvery: 100 * time.Millisecond}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Close()
	for i := range 2 {
		c, err := net.Dial("tcp", lk.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write([]byte("ping")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 4)
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping" {
			t.Fatalf("connection %d: echo %q, %v", i, buf, err)
		}
		if _, err := io.ReadAll(c); err != nil {
			t.Fatalf("connection %d was not dropped: %v", i, err)
		}
		c.Close()
	}
	if n := lk.Drops(); n < 2 {
		t.Errorf("%d drops counted, want at least 2", n)
	}
	if err := (Config{DropEvery: -1}).Validate(); !errors.Is(err, ErrBadConfig) {
		t.Errorf("a negative DropEvery: %v", err)
	}
}

// TestLinkBytes checks the link's running byte totals: what each client
// sent and read back is counted by the time it has been read, over
// sessions.
func TestLinkBytes(t *testing.T) {
	srv := startServer(t, echo)
	l := startLink(t, Config{RTT: 2 * time.Millisecond}, srv.addr())
	var up, down int64
	for _, msg := range []string{"hello, target", "again"} {
		c := dial(t, l.Addr().String())
		if _, err := c.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, len(msg))
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
		up, down = up+int64(len(msg)), down+int64(len(buf))
		if got := l.Bytes(); got != (Stats{AToB: up, BToA: down}) {
			t.Errorf("after %q: Bytes() = %+v, want %d up and %d down", msg, got, up, down)
		}
		c.Close()
	}
}
