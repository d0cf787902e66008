package discover

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// requireJDK skips without java/javac, unless CI=true.
func requireJDK(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"java", "javac"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s not found and CI=true", tool)
			}
			t.Skipf("%s not found", tool)
		}
	}
}

const idleJava = `public class Idle {
  public static void main(String[] a) throws Exception {
    System.out.println("running");
    System.out.flush();
    Thread.sleep(Long.MAX_VALUE);
  }
}
`

var (
	compileOnce sync.Once
	classDir    string
	compileErr  error
)

func compileIdle(t *testing.T) string {
	t.Helper()
	compileOnce.Do(func() {
		dir, err := os.MkdirTemp("", "discover-java")
		if err != nil {
			compileErr = err
			return
		}
		src := filepath.Join(dir, "Idle.java")
		if err := os.WriteFile(src, []byte(idleJava), 0o644); err != nil {
			compileErr = err
			return
		}
		out, err := exec.Command("javac", "-d", dir, src).CombinedOutput()
		if err != nil {
			compileErr = fmt.Errorf("javac: %v\n%s", err, out)
		}
		classDir = dir
	})
	if compileErr != nil {
		t.Fatal(compileErr)
	}
	return classDir
}

// javaVM is a JVM with a JDWP listener on a chosen port.
type javaVM struct {
	cmd      *exec.Cmd
	port     int
	out      jdwptest.Buffer
	running  chan struct{} // closed when main printed "running"
	stopOnce sync.Once
}

func (v *javaVM) output() string { return v.out.String() }

func startJava(t *testing.T, port int, suspend bool) *javaVM {
	t.Helper()
	dir := compileIdle(t)
	s := "n"
	if suspend {
		s = "y"
	}
	cmd := exec.Command("java", "-Xshare:auto", "-XX:TieredStopAtLevel=1",
		fmt.Sprintf("-agentlib:jdwp=transport=dt_socket,server=y,suspend=%s,address=127.0.0.1:%d", s, port),
		"-cp", dir, "Idle")
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	v := &javaVM{cmd: cmd, port: port, running: make(chan struct{})}
	listening := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		var l, r sync.Once
		for sc.Scan() {
			line := sc.Text()
			v.out.Write([]byte(line + "\n")) //nolint:errcheck // a Buffer does not fail
			if strings.Contains(line, "Listening for transport dt_socket") {
				l.Do(func() { close(listening) })
			}
			if line == "running" {
				r.Do(func() { close(v.running) })
			}
		}
		pr.Close()
		l.Do(func() { close(listening) })
	}()
	t.Cleanup(v.stop)
	select {
	case <-listening:
	case <-time.After(20 * time.Second):
		t.Fatalf("JVM on port %d did not start listening: %s", port, v.output())
	}
	if !strings.Contains(v.output(), "Listening") {
		t.Fatalf("JVM on port %d failed: %s", port, v.output())
	}
	return v
}

func (v *javaVM) pid() int { return v.cmd.Process.Pid }
func (v *javaVM) key() string {
	return "local:" + strconv.Itoa(v.pid())
}

// kill kills the JVM without reaping it: it stays a zombie until stop.
func (v *javaVM) kill() {
	v.cmd.Process.Kill() //nolint:errcheck // may be gone already
}

// stop kills and reaps the JVM.
func (v *javaVM) stop() {
	v.stopOnce.Do(func() {
		v.kill()
		v.cmd.Wait() //nolint:errcheck // killed on purpose
	})
}

