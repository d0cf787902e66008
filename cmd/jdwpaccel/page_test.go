package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/bench/link"
	"github.com/jdwpaccel/jdwpaccel/ddmtap/fakevm"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/web"
	"github.com/rs/zerolog"
)

// slowLink listens on loopback and relays each connection to addr through
// an emulated link of the given RTT; it returns the listen address.
func slowLink(t *testing.T, addr string, rtt time.Duration) string {
	t.Helper()
	l, err := link.Listen(context.Background(), "127.0.0.1:0", addr, link.Config{RTT: rtt}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l.Addr().String()
}

// screenshot takes the page at u the way a user would, with headless
// Chromium's --screenshot, into $JDWPACCEL_SCREENSHOT_DIR/name (a temporary
// directory when unset); it skips without Chromium (fails under CI=true).
func screenshot(t *testing.T, u, name string) string {
	t.Helper()
	bin := chromiumFor(t)
	out, err := takeScreenshot(bin, t.TempDir(), u, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot saved to %s", out)
	return out
}

func chromiumFor(t *testing.T) string {
	t.Helper()
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium on PATH (CI=true requires it)")
	}
	t.Skip("no chromium on PATH")
	return ""
}

// takeScreenshot runs bin --headless --screenshot on u, with a profile in
// tmp; safe from any goroutine.
func takeScreenshot(bin, tmp, u, name string) (string, error) {
	dir := os.Getenv("JDWPACCEL_SCREENSHOT_DIR")
	if dir == "" {
		dir = tmp
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	out := filepath.Join(dir, name)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
		"--hide-scrollbars", "--user-data-dir="+filepath.Join(tmp, "profile-"+name), "--window-size=1280,1300", "--screenshot="+out, u)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s: %v\n%s", bin, err, b)
	}
	return out, nil
}

// TestPagePlainJVM debugs a real OpenJDK VM (which speaks no DDM) with the
// IDE-like JDI driver through the proxy, behind a 10 ms link: the page
// lists the VM, fills its thread table and the stopped thread's stack from
// the debugger's own conversation, counts the steps (and only the steps)
// with where their time went, and offers no heap request.
func TestPagePlainJVM(t *testing.T) {
	b := jdwptest.JavaBuild(t)
	vm := jdwptest.StartJava(t, b, javavm.Deep)
	addr, logs := startProxy(t, slowLink(t, vm.Addr(), 10*time.Millisecond))
	base := monitorURL(t, logs)
	const steps, shotAt = 30, 6
	type seen struct {
		snap web.Snapshot
		shot string
		err  error
	}
	bin, tmp := chromiumFor(t), t.TempDir()
	got := make(chan seen, 1)
	opts := javavm.DriverOptions{Addr: addr, Profile: javavm.ProfileIdeaLike, Debuggee: javavm.Deep, Steps: steps, Warmup: 1}
	opts.OnStop = func(s javavm.Stop) {
		if s.Index != shotAt {
			return
		}
		// The debugger has settled stop shotAt and waits on its output:
		// the step of stop shotAt-1 has ended with this one's resume.
		var sn web.Snapshot
		resp, err := http.Get(base + "/api/v1/snapshot")
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&sn)
			resp.Body.Close()
		}
		shot := ""
		if err == nil {
			shot, err = takeScreenshot(bin, tmp, base+"/", "screenshot-jvm.png")
		}
		got <- seen{sn, shot, err}
	}
	if _, err := javavm.RunDriver(testCtx(t), b, opts); err != nil {
		t.Fatalf("%v\nproxy log:\n%s", err, logs)
	}
	var s seen
	select {
	case s = <-got:
	default:
		t.Fatal("the driver never reported stop", shotAt)
	}
	if s.err != nil {
		t.Fatal(s.err)
	}
	t.Logf("screenshot saved to %s", s.shot)
	sn := s.snap
	if len(sn.VMs) != 1 {
		t.Fatalf("VMs %+v", sn.VMs)
	}
	v := sn.VMs[0]
	if v.DDM || v.Threads != web.ThreadsJDWP || !strings.Contains(v.ThreadsNote, "as of stop") || v.Heap != web.HeapNone || v.Kind != "static" {
		t.Fatalf("VM %+v", v)
	}
	ts := sn.Threads[v.ID]
	i := slices.IndexFunc(ts, func(th web.Thread) bool { return th.Name == "main" })
	t.Logf("main at the stop: %+v; stack %d frames", ts[i], len(sn.Stacks[v.ID].Frames))
	if len(ts) < 20 || i < 0 || !strings.Contains(ts[i].Top, "Deep.") || ts[i].Object == "" || !ts[i].Current {
		t.Fatalf("%d threads, main at %d: %+v", len(ts), i, ts)
	}
	a := sn.Accel
	// Stops 0..shotAt-1 are behind us: shotAt-1 steps since the first
	// resume, plus the breakpoint stop itself; thread starts and class
	// prepares of the JVM are not steps.
	// The driver may already have resumed towards the next stop.
	if a.Steps < shotAt-1 || a.Steps > shotAt+1 || len(a.Breakdowns) != int(a.Steps) || a.LastStep == nil {
		t.Fatalf("steps %d, %d breakdowns, last %+v", a.Steps, len(a.Breakdowns), a.LastStep)
	}
	cmds := 0
	for _, st := range a.Breakdowns {
		if st.Total < 0.010 || st.Event == "" {
			t.Fatalf("a step too short to be a real one (the resume alone takes a 10 ms round trip): %+v", st)
		}
		cmds += st.Hits + st.Misses + st.Belays
	}
	if cmds < 20*len(a.Breakdowns) {
		t.Errorf("%d debugger commands in %d steps: the IDE-like driver asks about 80 per stop", cmds, len(a.Breakdowns))
	}
	if l := a.LastStep; len(l.Commands) < 10 || l.RoundTrips < 1 {
		t.Fatalf("last step %+v", l.StepJSON)
	}
	t.Logf("steps p50 %.1f ms; last: %+v", a.StepLatency.P50*1000, a.LastStep.StepJSON)

	// The debugger has gone: the page keeps what its conversation showed
	// at the last stop, where it read main's whole stack.
	jdwptest.Eventually(t, "the session's end on the page", func() (bool, string) {
		getJSON(t, base+"/api/v1/snapshot", &sn)
		return strings.Contains(sn.VMs[0].ThreadsNote, "ended"), sn.VMs[0].ThreadsNote
	})
	st, ok := sn.Stacks[v.ID]
	if !ok || len(st.Frames) < 10 || st.Frames[0].Class != "Deep" || st.Frames[0].Line <= 0 || st.From != web.ThreadsJDWP {
		t.Fatalf("current stack %+v", st)
	}
	ts = sn.Threads[v.ID]
	i = slices.IndexFunc(ts, func(th web.Thread) bool { return th.Name == "main" })
	var fromAPI web.ThreadStack
	getJSON(t, base+"/api/v1/vms/"+url.PathEscape(v.ID)+"/threads/"+ts[i].Object+"/stack", &fromAPI)
	if len(fromAPI.Frames) != len(st.Frames) || fromAPI.Name != "main" {
		t.Fatalf("stack of main from the API: %+v", fromAPI)
	}
}

