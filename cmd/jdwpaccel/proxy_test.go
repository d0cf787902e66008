package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/internal/jdbtest"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
)

// startProxy runs "jdwpaccel proxy" in-process with extra args and returns
// the address it listens on (read from its JSON log) and its log so far.
func startProxy(t *testing.T, vmAddr string, extra ...string) (addr string, logs *jdwptest.Buffer) {
	t.Helper()
	addr, logs, stop := startProxyStop(t, vmAddr, extra...)
	t.Cleanup(stop)
	return addr, logs
}

// startProxyStop is startProxy whose caller stops the proxy (stop waits for
// it to exit, and may be called more than once): its journals are complete
// once stop returns.
func startProxyStop(t *testing.T, vmAddr string, extra ...string) (addr string, logs *jdwptest.Buffer, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	logs = &jdwptest.Buffer{}
	args := append([]string{"proxy", "--vm", vmAddr, "--listen", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--log-format", "json"}, extra...)
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, args, &env{stdout: io.Discard, stderr: pw})
		pw.Close()
	}()
	stop = sync.OnceFunc(func() {
		cancel()
		if code := <-done; code != exitOK {
			t.Errorf("proxy exited %d after SIGTERM-like cancel; log:\n%s", code, logs)
		}
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			logs.Write(append(sc.Bytes(), '\n'))
			var rec map[string]any
			if json.Unmarshal(sc.Bytes(), &rec) == nil {
				if l, ok := rec["listen"].(string); ok && rec["message"] == "proxy listening; attach the debugger here" {
					found <- l
				}
			}
		}
	}()
	select {
	case addr = <-found:
	case <-time.After(10 * time.Second):
		stop()
		t.Fatalf("proxy did not log its listen address; log:\n%s", logs)
	}
	return addr, logs, stop
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestRealJDB drives the real jdb against OpenJDK directly and through
// "jdwpaccel proxy": the transcripts must be identical.
func TestRealJDB(t *testing.T) {
	b := jdwptest.JavaBuild(t)
	script := jdbtest.TranscriptScript(t)
	direct := jdbtest.Direct(testCtx(t), t, b, script)
	addr, logs := startProxy(t, jdwptest.StartJava(t, b, javavm.Transcript).Addr())
	proxied, err := jdbtest.Run(testCtx(t), b, addr, script)
	if err != nil {
		t.Fatalf("%v\nproxy log:\n%s", err, logs)
	}
	jdbtest.Same(t, direct, proxied, "the proxy")
}

// TestRealJDI runs our JDI program (breakpoint, steps, locals, fields,
// strings, arrays) directly and through the proxy: every stop's dump must
// be identical.
func TestRealJDI(t *testing.T) {
	b := jdwptest.JavaBuild(t)
	for _, w := range []struct{ debuggee, profile string }{
		{javavm.Transcript, javavm.ProfileTranscript},
		{javavm.Deep, javavm.ProfileIdeaLike},
	} {
		t.Run(w.debuggee+"/"+w.profile, func(t *testing.T) {
			opts := javavm.DriverOptions{Profile: w.profile, Debuggee: w.debuggee, Steps: 4, Warmup: 1, Dump: true}
			opts.Addr = jdwptest.StartJava(t, b, w.debuggee).Addr()
			direct, err := javavm.RunDriver(testCtx(t), b, opts)
			if err != nil {
				t.Fatal(err)
			}
			var logs *jdwptest.Buffer
			opts.Addr, logs = startProxy(t, jdwptest.StartJava(t, b, w.debuggee).Addr())
			proxied, err := javavm.RunDriver(testCtx(t), b, opts)
			if err != nil {
				t.Fatalf("%v\nproxy log:\n%s", err, logs)
			}
			if len(direct.Stops) != len(proxied.Stops) || len(direct.Stops) == 0 {
				t.Fatalf("direct saw %d stops, proxied %d", len(direct.Stops), len(proxied.Stops))
			}
			for i := range direct.Stops {
				if d, p := direct.Stops[i], proxied.Stops[i]; d.Digest != p.Digest || d.Text != p.Text {
					t.Fatalf("stop %d differs:\n--- direct\n%s\n--- proxied\n%s", i, d.Text, p.Text)
				}
			}
		})
	}
}

// TestDemo runs the README's main command, shortened: every side (direct,
// through jdwpaccel, split mode) must run and the digest check must pass.
func TestDemo(t *testing.T) {
	jdwptest.JavaBuild(t)
	var out, errOut jdwptest.Buffer
	code := run(testCtx(t), []string{"demo", "--rtt", "5ms", "--steps", "2"}, &env{stdout: &out, stderr: &errOut})
	if code != exitOK {
		t.Fatalf("demo exited %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	for _, want := range []string{"live monitor", "speedup per step:", "split mode, speedup per step:", "digest check: OK", "Remote JVM Debug"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
}
