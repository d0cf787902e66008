package relay

import (
	"net"
	"sync"
	"time"
)

// keepQueueBytes bounds the capacity of a queue buffer kept for reuse
// after a write: a buffer grown past it (a burst of big packets) goes back
// to the garbage collector.
const keepQueueBytes = 1 << 20

// sideWriter is the only writer of one connection, in the manner of
// yamux's send loop. Producers (the reader goroutines forwarding packets,
// hooks injecting them from any goroutine) append whole packets to a byte
// queue under mu; the writer goroutine (run) swaps the queue out and
// writes everything queued in one Write, with a write deadline. A burst is
// thus flushed when the writer finds nothing more queued, and packets are
// written in the order they were queued, never interleaved.
//
// Buffer ownership: the bytes of a queued packet are copied into buf, so a
// producer keeps ownership of what it passed in. buf belongs to the queue
// (mu) until the writer swaps it out; the writer then owns it, writes it,
// and hands it back as the next empty buf. Steady state thus ping-pongs
// two buffers and allocates nothing. A big packet whose bytes the producer
// gives away (enqueueOwned, a reader forwarding a packet jdwp.Reader.Owned
// says it may keep) is queued without a copy: the queue is then segs (the
// copies queued before it, then the packet) followed by buf.
type sideWriter struct {
	conn    net.Conn
	timeout time.Duration // write deadline of each Write; zero for none
	limit   int           // queued bytes above which waitRoom blocks

	mu       sync.Mutex // guards buf, segs, queued, stopping and err
	buf      []byte     // queued packets in wire order, after segs; see ownership above
	segs     [][]byte   // the queue's head when a packet was queued without a copy; see above
	queued   int        // bytes in segs and buf
	stopping bool       // no more packets accepted; the writer exits once buf is written
	err      error      // why nothing more is accepted (the write error, or ErrSessionClosed)

	wake   chan struct{} // capacity 1: signalled when packets are queued or stopping is set
	room   chan struct{} // capacity 1: signalled when the writer took the queue
	exited chan struct{} // closed when run returns

	spare      []byte    // owned by the writer goroutine: the buffer it last wrote
	deadlineAt time.Time // writer goroutine's: when the write deadline was last set
}

func newSideWriter(conn net.Conn, timeout time.Duration, limit int) *sideWriter {
	return &sideWriter{
		conn:    conn,
		timeout: timeout,
		limit:   limit,
		buf:     make([]byte, 0, 16<<10), // both grow, up to keepQueueBytes, to the largest burst
		spare:   make([]byte, 0, 16<<10),
		wake:    make(chan struct{}, 1),
		room:    make(chan struct{}, 1),
		exited:  make(chan struct{}),
	}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// enqueue copies p to the end of the queue. It never blocks on the
// network; it fails once the writer stopped.
func (w *sideWriter) enqueue(p []byte) error {
	w.mu.Lock()
	if w.err != nil {
		err := w.err
		w.mu.Unlock()
		return err
	}
	w.buf = append(w.buf, p...)
	w.queued += len(p)
	w.mu.Unlock()
	signal(w.wake)
	return nil
}

// enqueueOwned queues p without copying it: the caller gives p away and
// must never touch its bytes again. For big packets, whose copy would
// double the memory they take.
func (w *sideWriter) enqueueOwned(p []byte) error {
	w.mu.Lock()
	if w.err != nil {
		err := w.err
		w.mu.Unlock()
		return err
	}
	if len(w.buf) > 0 {
		w.segs = append(w.segs, w.buf)
		w.buf = nil
	}
	w.segs = append(w.segs, p)
	w.queued += len(p)
	w.mu.Unlock()
	signal(w.wake)
	return nil
}

// waitRoom blocks while more than limit bytes are queued, so a reader
// stops reading from its peer while the other peer does not keep up.
// Injected packets do not wait (their producers may hold locks); their
// number is bounded by what the hooks do per debugger command.
func (w *sideWriter) waitRoom(abort <-chan struct{}) error {
	for {
		w.mu.Lock()
		n, err := w.queued, w.err
		w.mu.Unlock()
		if err != nil {
			return err
		}
		if n <= w.limit {
			return nil
		}
		select {
		case <-w.room:
		case <-abort:
			return ErrSessionClosed
		}
	}
}

// stop makes the writer refuse new packets and exit once it has written
// those already queued.
func (w *sideWriter) stop() {
	w.mu.Lock()
	w.stopping = true
	if w.err == nil {
		w.err = ErrSessionClosed
	}
	w.mu.Unlock()
	signal(w.wake)
}

// run is the writer goroutine. It returns nil once stopped and drained or
// when abort is closed, and the error of a failed write otherwise (after
// which enqueue fails with it).
func (w *sideWriter) run(abort <-chan struct{}) error {
	defer close(w.exited)
	for {
		w.mu.Lock()
		for w.queued == 0 {
			if w.stopping {
				w.mu.Unlock()
				return nil
			}
			w.mu.Unlock()
			select {
			case <-w.wake:
			case <-abort:
				return nil
			}
			w.mu.Lock()
		}
		out, segs := w.buf, w.segs
		w.buf, w.segs, w.queued = w.spare[:0], nil, 0
		w.mu.Unlock()
		signal(w.room)

		if w.timeout > 0 {
			// Moving the deadline costs a timer update; a deadline set
			// less than a quarter of the timeout ago still leaves this
			// write at least three quarters of it.
			if now := time.Now(); now.Sub(w.deadlineAt) > w.timeout/4 {
				w.conn.SetWriteDeadline(now.Add(w.timeout))
				w.deadlineAt = now
			}
		}
		if err := w.write(segs, out); err != nil {
			w.mu.Lock()
			w.err = err
			w.buf, w.segs, w.queued = nil, nil, 0
			w.mu.Unlock()
			signal(w.room) // release a reader in waitRoom: it sees err
			return err
		}
		if cap(out) > keepQueueBytes {
			out = nil
		}
		w.spare = out[:0]
	}
}

// write writes segs, then out, in order.
func (w *sideWriter) write(segs [][]byte, out []byte) error {
	if segs == nil {
		_, err := w.conn.Write(out)
		return err
	}
	bufs := net.Buffers(append(segs, out))
	_, err := bufs.WriteTo(w.conn) // one writev where the connection allows it
	return err
}
