package share

import (
	"errors"
	"io"
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

	mu     sync.Mutex // guards buf, closed, err, job (spare is run's)
	buf    []byte     // queued, not yet taken by run
	spare  []byte     // the buffer run is writing, or an empty one
	closed bool       // stop was called: run writes what is queued and returns
	err    error      // the write error that ended run
	// job is a packet to stream after buf (stream); nil: none.
	job    *streamJob
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

// streamJob is a packet too big to hold: its header, then n bytes read
// from body as they are written. done gets the write's result.
type streamJob struct {
	head []byte
	body io.Reader
	n    int64
	done chan error
}

// stream writes head and then n bytes from body, after what is queued,
// and returns once they are written (or the writer failed): the caller
// (the hub's relay reader, which owns body) holds no copy of the packet.
func (w *writer) stream(head []byte, body io.Reader, n int64) error {
	j := &streamJob{head: head, body: body, n: n, done: make(chan error, 1)}
	w.mu.Lock()
	if w.closed || w.err != nil {
		w.mu.Unlock()
		return errWriterStopped
	}
	w.job = j
	w.mu.Unlock()
	signal(w.more)
	select {
	case err := <-j.done:
		return err
	case <-w.exited:
		return errWriterStopped
	}
}

var errWriterStopped = errors.New("share: the client's writer stopped")

// streamChunk is how many bytes of a streamed packet one write takes (its
// write deadline is renewed for each).
const streamChunk = 64 << 10

func (w *writer) writeJob(j *streamJob) error {
	if w.timeout > 0 {
		w.c.SetWriteDeadline(time.Now().Add(w.timeout))
	}
	if _, err := w.c.Write(j.head); err != nil {
		return err
	}
	buf := make([]byte, streamChunk)
	for left := j.n; left > 0; {
		k, err := io.ReadFull(j.body, buf[:min(int64(len(buf)), left)])
		if err != nil {
			return err
		}
		left -= int64(k)
		if w.timeout > 0 {
			w.c.SetWriteDeadline(time.Now().Add(w.timeout))
		}
		if _, err := w.c.Write(buf[:k]); err != nil {
			return err
		}
	}
	return nil
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
		for len(w.buf) == 0 && w.job == nil && !w.closed {
			w.mu.Unlock()
			<-w.more
			w.mu.Lock()
		}
		if len(w.buf) == 0 && w.job == nil {
			w.mu.Unlock()
			return nil
		}
		w.buf, w.spare = w.spare[:0], w.buf
		out := w.spare
		job := w.job
		w.job = nil
		w.mu.Unlock()
		signal(w.room)
		if w.timeout > 0 {
			w.c.SetWriteDeadline(time.Now().Add(w.timeout))
		}
		var err error
		if len(out) > 0 {
			_, err = w.c.Write(out)
		}
		if cap(w.spare) > keepBytes {
			w.spare = nil // one big packet: give its memory back
		}
		if err == nil && job != nil {
			err = w.writeJob(job)
			job.done <- err
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
