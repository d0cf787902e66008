package speculator

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/internal/jdbtest"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
)

// TestWriteBehindRealVM steps real JDI through the proxy with write-behind
// on, behind a 6 ms link, against a real JVM: every stop must show what a
// direct session shows, commands must have been written behind, and the
// VM must have confirmed every one (a failure would have ended the
// session and the driver with it).
func TestWriteBehindRealVM(t *testing.T) {
	if testing.Short() {
		t.Skip("real JVM")
	}
	b := jdwptest.JavaBuild(t)
	cases := []struct {
		name string
		opts javavm.DriverOptions
	}{
		{"deep-idea-5bp", javavm.DriverOptions{Debuggee: javavm.Deep, Profile: javavm.ProfileIdeaLike, Steps: 8, Breakpoints: 5}},
		{"deep-vscode", javavm.DriverOptions{Debuggee: javavm.Deep, Profile: javavm.ProfileVSCodeLike, Steps: 6}},
		{"newclasses-idea-into", javavm.DriverOptions{Debuggee: javavm.NewClasses, Profile: javavm.ProfileIdeaLike, Steps: 6}},
		{"hotswap-idea", javavm.DriverOptions{Debuggee: javavm.HotSwap, Profile: javavm.ProfileIdeaLike, Steps: 8}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.opts.Warmup = 1
			tc.opts.Dump = true
			direct, _, err := runDriver(t, b, tc.opts, -1, Config{})
			if err != nil {
				t.Fatal(err)
			}
			prox, sp, err := runDriver(t, b, tc.opts, 6*time.Millisecond, Config{WriteBehind: true})
			if err != nil {
				t.Fatal(err)
			}
			st := sp.Stats()
			t.Logf("written behind %d, failures %d; hits %d belays %d", st.WrittenBehind, st.WriteBehindFailures, st.Hits, st.Belays)
			if len(direct.Stops) != len(prox.Stops) {
				t.Fatalf("direct %d stops, proxied %d", len(direct.Stops), len(prox.Stops))
			}
			for i := range direct.Stops {
				if direct.Stops[i].Digest != prox.Stops[i].Digest {
					t.Errorf("stop %d: digest differs:\n%s", i, lineDiff(direct.Stops[i].Text, prox.Stops[i].Text))
				}
			}
			if st.WriteBehindFailures != 0 {
				t.Errorf("%d written-behind commands failed at the VM", st.WriteBehindFailures)
			}
			// Each step from the third on: Clear, Set and Resume.
			if min := int64(3 * (tc.opts.Steps - 3)); st.WrittenBehind < min {
				t.Errorf("written behind %d, want at least %d", st.WrittenBehind, min)
			}
		})
	}
}

// TestWriteBehindRealJDB steps the real jdb through a loop, directly and
// through the proxy with write-behind on: the transcripts must be
// identical, and jdb's step requests, their clears and its resumes must
// have been written behind.
func TestWriteBehindRealJDB(t *testing.T) {
	if testing.Short() {
		t.Skip("real JVM")
	}
	b := jdwptest.JavaBuild(t)
	line, err := javavm.BreakpointLine(javavm.Transcript)
	if err != nil {
		t.Fatal(err)
	}
	script := []string{fmt.Sprintf("stop at Transcript:%d", line), "run"}
	for i := 0; i < 12; i++ {
		script = append(script, "next")
		if i%4 == 3 {
			script = append(script, "locals")
		}
	}
	script = append(script, "cont", "where", "clear", "exit")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	direct, err := jdbtest.Run(ctx, b, jdwptest.StartJava(t, b, javavm.Transcript).Addr(), script)
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, jdwptest.StartJava(t, b, javavm.Transcript).Addr(), 2*time.Millisecond, Config{WriteBehind: true})
	proxied, err := jdbtest.Run(ctx, b, p.addr, script)
	if err != nil {
		t.Fatal(err)
	}
	if direct != proxied {
		t.Fatalf("jdb transcript through the proxy differs:\n--- direct\n%s\n--- proxied\n%s", direct, proxied)
	}
	if n := strings.Count(proxied, "Step completed:"); n < 10 {
		t.Errorf("%d steps completed, want at least 10:\n%s", n, proxied)
	}
	st := p.sp.Stats()
	t.Logf("written behind %d, failures %d", st.WrittenBehind, st.WriteBehindFailures)
	if st.WrittenBehind < 20 || st.WriteBehindFailures != 0 {
		t.Errorf("written behind %d (want at least 20), failures %d", st.WrittenBehind, st.WriteBehindFailures)
	}
}

// TestWriteBehindDeadThreadRealVM: plain JDI steps a short-lived thread,
// lets it end, and at the main thread's next stop enables a step request
// on the ended thread. Directly the VM refuses it (JDI throws
// IllegalThreadStateException) and the session goes on; through the
// proxy with write-behind on, the debugger must see the same, not an "OK"
// the VM then contradicts (which ends the session).
func TestWriteBehindDeadThreadRealVM(t *testing.T) {
	if testing.Short() {
		t.Skip("real JVM")
	}
	jdwptest.JavaBuild(t) // skips without a JDK (fails under CI=true)
	dir := t.TempDir()
	src, err := filepath.Glob("testdata/deadstep/*.java")
	if err != nil || len(src) != 2 {
		t.Fatalf("sources: %v %v", src, err)
	}
	if out, err := exec.Command("javac", append([]string{"-g", "-d", dir}, src...)...).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	data, err := os.ReadFile("testdata/deadstep/DeadStep.java")
	if err != nil {
		t.Fatal(err)
	}
	var shortLine, mainLine int
	for n, l := range strings.Split(string(data), "\n") {
		switch {
		case strings.Contains(l, "// @bp-short"):
			shortLine = n + 1
		case strings.Contains(l, "// @bp-main"):
			mainLine = n + 1
		}
	}
	run := func(t *testing.T, rtt time.Duration) (string, *Speculator) {
		vm, err := javavm.Start(context.Background(), &javavm.Build{Classes: dir}, "DeadStep", javavm.VMOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer vm.Stop()
		addr := vm.Addr()
		var sp *Speculator
		if rtt >= 0 {
			p := startProxy(t, addr, rtt, Config{WriteBehind: true})
			addr, sp = p.addr, p.sp
		}
		_, port, _ := net.SplitHostPort(addr)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, "java", "-cp", dir, "DeadStepDbg", port, fmt.Sprint(shortLine), fmt.Sprint(mainLine)).CombinedOutput()
		if err != nil {
			t.Fatalf("debugger: %v\n%s", err, out)
		}
		return string(out), sp
	}
	direct, _ := run(t, -1)
	if !strings.Contains(direct, "step on the ended thread: java.lang.IllegalThreadStateException\n") || !strings.HasSuffix(direct, "OK\n") {
		t.Fatalf("directly, the VM did not refuse the step on the ended thread, or the session did not go on:\n%s", direct)
	}
	proxied, sp := run(t, 2*time.Millisecond)
	if proxied != direct {
		t.Errorf("through the proxy:\n%s\ndirectly:\n%s", proxied, direct)
	}
	st := sp.Stats()
	t.Logf("written behind %d, failures %d", st.WrittenBehind, st.WriteBehindFailures)
	if st.WrittenBehind == 0 || st.WriteBehindFailures != 0 {
		t.Errorf("written behind %d (want some), failures %d (want none)", st.WrittenBehind, st.WriteBehindFailures)
	}
}