// TestPageScanVMs: with --vm scan:, every VM the scan finds is on the page
// (not only DDM VMs), with where to attach to it.
func TestPageScanVMs(t *testing.T) {
	b := jdwptest.JavaBuild(t)
	vm := jdwptest.StartJava(t, b, javavm.Shallow)
	_, logs := startProxy(t, fmt.Sprintf("scan:%d", vm.Port()), "--vm-port-base", "0", "--scan-interval", "100ms")
	base := monitorURL(t, logs)
	key := fmt.Sprintf("local:%d", vm.Pid())
	jdwptest.Eventually(t, "the scanned VM on the page", func() (bool, string) {
		vms, _ := pageVMs(t, base, false)
		v, ok := vms[key]
		return ok && v.Kind == "scan" && v.App == javavm.Shallow && strings.Contains(v.Status, "reaches it") && v.Heap == web.HeapNone, fmt.Sprintf("%+v", vms)
	})
	if out := screenshot(t, base+"/", "screenshot-scan.png"); out == "" {
		t.Fatal("no screenshot")
	}
}

// startFakeVM serves a fake DDM VM of profile p until the test ends.
func startPageFakeVM(t *testing.T, p fakevm.Profile) string {
	t.Helper()
	vm, err := fakevm.Listen("127.0.0.1:0", fakevm.Config{Profile: p, Seed: 3, Threads: 8, ChurnInterval: 300 * time.Millisecond, GCInterval: 0, AppName: "com.example.fake", Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go vm.Serve(ctx) //nolint:errcheck // ends with ctx, closing the listener
	t.Cleanup(cancel)
	return vm.Addr()
}

func requestHeap(t *testing.T, base, vm string) int {
	t.Helper()
	resp, err := http.Post(base+"/api/v1/vms/"+url.PathEscape(vm)+"/heap/request", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestPageFakeDalvik: a Dalvik-era VM gets DDM threads, offers a heap
// request, and draws the heap once asked (the proxy asks only on request:
// a heap picture makes the VM collect garbage).
func TestPageFakeDalvik(t *testing.T) {
	addr := startPageFakeVM(t, fakevm.Dalvik)
	_, logs := startProxy(t, addr, "--ddm=force", "--ddm-poll", "200ms")
	base := monitorURL(t, logs)
	jdwptest.Eventually(t, "DDM threads", func() (bool, string) {
		vms, threads := pageVMs(t, base, true)
		v := vms[addr]
		return v.DDM && v.Threads == web.ThreadsDDM && v.Heap == web.HeapDDM && threads[addr] > 3, fmt.Sprintf("%+v %v", vms, threads)
	})
	if code := requestHeap(t, base, addr); code != http.StatusAccepted {
		t.Fatalf("heap request: %d", code)
	}
	jdwptest.Eventually(t, "a heap map", func() (bool, string) {
		var h web.HeapSummary
		getJSON(t, base+"/api/v1/vms/"+url.PathEscape(addr)+"/heap", &h)
		return h.Generation != 0 && h.Info != nil, fmt.Sprintf("%+v", h)
	})
	screenshot(t, base+"/", "screenshot-dalvik.png")
}

// TestPageFakeART: a modern ART ignores heap requests; once the request
// timed out, the page says so and offers none, agreeing with the
// connection card.
func TestPageFakeART(t *testing.T) {
	addr := startPageFakeVM(t, fakevm.ART)
	_, logs := startProxy(t, addr, "--ddm=force", "--ddm-poll", "200ms", "--ddm-timeout", "300ms")
	base := monitorURL(t, logs)
	jdwptest.Eventually(t, "a DDM VM", func() (bool, string) {
		vms, _ := pageVMs(t, base, false)
		return vms[addr].DDM && vms[addr].Heap == web.HeapDDM, fmt.Sprintf("%+v", vms)
	})
	if code := requestHeap(t, base, addr); code != http.StatusAccepted {
		t.Fatalf("heap request: %d", code)
	}
	jdwptest.Eventually(t, "heap maps unsupported", func() (bool, string) {
		vms, _ := pageVMs(t, base, false)
		v := vms[addr]
		return v.Heap == web.HeapUnsupported && strings.Contains(v.Status, "heap maps not supported"), fmt.Sprintf("%+v", v)
	})
}
