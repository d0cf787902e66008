package push

import (
	"bytes"
	"context"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/bench/link"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/internal/journaltest"
	"github.com/jdwpaccel/jdwpaccel/internal/stat"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/journal"
	"github.com/jdwpaccel/jdwpaccel/keyable"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/speculator"
	"github.com/rs/zerolog"
)

// serve runs a relay server on a loopback port until the test ends and
// returns its address; ended is signalled when a session ends.
func serve(t *testing.T, cfg relay.Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Logger.GetLevel() == zerolog.TraceLevel {
		cfg.Logger = zerolog.Nop()
	}
	srv := relay.NewServer(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("relay: %v", err)
		}
	})
	return ln.Addr().String()
}

// sessionEnds is an observer that signals each session's end.
type sessionEnds chan struct{}

func (sessionEnds) Observe(*relay.Session, *relay.Frame) {}
func (sessionEnds) SessionStart(*relay.Session)          {}
func (e sessionEnds) SessionEnd(*relay.Session, error)   { e <- struct{}{} }

// splitRun is one driver run through both ends.
type splitRun struct {
	res            *javavm.DriverResult
	near, far      *speculator.Speculator
	counters       *Counters
	journal        []journal.Record
	bytesPerStop   float64
	medianRTs      float64
	medianReadRTs  float64 // medianRTs without the step requests' round trips
	steadyMisses   []int   // per steady step, the cacheable reads the near end forwarded
	steadyCommands int     // cacheable reads of the steady steps
}

