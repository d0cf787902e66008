package relay

// failError is why a hook ended its session (Session.Fail).
type failError struct {
	reason Reason
	err    error
}

func (e *failError) Error() string {
	return "ended by the proxy (" + string(e.reason) + "): " + e.err.Error()
}

func (e *failError) Unwrap() error { return e.err }

// Fail ends the session on a hook's behalf, for a reason from the closed
// set of Reasons: what was queued for each peer is still delivered, then
// both connections are closed as for any other failure (logged at error,
// counted in jdwpaccel_protocol_errors_total{reason}). Safe from any
// goroutine, including from a hook under its own lock: it never blocks.
// Only the first end of a session counts.
func (s *Session) Fail(reason Reason, err error) {
	s.end(peerProxy, &failError{reason: reason, err: err})
}
