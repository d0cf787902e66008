package share_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/internal/jdbtest"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/share"
	"github.com/jdwpaccel/jdwpaccel/speculator"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// sharedProxy runs, until the test ends, a relay server with the
// speculator (as "jdwpaccel proxy" has it) to vmAddr behind a shared
// listener, and returns its front, the address clients attach at, and the
// address where every client is an observer. hooks, when not nil, are the
// relay session's other hooks.
func sharedProxy(t testing.TB, vmAddr string, hooks func(*relay.Session) relay.Hooks) (front *share.Front, addr, roAddr string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ro, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	spec := speculator.New(speculator.Config{WriteBehind: true}, zerolog.Nop(), speculator.NewMetrics(prometheus.NewRegistry()))
	srv := relay.NewServer(relay.Config{DialVM: relay.DialTCP(vmAddr), NewHooks: relay.ChainHooks(spec.Hooks, hooks), Logger: zerolog.Nop()})
	front = share.NewFront(vmAddr, share.Config{Logger: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- share.Serve(ctx, srv, front, ln, ro, 0) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return front, ln.Addr().String(), ro.Addr().String()
}

// tracer is the JDI Tracer (bench/javavm/java/Tracer.java) attached to a
// VM, with its output so far.
type tracer struct {
	out   *jdwptest.Buffer
	stdin io.WriteCloser
	done  chan error
}

func startTracer(t *testing.T, b *javavm.Build, addr string, line int, quitAfterProbe bool) *tracer {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "java", "-XX:+UseSerialGC", "-Xlog:all=warning:stderr", "-cp", b.Classes, "Tracer",
		"--host", host, "--port", port, "--bp-class", javavm.Shared, "--bp-line", strconv.Itoa(line),
		"--quit-after-probe", strconv.FormatBool(quitAfterProbe))
	tr := &tracer{out: &jdwptest.Buffer{}, done: make(chan error, 1)}
	cmd.Stdout = tr.out
	cmd.Stderr = tr.out
	var err error
	if tr.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { tr.done <- cmd.Wait() }()
	t.Cleanup(func() {
		cancel()
		<-tr.done
	})
	return tr
}

func (tr *tracer) lines() []string { return strings.Split(tr.out.String(), "\n") }

// await waits until the tracer printed a line equal to want.
func (tr *tracer) await(t *testing.T, want string) {
	t.Helper()
	jdwptest.Await(t, "the tracer's "+strconv.Quote(want), tr.out.Changed, func() (bool, string) {
		for _, l := range tr.lines() {
			if l == want {
				return true, ""
			}
		}
		return false, tr.out.String()
	})
}

var workerLine = regexp.MustCompile(`^(start|death) worker-(\d+)$`)

// workers returns, per worker number, which of its start and death the
// tracer saw (bit 1: start, bit 2: death).
func (tr *tracer) workers() map[int]int {
	seen := map[int]int{}
	for _, l := range tr.lines() {
		if m := workerLine.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[2])
			if m[1] == "start" {
				seen[n] |= 1
			} else {
				seen[n] |= 2
			}
		}
	}
	return seen
}

// deaths is how many worker deaths the tracer saw.
func (tr *tracer) deaths() int {
	n := 0
	for _, s := range tr.workers() {
		if s&2 != 0 {
			n++
		}
	}
	return n
}

// everyWorker fails t unless the tracer saw the start and the death of
// every worker from the first one it saw to the last (the debuggee
// starts them one after another, so a gap is an event lost).
func (tr *tracer) everyWorker(t *testing.T, name string, atLeast int) {
	t.Helper()
	seen := tr.workers()
	lo, hi := -1, -1
	for n := range seen {
		if lo < 0 || n < lo {
			lo = n
		}
		hi = max(hi, n)
	}
	for n := lo; n < hi; n++ { // the last one may still run
		if seen[n] != 3 {
			t.Fatalf("%s missed worker-%d's start or death (saw %d of 3) between worker-%d and worker-%d:\n%s", name, n, seen[n], lo, hi, tr.out)
		}
	}
	if hi-lo+1 < atLeast {
		t.Fatalf("%s saw too few workers (%d..%d):\n%s", name, lo, hi, tr.out)
	}
}

