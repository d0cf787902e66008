package main

// split mode through a tunnel the near end runs (--far-tunnel), with a
// real OpenJDK VM.

import (
	"bufio"
	"io"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// buildFwd builds the test tunnel (tunnel/testdata/fwd: forwards a port,
// exits after -die) into a temporary directory.
func buildFwd(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fwd")
	if out, err := exec.Command("go", "build", "-o", bin, "../../tunnel/testdata/fwd").CombinedOutput(); err != nil {
		t.Fatalf("go build fwd: %v\n%s", err, out)
	}
	return bin
}

// step steps thread over one line (or out of its method, with
// jdwp.StepOut) and returns where it stopped.
func (d *debugger) step(thread uint64, depth jdwp.StepDepth) jdwp.Location {
	d.t.Helper()
	w := d.writer()
	w.Uint8(uint8(jdwp.EventSingleStep))
	w.Uint8(uint8(jdwp.SuspendAll))
	w.Int32(1)
	w.Modifier(jdwp.Modifier{Kind: jdwp.ModStep, Thread: thread, StepSize: jdwp.StepLine, StepDepth: depth})
	req := jdwp.NewBodyReader(d.call(jdwp.CmdEventRequestSet, w.Buf), d.sizes).Int32()
	d.call(jdwp.CmdVirtualMachineResume, nil)
	ev := d.event(jdwp.EventSingleStep)
	w = d.writer()
	w.Uint8(uint8(jdwp.EventSingleStep))
	w.Int32(req)
	d.call(jdwp.CmdEventRequestClear, w.Buf)
	return ev.Location
}

// topMethod is the method of thread's top frame.
func (d *debugger) topMethod(thread uint64) uint64 {
	d.t.Helper()
	w := d.writer()
	w.ObjectID(thread)
	w.Int32(0)
	w.Int32(1)
	fr := jdwp.NewBodyReader(d.call(jdwp.CmdThreadReferenceFrames, w.Buf), d.sizes)
	if fr.Int32() != 1 {
		d.t.Fatal("no top frame")
	}
	fr.FrameID()
	fr.Uint8()           // type tag
	fr.ReferenceTypeID() // class
	return fr.MethodID()
}

// mainThread suspends the VM and returns its thread named main.
func (d *debugger) mainThread() uint64 {
	d.t.Helper()
	d.call(jdwp.CmdVirtualMachineSuspend, nil)
	tr := jdwp.NewBodyReader(d.call(jdwp.CmdVirtualMachineAllThreads, nil), d.sizes)
	for n := tr.Int32(); n > 0 && tr.Err() == nil; n-- {
		th := tr.ObjectID()
		w := d.writer()
		w.ObjectID(th)
		if jdwp.NewBodyReader(d.call(jdwp.CmdThreadReferenceName, w.Buf), d.sizes).String() == "main" {
			return th
		}
	}
	d.t.Fatal("no thread named main")
	return 0
}

// TestSplitFarTunnel: the near end runs the tunnel to the far end
// (--far-tunnel) with a tunnel command that dies every 3 s; the near end
// restarts it each time, and a debugger that attaches after each restart
// steps the VM through split mode, in the same loop of main as before.
func TestSplitFarTunnel(t *testing.T) {
	b := jdwptest.JavaBuild(t)
	fwd := buildFwd(t)
	// Each session is a VM connection of its own, one after another: the
	// agent listens again, at the port held, after each.
	port := heldPort(t)
	startJVMAt(t, b, port, javavm.Shallow)
	far := startFarEnd(t, vmAddr(port))
	// The tunnel command binds its own port at each start, as kubectl
	// port-forward does: the test cannot hand it a listener, and the near
	// end needs the port before the first start. A port held, which each
	// start binds (with SO_REUSEADDR, as Go's listeners do).
	tunnelAddr := heldAddr(t)
	near := startNearEnd(t, tunnelAddr, "--far-tunnel", "'"+fwd+"' -listen "+tunnelAddr+" -to "+far.addr+" -die 3s")

	up := func(start int) func(rec map[string]any) bool {
		return func(rec map[string]any) bool {
			return rec["message"] == "tunnel up: the far end answers through it" && rec["start"] == float64(start)
		}
	}
	var method uint64
	for start := 1; start <= 3; start++ {
		near.logs.wait(t, "of tunnel start "+strconv.Itoa(start)+" up", 20*time.Second, up(start))
		d := attach(t, near.addr)
		d.idSizes()
		var thread uint64
		if start == 1 {
			bp := d.breakAtMain(javavm.Shallow)
			thread, method = bp.Thread, bp.Location.Method
		} else {
			// Suspended anywhere: in main, or in what it calls.
			thread = d.mainThread()
			for n := 0; d.topMethod(thread) != method; n++ {
				if n == 10 {
					t.Fatalf("tunnel start %d: not back in main after 10 steps out", start)
				}
				d.step(thread, jdwp.StepOut)
			}
		}
		for i := range 3 {
			if loc := d.step(thread, jdwp.StepOver); loc.Method != method {
				t.Errorf("tunnel start %d, step %d: stopped in method %#x, not main (%#x)", start, i+1, loc.Method, method)
			}
		}
		d.conn.Close()
		// The session ends with the tunnel at the latest; the VM resumes.
		near.logs.wait(t, "of the session's end", 20*time.Second, func(rec map[string]any) bool {
			return rec["session"] == float64(start) && rec["closed_by"] != nil
		})
	}
	if near.logs.Find(func(rec map[string]any) bool { return rec["message"] == "the tunnel command exited" }) == nil {
		t.Errorf("the tunnel never exited: the test did not test restarts; near end log:\n%s", near.logs)
	}
}

// TestSplitFarTunnelSessionSurvives: a debugger session in progress rides
// out its tunnel's restarts. The tunnel command dies every 2 s; the near end
// restarts it, the split stream resumes over the new tunnel, and the
// debugger's one connection steps on in main through three restarts.
func TestSplitFarTunnelSessionSurvives(t *testing.T) {
	b := jdwptest.JavaBuild(t)
	fwd := buildFwd(t)
	// One session, one VM connection: a port the kernel gives the agent.
	far := startFarEnd(t, startJVM(t, b, javavm.Shallow).addr())
	// As in TestSplitFarTunnel: each tunnel start binds this port, held.
	tunnelAddr := heldAddr(t)
	near := startNearEnd(t, tunnelAddr, "--far-tunnel", "'"+fwd+"' -listen "+tunnelAddr+" -to "+far.addr+" -die 2s")
	near.logs.wait(t, "of the first tunnel up", 20*time.Second, func(rec map[string]any) bool {
		return rec["message"] == "tunnel up: the far end answers through it"
	})

	d := attach(t, near.addr)
	d.idSizes()
	bp := d.breakAtMain(javavm.Shallow)
	thread, method := bp.Thread, bp.Location.Method
	exits := func(n int) func(map[string]any) bool {
		seen := 0
		return func(rec map[string]any) bool {
			if rec["message"] == "the tunnel command exited" {
				seen++
			}
			return seen >= n
		}
	}
	for restart := 1; restart <= 3; restart++ {
		for i := range 3 {
			if loc := d.step(thread, jdwp.StepOver); loc.Method != method {
				t.Fatalf("before restart %d, step %d: stopped in method %#x, not main (%#x)", restart, i+1, loc.Method, method)
			}
		}
		near.logs.wait(t, "of tunnel exit "+strconv.Itoa(restart), 20*time.Second, exits(restart))
	}
	if loc := d.step(thread, jdwp.StepOver); loc.Method != method {
		t.Fatalf("after three restarts: stopped in method %#x, not main (%#x)", loc.Method, method)
	}
	if rec := near.logs.Find(func(rec map[string]any) bool { return rec["closed_by"] != nil }); rec != nil {
		t.Errorf("the debugger's session ended across the restarts: %v", rec)
	}
}

// TestSplitLinkProcessStopped20s: the process carrying the link (a
// forwarder, as kubectl port-forward or ssh would be) is stopped with
// SIGSTOP for 20 s in the middle of a step and then continued: the step
// waits out the stall, and the session steps on (20 s is within the link
// timeout: nothing is lost, nothing reconnects).
func TestSplitLinkProcessStopped20s(t *testing.T) {
	if testing.Short() {
		t.Skip("stalls for 20 s")
	}
	b := jdwptest.JavaBuild(t)
	fwd := buildFwd(t)
	far := startFarEnd(t, startJVM(t, b, javavm.Shallow).addr())
	cmd := exec.Command(fwd, "-listen", "127.0.0.1:0", "-to", far.addr)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() }) //nolint:errcheck // killed on purpose
	sc := bufio.NewScanner(out)
	if !sc.Scan() {
		t.Fatal("the forwarder said nothing")
	}
	linkAddr, ok := strings.CutPrefix(sc.Text(), "Forwarding from ")
	if !ok {
		t.Fatalf("forwarder: %q", sc.Text())
	}
	linkAddr, _, _ = strings.Cut(linkAddr, " ")
	go io.Copy(io.Discard, out) //nolint:errcheck // its per-connection lines

	near := startNearEnd(t, linkAddr)
	d := attach(t, near.addr)
	d.idSizes()
	bp := d.breakAtMain(javavm.Shallow)
	thread, method := bp.Thread, bp.Location.Method
	for i := range 2 {
		if loc := d.step(thread, jdwp.StepOver); loc.Method != method {
			t.Fatalf("step %d: stopped in method %#x, not main (%#x)", i+1, loc.Method, method)
		}
	}
	const stall = 20 * time.Second
	d.timeout = stall + replyTimeout
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	// The fault itself is timed: the link process is continued after the
	// stall, whatever the session does meanwhile.
	cont := time.AfterFunc(stall, func() { cmd.Process.Signal(syscall.SIGCONT) }) //nolint:errcheck // checked by the step below
	defer cont.Stop()
	if loc := d.step(thread, jdwp.StepOver); loc.Method != method {
		t.Fatalf("the step across the stall stopped in method %#x, not main (%#x)", loc.Method, method)
	}
	if took := time.Since(start); took < stall {
		t.Fatalf("the step across the stall took %v: the stall did not hold it", took)
	}
	for i := range 2 {
		if loc := d.step(thread, jdwp.StepOver); loc.Method != method {
			t.Fatalf("step %d after the stall: stopped in method %#x, not main (%#x)", i+1, loc.Method, method)
		}
	}
	if rec := near.logs.Find(func(rec map[string]any) bool { return rec["closed_by"] != nil }); rec != nil {
		t.Errorf("the debugger's session ended across the stall: %v", rec)
	}
}
