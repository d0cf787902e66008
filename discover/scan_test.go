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

// javaVM is a JVM with a JDWP listener on a port the kernel chose.
type javaVM struct {
	cmd      *exec.Cmd
	port     int
	out      jdwptest.Buffer
	running  chan struct{} // closed when main printed "running"
	stopOnce sync.Once
}

func (v *javaVM) output() string { return v.out.String() }

// startJava starts a JVM whose JDWP agent listens on a port the kernel
// chooses (address=127.0.0.1:0), read from the agent's "Listening" line.
// HotSpot listens anew after each debugger leaves, on a new port then:
// onListen, if not nil, is told each port the agent listens on.
func startJava(t *testing.T, suspend bool, onListen func(port int)) *javaVM {
	t.Helper()
	dir := compileIdle(t)
	s := "n"
	if suspend {
		s = "y"
	}
	cmd := exec.Command("java", "-Xshare:auto", "-XX:TieredStopAtLevel=1",
		fmt.Sprintf("-agentlib:jdwp=transport=dt_socket,server=y,suspend=%s,address=127.0.0.1:0", s),
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
	v := &javaVM{cmd: cmd, running: make(chan struct{})}
	listening := make(chan int, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		var l, r sync.Once
		for sc.Scan() {
			line := sc.Text()
			v.out.Write([]byte(line + "\n")) //nolint:errcheck // a Buffer does not fail
			if p, ok := strings.CutPrefix(line, "Listening for transport dt_socket at address: "); ok {
				p, err := strconv.Atoi(strings.TrimSpace(p))
				if err != nil {
					continue
				}
				if onListen != nil {
					onListen(p)
				}
				l.Do(func() { listening <- p })
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
	case p, ok := <-listening:
		if !ok {
			t.Fatalf("JVM failed: %s", v.output())
		}
		v.port = p
	case <-time.After(20 * time.Second):
		t.Fatalf("JVM did not start listening: %s", v.output())
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

// scanPorts is a port set a test extends while a Scan reads it.
type scanPorts struct {
	mu    sync.Mutex // guards ports
	ports []int
}

func (p *scanPorts) add(ports ...int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ports = append(p.ports, ports...)
}

func (p *scanPorts) add1(port int) { p.add(port) }

func (p *scanPorts) set() PortSet {
	p.mu.Lock()
	defer p.mu.Unlock()
	return PortsOf(p.ports...)
}

func TestScanRealJVMs(t *testing.T) {
	requireJDK(t)
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("no /proc/net/tcp")
	}
	// A non-JVM listener on a scanned port must be ignored and never
	// connected to.
	other := listenLocal(t)
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

	// The scanned ports are the test's own, known only once each JVM
	// listens (and again each time it listens anew after a debugger).
	var ports scanPorts
	ports.add(other.Addr().(*net.TCPAddr).Port)
	vm1 := startJava(t, false, ports.add1)
	vm2 := startJava(t, true, ports.add1) // waits for a debugger before main
	scans := make(chan struct{}, 1000)
	src := &Scan{Interval: 50 * time.Millisecond, ports: ports.set,
		onScan: func() {
			select {
			case scans <- struct{}{}:
			default:
			}
		}}
	sel := listenLocal(t)
	m, _ := startManager(t, Config{Source: src, Selected: sel, PortBase: PortAuto})

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
	vm3 := startJava(t, false, ports.add1)
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
