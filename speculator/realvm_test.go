package speculator

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/bench/link"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/journal"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/rs/zerolog"
)

// proxy is a relay with the speculator in front of a VM, optionally behind
// an emulated slow link.
type proxy struct {
	addr string
	sp   *Speculator
}

func startProxy(t testing.TB, vmAddr string, rtt time.Duration, cfg Config) *proxy {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	target := vmAddr
	var lk *link.Link
	if rtt > 0 {
		var err error
		lk, err = link.Listen(ctx, "127.0.0.1:0", vmAddr, link.Config{RTT: rtt}, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		target = lk.Addr().String()
	}
	log := zerolog.Nop()
	if os.Getenv("SPEC_DEBUG") != "" {
		log = zerolog.New(&debugLog).Level(zerolog.TraceLevel)
	}
	sp := New(cfg, log, nil)
	// SPEC_JOURNAL=path.jsonl journals every packet through the proxy
	// (served from cache, belayed, speculative), to read a failure with.
	hooks := sp.Hooks
	var jr *journal.Journal
	if path := os.Getenv("SPEC_JOURNAL"); path != "" {
		var err error
		if jr, err = journal.Open(journal.Options{Path: path, Logger: zerolog.Nop()}); err != nil {
			t.Fatal(err)
		}
		hooks = relay.ChainHooks(sp.Hooks, func(*relay.Session) relay.Hooks { return relay.Hooks{Observers: []relay.Observer{jr}} })
	}
	srv := relay.NewServer(relay.Config{DialVM: relay.DialTCP(target), Logger: log, NewHooks: hooks})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		srv.Serve(ctx, ln)
		close(done)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		if jr != nil {
			jr.Close()
		}
		if lk != nil {
			lk.Close()
		}
	})
	return &proxy{addr: ln.Addr().String(), sp: sp}
}

// debugLog collects the proxy's log when SPEC_DEBUG is set; it is written
// to /tmp/spec_fail.log when a proxied driver run fails.
var debugLog jdwptest.Buffer

// runDriver starts a fresh debuggee and runs the driver against it, direct
// (rtt < 0) or through the speculating proxy with a link of the given RTT.
func runDriver(t testing.TB, b *javavm.Build, opts javavm.DriverOptions, rtt time.Duration, cfg Config) (*javavm.DriverResult, *Speculator, error) {
	vm, err := javavm.Start(context.Background(), b, opts.Debuggee, javavm.VMOptions{})
	if err != nil {
		return nil, nil, err
	}
	defer vm.Stop()
	opts.Addr = vm.Addr()
	var sp *Speculator
	if rtt >= 0 {
		p := startProxy(t, vm.Addr(), rtt, cfg)
		opts.Addr, sp = p.addr, p.sp
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	res, err := javavm.RunDriver(ctx, b, opts)
	if err != nil && os.Getenv("SPEC_DEBUG") != "" {
		os.WriteFile("/tmp/spec_fail.log", debugLog.Bytes(), 0o644)
	}
	if err != nil {
		return nil, sp, fmt.Errorf("%w\nVM output:\n%s", err, vm.Output())
	}
	return res, sp, nil
}

// TestDigestsEqualDirect runs every workload directly and through the
// speculating proxy behind a 6 ms link (speculation active) and requires
// identical per-stop digests.
func TestDigestsEqualDirect(t *testing.T) {
	if testing.Short() {
		t.Skip("real JVM")
	}
	b := jdwptest.JavaBuild(t)
	cases := []struct {
		name string
		opts javavm.DriverOptions
	}{
		{"deep-idea", javavm.DriverOptions{Debuggee: javavm.Deep, Profile: javavm.ProfileIdeaLike, Steps: 8}},
		{"deep-idea-4threads", javavm.DriverOptions{Debuggee: javavm.Deep, Profile: javavm.ProfileIdeaLike, Steps: 6, Threads: 4}},
		{"deep-vscode", javavm.DriverOptions{Debuggee: javavm.Deep, Profile: javavm.ProfileVSCodeLike, Steps: 6}},
		{"shallow-jdb", javavm.DriverOptions{Debuggee: javavm.Shallow, Profile: javavm.ProfileJDBMin, Steps: 6}},
		{"shallow-transcript", javavm.DriverOptions{Debuggee: javavm.Shallow, Profile: javavm.ProfileTranscript, Steps: 6}},
		{"newclasses-idea", javavm.DriverOptions{Debuggee: javavm.NewClasses, Profile: javavm.ProfileIdeaLike, Steps: 6}},
		{"tostring-idea", javavm.DriverOptions{Debuggee: javavm.ToStringWatch, Profile: javavm.ProfileIdeaLike, Steps: 6}},
		{"hotswap-idea", javavm.DriverOptions{Debuggee: javavm.HotSwap, Profile: javavm.ProfileIdeaLike, Steps: 10}},
	}
	var mu sync.Mutex
	var total Stats
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.opts.Warmup = 1
			tc.opts.Dump = true // the texts explain a mismatch
			direct, _, err := runDriver(t, b, tc.opts, -1, Config{})
			if err != nil {
				t.Fatal(err)
			}
			prox, sp, err := runDriver(t, b, tc.opts, 6*time.Millisecond, Config{})
			if err != nil {
				t.Fatal(err)
			}
			st := sp.Stats()
			mu.Lock()
			total.Hits += st.Hits
			total.Belays += st.Belays
			total.SpecSent += st.SpecSent
			total.SpecUsed += st.SpecUsed
			total.SpecWasted += st.SpecWasted
			mu.Unlock()
			t.Logf("hits %d misses %d belays %d spec sent %d used %d wasted %d", st.Hits, st.Misses, st.Belays, st.SpecSent, st.SpecUsed, st.SpecWasted)
			if len(direct.Stops) != len(prox.Stops) {
				t.Fatalf("direct %d stops, proxied %d", len(direct.Stops), len(prox.Stops))
			}
			for i := range direct.Stops {
				if direct.Stops[i].Digest != prox.Stops[i].Digest {
					t.Errorf("stop %d: digest differs (direct top %s, proxied top %s):\n%s", i, direct.Stops[i].Top, prox.Stops[i].Top, lineDiff(direct.Stops[i].Text, prox.Stops[i].Text))
				}
			}
			if st.SpecSent == 0 && !strings.Contains(tc.name, "jdb") {
				t.Errorf("no speculation happened")
			}
		})
	}
}

