// Package link owns the slow-link emulator: a TCP hop that delays each
// direction of a byte stream by half a round trip, with optional bounded
// jitter and a bandwidth limit, so that benchmarks can put a realistic link
// between a debugger and a VM on one machine without root.
//
// The delay is scheduled by arrival time, never by sleeping per packet:
// per direction a reader goroutine stamps each chunk it reads with its
// arrival time and queues it, and a writer goroutine releases the head chunk
// at
//
//	release = max(arrival' + RTT/2 + jitter, previous release)
//
// where arrival' is the arrival time pushed back by the bandwidth model
// (a chunk cannot start transmitting before the previous one finished, and
// takes bytes/rate to transmit). The writer sleeps only until the head
// chunk's release time, so pipelined traffic keeps its shape: 100 requests
// written back to back all arrive one RTT/2 later, not 100×RTT/2 later.
//
// Go timers on Linux wake up to about 1 ms late, so by default the writer
// sleeps on a timer until spinWindow before the release time, then (on
// Linux) in nanosleep(2) until sleepSlack before it, and then yields in a
// loop (runtime.Gosched) until it is due; Config.NoSpin turns that off.
//
// Use Listen for a standalone hop (jdwpaccel link) and Serve to put a hop on
// an existing listener.
package link

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Config describes the emulated link. The zero value is a link with no delay
// and no bandwidth limit (a plain relay).
type Config struct {
	// RTT is the added round-trip time; each direction is delayed by RTT/2.
	RTT time.Duration
	// Jitter bounds the random part of the round trip: each chunk's one-way
	// delay is RTT/2 + U[-Jitter/2, +Jitter/2] (never below zero), so a round
	// trip stays within RTT ± Jitter. Chunks are never reordered: a chunk is
	// not released before the one ahead of it.
	Jitter time.Duration
	// Bandwidth is the link rate in bytes per second per direction; 0 means
	// unlimited.
	Bandwidth int64
	// Seed seeds the jitter generator, so a run can be repeated. Each
	// connection and direction gets its own stream derived from it.
	Seed int64
	// Buffer is how many bytes each direction may hold in flight before the
	// hop stops reading from the sender (TCP backpressure); 0 means
	// DefaultBuffer. It bounds throughput to about Buffer/(RTT/2).
	Buffer int
	// NoSpin makes the writer sleep on a timer for the whole delay instead of
	// yielding in a loop for the last spinWindow. It saves CPU and costs up to
	// about 1 ms of lateness per release on Linux.
	NoSpin bool
	// DropEvery, when positive, is a link fault: every DropEvery the hop
	// closes every connection it carries (both sides), as a tunnel that
	// restarts; new connections are accepted as before.
	DropEvery time.Duration
}

// DefaultBuffer is the in-flight limit per direction when Config.Buffer is 0.
const DefaultBuffer = 1 << 20

const (
	// maxChunk is the largest single read, so that a chunk's timestamp is
	// close to the arrival of its bytes.
	maxChunk = 32 << 10
	// queueLen is how many chunks (reads) each direction can hold queued.
	queueLen = 1024
	// spinWindow is how long before a release time the writer stops trusting
	// the timer and yields in a loop instead. Measured Go timer lateness on
	// Linux is up to ~1.1 ms (epoll timeouts have millisecond resolution).
	spinWindow = 1500 * time.Microsecond
	// sleepSlack is how late a precise sleep (preciseSleep) may wake up:
	// within spinWindow the writer sleeps that way until sleepSlack before
	// the release time and yields only for the rest, so a hop at a 1 ms
	// RTT does not keep a CPU busy (which the programs it links, on the
	// same machine, would miss). Measured on Linux: about 90-130 µs.
	sleepSlack = 200 * time.Microsecond
)

// ErrBadConfig is wrapped by the errors for an invalid Config.
var ErrBadConfig = errors.New("link: invalid config")

// Validate reports whether c is usable.
func (c Config) Validate() error {
	switch {
	case c.RTT < 0:
		return fmt.Errorf("%w: negative RTT %v", ErrBadConfig, c.RTT)
	case c.Jitter < 0:
		return fmt.Errorf("%w: negative jitter %v", ErrBadConfig, c.Jitter)
	case c.Bandwidth < 0:
		return fmt.Errorf("%w: negative bandwidth %d", ErrBadConfig, c.Bandwidth)
	case c.Buffer < 0:
		return fmt.Errorf("%w: negative buffer %d", ErrBadConfig, c.Buffer)
	case c.DropEvery < 0:
		return fmt.Errorf("%w: negative drop interval %v", ErrBadConfig, c.DropEvery)
	}
	return nil
}

// Stats counts the bytes a session delivered in each direction.
type Stats struct {
	AToB int64 // bytes read from a and written to b
	BToA int64 // bytes read from b and written to a
}