// runSplit starts a fresh VM of debuggee, a far end next to it, a link of
// rtt between the far end and a near end (with a journal), and runs the
// JDI driver against the near end.
func runSplit(t *testing.T, ctx context.Context, b *javavm.Build, rtt time.Duration, opts javavm.DriverOptions, cfg Config) *splitRun {
	t.Helper()
	vm, err := javavm.Start(ctx, b, opts.Debuggee, javavm.VMOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Stop()
	run := &splitRun{
		far:      speculator.New(speculator.Config{}, zerolog.Nop(), nil),
		near:     speculator.New(speculator.Config{WriteBehind: true}, zerolog.Nop(), nil), // as the proxy's
		counters: new(Counters),
	}
	cfg.Counters = run.counters
	farEnded, nearEnded := make(sessionEnds, 1), make(sessionEnds, 1)
	farAddr := serve(t, relay.Config{DialVM: relay.DialTCP(vm.Addr()),
		NewHooks: relay.ChainHooks(FarHooks(run.far, cfg), func(*relay.Session) relay.Hooks {
			return relay.Hooks{Observers: []relay.Observer{farEnded}}
		})})
	lk, err := link.Listen(ctx, "127.0.0.1:0", farAddr, link.Config{RTT: rtt, Seed: 1, Bandwidth: envInt("PUSH_BANDWIDTH")}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Close()
	var buf jdwptest.Buffer
	j, err := journaltest.New(t, &buf, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	nearAddr := serve(t, relay.Config{DialVM: relay.DialTCP(lk.Addr().String()),
		NewHooks: relay.ChainHooks(NearHooks(run.near, cfg), func(*relay.Session) relay.Hooks {
			return relay.Hooks{Observers: []relay.Observer{j, nearEnded}}
		})})
	opts.Addr = nearAddr
	run.res, err = javavm.RunDriver(ctx, b, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []sessionEnds{nearEnded, farEnded} {
		select {
		case <-e:
		case <-ctx.Done():
			t.Fatal("a session did not end after the driver exited")
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if p := os.Getenv("PUSH_JOURNAL"); p != "" {
		os.WriteFile(p, buf.Bytes(), 0o600) //nolint:errcheck // debugging aid
	}
	run.journal, err = journal.Read(bytesReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	rep := journal.ComputeSteps(run.journal)
	if len(rep.Sessions) != 1 {
		t.Fatalf("%d sessions in the near end's journal", len(rep.Sessions))
	}
	run.medianRTs, run.medianReadRTs = steadyMedian(rep.Sessions[0], opts.Warmup)
	run.steadyMisses, run.steadyCommands = steadyForwardedReads(run.journal, opts.Warmup)
	if st := run.counters.Stats(); st.Stops > 0 {
		run.bytesPerStop = float64(st.BytesSent) / float64(st.Stops)
	}
	return run
}

// steadyMedian is the median of the serial round trips of the complete
// steps after the first warmup ones, and the same without the links of
// step requests (EventRequest.Set and Clear, which write-behind answers at
// once).
func steadyMedian(ss journal.SessionSteps, warmup int) (all, reads float64) {
	var rts, rrts []float64
	for _, st := range ss.Steps {
		if st.Index <= warmup || !st.Complete || st.Stop == "" {
			continue
		}
		n := 0
		for _, l := range st.Path {
			if !strings.HasPrefix(l.Name, "EventRequest.") {
				n++
			}
		}
		rts = append(rts, float64(st.RoundTrips))
		rrts = append(rrts, float64(n))
	}
	if len(rts) == 0 {
		return -1, -1 // no complete step: no figure
	}
	return stat.Median(rts), stat.Median(rrts)
}

// steadyForwardedReads counts, per step after the first warmup ones, the
// debugger's cacheable reads the near end forwarded, and all its cacheable
// reads.
func steadyForwardedReads(recs []journal.Record, warmup int) (forwarded []int, all int) {
	step := 0
	for i := range recs {
		r := &recs[i]
		if !r.IsCommandFromDebugger() {
			continue
		}
		if isResume(r) {
			step++
			if step > warmup {
				forwarded = append(forwarded, 0)
			}
			continue
		}
		if step <= warmup || !cacheableName(r) {
			continue
		}
		all++
		if r.Served == journal.ServedForwarded {
			forwarded[len(forwarded)-1]++
		}
	}
	return forwarded, all
}

// directRun runs the driver straight to a fresh VM behind the link.
func directRun(t *testing.T, ctx context.Context, b *javavm.Build, rtt time.Duration, opts javavm.DriverOptions) *javavm.DriverResult {
	t.Helper()
	vm, err := javavm.Start(ctx, b, opts.Debuggee, javavm.VMOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Stop()
	lk, err := link.Listen(ctx, "127.0.0.1:0", vm.Addr(), link.Config{RTT: rtt, Seed: 1, Bandwidth: envInt("PUSH_BANDWIDTH")}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Close()
	opts.Addr = lk.Addr().String()
	res, err := javavm.RunDriver(ctx, b, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// envInt is the integer in environment variable name, or 0.
func envInt(name string) int64 {
	n, _ := strconv.ParseInt(os.Getenv(name), 10, 64)
	return n
}

func envDuration(name string, def time.Duration) time.Duration {
	if v := os.Getenv(name); v != "" {
		if ms, err := strconv.Atoi(v); err == nil {
			return time.Duration(ms) * time.Millisecond
		}
	}
	return def
}

// TestSplitRealVM steps a real JVM with an IntelliJ-like JDI client through
// both ends, with a link between them, and checks that it saw what a
// direct client sees at every stop, that at steady steps the near end
// answered every read from pushed replies, and that a step then costs
// about one round trip. PUSH_RTT_MS sets the link's RTT (20 ms by
// default), PUSH_BANDWIDTH its bandwidth in bytes per second (none by
// default).
func TestSplitRealVM(t *testing.T) {
	if testing.Short() {
		t.Skip("starts JVMs")
	}
	b := jdwptest.JavaBuild(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	rtt := envDuration("PUSH_RTT_MS", 20*time.Millisecond)
	opts := javavm.DriverOptions{Debuggee: javavm.Deep, Profile: javavm.ProfileIdeaLike, Steps: 10, Warmup: 3}
	direct := directRun(t, ctx, b, rtt, opts)
	split := runSplit(t, ctx, b, rtt, opts, Config{})
	if !slices.Equal(direct.Digests(), split.res.Digests()) {
		t.Fatalf("the split run saw other values than the direct run:\n direct %v\n split  %v", direct.Digests(), split.res.Digests())
	}
	st := split.counters.Stats()
	t.Logf("rtt %v: direct median step %v, split %v (%.1fx); median serial round trips per steady step %g, %g without step requests; "+
		"forwarded cacheable reads per steady step %v of %d; %.0f bundle bytes per stop (%d stops, %d bundles, %d records, %d raw bytes); near: %+v",
		rtt, jdwptest.MedianStep(direct), jdwptest.MedianStep(split.res), float64(jdwptest.MedianStep(direct))/float64(jdwptest.MedianStep(split.res)),
		split.medianRTs, split.medianReadRTs, split.steadyMisses, split.steadyCommands,
		split.bytesPerStop, st.Stops, st.Bundles, st.Records, st.RawBytes, st)
	if st.BundlesBad != 0 || st.Stored == 0 {
		t.Errorf("bundles: %+v", st)
	}
	if js := journal.ComputeStats(split.journal); js.PushBundles != int(st.BundlesReceived) ||
		js.PushedRecords != int(st.Records) || js.PushedBytes != int(st.BytesSent) || js.PushUsage != int(st.UsageReports) {
		t.Errorf("the near end's journal counts %d bundles, %d records, %d bytes, %d usage reports; the ends counted %+v",
			js.PushBundles, js.PushedRecords, js.PushedBytes, js.PushUsage, st)
	}
	if split.steadyCommands == 0 {
		t.Fatal("no steady reads in the near end's journal")
	}
	// Structural, not timing: a read the near end forwards costs a round
	// trip of its own. A step may lose its bundle (its stop event came
	// before the resume's reply, so the far end's speculator did not take
	// it for a stop); most must not.
	misses := make([]float64, len(split.steadyMisses))
	for i, n := range split.steadyMisses {
		misses[i] = float64(n)
	}
	if m := stat.Median(misses); len(misses) == 0 || m != 0 {
		t.Errorf("the near end forwarded a median %g cacheable reads per steady step (%v), want 0", m, split.steadyMisses)
	}
	if split.medianReadRTs > 1.3 {
		t.Errorf("median %g serial round trips per steady step besides step requests, want at most 1.3", split.medianReadRTs)
	}
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

// isResume reports whether a journal command resumes the VM or a thread.
func isResume(r *journal.Record) bool {
	c := jdwp.Cmd{Set: jdwp.CommandSet(r.Set), Cmd: r.Cmd}
	return c == jdwp.CmdVirtualMachineResume || c == jdwp.CmdThreadReferenceResume
}

// cacheableName reports whether a journal command is one the cache can
// answer.
func cacheableName(r *journal.Record) bool {
	_, ok := keyable.Lookup(jdwp.Cmd{Set: jdwp.CommandSet(r.Set), Cmd: r.Cmd})
	return ok
}