// probes are what the Tracer tries at its first breakpoint, each of which
// an observer must be refused (JDI: UnsupportedOperationException, from
// NOT_IMPLEMENTED).
var probes = []string{"resume-vm", "resume-thread", "step", "invoke", "set-value", "suspending-request"}

func (tr *tracer) refusedAll(t *testing.T, name string) {
	t.Helper()
	tr.await(t, "value created=42") // unchanged: no invoke nor SetValues reached the VM
	out := tr.out.String()
	for _, p := range probes {
		want := "probe " + p + ": java.lang.UnsupportedOperationException"
		// JDI refuses an invoke on a thread no event suspended for it
		// before sending it (the tracer's events suspend nothing).
		jdi := "probe " + p + ": com.sun.jdi.IncompatibleThreadStateException"
		if !strings.Contains(out, want) && !(p == "invoke" && strings.Contains(out, jdi)) {
			t.Errorf("%s: want %q:\n%s", name, want, out)
		}
	}
}

// sharedScript is jdb's script on Shared: a breakpoint, a look around,
// a step, a next, the next turn, and exit with the breakpoint still set.
func sharedScript(t *testing.T) []string {
	line, err := javavm.BreakpointLine(javavm.Shared)
	if err != nil {
		t.Fatal(err)
	}
	return []string{
		fmt.Sprintf("stop at Shared:%d", line),
		"run", "where", "locals", "print Shared.created", "step", "next", "locals",
		"cont", "locals", "print Shared.created", "exit",
	}
}

