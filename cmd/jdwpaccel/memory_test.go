package main

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestMemoryLimiterFollowsSessions: the soft memory limit is the bound
// README promises for the sessions attached now (one counted when none
// is), and a GOMEMLIMIT from the environment is left alone.
func TestMemoryLimiterFollowsSessions(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })
	limitMemory = true
	t.Cleanup(func() { limitMemory = false })
	t.Setenv("GOMEMLIMIT", "")

	const cache = 16 << 20
	if got, want := memoryBound(cache, 2), int64(32<<20+2*(cache+27<<20)); got != want {
		t.Fatalf("bound for two sessions %d, want %d", got, want)
	}
	if got, want := memoryBound(0, 1), int64(32<<20+3<<20); got != want {
		t.Fatalf("bound without speculation %d, want %d", got, want)
	}
	m := newMemoryLimiter(cache)
	if m == nil {
		t.Fatal("no limiter")
	}
	limit := func() int64 { return debug.SetMemoryLimit(-1) }
	if got := limit(); got != memoryBound(cache, 1) {
		t.Errorf("limit without sessions %d, want %d", got, memoryBound(cache, 1))
	}
	m.SessionStart(nil)
	m.SessionStart(nil)
	if got := limit(); got != memoryBound(cache, 2) {
		t.Errorf("limit with two sessions %d, want %d", got, memoryBound(cache, 2))
	}
	m.SessionEnd(nil, nil)
	if got := limit(); got != memoryBound(cache, 1) {
		t.Errorf("limit with one session %d, want %d", got, memoryBound(cache, 1))
	}

	debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOMEMLIMIT", "1GiB")
	if newMemoryLimiter(cache) != nil || limit() != math.MaxInt64 {
		t.Error("a limit was set over GOMEMLIMIT")
	}
}
