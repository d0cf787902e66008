package javadebug

import (
	"bufio"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/internal/jdktest"
)

// requirePeer returns the java-debug build DirEnv names, or skips: the peer
// is built from another project's source outside this repository, so it is
// never in CI (CI does not set DirEnv).
func requirePeer(t *testing.T) *Peer {
	t.Helper()
	dir := os.Getenv(DirEnv)
	if dir == "" {
		t.Skipf("%s not set: no java-debug build to measure with (bench/javadebug/build.sh makes one)", DirEnv)
	}
	jdktest.RequireJDK(t)
	p, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// java-debug attaches to Deep, stops at its breakpoint and steps, seeing
// the same values at every run: the digests of two sessions on two VMs
// agree, and the stop's text names the locals of Deep.work.
func TestRunDeep(t *testing.T) {
	p := requirePeer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b, err := javavm.Compile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var runs []*Result
	for range 2 {
		vm, err := javavm.Start(ctx, b, javavm.Deep, javavm.VMOptions{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := p.Run(ctx, b, Options{Addr: vm.Addr(), Steps: 3, Warmup: 1, Dump: true})
		vm.Stop()
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, res)
	}
	a, b2 := runs[0], runs[1]
	if len(a.Stops) != 4 || len(b2.Stops) != 4 {
		t.Fatalf("stops %d and %d, want 4", len(a.Stops), len(b2.Stops))
	}
	for i := range a.Stops {
		if a.Stops[i].Digest != b2.Stops[i].Digest {
			t.Errorf("stop %d: digests differ between two sessions:\n%s\n----\n%s", i, a.Stops[i].Text, b2.Stops[i].Text)
		}
	}
	text := a.Stops[0].Text
	for _, want := range []string{"thread Thread [main]", "var local: Payload", "var this.label: String = \"deep-root\"", "frame Deep.work"} {
		if !strings.Contains(text, want) {
			t.Errorf("stop 0 lacks %q:\n%s", want, text)
		}
	}
	for _, r := range runs {
		if r.LatencyMS < 0 {
			t.Errorf("java-debug's log did not give its latency:\n%s", r.Stderr)
		}
		if r.Async != (r.LatencyMS > 15) {
			t.Errorf("measured %d ms, async %v: want async above 15 ms only", r.LatencyMS, r.Async)
		}
	}
}

// readMessage takes back what client.send writes.
func TestReadMessageRoundTrip(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c := newClient(w)
	if _, err := c.send("threads", map[string]any{"x": 1}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	m, err := readMessage(bufio.NewReader(r))
	if err != nil {
		t.Fatal(err)
	}
	if m.Type != "request" || m.Command != "threads" || m.Seq != 1 {
		t.Fatalf("got %+v", m)
	}
}

func FuzzReadMessage(f *testing.F) {
	f.Add([]byte("Content-Length: 2\r\n\r\n{}"))
	f.Add([]byte("Content-Length: 40\r\n\r\n{\"type\":\"event\",\"event\":\"stopped\"}    "))
	f.Add([]byte("Content-Length: -1\r\n\r\n"))
	f.Add([]byte("X\r\n\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		br := bufio.NewReader(strings.NewReader(string(data)))
		for range 4 {
			if _, err := readMessage(br); err != nil {
				return
			}
		}
	})
}
