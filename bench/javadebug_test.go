package bench

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench/javadebug"
	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/internal/jdktest"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/speculator"
	"github.com/jdwpaccel/jdwpaccel/staleid"
	"github.com/rs/zerolog"
)

// java-debug decides from the time of one command at attach whether to go
// asynchronous and what its Variables view shows (javadebug.Result). A
// proxy must not change that decision: in a first and a second session
// through the same proxy (one speculator, write-behind on, as the proxy's
// defaults) at 30 ms, java-debug must decide as it does directly, and see
// the same Variables view (ToStringWatch's object has a toString()
// override, which the view offers only when synchronous). Needs a
// java-debug build (javadebug.DirEnv); never in CI.
func TestJavaDebugDecidesAsDirect(t *testing.T) {
	dir := os.Getenv(javadebug.DirEnv)
	if dir == "" {
		t.Skipf("%s not set: no java-debug build (bench/javadebug/build.sh makes one)", javadebug.DirEnv)
	}
	jdktest.RequireJDK(t)
	peer, err := javadebug.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	b, err := javavm.Compile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sp := speculator.New(speculator.Config{WriteBehind: true}, zerolog.Nop(), nil)
	rep, err := Run(ctx, Config{
		RTTs: []time.Duration{30 * time.Millisecond, 30 * time.Millisecond},
		Modes: []Mode{{Name: "direct", Direct: true}, {Name: "speculate", Stats: sp.Stats,
			NewHooks: relay.ChainHooks(staleid.Hooks, sp.Hooks)}},
		Workloads: []Workload{{Debuggee: javavm.ToStringWatch, Profile: javadebug.Profile}},
		Steps:     2, Warmup: 1, Build: b, JavaDebug: peer, Log: zerolog.Nop(),
	})
	if err != nil && !errors.Is(err, ErrDigestMismatch) {
		t.Fatal(err)
	}
	var direct *JavaDebugCell
	session := 0
	for _, c := range rep.Cells {
		if c.JavaDebug == nil {
			t.Fatalf("%s %s: java-debug's decision not reported", c.Workload, c.Mode)
		}
		if c.Mode == "direct" {
			direct = c.JavaDebug
			continue
		}
		session++
		t.Logf("session %d through the proxy: java-debug measured %d ms (async %v); directly %d ms (async %v)",
			session, c.JavaDebug.LatencyMS, c.JavaDebug.Async, direct.LatencyMS, direct.Async)
		if c.JavaDebug.Async != direct.Async {
			t.Errorf("session %d through the proxy: async %v (measured %d ms), directly %v (%d ms)",
				session, c.JavaDebug.Async, c.JavaDebug.LatencyMS, direct.Async, direct.LatencyMS)
		}
		if !c.DigestsMatch {
			t.Errorf("session %d through the proxy: the Variables view differs from a direct session's", session)
		}
	}
}
