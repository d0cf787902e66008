package speculator

import (
	"fmt"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

type diagTracer struct {
	mu     sync.Mutex
	counts map[string]int
}

func (d *diagTracer) spec(s *spec, o specOutcome, serial uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	name := map[specOutcome]string{outcomeSent: "sent", outcomeUsed: "used", outcomeWasted: "wasted"}[o]
	d.counts[fmt.Sprintf("%-40v k%-2d t%d %s", s.key.Cmd(), s.kind, s.info.Tier, name)]++
	if o != outcomeUsed {
		d.counts[fmt.Sprintf("serial %3d %s", serial, name)]++
	}
}

func (d *diagTracer) miss(c jdwp.Cmd, serial uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.counts[fmt.Sprintf("miss serial %3d %v", serial, c)]++
}

// TestDiagWaste is a diagnostic, not a check: with DIAG_PROFILE (and
// optionally DIAG_DEBUGGEE, DIAG_RTT) set it runs one proxied driver and
// logs, per command and rule, the speculation sent, used and wasted, and
// the misses per stop.
func TestDiagWaste(t *testing.T) {
	prof := os.Getenv("DIAG_PROFILE")
	if prof == "" {
		t.Skip()
	}
	deb := os.Getenv("DIAG_DEBUGGEE")
	if deb == "" {
		deb = javavm.Deep
	}
	rtt, _ := time.ParseDuration(os.Getenv("DIAG_RTT"))
	b := realBuild(t)
	tr := &diagTracer{counts: map[string]int{}}
	specTracer = tr
	defer func() { specTracer = nil }()
	res, sp, err := runDriver(t, b, javavm.DriverOptions{Debuggee: deb, Profile: prof, Steps: 8, Warmup: 2}, rtt, Config{})
	if err != nil {
		t.Fatal(err)
	}
	st := sp.Stats()
	t.Logf("median %v hits %d misses %d belays %d sent %d used %d wasted %d", res.MedianStep(), st.Hits, st.Misses, st.Belays, st.SpecSent, st.SpecUsed, st.SpecWasted)
	for _, s := range res.Stops {
		t.Logf("stop %d %.1f ms %s", s.Index, s.MS, s.Top)
	}
	var keys []string
	for k := range tr.counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.Logf("%s: %d", k, tr.counts[k])
	}
}
