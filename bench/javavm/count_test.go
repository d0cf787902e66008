package javavm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/jdktest"
	"github.com/jdwpaccel/jdwpaccel/internal/stat"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// countingRelay is a throwaway one-session JDWP relay that records the
// command of every packet the debugger sends, to count commands per step.
type countingRelay struct {
	ln     net.Listener
	vmAddr string

	mu   sync.Mutex // guards cmds and err
	cmds []jdwp.Cmd // debugger commands, in arrival order
	err  error      // first forwarding error other than EOF

	done chan struct{} // closed when the session has ended
}

func newCountingRelay(t *testing.T, vmAddr string) *countingRelay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &countingRelay{ln: ln, vmAddr: vmAddr, done: make(chan struct{})}
	go r.serve()
	t.Cleanup(func() {
		ln.Close()
		<-r.done
	})
	return r
}

func (r *countingRelay) Addr() string { return r.ln.Addr().String() }

func (r *countingRelay) fail(err error) {
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
	}
}

func (r *countingRelay) firstErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

func (r *countingRelay) serve() {
	defer close(r.done)
	dbg, err := r.ln.Accept()
	if err != nil {
		r.fail(err)
		return
	}
	defer dbg.Close()
	vm, err := net.Dial("tcp", r.vmAddr)
	if err != nil {
		r.fail(err)
		return
	}
	defer vm.Close()
	if err := jdwp.ReadHandshake(dbg); err != nil {
		r.fail(err)
		return
	}
	if err := jdwp.WriteHandshake(vm); err != nil {
		r.fail(err)
		return
	}
	if err := jdwp.ReadHandshake(vm); err != nil {
		r.fail(err)
		return
	}
	if err := jdwp.WriteHandshake(dbg); err != nil {
		r.fail(err)
		return
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, err := io.Copy(dbg, vm)
		r.fail(err)
		dbg.Close()
	}()
	rd := jdwp.NewReader(dbg, 0)
	for {
		p, err := rd.Next()
		if err != nil {
			r.fail(err)
			break
		}
		if !p.IsReply() {
			r.mu.Lock()
			r.cmds = append(r.cmds, p.Cmd())
			r.mu.Unlock()
		}
		if _, err := vm.Write(p); err != nil {
			r.fail(err)
			break
		}
	}
	vm.Close()
	wg.Wait()
}

// perStep splits the recorded commands at each VirtualMachine.Resume (or
// ThreadReference.Resume: vscode-like resumes the stopped thread alone, as
// java-debug does): a segment is one stop's burst plus the next step's
// Clear, Set and Resume.
func (r *countingRelay) perStep() [][]jdwp.Cmd {
	r.mu.Lock()
	defer r.mu.Unlock()
	var segs [][]jdwp.Cmd
	var cur []jdwp.Cmd
	for _, c := range r.cmds {
		cur = append(cur, c)
		if c == jdwp.CmdVirtualMachineResume || c == jdwp.CmdThreadReferenceResume {
			segs = append(segs, cur)
			cur = nil
		}
	}
	return segs
}

func breakdown(seg []jdwp.Cmd) string {
	n := map[string]int{}
	for _, c := range seg {
		n[c.String()]++
	}
	var parts []string
	for k, v := range n {
		parts = append(parts, fmt.Sprintf("%s×%d", k, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// TestCommandsPerStep counts the JDWP commands of one steady-state step
// (stop burst + Clear + Set + Resume) per workload, through the relay.
func TestCommandsPerStep(t *testing.T) {
	b := testBuild(t)
	for _, tc := range []struct {
		deb, prof string
		lo, hi    int
	}{
		{Deep, ProfileIdeaLike, 70, 100},
		{Shallow, ProfileIdeaLike, 15, 30},
		{Deep, ProfileJDBMin, 4, 8},
		{Deep, ProfileVSCodeLike, 25, 50},
	} {
		vm := startVM(t, b, tc.deb)
		relay := newCountingRelay(t, vm.Addr())
		const steps, warm = 12, 3
		res, err := RunDriver(testCtx(t), b, DriverOptions{Addr: relay.Addr(), Profile: tc.prof, Debuggee: tc.deb, Steps: steps, Warmup: warm})
		if err != nil {
			t.Fatalf("%v\nVM output:\n%s", err, vm.Output())
		}
		select {
		case <-relay.done:
		case <-time.After(20 * time.Second):
			t.Fatal("relay session did not end after the driver exited")
		}
		if err := relay.firstErr(); err != nil {
			t.Fatalf("relay: %v", err)
		}
		segs := relay.perStep()
		// segs[0] is attach up to the first resume; segs[1] ends with the
		// resume after the breakpoint setup; then one segment per step.
		if len(segs) < steps {
			t.Fatalf("%d resume segments for %d steps", len(segs), steps)
		}
		steady := segs[len(segs)-steps+warm:]
		counts := make([]int, len(steady))
		for i, s := range steady {
			counts[i] = len(s)
		}
		sorted := append([]int(nil), counts...)
		sort.Ints(sorted)
		med := sorted[len(sorted)/2]
		t.Logf("%s %s: commands per step %v (median %d), cold first stop %d; steady burst median %v (through the relay)\n  breakdown: %s",
			tc.deb, tc.prof, counts, med, len(segs[len(segs)-steps]), res.MedianBurst(), breakdown(steady[len(steady)/2]))
		if med < tc.lo || med > tc.hi {
			t.Errorf("%s %s: median %d commands per step, want %d..%d", tc.deb, tc.prof, med, tc.lo, tc.hi)
		}
		vm.Stop()
	}
}

// BenchmarkStopBurst measures, directly on loopback, the steady-state stop
// burst of each workload; run with -bench StopBurst -benchtime 1x.
func BenchmarkStopBurst(b *testing.B) {
	jdktest.RequireJDK(b)
	build, err := Compile(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct{ deb, prof string }{
		{Deep, ProfileIdeaLike}, {Shallow, ProfileIdeaLike}, {Deep, ProfileJDBMin}, {Deep, ProfileVSCodeLike},
	} {
		b.Run(tc.deb+"/"+tc.prof, func(b *testing.B) {
			var burst, step []float64
			for i := 0; i < b.N; i++ {
				vm, err := Start(context.Background(), build, tc.deb, VMOptions{})
				if err != nil {
					b.Fatal(err)
				}
				res, err := RunDriver(context.Background(), build, DriverOptions{Addr: vm.Addr(), Profile: tc.prof, Debuggee: tc.deb, Steps: 50, Warmup: 5})
				vm.Stop()
				if err != nil {
					b.Fatal(err)
				}
				burst = append(burst, float64(res.MedianBurst())/1e6)
				step = append(step, float64(res.MedianStep())/1e6)
			}
			b.ReportMetric(stat.Median(burst), "burst-ms/stop")
			b.ReportMetric(stat.Median(step), "step-ms/stop")
		})
	}
}