// freePorts returns n ports that were free a moment ago.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ps []int
	var lns []net.Listener
	for i := 0; i < n; i++ {
		ln := listenLocal(t)
		lns = append(lns, ln)
		ps = append(ps, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return ps
}

func TestScanRealJVMs(t *testing.T) {
	requireJDK(t)
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("no /proc/net/tcp")
	}
	ports := freePorts(t, 4)
	// A non-JVM listener on a scanned port must be ignored and never
	// connected to.
	other, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(ports[3]))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var otherConns atomic.Int32
	go func() {
		for {
			c, err := other.Accept()
			if err != nil {
				return
			}
			otherConns.Add(1)
			c.Close()
		}
	}()

	vm1 := startJava(t, ports[0], false)
	vm2 := startJava(t, ports[1], true) // waits for a debugger before main

	scans := make(chan struct{}, 1000)
	src := &Scan{Ports: PortsOf(ports...), Interval: 50 * time.Millisecond,
		onScan: func() {
			select {
			case scans <- struct{}{}:
			default:
			}
		}}
	sel := listenLocal(t)
	m, _ := startManager(t, Config{Source: src, Selected: sel, PortBase: freePortBase(t)})

	s := waitState(t, m, "two JVMs", func(s Snapshot) bool { return len(s.VMs) == 2 })
	for _, v := range []*javaVM{vm1, vm2} {
		st, ok := statusOf(s, v.key())
		if !ok {
			t.Fatalf("%s not found: %+v", v.key(), s)
		}
		if st.PID != v.pid() || st.Name != "Idle" || st.Addr != "127.0.0.1:"+strconv.Itoa(v.port) || st.Kind != KindScan {
			t.Errorf("%s: %+v", v.key(), st)
		}
		if st.SuspendOnStart != (v == vm2) || st.Busy {
			t.Errorf("%s: suspend %v busy %v", v.key(), st.SuspendOnStart, st.Busy)
		}
	}
	// Several more scans must leave the suspended VM untouched: still
	// waiting (main not run) and no failed-handshake log.
	for i := 0; i < 5; i++ {
		<-scans
	}
	select {
	case <-vm2.running:
		t.Fatal("scanning resumed a suspend=y VM")
	default:
	}
	for _, v := range []*javaVM{vm1, vm2} {
		if out := v.output(); strings.Contains(out, "failed") || strings.Contains(out, "rror") {
			t.Fatalf("scanning disturbed the VM: %s", out)
		}
	}
	if n := otherConns.Load(); n != 0 {
		t.Fatalf("the scan connected %d times to a non-JVM listener", n)
	}

	// A new VM appears without a restart.
	vm3 := startJava(t, ports[2], false)
	waitState(t, m, "third JVM", func(s Snapshot) bool { _, ok := statusOf(s, vm3.key()); return ok })

	// A debugger through vm1's own port: the VM is busy (HotSpot stops
	// listening) but stays listed, then listens again after.
	st1, _ := statusOf(m.List(), vm1.key())
	d, err := jdwptest.Attach(st1.Listen)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ask(d); err != nil {
		t.Fatalf("VirtualMachine.Version through the proxy: %v", err)
	}
	waitState(t, m, "vm1 busy", func(s Snapshot) bool {
		st, ok := statusOf(s, vm1.key())
		return ok && st.Busy && st.Sessions == 1
	})
	d.Close()
	waitState(t, m, "vm1 free", func(s Snapshot) bool {
		st, ok := statusOf(s, vm1.key())
		return ok && !st.Busy && st.Sessions == 0
	})

	// Stopped VMs disappear, also before their parent reaps them.
	vm3.stop()
	vm1.kill()
	waitState(t, m, "vm1 and vm3 gone", func(s Snapshot) bool { return len(s.VMs) == 1 })

	// The only VM left is selected automatically; resuming it through the
	// current-VM port runs its main.
	d, err = jdwptest.Attach(sel.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// Like a real debugger, wait for the VMStart event first: a Resume
	// that overtakes the agent's initial suspension would be lost.
	for {
		p, err := d.Next()
		if err != nil {
			t.Fatalf("waiting for VMStart: %v", err)
		}
		if !p.IsReply() && p.Cmd() == jdwp.CmdComposite {
			break
		}
	}
	if _, err := d.Send(jdwp.CmdVirtualMachineResume, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-vm2.running:
	case <-time.After(10 * time.Second):
		t.Fatalf("VirtualMachine.Resume through the current-VM port did not start main: %s", vm2.output())
	}
}

func TestScanConnectProbe(t *testing.T) {
	a := startFakeVM(t, "a")
	port := portOf(a.Addr())
	vms, err := Discover(context.Background(), &Scan{Ports: PortsOf(port), ConnectProbe: true}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(vms) != 1 || vms[0].Key != "tcp:"+a.Addr() || !vms[0].keepWhileInUse {
		t.Fatalf("%+v", vms)
	}
}
