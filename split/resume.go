package split

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// A resumable session's stream outlives its link. Both ends keep the bytes
// they sent until the other acknowledges them, so when the link drops or
// stalls the far end keeps its VM connection and the near end keeps the
// debugger's, the near end dials again and proves with the session's
// secret that it is the one that opened it, each end tells the other how
// much it received, and each resends the rest. The relay sessions on
// either end read and write a stream as their connection and see only a
// pause. The wire format is in PROTOCOL.md.

// DefaultResumeWithin is how long a session waits for its lost link to
// come back before it ends.
const DefaultResumeWithin = 2 * time.Minute

// DefaultResumeBuffer bounds the bytes a stream keeps unacknowledged: what
// an end sends while its link is down (the VM's events on the far end, the
// debugger's commands on the near end) waits in it, and a session whose
// end sends more than this before the link comes back ends.
const DefaultResumeBuffer = 16 << 20

// Stream tuning.
const (
	// ackEvery: a receiver that sends nothing acknowledges every this many
	// bytes (frames carrying data acknowledge as they go), which bounds
	// what a sender keeps while its link is up.
	ackEvery = 32 << 10
	// inBuffer: a link's reader stops reading while this many received
	// bytes wait for the session, so the link's own flow control holds
	// the sender.
	inBuffer = 256 << 10
	// writeBatch: a link's writer writes up to this many bytes of frames
	// at once.
	writeBatch = 256 << 10
	// closeLinger bounds how long Close waits for the end of the stream to
	// go out on a live link.
	closeLinger = time.Second
	// Redial backoff of the near end.
	redialFirst = 50 * time.Millisecond
	redialMax   = time.Second
)

// Log field names of the resumable stream.
const (
	LogLinkSession = "link_session" // a resumable session's ID
	LogDown        = "down"         // how long a link was down
	LogResent      = "resent_bytes" // bytes sent again after a resume
)

// ErrResumeExpired is wrapped by the error of a session whose link did not
// come back within its grace period.
var ErrResumeExpired = errors.New("split: the link did not come back in time")

// ErrResumeBuffer is wrapped by the error of a session that had more to
// send while its link was down than its buffer holds.
var ErrResumeBuffer = errors.New("split: too much to hold while the link is down")

// ErrSessionGone is wrapped by the error of a reconnect the far end
// answered with StatusGone.
var ErrSessionGone = errors.New("split: the far end does not hold the session")

// errStale is wrapped by a refused takeover's error.
var errStale = errors.New("stale sequence number")

// streamConfig configures one end's stream.
type streamConfig struct {
	end         End
	within      time.Duration // grace period; > 0
	buffer      int           // bound of unacknowledged bytes; > 0
	linkTimeout time.Duration // each link's silence timeout (liveConn); 0 for none
	log         zerolog.Logger
	// redial, on the near end, opens a link that takes the session up
	// again (a FlagReconnect hello carrying r) and returns it with the far
	// end's Received as its sent; errors wrapping ErrSessionGone,
	// ErrUnauthorized, ErrRefused or a *SkewError are final. Nil on the
	// far end, which waits for the near end.
	redial func(ctx context.Context, r Resume) (*leg, error)
}

// fifo is a byte queue: data is buf[off:].
type fifo struct {
	buf []byte
	off int
}

func (q *fifo) bytes() []byte { return q.buf[q.off:] }
func (q *fifo) len() int      { return len(q.buf) - q.off }

func (q *fifo) push(p []byte) {
	if q.off > 0 && q.off >= len(q.buf)/2 {
		n := copy(q.buf, q.buf[q.off:])
		q.buf, q.off = q.buf[:n], 0
	}
	q.buf = append(q.buf, p...)
}

func (q *fifo) drop(n int) {
	q.off += n
	if q.off == len(q.buf) {
		q.buf, q.off = q.buf[:0], 0
	}
}

