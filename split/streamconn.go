package split

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

// Read reads the session's bytes; it waits while the link is down.
func (s *stream) Read(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		switch {
		case s.closed:
			return 0, net.ErrClosed
		case s.in.len() > 0:
			n := copy(b, s.in.bytes())
			s.in.drop(n)
			s.broadcast()
			return n, nil
		case s.finIn:
			return 0, io.EOF
		case s.err != nil:
			return 0, s.err
		}
		if !s.wait(s.rdl) {
			return 0, os.ErrDeadlineExceeded
		}
	}
}

// Write queues b for the other end; it waits while the buffer is full and
// the link is up, and fails once it is full and the link is down.
func (s *stream) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for len(b) > 0 {
		switch {
		case s.closed:
			return n, net.ErrClosed
		case s.err != nil:
			return n, s.err
		case s.finOut:
			return n, errors.New("split: write after CloseWrite")
		}
		room := s.cfg.buffer - s.out.len()
		if room <= 0 {
			if s.link == nil {
				s.failLocked(fmt.Errorf("%w: more than %d bytes to send", ErrResumeBuffer, s.cfg.buffer),
					"the session had more to send while the link was down than this end keeps; ending the session")
				continue
			}
			if !s.wait(s.wdl) {
				return n, os.ErrDeadlineExceeded
			}
			continue
		}
		k := min(room, len(b))
		s.out.push(b[:k])
		b, n = b[k:], n+k
		s.broadcast()
	}
	return n, nil
}

// CloseWrite ends the stream after the bytes written so far.
func (s *stream) CloseWrite() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finOut = true
	s.broadcast()
	return nil
}

// Close ends the session: on a live link the end of stream goes out
// first (for up to closeLinger), so the other end's session ends as after
// a close rather than waiting for the link to come back.
func (s *stream) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.finOut = true
	s.broadcast()
	if s.link == nil && s.cfg.redial != nil && !s.over() && !s.finIn {
		s.closed, s.farewell = true, true
		s.cfg.log.Info().Msg("the session ended while the link was down; telling the far end once the link is back, so it detaches from the VM before its grace passes")
		return nil
	}
	dl := time.Now().Add(closeLinger)
	for s.link != nil && s.err == nil && !s.link.finDone {
		if !s.wait(dl) {
			break
		}
	}
	s.closed = true
	if s.link != nil {
		s.link.conn.Close()
		s.link = nil
	}
	if s.grace != nil {
		s.grace.Stop()
		s.grace = nil
	}
	s.broadcast()
	return nil
}

func (s *stream) LocalAddr() net.Addr  { return s.local }
func (s *stream) RemoteAddr() net.Addr { return s.remote }

func (s *stream) SetDeadline(t time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rdl, s.wdl = t, t
	s.broadcast()
	return nil
}

func (s *stream) SetReadDeadline(t time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rdl = t
	s.broadcast()
	return nil
}

func (s *stream) SetWriteDeadline(t time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.wdl = t
	s.broadcast()
	return nil
}