// session is one relayed connection pair.
type session struct {
	a, b  net.Conn
	abort chan struct{} // closed by kill: writers stop waiting and discard

	once sync.Once
	mu   sync.Mutex // guards err
	err  error      // first error; nil for a clean end
}

// setErr records err if it is the first one.
func (s *session) setErr(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
}

// kill tears the session down: it records err, wakes the writers and closes
// both connections so that blocked reads and writes return.
func (s *session) kill(err error) {
	s.once.Do(func() {
		s.setErr(err)
		close(s.abort)
		s.a.Close()
		s.b.Close()
	})
}

func (s *session) killed() bool {
	select {
	case <-s.abort:
		return true
	default:
		return false
	}
}

// upTotal and downTotal, when not nil, count the bytes delivered from a to
// b and from b to a as they are written (by the time the peer has read
// them), for a caller's running totals.
func pipe(ctx context.Context, a, b net.Conn, cfg Config, id uint64, upTotal, downTotal *atomic.Int64) (Stats, error) {
	if err := cfg.Validate(); err != nil {
		a.Close()
		b.Close()
		return Stats{}, err
	}
	s := &session{a: a, b: b, abort: make(chan struct{})}
	stop := context.AfterFunc(ctx, func() { s.kill(ctx.Err()) })
	defer stop()

	ab := newDirection(s, a, b, cfg, 2*id)
	ba := newDirection(s, b, a, cfg, 2*id+1)
	ab.total, ba.total = upTotal, downTotal
	defer ab.release()
	defer ba.release()

	var wg sync.WaitGroup
	wg.Go(ab.readLoop)
	wg.Go(ab.writeLoop)
	wg.Go(ba.readLoop)
	ba.writeLoop()
	wg.Wait()

	a.Close()
	b.Close()
	s.mu.Lock()
	err := s.err
	s.mu.Unlock()
	return Stats{AToB: ab.delivered, BToA: ba.delivered}, err
}

// chunk is one read, queued from the reader to the writer. Its bytes are
// ring[off:off+n] of the direction's ring; end marks the end of the stream.
type chunk struct {
	off, n  int
	release time.Time
	end     bool
}

// ringPool holds rings of DefaultBuffer bytes, reused across sessions.
var ringPool = sync.Pool{New: func() any { b := make([]byte, DefaultBuffer); return &b }}

// direction relays src to dst through a delay queue.
//
// The ring is shared: the reader fills the free region after its write
// position and the writer drains the queued region, which never overlap.
// Ownership of a region passes from reader to writer through q (a chunk) and
// back through consumed (an atomic counter) plus a wake-up on space.
type direction struct {
	s        *session
	src, dst net.Conn
	ring     []byte
	ringPtr  *[]byte // non-nil when ring came from ringPool
	maxRead  int
	noSpin   bool
	sched    scheduler     // owned by the reader goroutine
	q        chan chunk    // reader -> writer, FIFO
	consumed atomic.Uint64 // total bytes the writer has finished with
	space    chan struct{} // cap 1: writer -> reader, "consumed grew"

	delivered int64         // bytes written to dst; owned by the writer goroutine
	total     *atomic.Int64 // when not nil, also counts the bytes written to dst
}

func newDirection(s *session, src, dst net.Conn, cfg Config, stream uint64) *direction {
	d := &direction{
		s: s, src: src, dst: dst,
		maxRead: maxChunk,
		noSpin:  cfg.NoSpin,
		sched:   newScheduler(cfg, stream),
		q:       make(chan chunk, queueLen),
		space:   make(chan struct{}, 1),
	}
	if cfg.Buffer == 0 || cfg.Buffer == DefaultBuffer {
		d.ringPtr = ringPool.Get().(*[]byte)
		d.ring = *d.ringPtr
	} else {
		d.ring = make([]byte, cfg.Buffer)
	}
	if cfg.Bandwidth > 0 {
		// Keep a chunk to about 5 ms of transmission so that a slow link
		// delivers a stream, not a lump per 32 KiB.
		d.maxRead = int(min(max(cfg.Bandwidth/200, 512), maxChunk))
	}
	return d
}

// release returns the ring to the pool; call it after both goroutines of the
// direction have ended.
func (d *direction) release() {
	if d.ringPtr != nil {
		ringPool.Put(d.ringPtr)
		d.ringPtr, d.ring = nil, nil
	}
}

// readLoop reads src into the ring, stamps each read with its release time
// and queues it. It ends after queueing the end marker, which it always does
// once src fails, so the writer always terminates.
func (d *direction) readLoop() {
	size := uint64(len(d.ring))
	var w uint64 // total bytes read into the ring
	for {
		free := size - (w - d.consumed.Load())
		for free == 0 {
			<-d.space // the writer always frees what is queued, even when killed
			free = size - (w - d.consumed.Load())
		}
		off := int(w % size)
		n := int(min(free, size-uint64(off), uint64(d.maxRead)))
		n, err := d.src.Read(d.ring[off : off+n])
		now := time.Now()
		if n > 0 {
			w += uint64(n)
			d.q <- chunk{off: off, n: n, release: d.sched.next(now, n)}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !d.s.killed() {
				d.s.setErr(err)
			}
			d.q <- chunk{end: true, release: d.sched.next(now, 0)}
			return
		}
	}
}

