package split

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"time"

	"github.com/jdwpaccel/jdwpaccel/relay"
)

// lost handles the failure of link l: the session waits for a new one.
func (s *stream) lost(l *leg, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.link != l {
		return
	}
	l.conn.Close()
	s.link = nil
	s.broadcast()
	switch {
	case s.over():
		return
	case s.finIn || s.finOut:
		// The session is ending: nothing to take up again.
		s.err = fmt.Errorf("split: the link closed as the session ended: %w", err)
		return
	}
	s.downAt = time.Now()
	gen := s.gen
	s.cfg.log.Warn().Err(err).Dur("within", s.cfg.within).
		Msg("the link to the other end was lost; the session waits for it to come back (the debugger and the VM stay connected)")
	s.grace = time.AfterFunc(s.cfg.within, func() { s.expire(gen) })
	if s.cfg.redial != nil {
		go s.redialLoop(gen)
	}
}

// expire ends a session whose link, lost at gen, did not come back.
func (s *stream) expire(gen uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen != gen || s.link != nil {
		return // the link came back meanwhile
	}
	s.failLocked(fmt.Errorf("%w: no link for %v (--resume-within)", ErrResumeExpired, s.cfg.within),
		"the link did not come back within the grace period; ending the session (the VM resets as after a detach)")
}

// fail ends the session with err, logged with msg.
func (s *stream) fail(err error, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failLocked(err, msg)
}

// failLocked is fail with s.mu held.
func (s *stream) failLocked(err error, msg string) {
	if s.over() {
		return
	}
	if !s.closed {
		s.cfg.log.Warn().Err(err).Msg(msg)
	}
	s.err = err
	if s.link != nil {
		s.link.conn.Close()
		s.link = nil
	}
	if s.grace != nil {
		s.grace.Stop()
		s.grace = nil
	}
	s.broadcast()
}

// redialLoop dials the far end again, with backoff, until a link takes
// the session up, the far end refuses it, or the session ends.
func (s *stream) redialLoop(gen uint64) {
	wait := redialFirst
	for attempt := 1; ; attempt++ {
		s.mu.Lock()
		if s.gen != gen || s.link != nil || s.over() {
			s.mu.Unlock()
			return
		}
		r := Resume{Session: s.id, Secret: s.secret, Received: s.recv}
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), s.dialTimeout())
		l, err := s.cfg.redial(ctx, r)
		cancel()
		if err == nil {
			if err := s.resumed(gen, l, attempt); err != nil {
				l.conn.Close()
				s.fail(err, "the far end's sequence number does not match what this end sent; ending the session")
			}
			return
		}
		var skew *SkewError
		if errors.Is(err, ErrSessionGone) || errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrRefused) || errors.As(err, &skew) {
			s.fail(err, "the far end refused to take the session up again (it restarted, or ended the session); ending the session")
			return
		}
		s.cfg.log.Debug().Err(err).Int("attempt", attempt).Msg("the far end cannot be reached yet")
		s.mu.Lock()
		s.wait(time.Now().Add(wait)) // or until a change: the session may have ended
		s.mu.Unlock()
		wait = min(2*wait, redialMax)
	}
}

func (s *stream) dialTimeout() time.Duration {
	if s.cfg.linkTimeout > 0 {
		return min(s.cfg.linkTimeout, DefaultPreambleTimeout)
	}
	return DefaultPreambleTimeout
}

// resumed starts l on the near end once the far end took the session up
// again (l.sent is the far end's Received).
func (s *stream) resumed(gen uint64, l *leg, attempts int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen != gen || s.link != nil || s.over() {
		return s.err
	}
	if err := s.ack(l.sent); err != nil || l.sent < s.outBase {
		return fmt.Errorf("%w: the far end received %d bytes, and this end sent %d from %d on", errStale, l.sent, s.out.len(), s.outBase)
	}
	s.cfg.log.Info().Dur(LogDown, time.Since(s.downAt)).Int(relay.LogAttempts, attempts).Int(LogResent, s.out.len()).Msg("the link came back; the session goes on")
	s.startLocked(l)
	return nil
}

// takeOver checks a reconnect on the far end (the secret, the near end's
// Received) and makes l the session's link, without starting it (the
// caller writes its Reply first). It returns this end's Received.
func (s *stream) takeOver(l *leg, r Resume) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if subtle.ConstantTimeCompare(r.Secret[:], s.secret[:]) != 1 {
		return 0, errors.New("wrong session secret")
	}
	if s.err != nil || s.closed {
		return 0, ErrSessionGone
	}
	if end := s.outBase + uint64(s.out.len()); r.Received < s.outBase || r.Received > end {
		return 0, fmt.Errorf("%w: the near end says it received %d bytes; it acknowledged %d, and %d were sent", errStale, r.Received, s.outBase, end)
	}
	s.ack(r.Received) //nolint:errcheck // checked above
	l.sent = r.Received
	if s.link != nil {
		s.link.conn.Close()
	} else {
		s.cfg.log.Info().Dur(LogDown, time.Since(s.downAt)).Int(LogResent, s.out.len()).Msg("the near end took the session up again")
	}
	// Held until start: the link's goroutines run once the Reply is out.
	s.link = nil
	if s.grace != nil {
		s.grace.Stop()
		s.grace = nil
	}
	s.gen++
	return s.recv, nil
}