// stream is one end of a resumable session: a net.Conn for the relay
// session, over a succession of links.
type stream struct {
	cfg           streamConfig
	id            SessionID
	secret        [32]byte
	local, remote net.Addr // the first link's

	mu sync.Mutex // guards everything below
	// changed is broadcast at every change of state: waiters (Read,
	// Write, Close, the links' goroutines, the redial's backoff) wait on
	// it, on s.mu. Every waiter wakes at every change: on a machine where
	// waking an idle thread is slow, a round trip through both ends took
	// twice as long when each change woke only the waiter it concerned
	// (BenchmarkSplitPingPong), since the spurious wakes keep the
	// scheduler's threads awake for the next packet.
	changed *sync.Cond

	out     fifo   // sent bytes the other end has not acknowledged, and bytes not sent yet
	outBase uint64 // sequence number of out's first byte: what the other end acknowledged
	finOut  bool   // CloseWrite or Close: the end of the stream follows out

	in      fifo   // received bytes the session has not read
	recv    uint64 // bytes received
	finIn   bool   // the other end's end of stream arrived
	ackSent uint64 // recv as last told to the other end

	link   *leg   // the live link, nil while down
	gen    uint64 // counts links; a loss's grace timer holds its gen
	downAt time.Time
	grace  *time.Timer // running while down
	err    error       // the session's end: reads (once in is read) and writes fail with it
	closed bool        // Close was called: Read and Write fail
	// farewell: the near end's session ended while its link was down; the
	// stream goes on dialling, within the grace, only to tell the far end
	// (which holds the VM until it hears it, or the grace passes).
	farewell bool
	rdl      time.Time // read deadline
	wdl      time.Time // write deadline
}

// leg is one connection of a stream; its reader and writer goroutines
// own conn's two directions.
type leg struct {
	conn    net.Conn
	br      *bufio.Reader
	sent    uint64 // sequence number of the next byte to send on it; guarded by stream.mu
	finSent bool   // the end of stream was queued on it; guarded by stream.mu
	finDone bool   // and written; guarded by stream.mu
	rawIn   int    // bytes to read unframed before the first frame (the far end's first link: the JDWP handshake)
	// z, when not nil, compresses the leg (ReplyCompress): its reader
	// (readLoop) and writer (writeLoop) go through it, rawIn included.
	z *zconn
}

// reader is what readLoop reads the leg from.
func (l *leg) reader() io.Reader {
	if l.z != nil {
		return l.z
	}
	return l.br
}

// writer is what writeLoop writes the leg to.
func (l *leg) writer() io.Writer {
	if l.z != nil {
		return l.z
	}
	return l.conn
}

func newStream(cfg streamConfig, id SessionID, secret [32]byte, c net.Conn) *stream {
	s := &stream{cfg: cfg, id: id, secret: secret, local: c.LocalAddr(), remote: c.RemoteAddr()}
	s.changed = sync.NewCond(&s.mu)
	return s
}

// over reports whether the stream has nothing more to do on any link; s.mu
// is held.
func (s *stream) over() bool { return s.err != nil || (s.closed && !s.farewell) }

// broadcast wakes every waiter; s.mu is held.
func (s *stream) broadcast() { s.changed.Broadcast() }

// wait releases s.mu until the next change or dl (none when zero) and
// takes it again; it reports false once dl passed. Only a wait with a
// deadline allocates (its timer).
func (s *stream) wait(dl time.Time) bool {
	if dl.IsZero() {
		s.changed.Wait()
		return true
	}
	d := time.Until(dl)
	if d <= 0 {
		return false
	}
	t := time.AfterFunc(d, func() {
		s.mu.Lock()
		s.changed.Broadcast()
		s.mu.Unlock()
	})
	s.changed.Wait()
	t.Stop()
	return time.Now().Before(dl)
}

// start makes l the stream's live link and starts its goroutines. The
// other end has received everything before sent.
func (s *stream) start(l *leg) {
	s.mu.Lock()
	s.startLocked(l)
	s.mu.Unlock()
}

func (s *stream) startLocked(l *leg) {
	if s.link != nil {
		s.link.conn.Close() // a stale link the far end had not noticed yet
	}
	s.link = l
	s.gen++
	s.ackSent = s.recv
	if s.grace != nil {
		s.grace.Stop()
		s.grace = nil
	}
	s.broadcast()
	go s.readLoop(l)
	go s.writeLoop(l)
}

// ack drops what the other end acknowledged; s.mu is held.
func (s *stream) ack(n uint64) error {
	if n < s.outBase {
		return nil // an older acknowledgement, overtaken
	}
	if n > s.outBase+uint64(s.out.len()) {
		return fmt.Errorf("%w: the other end acknowledged byte %d, and only %d were sent", ErrBadFrame, n, s.outBase+uint64(s.out.len()))
	}
	s.out.drop(int(n - s.outBase))
	s.outBase = n
	s.broadcast()
	return nil
}