// TestSuspendEventThreadWhileOthersRun stops one thread with
// SUSPEND_EVENT_THREAD breakpoints while other threads keep changing shared
// state; the JDI program in testdata/threadstop checks at every stop that
// the stopped thread's state is current and running state is never stale.
// It runs direct (to validate the checker) and through the speculating
// proxy behind a 6 ms link.
func TestSuspendEventThreadWhileOthersRun(t *testing.T) {
	if testing.Short() {
		t.Skip("real JVM")
	}
	jdwptest.JavaBuild(t) // skips without a JDK (fails under CI=true)
	dir := t.TempDir()
	src, err := filepath.Glob("testdata/threadstop/*.java")
	if err != nil || len(src) != 2 {
		t.Fatalf("sources: %v %v", src, err)
	}
	if out, err := exec.Command("javac", append([]string{"-g", "-d", dir}, src...)...).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	data, err := os.ReadFile("testdata/threadstop/ThreadStop.java")
	if err != nil {
		t.Fatal(err)
	}
	bpLine := 0
	for n, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, "// @bp") {
			bpLine = n + 1
		}
	}
	for _, tc := range []struct {
		name string
		rtt  time.Duration
	}{{"direct", -1}, {"proxied", 6 * time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) {
			vm, err := javavm.Start(context.Background(), &javavm.Build{Classes: dir}, "ThreadStop", javavm.VMOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer vm.Stop()
			addr := vm.Addr()
			var sp *Speculator
			if tc.rtt >= 0 {
				p := startProxy(t, addr, tc.rtt, Config{})
				addr, sp = p.addr, p.sp
			}
			_, port, _ := net.SplitHostPort(addr)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, "java", "-cp", dir, "ThreadDbg", port, strconv.Itoa(bpLine), "12").CombinedOutput()
			if err != nil || !strings.HasPrefix(string(out), "OK") {
				t.Fatalf("debugger: %v\n%s", err, out)
			}
			if sp != nil {
				st := sp.Stats()
				t.Logf("hits %d misses %d belays %d spec sent %d used %d wasted %d", st.Hits, st.Misses, st.Belays, st.SpecSent, st.SpecUsed, st.SpecWasted)
				if st.Hits+st.Belays == 0 {
					t.Error("nothing was served by the proxy: the test does not exercise the cache")
				}
			}
		})
	}
}

// lineDiff lists the lines of two dumps that differ, position by position.
func lineDiff(direct, proxied string) string {
	d, p := strings.Split(direct, "\n"), strings.Split(proxied, "\n")
	var out strings.Builder
	for i := range max(len(d), len(p)) {
		var a, b string
		if i < len(d) {
			a = d[i]
		}
		if i < len(p) {
			b = p[i]
		}
		if a != b {
			fmt.Fprintf(&out, "line %d\n  direct:  %s\n  proxied: %s\n", i, a, b)
		}
	}
	return out.String()
}
