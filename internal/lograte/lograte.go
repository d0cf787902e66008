// Package lograte owns the rate limiting of log lines that strangers can
// cause (refused connections, connections over a cap): a Limiter lets one
// line per key through per interval and counts the ones it held back, so
// that the next line can say how many there were. Counters (metrics) still
// count every event; only the log is thinned.
package lograte

import (
	"sync"
	"time"
)

// Other is the key that stands for every key beyond a Limiter's bound.
const Other = "other"

// A Limiter allows one log line per key per interval. Its zero value is
// not usable; make one with New. Safe for concurrent use.
type Limiter struct {
	every   time.Duration
	maxKeys int

	mu   sync.Mutex // guards keys
	keys map[string]*entry
}

type entry struct {
	next       time.Time // when the next line about the key may go out
	suppressed int       // lines held back since the last one let through
}

// New returns a Limiter that lets a line about a key through at most once
// per every, and keeps at most maxKeys keys (more share the key Other).
func New(every time.Duration, maxKeys int) *Limiter {
	return &Limiter{every: every, maxKeys: max(maxKeys, 1), keys: map[string]*entry{}}
}

// Allow reports whether a line about key may be logged now. When it may,
// suppressed is the number of lines about the same key held back since
// the last one allowed, and as is the key they were counted under: key,
// or Other when the Limiter already keeps maxKeys other keys.
func (l *Limiter) Allow(key string) (ok bool, suppressed int, as string) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.keys[key]
	if e == nil {
		if len(l.keys) >= l.maxKeys {
			l.prune(now)
		}
		if len(l.keys) >= l.maxKeys {
			key = Other
			e = l.keys[Other]
		}
		if e == nil {
			e = &entry{}
			l.keys[key] = e
		}
	}
	if now.Before(e.next) {
		e.suppressed++
		return false, 0, key
	}
	suppressed = e.suppressed
	e.suppressed = 0
	e.next = now.Add(l.every)
	return true, suppressed, key
}

// prune forgets the keys whose interval is over, with the count of lines
// they held back (the metrics have them); l.mu is held.
func (l *Limiter) prune(now time.Time) {
	for k, e := range l.keys {
		if !now.Before(e.next) {
			delete(l.keys, k)
		}
	}
}
