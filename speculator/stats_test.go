package speculator

import (
	"reflect"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"
)

// TestStatsAndMetricsAgree: every count reaches both the snapshot and the
// Prometheus metric, so the page, the benchmark and /metrics show the same
// figures.
func TestStatsAndMetricsAgree(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	sp := New(Config{}, zerolog.Nop(), m)
	sp.countRequest(resultHit)
	sp.countRequest(resultHit)
	sp.countRequest(resultMiss)
	sp.countRequest(resultBelay)
	sp.countSpec(outcomeSent, 5)
	sp.countSpec(outcomeUsed, 3)
	sp.countSpec(outcomeWasted, 1)
	sp.countSpec(outcomeWithheld, 2)
	sp.countInvalidation(reasonResume)
	sp.addCache(100, 2)

	st := sp.Stats()
	want := Stats{Hits: 2, Misses: 1, Belays: 1, SpecSent: 5, SpecUsed: 3, SpecWasted: 1, SpecWithheld: 2,
		RoundTripsSaved: 3, CacheBytes: 100, CacheEntries: 2}
	got := st
	got.Invalidations = nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("stats = %+v, want %+v", got, want)
	}
	if st.Invalidations["resume"] != 1 || st.Invalidations["stop"] != 0 {
		t.Fatalf("invalidations = %v", st.Invalidations)
	}
	for _, c := range []struct {
		metric prometheus.Collector
		want   int64
	}{
		{m.requests[resultHit], st.Hits}, {m.requests[resultMiss], st.Misses}, {m.requests[resultBelay], st.Belays},
		{m.specs[outcomeSent], st.SpecSent}, {m.specs[outcomeUsed], st.SpecUsed},
		{m.specs[outcomeWasted], st.SpecWasted}, {m.specs[outcomeWithheld], st.SpecWithheld},
		{m.inval[reasonResume], st.Invalidations["resume"]},
		{m.bytes, st.CacheBytes}, {m.entries, st.CacheEntries},
	} {
		if got := testutil.ToFloat64(c.metric); got != float64(c.want) {
			t.Errorf("metric %v = %v, snapshot %d", c.metric, got, c.want)
		}
	}
}

// TestStatsSince: counters are differences, levels are the newer
// snapshot's.
func TestStatsSince(t *testing.T) {
	prev := Stats{Hits: 1, Misses: 2, Belays: 3, SpecSent: 4, SpecUsed: 5, SpecWasted: 6, SpecWithheld: 7,
		RoundTripsSaved: 4, CacheBytes: 50, CacheEntries: 5, Invalidations: map[string]int64{"stop": 1}}
	cur := Stats{Hits: 11, Misses: 12, Belays: 13, SpecSent: 14, SpecUsed: 15, SpecWasted: 16, SpecWithheld: 17,
		RoundTripsSaved: 24, CacheBytes: 10, CacheEntries: 1, Invalidations: map[string]int64{"stop": 4, "resume": 2}}
	d := cur.Since(prev)
	inv := d.Invalidations
	d.Invalidations = nil
	want := Stats{Hits: 10, Misses: 10, Belays: 10, SpecSent: 10, SpecUsed: 10, SpecWasted: 10, SpecWithheld: 10,
		RoundTripsSaved: 20, CacheBytes: 10, CacheEntries: 1}
	if !reflect.DeepEqual(d, want) {
		t.Fatalf("since = %+v, want %+v", d, want)
	}
	if inv["stop"] != 3 || inv["resume"] != 2 || cur.Invalidations["stop"] != 4 {
		t.Fatalf("invalidations since = %v (cur %v)", inv, cur.Invalidations)
	}
}

// TestChangedSignalsCounters: Changed is closed by the next counter change
// and not before.
func TestChangedSignalsCounters(t *testing.T) {
	sp := New(Config{}, zerolog.Nop(), nil)
	ch := sp.Changed()
	select {
	case <-ch:
		t.Fatal("Changed closed before any counter changed")
	default:
	}
	if sp.Changed() != ch {
		t.Error("two waits before a change got different channels")
	}
	sp.countRequest(resultBelay)
	select {
	case <-ch:
	default:
		t.Fatal("a belay did not close Changed")
	}
	if next := sp.Changed(); next == ch {
		t.Error("Changed after a change returned the closed channel")
	}
	sp.countSpec(outcomeSent, 0) // counts nothing
	sp.countSpec(outcomeSent, 2)
	if st := sp.Stats(); st.Belays != 1 || st.SpecSent != 2 {
		t.Errorf("stats %+v", st)
	}
}