// take applies one received frame; s.mu is held.
func (s *stream) take(f frame) error {
	if err := s.ack(f.ack); err != nil {
		return err
	}
	switch f.kind {
	case frameData:
		if s.finIn {
			return fmt.Errorf("%w: data after the end of stream", ErrBadFrame)
		}
		if f.seq > s.recv {
			return fmt.Errorf("%w: bytes from %d when %d were received", ErrBadFrame, f.seq, s.recv)
		}
		if skip := s.recv - f.seq; skip < uint64(len(f.payload)) {
			p := f.payload[skip:]
			s.in.push(p)
			s.recv += uint64(len(p))
			s.broadcast()
		}
	case frameFin:
		if f.seq != s.recv {
			return fmt.Errorf("%w: end of stream at %d when %d were received", ErrBadFrame, f.seq, s.recv)
		}
		s.finIn = true
		s.broadcast()
	}
	return nil
}

// readLoop reads l's frames until it fails or is replaced.
func (s *stream) readLoop(l *leg) {
	var buf []byte // owned by readLoop
	src := l.reader()
	if l.rawIn > 0 {
		raw := make([]byte, l.rawIn)
		_, err := io.ReadFull(src, raw)
		s.mu.Lock()
		if s.link == l && err == nil {
			s.in.push(raw)
			s.broadcast()
		}
		s.mu.Unlock()
		if err != nil {
			s.lost(l, unexpected(err))
			return
		}
	}
	for {
		f, b, err := readFrame(src, buf)
		buf = b
		s.mu.Lock()
		if s.link != l {
			s.mu.Unlock()
			return
		}
		if err != nil {
			s.mu.Unlock()
			if errors.Is(err, ErrBadFrame) || errors.Is(err, ErrBadCompression) {
				s.fail(err, "the other end sent a malformed frame; ending the session")
			} else {
				s.lost(l, err)
			}
			return
		}
		if err := s.take(f); err != nil {
			s.mu.Unlock()
			s.fail(err, "the other end broke the stream's sequence; ending the session")
			return
		}
		for s.in.len() > inBuffer && s.link == l && !s.closed {
			s.wait(time.Time{})
		}
		s.mu.Unlock()
	}
}

// writeLoop writes l's frames: the bytes not sent on it, acknowledgements,
// the end of stream, until it fails or is replaced.
func (s *stream) writeLoop(l *leg) {
	buf := make([]byte, 0, writeBatch+frameHeader) // owned by writeLoop
	dst := l.writer()
	s.mu.Lock()
	for {
		if s.link != l {
			s.mu.Unlock()
			return
		}
		buf = buf[:0]
		end := s.outBase + uint64(s.out.len())
		for l.sent < end && len(buf) < writeBatch {
			p := s.out.bytes()[l.sent-s.outBase:]
			p = p[:min(len(p), maxFramePayload)]
			buf = appendFrame(buf, frameData, l.sent, s.recv, p)
			l.sent += uint64(len(p))
		}
		switch {
		case len(buf) > 0:
		case s.finOut && !l.finSent:
			buf = appendFrame(buf, frameFin, l.sent, s.recv, nil)
			l.finSent = true
		case s.recv-s.ackSent >= ackEvery:
			buf = appendFrame(buf, frameAck, l.sent, s.recv, nil)
		default:
			s.wait(time.Time{})
			continue
		}
		s.ackSent = s.recv
		s.mu.Unlock()
		_, err := dst.Write(buf)
		if err != nil {
			s.lost(l, err)
			return
		}
		s.mu.Lock()
		l.finDone = l.finSent
		if s.farewell && l.finDone {
			// Told: the reader takes what the far end still sends until
			// it closes, then the stream is over.
			if cw, ok := l.conn.(interface{ CloseWrite() error }); ok {
				cw.CloseWrite() //nolint:errcheck // the read deadline ends it anyway
			}
			l.conn.SetReadDeadline(time.Now().Add(closeLinger))
		}
		s.broadcast() // Close waits for the end of stream to be written
	}
}