// TestJDBWithTracers: jdb (the controller, stepping) and two JDI tracers
// (observers) on one OpenJDK VM. jdb's transcript is the one it gets
// alone; each tracer sees every thread start and death in its window, is
// refused resume, step, invoke, SetValues and a suspending request at a
// breakpoint where jdb stops too, and the VM does not change; one tracer
// leaves while jdb is stopped without jdb noticing; once jdb leaves (with
// its breakpoint set and the VM suspended) the VM runs on without it and
// the other tracer keeps receiving events.
func TestJDBWithTracers(t *testing.T) {
	b := jdwptest.JavaBuild(t)
	line, _ := javavm.BreakpointLine(javavm.Shared)
	script := sharedScript(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	direct, err := jdbtest.Run(ctx, b, jdwptest.StartJava(t, b, javavm.Shared).Addr(), script)
	if err != nil {
		t.Fatal(err)
	}

	front, addr, roAddr := sharedProxy(t, jdwptest.StartJava(t, b, javavm.Shared).Addr(), nil)
	gate, release := jdwptest.HoldAfterHandshake(t, addr)
	type result struct {
		transcript string
		err        error
	}
	jdb := make(chan result, 1)
	go func() {
		tr, err := jdbtest.Run(ctx, b, gate, script)
		jdb <- result{tr, err}
	}()
	jdwptest.Await(t, "jdb attached", front.Changed, func() (bool, string) {
		cl := front.Clients()
		return len(cl) == 1 && cl[0].Role == "controller", fmt.Sprint(cl)
	})
	// Both attach where every client observes: a tracer that probes after
	// jdb left would otherwise have asked for control, and got it.
	stays := startTracer(t, b, roAddr, line, false)
	leaves := startTracer(t, b, roAddr, line, true)
	stays.await(t, "ready")
	leaves.await(t, "ready")
	if cl := front.Clients(); len(cl) != 3 || cl[1].Role != "observer" || cl[2].Role != "observer" {
		t.Fatalf("clients: %+v", cl)
	}
	close(release)

	res := <-jdb
	if res.err != nil {
		t.Fatalf("jdb: %v\ntracer:\n%s", res.err, stays.out)
	}
	if res.transcript != direct {
		t.Fatalf("jdb's transcript with tracers attached differs:\n--- alone\n%s\n--- with tracers\n%s", direct, res.transcript)
	}
	for _, want := range []string{"Breakpoint hit:", "Step completed:", "Shared.created = 42", "worker-"} {
		if !strings.Contains(direct, want) {
			t.Errorf("transcript lacks %q:\n%s", want, direct)
		}
	}
	stays.refusedAll(t, "the tracer")
	leaves.refusedAll(t, "the tracer that leaves")
	leaves.await(t, "disposed")

	// jdb left with its breakpoint set and the VM stopped at it: the hub
	// cleared the one and resumed the other, so the VM runs on, turn after
	// turn, and no suspending event comes for a request no one owns.
	jdwptest.Await(t, "jdb detached", front.Changed, func() (bool, string) {
		cl := front.Clients()
		return len(cl) == 1, fmt.Sprint(cl)
	})
	before := stays.deaths()
	jdwptest.Await(t, "ten more workers after jdb left", stays.out.Changed, func() (bool, string) {
		return stays.deaths() >= before+10, strconv.Itoa(stays.deaths())
	})
	if n := front.Orphaned(); n != 0 {
		t.Errorf("%d suspending events reached no controller after jdb left (its breakpoint was not cleared?)", n)
	}
	stays.everyWorker(t, "the tracer", 10)           // the ten it waited for after jdb left
	leaves.everyWorker(t, "the tracer that left", 0) // it left at its first breakpoint: turn 0 or 1
	if strings.Contains(stays.out.String(), "suspending event set") {
		t.Errorf("an observer got a suspending event set:\n%s", stays.out)
	}
	fmt.Fprintln(stays.stdin, "quit")
	stays.await(t, "disposed")
}

// requestCounter is a relay observer counting, at the VM's side of the
// hub, the event requests set (replies the hub got) and cleared (Clear
// commands it sent), and the DisableCollection and EnableCollection
// commands it sent: what the VM holds is the difference.
type requestCounter struct {
	mu               sync.Mutex
	sets, clears     int
	disposes         int
	pinned, unpinned map[uint64]int
}

func (rc *requestCounter) Observe(_ *relay.Session, f *relay.Frame) {
	if f.Origin == relay.Synthetic {
		return // the proxy's own copy of a command answered ahead (write-behind), or its reply
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	switch {
	case f.Dir == relay.ToDebugger && f.Kind == relay.KindReply && f.Cmd == jdwp.CmdEventRequestSet && f.Packet.ErrorCode() == 0:
		rc.sets++
	case f.Dir == relay.ToVM && f.Kind == relay.KindCommand && f.Cmd == jdwp.CmdEventRequestClear:
		rc.clears++
	case f.Dir == relay.ToVM && f.Kind == relay.KindCommand && f.Cmd == jdwp.CmdVirtualMachineDisposeObjects:
		rc.disposes++
	case f.Dir == relay.ToVM && f.Kind == relay.KindCommand && f.Cmd == jdwp.CmdObjectReferenceDisableCollection:
		rc.pinned[binary.BigEndian.Uint64(f.Packet.Body())]++
	case f.Dir == relay.ToVM && f.Kind == relay.KindCommand && f.Cmd == jdwp.CmdObjectReferenceEnableCollection:
		rc.unpinned[binary.BigEndian.Uint64(f.Packet.Body())]++
	}
}

func (rc *requestCounter) live() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.sets - rc.clears
}

// observe is one short-lived observer: it asks for thread and class
// events without suspending, reads the threads and a name, pins a thread
// object, and leaves by Dispose or by closing its connection.
func observe(addr string, dispose bool) (pinned uint64, err error) {
	d, err := jdwptest.Attach(addr)
	if err != nil {
		return 0, err
	}
	defer d.Close()
	for _, c := range []struct {
		cmd  jdwp.Cmd
		body []byte
	}{
		{jdwp.CmdVirtualMachineIDSizes, nil},
		{jdwp.CmdEventRequestSet, setBody(jdwp.EventThreadStart, jdwp.SuspendNone)},
		{jdwp.CmdEventRequestSet, setBody(jdwp.EventClassPrepare, jdwp.SuspendNone)},
		{jdwp.CmdVirtualMachineResume, nil}, // refused: it would end the controller's stop
	} {
		p, err := d.Call(c.cmd, c.body)
		if err != nil {
			return 0, err
		}
		if want := c.cmd == jdwp.CmdVirtualMachineResume; (p.ErrorCode() == jdwp.ErrorNotImplemented) != want {
			return 0, fmt.Errorf("%v: %v", c.cmd, p)
		}
	}
	p, err := d.Call(jdwp.CmdVirtualMachineAllThreads, nil)
	if err != nil || p.ErrorCode() != 0 || len(p.Body()) < 12 {
		return 0, fmt.Errorf("AllThreads: %v, %v", p, err)
	}
	thread := slices.Clone(p.Body()[4:12]) // the reader reuses its buffer
	pinned = binary.BigEndian.Uint64(thread)
	for _, c := range []jdwp.Cmd{jdwp.CmdThreadReferenceName, jdwp.CmdObjectReferenceDisableCollection} {
		if p, err := d.Call(c, thread); err != nil || p.ErrorCode() != 0 {
			return 0, fmt.Errorf("%v: %v, %v", c, p, err)
		}
	}
	if dispose {
		if p, err := d.Call(jdwp.CmdVirtualMachineDispose, nil); err != nil || p.ErrorCode() != 0 {
			return 0, fmt.Errorf("Dispose: %v, %v", p, err)
		}
	}
	return pinned, nil
}

// TestFiftyObserversDuringStepping: the JDI driver steps through an
// OpenJDK VM (the controller) while 50 observers attach and leave, five at
// a time, half by Dispose and half by closing. The driver's steps go on;
// once they left, the VM holds exactly the driver's event requests, every
// object they pinned is let go, and the proxy is back to its goroutines
// and open files from before.
func TestFiftyObserversDuringStepping(t *testing.T) {
	b := jdwptest.JavaBuild(t)
	rc := &requestCounter{pinned: map[uint64]int{}, unpinned: map[uint64]int{}}
	front, addr, _ := sharedProxy(t, jdwptest.StartJava(t, b, javavm.Deep).Addr(), func(*relay.Session) relay.Hooks {
		return relay.Hooks{Observers: []relay.Observer{rc}}
	})
	const steps, observers, atOnce = 1000, 50, 5
	var goroutines, fds int
	done := make(chan error, 1)
	var pinned sync.Map
	// At the first stop, the observers start; the driver steps on.
	first := func() {
		goroutines, fds = runtime.NumGoroutine(), openFDs(t)
		go func() {
			sem := make(chan struct{}, atOnce)
			var wg sync.WaitGroup
			errs := make(chan error, observers)
			for i := range observers {
				sem <- struct{}{}
				wg.Go(func() {
					defer func() { <-sem }()
					obj, err := observe(addr, i%2 == 0)
					if err != nil {
						errs <- fmt.Errorf("observer %d: %w", i, err)
					}
					pinned.Store(obj, true)
				})
			}
			wg.Wait()
			close(errs)
			done <- <-errs // nil when none failed
		}()
	}
	driverDone := make(chan struct{})
	var res *javavm.DriverResult
	var derr error
	go func() {
		defer close(driverDone)
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		res, derr = javavm.RunDriver(ctx, b, javavm.DriverOptions{Addr: addr, Profile: javavm.ProfileJDBMin, Debuggee: javavm.Deep, Steps: steps, AfterFirstStop: first})
	}()
	if err := <-done; err != nil {
		t.Error(err)
	}
	// The driver still steps: what is left at the VM once the observers
	// left is the driver's alone (counted between two of its steps).
	check := func() error {
		cl := front.Clients()
		switch {
		case len(cl) != 1 || cl[0].Role != "controller":
			return fmt.Errorf("clients: %+v", cl)
		case rc.live() != cl[0].Requests:
			return fmt.Errorf("the VM holds %d event requests, the driver set %d", rc.live(), cl[0].Requests)
		}
		var missing []uint64
		rc.mu.Lock()
		pinned.Range(func(k, _ any) bool {
			if o := k.(uint64); rc.unpinned[o] < rc.pinned[o] {
				missing = append(missing, o)
			}
			return true
		})
		rc.mu.Unlock()
		if len(missing) > 0 {
			return fmt.Errorf("objects pinned by observers and not let go: %v", missing)
		}
		if g, f := runtime.NumGoroutine(), openFDs(t); g > goroutines || f > fds {
			return fmt.Errorf("goroutines %d -> %d, open files %d -> %d", goroutines, g, fds, f)
		}
		return nil
	}
	var last error
	if err := settled(func() error {
		select {
		case <-driverDone:
			return fmt.Errorf("the driver ended before the check (make its session longer); last: %v", last)
		default:
		}
		if err := check(); err != nil {
			if last == nil || err.Error() != last.Error() {
				t.Logf("not yet: %v", err)
			}
			last = err
			return err
		}
		return nil
	}); err != nil {
		buf := make([]byte, 1<<20)
		t.Errorf("after %d observers left: %v\n%s", observers, err, buf[:runtime.Stack(buf, true)])
	}
	<-driverDone
	if derr != nil {
		t.Fatal(derr)
	}
	if len(res.Stops) != steps+1 {
		t.Fatalf("the driver made %d stops, want %d", len(res.Stops), steps+1)
	}
	rc.mu.Lock()
	t.Logf("%d stops; at the VM: %d requests set, %d cleared; %d objects pinned; %d DisposeObjects", len(res.Stops), rc.sets, rc.clears, len(rc.pinned), rc.disposes)
	rc.mu.Unlock()
}

// settled polls cond (counts of goroutines and files have no signal)
// until it returns nil, or returns its last error after 15 s.
func settled(cond func() error) error {
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := cond()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count open files: %v", err)
	}
	return len(ents)
}

