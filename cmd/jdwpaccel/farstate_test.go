package main

import (
	"testing"

	"github.com/jdwpaccel/jdwpaccel/push"
	"github.com/jdwpaccel/jdwpaccel/speculator"
)

// TestFarState: the far end's page says pushing while it holds stops or
// speculates, quiet while it only relays misses (a fast link), and keeps
// its word without traffic.
func TestFarState(t *testing.T) {
	var f farState
	steps := []struct {
		spec  speculator.Stats
		push  push.Stats
		state string
	}{
		{speculator.Stats{}, push.Stats{}, ""},
		{speculator.Stats{Misses: 10, SpecSent: 5}, push.Stats{Stops: 1}, "pushing"},
		{speculator.Stats{Misses: 10, SpecSent: 5}, push.Stats{Stops: 1}, "pushing"},
		{speculator.Stats{Misses: 30, SpecSent: 5}, push.Stats{Stops: 1}, "quiet"},
		{speculator.Stats{Misses: 30, SpecSent: 5}, push.Stats{Stops: 1}, "quiet"},
		{speculator.Stats{Misses: 31, SpecSent: 5}, push.Stats{Stops: 2}, "pushing"},
	}
	for i, s := range steps {
		state, why := f.observe(s.spec, s.push)
		if state != s.state || (state != "") != (why != "") {
			t.Errorf("step %d: %q (%q), want %q", i, state, why, s.state)
		}
	}
}
