// Package logsink is where tests send a program's JSON log lines (a
// zerolog writer, or a child process's stderr line by line): it keeps
// them as records and lets a test wait for the ones it expects, woken by
// each new line rather than polling.
package logsink

import (
	"bytes"
	"encoding/json"
	"sync"
	"testing"
	"time"
)

// Record is one log line, decoded.
type Record = map[string]any

// Sink keeps log lines. The zero value is not usable: use New.
type Sink struct {
	mu      sync.Mutex // guards recs, raw and changed
	recs    []Record
	raw     bytes.Buffer  // every line as written, JSON or not
	changed chan struct{} // closed and replaced at each line
}

// New returns an empty sink.
func New() *Sink { return &Sink{changed: make(chan struct{})} }

// Write takes one log line (zerolog writes one per call). A line that is
// not JSON is kept in String only.
func (s *Sink) Write(p []byte) (int, error) {
	var rec Record
	_ = json.Unmarshal(p, &rec)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.raw.Write(bytes.TrimSuffix(p, []byte("\n")))
	s.raw.WriteByte('\n')
	if rec != nil {
		s.recs = append(s.recs, rec)
	}
	close(s.changed)
	s.changed = make(chan struct{})
	return len(p), nil
}

// String is the log as written.
func (s *Sink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.raw.String()
}

// Where lists the records for which match holds, in the order written.
func (s *Sink) Where(match func(Record) bool) []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Record
	for _, r := range s.recs {
		if match(r) {
			out = append(out, r)
		}
	}
	return out
}

// Count counts the records for which match holds.
func (s *Sink) Count(match func(Record) bool) int { return len(s.Where(match)) }

// Find returns the first record for which match holds, or nil.
func (s *Sink) Find(match func(Record) bool) Record {
	if rs := s.Where(match); len(rs) > 0 {
		return rs[0]
	}
	return nil
}

// Wait waits up to timeout for n records for which match holds and
// returns the first of them; it fails the test, with the log, if they do
// not come.
func (s *Sink) Wait(t testing.TB, what string, n int, timeout time.Duration, match func(Record) bool) Record {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		changed := s.changed
		s.mu.Unlock()
		if rs := s.Where(match); len(rs) >= n {
			return rs[0]
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("no %d log lines %s within %v; log:\n%s", n, what, timeout, s)
			return nil
		}
	}
}

// Message matches the records with message m.
func Message(m string) func(Record) bool {
	return func(r Record) bool { return r["message"] == m }
}
