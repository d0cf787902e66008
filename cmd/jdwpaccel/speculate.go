package main

import (
	"sync"

	"github.com/jdwpaccel/jdwpaccel/bench"
	"github.com/jdwpaccel/jdwpaccel/speculator"
	"github.com/rs/zerolog"
)

func init() {
	speculateMode = func(log zerolog.Logger) bench.Mode {
		sp := speculator.New(speculator.Config{Enabled: true}, log, nil)
		return bench.Mode{Name: "speculate", NewHooks: sp.Hooks, Stats: statsDelta(sp)}
	}
}

// statsDelta returns a function that reports the speculator's counters
// accumulated since its previous call.
func statsDelta(sp *speculator.Speculator) func() map[string]float64 {
	var mu sync.Mutex // guards prev
	var prev speculator.Stats
	return func() map[string]float64 {
		mu.Lock()
		defer mu.Unlock()
		cur := sp.Stats()
		d := map[string]float64{
			"hits":               float64(cur.Hits - prev.Hits),
			"misses":             float64(cur.Misses - prev.Misses),
			"belays":             float64(cur.Belays - prev.Belays),
			"speculative_sent":   float64(cur.SpecSent - prev.SpecSent),
			"speculative_used":   float64(cur.SpecUsed - prev.SpecUsed),
			"speculative_wasted": float64(cur.SpecWasted - prev.SpecWasted),
			"round_trips_saved":  float64(cur.RoundTripsSaved - prev.RoundTripsSaved),
		}
		prev = cur
		return d
	}
}
