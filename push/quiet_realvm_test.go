package push

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/speculator"
	"github.com/rs/zerolog"
)

// TestSplitQuietFarCachesNothingRealVM: on a link without delay the far
// end goes quiet (speculator.LowRTT), and then caches nothing, since its
// near end caches the same replies and would never ask it for one: at the
// last stop its cache is empty, and from the fourth on it serves no hits.
// Whether the far end is quiet is decided on the round trip the near end
// measures: on a machine so loaded that loopback takes over LowRTT the far
// end holds stops again (rightly), and the run says nothing of a quiet
// far end: it is skipped, not failed.
func TestSplitQuietFarCachesNothingRealVM(t *testing.T) {
	if testing.Short() {
		t.Skip("starts JVMs")
	}
	b := jdwptest.JavaBuild(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	vm, err := javavm.Start(ctx, b, javavm.Deep, javavm.VMOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Stop()
	far := speculator.New(speculator.Config{}, zerolog.Nop(), nil)
	near := speculator.New(speculator.Config{WriteBehind: true}, zerolog.Nop(), nil)
	counters := new(Counters) // the far end's Stops: stops it held, not quiet
	farAddr := serve(t, relay.Config{DialVM: relay.DialTCP(vm.Addr()), NewHooks: FarHooks(far, Config{Counters: counters})})
	nearAddr := serve(t, relay.Config{DialVM: relay.DialTCP(farAddr), NewHooks: NearHooks(near, Config{})})
	const steps = 20
	var mu sync.Mutex // guards the figures below
	var peak, last, hits4, hitsAfter4, held4 int64
	_, err = javavm.RunDriver(ctx, b, javavm.DriverOptions{Addr: nearAddr, Debuggee: javavm.Deep, Profile: javavm.ProfileIdeaLike,
		Steps: steps, OnStop: func(s javavm.Stop) {
			st := far.Stats()
			mu.Lock()
			defer mu.Unlock()
			peak, last = max(peak, st.CacheBytes), st.CacheBytes
			if s.Index == 4 {
				hits4, held4 = st.Hits, counters.Stats().Stops
			}
			hitsAfter4 = st.Hits - hits4
		}})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("far end: cache peak %d bytes, %d at the last stop; %d hits from stop 4 on; near end %+v", peak, last, hitsAfter4, near.Stats())
	if held := counters.Stats().Stops - held4; held > 0 {
		t.Skipf("the far end held %d stops from the fourth on: the near end measured the loopback link over %v under this load, so it was not quiet", held, speculator.LowRTT)
	}
	// The first usage report carries no round trip: the far end goes
	// quiet at the stop after it.
	if last != 0 || hitsAfter4 != 0 {
		t.Errorf("the quiet far end caches %d bytes at the last stop and served %d hits from stop 4 on, want none", last, hitsAfter4)
	}
}
