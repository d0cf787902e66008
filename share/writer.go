package share

import (
	"net"
	"sync"
	"time"
)

// writer is the one goroutine that writes to a connection: others queue
// whole packets (copied, so the caller keeps its buffer), and run writes
// them in batches. Its two buffers are its own: queue appends to buf under
// mu; run swaps buf with spare and writes spare outside mu. Steady-state
// queueing allocates nothing once the buffers have grown.
type writer struct {
	c       net.Conn
	timeout time.Duration // per write; 0: none

	mu     sync.Mutex    // guards buf, spare, closed, err
	buf    []byte        // queued, not yet taken by run
	spare  []byte        // the buffer run is writing, or an empty one
	closed bool          // stop was called: run writes what is queued and returns
	err    error         // the write error that ended run
	more   chan struct{} // capacity 1: buf became non-empty, or closed
	room   chan struct{} // capacity 1: run took buf (queued bytes went down)
	exited chan struct{} // closed when run returns
}

// keepBytes bounds the buffer a writer keeps between batches.
const keepBytes = 1 << 20

func newWriter(c net.Conn, timeout time.Duration) *writer {
	return &writer{c: c, timeout: timeout, more: make(chan struct{}, 1), room: make(chan struct{}, 1), exited: make(chan struct{})}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// queue appends p for writing; it returns the bytes queued now, or -1
// once the writer stopped or failed (p is dropped).
func (w *writer) queue(p []byte) int {
	w.mu.Lock()
	if w.closed || w.err != nil {
		w.mu.Unlock()
		return -1
	}
	w.buf = append(w.buf, p...)
	n := len(w.buf)
	w.mu.Unlock()
	signal(w.more)
	return n
}

// waitRoom blocks while more than max bytes are queued, until done closes
// or the writer ends.
func (w *writer) waitRoom(max int, done <-chan struct{}) {
	for {
		w.mu.Lock()
		n, over := len(w.buf), w.closed || w.err != nil
		w.mu.Unlock()
		if n <= max || over {
			return
		}
		select {
		case <-w.room:
		case <-done:
			return
		case <-w.exited:
			return
		}
	}
}

// stop makes run write what is queued and return.
func (w *writer) stop() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	signal(w.more)
}

// run writes queued bytes until stop, or a write fails.
func (w *writer) run() error {
	defer close(w.exited)
	for {
		w.mu.Lock()
		for len(w.buf) == 0 && !w.closed {
			w.mu.Unlock()
			<-w.more
			w.mu.Lock()
		}
		if len(w.buf) == 0 {
			w.mu.Unlock()
			return nil
		}
		w.buf, w.spare = w.spare[:0], w.buf
		out := w.spare
		w.mu.Unlock()
		signal(w.room)
		if w.timeout > 0 {
			w.c.SetWriteDeadline(time.Now().Add(w.timeout))
		}
		_, err := w.c.Write(out)
		if cap(w.spare) > keepBytes {
			w.spare = nil // one big packet: give its memory back
		}
		if err != nil {
			w.mu.Lock()
			w.err = err
			w.buf = nil
			w.mu.Unlock()
			signal(w.room)
			return err
		}
	}
}
