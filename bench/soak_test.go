package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/speculator"
	"github.com/rs/zerolog"
)

// TestSoakSamples: a short soak with speculation, in sessions of a few
// steps, samples RSS, goroutines and a growing cache at every interval, and
// writes them as a table, JSON and a chart.
func TestSoakSamples(t *testing.T) {
	b := jdwptest.JavaBuild(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// A loaded machine may step too little in 4 s to see several
	// sessions: the same soak then runs again for twice as long.
	var (
		rep      *SoakReport
		progress []SoakSample
		d        = 4 * time.Second
	)
	for ; ; d *= 2 {
		sp := speculator.New(speculator.Config{CacheBytes: 1 << 20}, zerolog.Nop(), nil)
		progress = progress[:0]
		var err error
		rep, err = Soak(ctx, SoakConfig{
			Duration: d, Interval: time.Second, RTT: 5 * time.Millisecond,
			SessionSteps: 15, NewHooks: sp.Hooks, CacheLimit: 1 << 20, Build: b, Log: zerolog.Nop(),
			Cache:    func() (int64, int64) { s := sp.Stats(); return s.CacheBytes, s.CacheEntries },
			Progress: func(s SoakSample) { progress = append(progress, s) },
		})
		if err != nil {
			t.Fatal(err)
		}
		// A sample sees cached bytes only while a session is attached
		// (each ends with its cache): between sessions the driver JVM
		// starts, which on a loaded machine can take most of a second.
		sawCache := slices.ContainsFunc(rep.Samples, func(s SoakSample) bool { return s.CacheBytes > 0 })
		if rep.Steps >= 10 && rep.Sessions >= 2 && sawCache || d >= 32*time.Second {
			break
		}
		t.Logf("%d steps in %d sessions in %v: again for %v", rep.Steps, rep.Sessions, d, 2*d)
	}
	// One sample at the start, one a second, one at the end; a loaded
	// machine may miss a tick, or finish its last step late.
	n := len(rep.Samples)
	if n == 0 {
		t.Fatal("no samples")
	}
	lo, hi := int(d/time.Second), int(rep.Samples[n-1].ElapsedS)+2
	if n < lo || n > hi || len(progress) != n {
		t.Fatalf("%d samples (%d reported) in %v (the last at %.1f s), want %d to %d", n, len(progress), d, rep.Samples[n-1].ElapsedS, lo, hi)
	}
	var cached bool
	for i, s := range rep.Samples {
		if s.RSSBytes <= 0 || s.Goroutines <= 0 {
			t.Errorf("sample %d: RSS %d, %d goroutines", i, s.RSSBytes, s.Goroutines)
		}
		if i > 0 && (s.ElapsedS < rep.Samples[i-1].ElapsedS || s.Steps < rep.Samples[i-1].Steps) {
			t.Errorf("sample %d goes backwards: %+v after %+v", i, s, rep.Samples[i-1])
		}
		cached = cached || s.CacheBytes > 0
	}
	if !cached {
		t.Error("no sample saw cached bytes")
	}
	if rep.Steps < 10 || rep.Sessions < 2 || rep.MaxRSSBytes <= 0 {
		t.Errorf("%d steps in %d sessions, max RSS %d: want several sessions of steps", rep.Steps, rep.Sessions, rep.MaxRSSBytes)
	}
	var table, js, svg bytes.Buffer
	if err := rep.WriteTable(&table); err != nil || !strings.Contains(table.String(), "max RSS") {
		t.Errorf("table (%v):\n%s", err, table.String())
	}
	var back SoakReport
	if err := rep.WriteJSON(&js); err != nil || json.Unmarshal(js.Bytes(), &back) != nil || len(back.Samples) != len(rep.Samples) {
		t.Errorf("JSON (%v) does not round-trip:\n%s", err, js.String())
	}
	if err := rep.WriteSVG(&svg); err != nil || strings.Count(svg.String(), "<polyline") != 5 {
		t.Errorf("chart (%v) lacks its 5 series", err)
	}
}

// TestSoakReportBound: a soak whose largest RSS went over its bound says
// so (OverBound, and the table's closing line); one within it, or without
// a bound, does not.
func TestSoakReportBound(t *testing.T) {
	for _, tc := range []struct {
		bound, max int64
		over       bool
		line       string
	}{
		{0, 90 << 20, false, ""},
		{67 << 20, 60 << 20, false, "max RSS within the bound of 67.0 MiB"},
		{67 << 20, 81 << 20, true, "max RSS OVER the bound of 67.0 MiB"},
	} {
		r := &SoakReport{RSSBound: tc.bound, MaxRSSBytes: tc.max, Samples: []SoakSample{{RSSBytes: tc.max}}}
		if r.OverBound() != tc.over {
			t.Errorf("bound %d, max %d: over %v, want %v", tc.bound, tc.max, r.OverBound(), tc.over)
		}
		var b strings.Builder
		if err := r.WriteTable(&b); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(b.String(), "the bound of"); got != (tc.line != "") || tc.line != "" && !strings.Contains(b.String(), tc.line) {
			t.Errorf("bound %d, max %d: table\n%s\nwant the line %q", tc.bound, tc.max, b.String(), tc.line)
		}
	}
}
