package main

import (
	"os"
	"runtime/debug"
	"sync"

	"github.com/jdwpaccel/jdwpaccel/relay"
)

// The process's memory, as README ("Memory") states it: RSS stays within
// memoryBound(--cache-bytes, attached sessions). Without a limit Go's
// collector lets the heap grow to twice what is live before it collects
// (GOGC=100), so a full cache cost twice its bytes in RSS (80.7 MB with
// --cache-bytes 16 MiB). A soft memory limit (runtime/debug.SetMemoryLimit)
// at the bound makes it collect before that; it follows the sessions
// attached (memoryLimiter). GOMEMLIMIT, when set, wins.

const (
	// memoryBase is the process without sessions: the Go runtime, the
	// page, the metrics, the DDM holder, discovery.
	memoryBase = 32 << 20
	// sessionFacts is what a speculating session keeps besides its cache:
	// the types of up to 65,536 objects, class signatures and facts, the
	// learner's templates, write-behind's IDs. Measured: 13 MiB with
	// 30,000 classes and the object maps full, 2 MiB per further 10,000
	// classes, so this holds up to about 80,000 classes.
	sessionFacts = 24 << 20
	// sessionRelay is a session's relay buffers: two 64 KiB readers and
	// write queues of at most 1 MiB per side.
	sessionRelay = 3 << 20
)

// memoryBound is what the process may hold with n sessions attached (at
// least one counted), each with a cache of cacheBytes (0: not speculating).
func memoryBound(cacheBytes int64, n int) int64 {
	per := int64(sessionRelay)
	if cacheBytes > 0 {
		per += cacheBytes + sessionFacts
	}
	return memoryBase + int64(max(n, 1))*per
}

// limitMemory says whether this process sets the soft memory limit: main
// sets it, so tests running the commands in their own process do not.
var limitMemory = false

// memoryLimiter keeps the soft memory limit at memoryBound for the
// sessions attached now (a relay.SessionObserver).
type memoryLimiter struct {
	cacheBytes int64
	mu         sync.Mutex // guards n, and orders the limit's updates
	n          int
}

// newMemoryLimiter returns a limiter for sessions caching cacheBytes each
// (0: not speculating), having set the limit for one session; nil if this
// process sets no limit.
func newMemoryLimiter(cacheBytes int64) *memoryLimiter {
	if !limitMemory || os.Getenv("GOMEMLIMIT") != "" {
		return nil
	}
	m := &memoryLimiter{cacheBytes: cacheBytes}
	debug.SetMemoryLimit(memoryBound(cacheBytes, 0))
	return m
}

func (m *memoryLimiter) add(d int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n += d
	debug.SetMemoryLimit(memoryBound(m.cacheBytes, m.n))
}

func (m *memoryLimiter) Observe(*relay.Session, *relay.Frame) {}
func (m *memoryLimiter) SessionStart(*relay.Session)          { m.add(1) }
func (m *memoryLimiter) SessionEnd(*relay.Session, error)     { m.add(-1) }
