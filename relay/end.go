package relay

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// Peers whose connection ends a session, the values of the closed_by log
// field: the debugger's or the VM's (its reader or writer returned first),
// or the proxy's own shutdown (the session was closed before either did).
const (
	peerDebugger = "debugger"
	peerVM       = "vm"
	peerProxy    = "proxy"
)

// writeError is a failure to write to a peer's connection. Whichever
// goroutine meets it (the other side's reader, waiting for room, or the
// writer itself), the session ends by that peer.
type writeError struct {
	peer string
	err  error
}

func writeFailed(peer string, err error) error { return &writeError{peer: peer, err: err} }

func (e *writeError) Error() string {
	name := "VM"
	if e.peer == peerDebugger {
		name = "debugger"
	}
	return "write to " + name + ": " + e.err.Error()
}

func (e *writeError) Unwrap() error { return e.err }

// end records the first result of a reader or writer, and the peer whose
// connection it serves (or, for a failed write, the peer written to), and
// starts the session's shutdown.
func (s *Session) end(peer string, err error) {
	s.endOnce.Do(func() {
		var we *writeError
		switch {
		case s.closed.Load():
			peer = peerProxy
		case errors.As(err, &we):
			peer = we.peer
		}
		s.endErr, s.endedBy = err, peer
		close(s.ended)
	})
}

// lingerTimeout bounds how long a session's end waits for a peer to close
// its side after the proxy closed its own (closeWrites).
const lingerTimeout = 500 * time.Millisecond

// release marks the session closed once: Send* fail, and readers and
// writers blocked on room or data return.
func (s *Session) release() {
	s.releaseOnce.Do(func() {
		s.closed.Store(true)
		close(s.done)
	})
}

// closeWrites ends the session gracefully: each connection gets an end of
// stream after the bytes already written, and its reader, which stops
// relaying, reads and drops what the peer still sends until the peer
// closes or lingerTimeout passes. A connection that cannot half-close is
// closed at once.
func (s *Session) closeWrites() {
	s.release()
	deadline := time.Now().Add(lingerTimeout)
	for _, c := range []net.Conn{s.debugger, s.vm} {
		cw, ok := c.(interface{ CloseWrite() error })
		if !ok || cw.CloseWrite() != nil {
			c.Close()
			continue
		}
		c.SetReadDeadline(deadline)
	}
}

// close closes both connections once; readers and writers then return.
func (s *Session) close() {
	s.release()
	s.closeOnce.Do(func() {
		s.debugger.Close()
		s.vm.Close()
	})
}

// discard reads and drops what c still delivers, until its peer closes,
// the read deadline set by closeWrites passes, or c is closed. A reader
// calls it once it stopped relaying, so the proxy never closes c with
// bytes left unread.
func discard(c net.Conn) {
	var buf [4096]byte
	for {
		if _, err := c.Read(buf[:]); err != nil {
			return
		}
	}
}

// Classify maps an error that ended a connection to the protocol error
// reason the relay logs and counts for it, or "" for an orderly end.
func Classify(err error) Reason { return classify(err) }

// PeerGone reports whether err is a peer closing or resetting its
// connection (rather than breaking the protocol).
func PeerGone(err error) bool { return peerGone(err) }

// classify maps an error that ended a session to a protocol error reason,
// or "" for an orderly end.
func classify(err error) Reason {
	var fe *failError
	switch {
	case errors.As(err, &fe):
		return fe.reason
	case err == nil, errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), errors.Is(err, ErrSessionClosed):
		return ""
	case errors.Is(err, jdwp.ErrShortPacket):
		return ReasonShortPacket
	case errors.Is(err, jdwp.ErrPacketTooLarge):
		return ReasonOversizedPacket
	case errors.Is(err, jdwp.ErrTruncated):
		return ReasonTruncated
	case errors.Is(err, jdwp.ErrBadHandshake):
		return ReasonBadHandshake
	case errors.Is(err, os.ErrDeadlineExceeded):
		return ReasonWriteTimeout
	}
	return ReasonIO
}

// peerGone reports whether err is a peer closing or resetting its
// connection (rather than breaking the protocol).
func peerGone(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, jdwp.ErrTruncated) || errors.Is(err, io.ErrUnexpectedEOF)
}
