package javavm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/jdktest"
)

// testBuild compiles the Java sources once per test process.
func testBuild(t *testing.T) *Build {
	t.Helper()
	jdktest.RequireJDK(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := Compile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// startVM starts a debuggee that is stopped when the test ends.
func startVM(t *testing.T, b *Build, main string) *VM {
	t.Helper()
	vm, err := Start(context.Background(), b, main, VMOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(vm.Stop)
	return vm
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// runFresh starts a fresh debuggee and runs the driver against it.
func runFresh(t *testing.T, b *Build, opts DriverOptions) *DriverResult {
	t.Helper()
	vm := startVM(t, b, opts.Debuggee)
	opts.Addr = vm.Addr()
	res, err := RunDriver(testCtx(t), b, opts)
	if err != nil {
		t.Fatalf("%v\nVM output:\n%s", err, vm.Output())
	}
	if len(res.Stops) != opts.Steps+1 {
		t.Fatalf("got %d stops, want %d", len(res.Stops), opts.Steps+1)
	}
	return res
}

func TestBreakpointLines(t *testing.T) {
	for _, d := range Debuggees {
		n, err := BreakpointLine(d)
		if err != nil || n <= 0 {
			t.Errorf("%s: line %d, %v", d, n, err)
		}
	}
	if _, err := BreakpointLine("Nope"); err == nil {
		t.Error("BreakpointLine(Nope) succeeded")
	}
}

func TestCompileCached(t *testing.T) {
	b := testBuild(t)
	b2, err := Compile(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if b2 != b {
		t.Error("second Compile did not reuse the build")
	}
	// A fresh compile into an empty cache root must land in the same layout.
	t.Setenv(CacheEnv, t.TempDir())
	fresh, err := compile(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	again, err := compile(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if fresh.Dir != again.Dir || fresh.Dir == b.Dir {
		t.Errorf("dirs: fresh %s, again %s, memo %s", fresh.Dir, again.Dir, b.Dir)
	}
}

// TestProfiles runs every profile for a few steps on Deep and Shallow, one
// VM per debuggee (the agent accepts a new debugger after a dispose).
func TestProfiles(t *testing.T) {
	b := testBuild(t)
	for _, deb := range []string{Deep, Shallow} {
		vm := startVM(t, b, deb)
		for i, prof := range []string{ProfileJDBMin, ProfileIdeaLike, ProfileVSCodeLike} {
			if i > 0 {
				// The agent listens again, on a new port, after a dispose.
				if _, err := vm.NextListen(testCtx(t)); err != nil {
					t.Fatal(err)
				}
			}
			res, err := RunDriver(testCtx(t), b, DriverOptions{
				Addr: vm.Addr(), Profile: prof, Debuggee: deb, Steps: 4, Warmup: 1, Dump: true,
			})
			if err != nil {
				t.Fatalf("%s %s: %v\nVM output:\n%s", deb, prof, err, vm.Output())
			}
			if len(res.Stops) != 5 || res.Summary.Measured != 4 {
				t.Fatalf("%s %s: %d stops, summary %+v", deb, prof, len(res.Stops), res.Summary)
			}
			last := res.Stops[len(res.Stops)-1]
			frames := strings.Count(last.Text, "\nframe ")
			threads := strings.Count(last.Text, "thread ")
			t.Logf("%s %s: frames=%d thread-lines=%d median burst %v top %s", deb, prof, frames, threads, res.MedianBurst(), last.Top)
			if !strings.HasPrefix(last.Top, deb+".") {
				t.Errorf("%s %s: top %q", deb, prof, last.Top)
			}
			wantFrames := 1
			if deb == Deep {
				wantFrames = 20 // idea-like and vscode-like (VS Code asks for 20) stop at 20; jdb-min lists all 27
				if prof == ProfileJDBMin {
					wantFrames = 27
				}
			}
			if frames != wantFrames {
				t.Errorf("%s %s: %d frames, want %d", deb, prof, frames, wantFrames)
			}
			switch prof {
			case ProfileIdeaLike, ProfileVSCodeLike:
				want := 6
				if deb == Deep {
					want = 26
				}
				if !strings.Contains(last.Text, fmt.Sprintf("threads %d\n", want)) {
					t.Errorf("%s %s: want %d threads in\n%s", deb, prof, want, last.Text)
				}
				for _, s := range []string{"local i = int ", "local text = \"", "local arr = int[] len=", "local.title = \"local\"", "local.numbers = int[] len=4"} {
					if !strings.Contains(last.Text, s) {
						t.Errorf("%s %s: no %q in\n%s", deb, prof, s, last.Text)
					}
				}
				if deb == Deep && !strings.Contains(last.Text, "this.label = \"deep-root\"") {
					t.Errorf("%s %s: no this fields in\n%s", deb, prof, last.Text)
				}
			case ProfileJDBMin:
				if !strings.HasPrefix(last.Text, "thread main\n") {
					t.Errorf("%s %s: text\n%s", deb, prof, last.Text)
				}
			}
			if prof == ProfileIdeaLike && deb == Deep && !strings.Contains(last.Text, "thread deep-worker-01 SLEEPING\n") {
				t.Errorf("no worker status in\n%s", last.Text)
			}
		}
	}
}

// TestDigestsReproducible runs the same workload on two fresh VMs, the
// second with a 4-thread (async) driver: every stop's digest must match, and
// consecutive stops must differ.
func TestDigestsReproducible(t *testing.T) {
	b := testBuild(t)
	for _, tc := range []struct {
		deb, prof string
	}{{Deep, ProfileIdeaLike}, {Shallow, ProfileTranscript}} {
		opts := DriverOptions{Profile: tc.prof, Debuggee: tc.deb, Steps: 12, Warmup: 2, Dump: true}
		var res [2]*DriverResult
		var wg sync.WaitGroup
		for i := range res {
			wg.Add(1)
			go func() {
				defer wg.Done()
				o := opts
				if i == 1 {
					o.Threads = 4
				}
				res[i] = runFreshNoFatal(t, b, o)
			}()
		}
		wg.Wait()
		if res[0] == nil || res[1] == nil {
			t.FailNow()
		}
		for i := range res[0].Stops {
			a, c := res[0].Stops[i], res[1].Stops[i]
			if a.Digest != c.Digest {
				t.Errorf("%s %s stop %d: digests differ\nrun 1:\n%s\nrun 2:\n%s", tc.deb, tc.prof, i, a.Text, c.Text)
			}
			if i > 0 && a.Digest == res[0].Stops[i-1].Digest {
				t.Errorf("%s %s stop %d: same digest as the stop before", tc.deb, tc.prof, i)
			}
		}
	}
}

// runFreshNoFatal is runFresh for use off the test goroutine.
func runFreshNoFatal(t *testing.T, b *Build, opts DriverOptions) *DriverResult {
	vm, err := Start(context.Background(), b, opts.Debuggee, VMOptions{})
	if err != nil {
		t.Error(err)
		return nil
	}
	defer vm.Stop()
	opts.Addr = vm.Addr()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	res, err := RunDriver(ctx, b, opts)
	if err != nil {
		t.Errorf("%v\nVM output:\n%s", err, vm.Output())
		return nil
	}
	return res
}

func TestHotSwap(t *testing.T) {
	b := testBuild(t)
	const steps = 12
	res := runFresh(t, b, DriverOptions{Profile: ProfileIdeaLike, Debuggee: HotSwap, Steps: steps, Warmup: 1, Dump: true})
	for _, s := range res.Stops {
		redefined := strings.Contains(s.Text, "redefined HotTarget\n")
		if redefined != (s.Index == steps/2) {
			t.Errorf("stop %d: redefined=%v", s.Index, redefined)
		}
		v2 := strings.Contains(s.Text, `local tag = "v2"`)
		switch {
		case s.Index <= steps/2 && v2:
			t.Errorf("stop %d: v2 before the redefinition:\n%s", s.Index, s.Text)
		case s.Index >= steps/2+4 && !v2:
			t.Errorf("stop %d: still v1 after the redefinition:\n%s", s.Index, s.Text)
		}
	}
}

func TestToStringWatch(t *testing.T) {
	b := testBuild(t)
	res := runFresh(t, b, DriverOptions{Profile: ProfileIdeaLike, Debuggee: ToStringWatch, Steps: 8, Warmup: 1, Dump: true})
	seen := map[string]bool{}
	for _, s := range res.Stops {
		i := strings.Index(s.Text, "watch watched.toString() = \"Watched{count=")
		if i < 0 {
			t.Fatalf("stop %d: no toString result in\n%s", s.Index, s.Text)
		}
		line := s.Text[i:]
		line = line[:strings.IndexByte(line, '\n')]
		seen[line] = true
	}
	if len(seen) < 3 {
		t.Errorf("toString results barely change: %v", seen)
	}
	t.Logf("toString results: %v", seen)
}

func TestNewClasses(t *testing.T) {
	b := testBuild(t)
	res := runFresh(t, b, DriverOptions{Profile: ProfileIdeaLike, Debuggee: NewClasses, Steps: 20, Warmup: 1})
	classes := map[string]bool{}
	for _, s := range res.Stops {
		if c, _, ok := strings.Cut(s.Top, ".run:"); ok {
			classes[c] = true
		}
	}
	if len(classes) < 3 {
		t.Errorf("stepping entered only %v", classes)
	}
}

func TestStartStop(t *testing.T) {
	b := testBuild(t)
	ctx, cancel := context.WithCancel(context.Background())
	vm, err := Start(ctx, b, Shallow, VMOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if vm.Port() <= 0 || !strings.Contains(vm.Output(), "Listening for transport") {
		t.Fatalf("port %d, output %q", vm.Port(), vm.Output())
	}
	cancel() // the context kills the JVM
	select {
	case <-vm.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("JVM not reaped after cancel")
	}
	vm.Stop()
	vm.Stop()

	bad, err := Start(context.Background(), b, Shallow, VMOptions{JVMArgs: []string{"-XX:+NoSuchJVMFlag"}})
	if !errors.Is(err, ErrVMExited) {
		if bad != nil {
			bad.Stop()
		}
		t.Fatalf("bad JVM flag: %v, want ErrVMExited", err)
	}
}
