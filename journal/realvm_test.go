package journal

import (
	"bytes"
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/speculator"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// realSession runs the IDE-like JDI driver against a real JVM through a
// relay with the journal, optionally with the toy speculator (whose cache
// and belays are correct for any VM: Version never changes, and a belayed
// Name gets the VM's own answer), and returns the journal and the driver's
// result.
func realSession(t *testing.T, ctx context.Context, b *javavm.Build, spec func(*relay.Session) relay.Interceptor) ([]Record, *javavm.DriverResult) {
	t.Helper()
	vm, err := javavm.Start(ctx, b, javavm.Shallow, javavm.VMOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Stop()
	var buf jdwptest.Buffer
	j, err := New(&buf, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	addr, stop := startProxy(t, vm.Addr(), func(s *relay.Session) relay.Hooks {
		h := relay.Hooks{Observers: []relay.Observer{j, endSignal(ended)}}
		if spec != nil {
			h.Interceptors = []relay.Interceptor{spec(s)}
		}
		return h
	})
	res, err := javavm.RunDriver(ctx, b, javavm.DriverOptions{Addr: addr, Debuggee: javavm.Shallow, Profile: javavm.ProfileIdeaLike, Steps: 3, Warmup: 1})
	if err != nil {
		stop()
		j.Close()
		recs, _ := Read(bytes.NewReader(buf.Bytes()))
		for _, r := range recs[max(0, len(recs)-6):] {
			r.Bytes = nil
			t.Log(r)
		}
		if err := Check(recs).Err(); err != nil {
			t.Log(err)
		}
		if p := os.Getenv("JOURNAL_DUMP"); p != "" {
			os.WriteFile(p, buf.Bytes(), 0o644) //nolint:errcheck // debugging aid
		}
		t.Fatal(err)
	}
	select {
	case <-ended:
	case <-ctx.Done():
		t.Fatal("the session did not end after the driver exited")
	}
	stop()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	return readAll(t, buf.Bytes()), res
}

// commandSequence is the debugger's commands, by number, in order.
func commandSequence(recs []Record) [][2]uint8 {
	var out [][2]uint8
	for i := range recs {
		if recs[i].IsCommandFromDebugger() {
			out = append(out, [2]uint8{recs[i].Set, recs[i].Cmd})
		}
	}
	return out
}

// TestRealVMJournal checks the journal's invariants on real JDI sessions
// against a real JVM, transparent and with speculation, and that the
// debugger's conversation is the same in both (the same commands in the
// same order, and the same things seen at every stop).
func TestRealVMJournal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts JVMs")
	}
	b := jdwptest.JavaBuild(t)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	toy := func(*relay.Session) relay.Interceptor { return newToySpeculator() }
	sp := speculator.New(speculator.Config{MinRTT: -1}, zerolog.Nop(), speculator.NewMetrics(prometheus.NewRegistry()))
	direct, dres := realSession(t, ctx, b, nil)
	proxied, pres := realSession(t, ctx, b, toy)
	real, rres := realSession(t, ctx, b, sp.NewSession)
	for name, recs := range map[string][]Record{"transparent": direct, "toy speculator": proxied, "speculator": real} {
		rep := Check(recs)
		if err := rep.Err(); err != nil {
			t.Errorf("%s session: %v", name, err)
		}
		if rep.Commands < 50 || rep.Commands != rep.Replies || rep.Sessions != 1 {
			t.Errorf("%s session: report %+v, want a real conversation", name, rep)
		}
		if n := count(recs, func(r *Record) bool { return r.Kind == KindEvent && len(r.Events) > 0 && r.Thread != nil }); n == 0 {
			t.Errorf("%s session: no decoded event with a thread", name)
		}
	}
	st := ComputeStats(proxied)
	if st.Synthetic == 0 || st.RoundTripsSaved == 0 {
		t.Errorf("speculating session: %d synthetic commands, %d round trips saved; the toy speculator did nothing", st.Synthetic, st.RoundTripsSaved)
	}
	if ComputeStats(direct).Synthetic != 0 {
		t.Error("transparent session has synthetic traffic")
	}
	if !slices.Equal(dres.Digests(), pres.Digests()) {
		t.Errorf("the debugger saw different stops:\n%v\n%v", dres.Digests(), pres.Digests())
	}
	if d, p := commandSequence(direct), commandSequence(proxied); !slices.Equal(d, p) {
		t.Errorf("the debugger sent %d commands directly and %d through the toy speculator, or in another order", len(d), len(p))
	}
	// The real speculator: same stops seen; its journal is checked above.
	if !slices.Equal(dres.Digests(), rres.Digests()) {
		t.Errorf("the debugger saw different stops through the speculator:\n%v\n%v", dres.Digests(), rres.Digests())
	}
	rst := ComputeStats(real)
	t.Logf("speculator: %d debugger commands, %d hits, %d belays, %d speculative commands", rst.Commands, rst.CacheHits, rst.Belays, rst.Synthetic)
	if d, r := commandSequence(direct), commandSequence(real); !slices.Equal(d, r) {
		t.Logf("note: the debugger's command sequence differs through the speculator (%d against %d commands)", len(d), len(r))
	}
}