// free hands n bytes of the ring back to the reader.
func (d *direction) free(n int) {
	d.consumed.Add(uint64(n))
	select {
	case d.space <- struct{}{}:
	default:
	}
}

// writeLoop releases queued chunks to dst at their release times. Chunks
// that are contiguous in the ring and already due are written together. After
// a failure it keeps draining the queue (discarding) until the end marker.
func (d *direction) writeLoop() {
	timer := time.NewTimer(time.Hour) // reused for every wait
	defer timer.Stop()
	var (
		pending    chunk
		hasPending bool
		failed     bool
	)
	for {
		var c chunk
		if hasPending {
			c, hasPending = pending, false
		} else {
			c = <-d.q
		}
		if c.end {
			if !failed && d.waitUntil(timer, c.release) {
				closeWrite(d.dst)
			}
			return
		}
		if failed || !d.waitUntil(timer, c.release) {
			failed = true
			d.free(c.n)
			continue
		}
		off, n := c.off, c.n
		now := time.Now()
	gather:
		for {
			select {
			case next := <-d.q:
				if !next.end && next.off == off+n && !next.release.After(now) {
					n += next.n
					continue
				}
				pending, hasPending = next, true
				break gather
			default:
				break gather
			}
		}
		if d.total != nil {
			// Counted before the write, so a peer that has read the
			// bytes finds them counted; corrected below if cut short.
			d.total.Add(int64(n))
		}
		w, err := d.dst.Write(d.ring[off : off+n])
		d.delivered += int64(w)
		if d.total != nil && w < n {
			d.total.Add(int64(w - n))
		}
		if err != nil {
			failed = true
			d.s.kill(err)
		}
		d.free(n)
	}
}

// waitUntil blocks until t (monotonic clock) and reports whether the session
// is still alive.
func (d *direction) waitUntil(timer *time.Timer, t time.Time) bool {
	for {
		left := time.Until(t)
		if left <= 0 {
			return !d.s.killed()
		}
		if d.noSpin || left > spinWindow {
			sleep := left
			if !d.noSpin {
				sleep -= spinWindow
			}
			timer.Reset(sleep)
			select {
			case <-timer.C:
			case <-d.s.abort:
				timer.Stop()
				return false
			}
			continue
		}
		if d.s.killed() {
			return false
		}
		if left > sleepSlack && preciseSleep(left-sleepSlack) {
			continue
		}
		runtime.Gosched()
	}
}

// closeWrite half-closes c if it can, and closes it otherwise.
func closeWrite(c net.Conn) {
	if hc, ok := c.(interface{ CloseWrite() error }); ok {
		hc.CloseWrite()
		return
	}
	c.Close()
}

// scheduler computes release times for one direction. It is owned by that
// direction's reader goroutine.
type scheduler struct {
	oneWay     time.Duration
	jitterHalf time.Duration
	bandwidth  int64
	rng        *rand.Rand // nil when there is no jitter

	txEnd time.Time // when the previous chunk finished transmitting
	txRem int64     // sub-nanosecond remainder of the serialisation delay, in ns×bandwidth
	last  time.Time // previous release; releases never go backwards
}

func newScheduler(cfg Config, stream uint64) scheduler {
	s := scheduler{
		oneWay:     cfg.RTT / 2,
		jitterHalf: cfg.Jitter / 2,
		bandwidth:  cfg.Bandwidth,
	}
	if s.jitterHalf > 0 {
		s.rng = rand.New(rand.NewPCG(uint64(cfg.Seed), stream))
	}
	return s
}

// next returns the release time of n bytes that arrived at arrival.
func (s *scheduler) next(arrival time.Time, n int) time.Time {
	t := arrival
	if s.bandwidth > 0 {
		if s.txEnd.After(t) {
			t = s.txEnd
		} else {
			s.txRem = 0
		}
		s.txRem += int64(n) * int64(time.Second)
		tx := s.txRem / s.bandwidth
		s.txRem -= tx * s.bandwidth
		t = t.Add(time.Duration(tx))
		s.txEnd = t
	}
	delay := s.oneWay
	if s.rng != nil {
		delay += time.Duration(s.rng.Int64N(2*int64(s.jitterHalf)+1)) - s.jitterHalf
		delay = max(delay, 0)
	}
	t = t.Add(delay)
	if t.Before(s.last) {
		t = s.last
	}
	s.last = t
	return t
}