// BenchmarkStepRealVM steps the JDI driver (idea-like) through an OpenJDK
// VM shared by the hub, alone and with 3 observers attached (each with
// SUSPEND_NONE thread and class requests, on the read-only address so
// that the driver controls). b.N is the number of steps; ms/step is the
// median step. The two medians' ratio is the cost of the observers:
//
//	go test -run '^$' -bench BenchmarkStepRealVM -benchtime 200x ./share
func BenchmarkStepRealVM(b *testing.B) {
	build := jdwptest.JavaBuild(b)
	for _, n := range []int{0, 3} {
		b.Run("observers="+strconv.Itoa(n), func(b *testing.B) {
			_, addr, roAddr := sharedProxy(b, jdwptest.StartJava(b, build, javavm.Deep).Addr(), nil)
			for range n {
				d, err := jdwptest.Attach(roAddr)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { d.Close() })
				for _, kind := range []jdwp.EventKind{jdwp.EventThreadStart, jdwp.EventThreadDeath, jdwp.EventClassPrepare} {
					if p, err := d.Call(jdwp.CmdEventRequestSet, setBody(kind, jdwp.SuspendNone)); err != nil || p.ErrorCode() != 0 {
						b.Fatalf("observer's request: %v, %v", p, err)
					}
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			b.ResetTimer()
			res, err := javavm.RunDriver(ctx, build, javavm.DriverOptions{Addr: addr, Profile: javavm.ProfileIdeaLike, Debuggee: javavm.Deep, Steps: max(b.N, 10), Warmup: 3})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(jdwptest.MedianStep(res).Microseconds())/1000, "ms/step")
		})
	}
}
