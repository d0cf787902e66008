package ddmtap_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/ddmtap"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/rs/zerolog"
)

// These tests run a real HotSpot with the JDWP agent (suspend=y) behind the
// DDM holder and check that the proxy's pre-connection neither releases
// the VM nor changes what a debugger sees.

const targetJava = `public class Target {
    public static void main(String[] args) {
        System.out.println("main started");
        int r = work(3);
        System.out.println("result " + r);
    }
    static int work(int n) {
        int s = 0;
        for (int i = 0; i < n; i++) {
            s += i;
        }
        return s;
    }
}
`

const loopJava = `public class Loop {
    public static void main(String[] args) throws Exception {
        System.out.println("loop started");
        while (true) {
            Thread.sleep(50);
        }
    }
}
`

func needJava(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"java", "javac", "jdb"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is required in CI: %v", tool, err)
			}
			t.Skipf("%s not found: %v", tool, err)
		}
	}
}

var (
	compileOnce sync.Once
	classDir    string
	compileErr  error
)

func compileTarget(t *testing.T) string {
	t.Helper()
	compileOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ddmtap-hotspot")
		if err != nil {
			compileErr = err
			return
		}
		src := filepath.Join(dir, "Target.java")
		if compileErr = os.WriteFile(src, []byte(targetJava), 0o644); compileErr != nil {
			return
		}
		loop := filepath.Join(dir, "Loop.java")
		if compileErr = os.WriteFile(loop, []byte(loopJava), 0o644); compileErr != nil {
			return
		}
		out, err := exec.Command("javac", "-g", "-d", dir, src, loop).CombinedOutput()
		if err != nil {
			compileErr = err
			classDir = string(out)
			return
		}
		classDir = dir
	})
	if compileErr != nil {
		t.Fatalf("javac: %v %s", compileErr, classDir)
	}
	return classDir
}

// output collects a process's output and lets tests wait for text.
type output struct {
	mu   sync.Mutex // guards buf
	buf  strings.Builder
	more chan struct{} // closed and replaced on every write
}

func newOutput() *output { return &output{more: make(chan struct{})} }

func (o *output) Write(b []byte) (int, error) {
	o.mu.Lock()
	o.buf.Write(b)
	close(o.more)
	o.more = make(chan struct{})
	o.mu.Unlock()
	return len(b), nil
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// waitFor waits until the output after offset from contains s, and returns
// the offset just past it.
func (o *output) waitFor(t *testing.T, from int, s string) int {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		o.mu.Lock()
		text, ch := o.buf.String(), o.more
		o.mu.Unlock()
		if i := strings.Index(text[from:], s); i >= 0 {
			return from + i + len(s)
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("timed out waiting for %q; output so far:\n%s", s, text)
		}
	}
}

var listenRE = regexp.MustCompile(`Listening for transport dt_socket at address: (\d+)`)

// startJava starts Target suspended under the JDWP agent and returns its
// address and its stdout.
func startJava(t *testing.T) (string, *output) {
	t.Helper()
	return startJavaClass(t, "Target")
}

func startJavaClass(t *testing.T, class string) (string, *output) {
	t.Helper()
	dir := compileTarget(t)
	// A fixed port: with port 0 the agent picks a new port each time it
	// listens again after a detach.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command("java", fmt.Sprintf("-agentlib:jdwp=transport=dt_socket,server=y,suspend=y,address=127.0.0.1:%d", port), "-cp", dir, class)
	out := newOutput()
	cmd.Stdout = out
	cmd.Stderr = out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	out.waitFor(t, 0, "Listening for transport")
	m := listenRE.FindStringSubmatch(out.String())
	if m == nil {
		out.waitFor(t, 0, "\n")
		m = listenRE.FindStringSubmatch(out.String())
	}
	return "127.0.0.1:" + m[1], out
}

func relayTo(t *testing.T, cfg relay.Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger = zerolog.Nop()
	srv := relay.NewServer(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Serve(ctx, ln); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

// startHotSpotHolder starts a holder with default settings (the VM is not
// known to speak DDM) whose VM connections record what the proxy writes.
func startHotSpotHolder(t *testing.T, addr string) (*ddmtap.Holder, *wireRecorder) {
	t.Helper()
	rec := &wireRecorder{}
	dial := relay.TCP(addr)
	h := ddmtap.NewHolder(ddmtap.HolderConfig{Addr: addr, Logger: zerolog.Nop(), Options: testOpts,
		Dial: func(ctx context.Context) (net.Conn, error) {
			c, err := dial(ctx)
			if err != nil {
				return nil, err
			}
			return &recordingConn{Conn: c, rec: rec}, nil
		}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return h, rec
}

// wireRecorder keeps every byte written to the VM connections.
type wireRecorder struct {
	mu    sync.Mutex // guards conns
	conns []*[]byte
}

type recordingConn struct {
	net.Conn
	rec *wireRecorder
	buf *[]byte
}

func (c *recordingConn) Write(b []byte) (int, error) {
	c.rec.mu.Lock()
	if c.buf == nil {
		c.buf = new([]byte)
		c.rec.conns = append(c.rec.conns, c.buf)
	}
	*c.buf = append(*c.buf, b...)
	c.rec.mu.Unlock()
	return c.Conn.Write(b)
}

// commands returns the commands written on each connection after the
// handshake.
func (r *wireRecorder) commands(t *testing.T) [][]jdwp.Packet {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var all [][]jdwp.Packet
	for _, b := range r.conns {
		data := *b
		if len(data) < len(jdwp.Handshake) || string(data[:len(jdwp.Handshake)]) != jdwp.Handshake {
			t.Fatalf("connection does not start with the handshake: %q", data)
		}
		data = data[len(jdwp.Handshake):]
		var pkts []jdwp.Packet
		for len(data) > 0 {
			if len(data) < jdwp.HeaderSize || int(binary.BigEndian.Uint32(data)) > len(data) {
				t.Fatalf("torn packet written to the VM: %x", data)
			}
			n := binary.BigEndian.Uint32(data)
			pkts = append(pkts, jdwp.Packet(data[:n]))
			data = data[n:]
		}
		all = append(all, pkts)
	}
	return all
}

// checkNoVendorSets fails if any packet written to the VM has a command
// set of 128 or more (HotSpot reads it as negative and may crash).
func checkNoVendorSets(t *testing.T, rec *wireRecorder) {
	t.Helper()
	for i, pkts := range rec.commands(t) {
		for _, p := range pkts {
			if !p.IsReply() && p.Cmd().Set >= 128 {
				t.Errorf("connection %d: the proxy sent %v (command set %d) to a HotSpot VM", i, p.Cmd(), p.Cmd().Set)
			}
		}
	}
}

func TestHotSpotSuspendedVMIsNotReleased(t *testing.T) {
	needJava(t)
	addr, out := startJava(t)
	h, rec := startHotSpotHolder(t, addr)
	mon := h.Monitor()
	if strings.Contains(out.String(), "main started") {
		t.Fatal("the VM ran while only the proxy was connected")
	}
	p := proxy(t, h)
	d := attach(t, p)
	// The first packet is the VM_START event the VM sent to the held
	// connection: Event.Composite, suspendPolicy ALL, one VM_START.
	ev := d.next("VM_START", func(jdwp.Packet) bool { return true }, nil)
	if ev.IsReply() || ev.Cmd() != jdwp.CmdComposite {
		t.Fatalf("first packet %v, want Event.Composite", ev)
	}
	body := ev.Body()
	if len(body) < 10 || body[0] != 2 || binary.BigEndian.Uint32(body[1:]) != 1 || jdwp.EventKind(body[5]) != jdwp.EventVMStart {
		t.Fatalf("composite body %x, want suspendPolicy ALL and one VM_START", body)
	}
	d.send(jdwp.AppendCommand(nil, 1, jdwp.CmdIDSizes, nil))
	sz, err := jdwp.ParseIDSizes(d.next("IDSizes", replyTo(1), nil).Body())
	if err != nil {
		t.Fatal(err)
	}
	thread := body[10 : 10+sz.ObjectID]
	// The main thread is still suspended by suspend=y.
	d.send(jdwp.AppendCommand(nil, 2, jdwp.Cmd{Set: jdwp.SetThreadReference, Cmd: 12}, thread))
	r := d.next("SuspendCount", replyTo(2), nil)
	if r.ErrorCode() != 0 || len(r.Body()) != 4 || binary.BigEndian.Uint32(r.Body()) < 1 {
		t.Fatalf("SuspendCount reply %v %x: the VM is not suspended", r, r.Body())
	}
	if strings.Contains(out.String(), "main started") {
		t.Fatal("the VM ran before the debugger resumed it")
	}
	d.send(jdwp.AppendCommand(nil, 3, jdwp.Cmd{Set: jdwp.SetVirtualMachine, Cmd: 9}, nil)) // Resume
	d.next("Resume", replyTo(3), nil)
	out.waitFor(t, 0, "result 3")
	if st := mon.Snapshot(); st.Identity.DDM != ddmtap.DDMUnknown || st.Chunks != 0 {
		t.Fatalf("monitor after a session without VirtualMachine.Version: %+v", st)
	}
	conns := rec.commands(t)
	if len(conns) != 1 {
		t.Fatalf("%d VM connections, want 1 (the debugger's)", len(conns))
	}
	// Everything the VM got is the debugger's: IDSizes, SuspendCount, Resume.
	for _, p := range conns[0] {
		if p.ID() > 3 {
			t.Errorf("the proxy sent %v (ID %#x) on its own", p.Cmd(), p.ID())
		}
	}
}

// TestHotSpotVersionDecidesDDM: the VM's reply to the debugger's own
// VirtualMachine.Version marks HotSpot as no DDM VM; nothing with a vendor
// command set is ever sent to it, across sessions.
func TestHotSpotVersionDecidesDDM(t *testing.T) {
	needJava(t)
	addr, _ := startJavaClass(t, "Loop")
	h, rec := startHotSpotHolder(t, addr)
	p := proxy(t, h)
	for round := 1; round <= 2; round++ {
		d := attachWhenListening(t, p)
		d.send(jdwp.AppendCommand(nil, 1, jdwp.CmdVirtualMachineVersion, nil))
		if r := d.next("Version", replyTo(1), nil); r.ErrorCode() != 0 {
			t.Fatalf("round %d: Version error %v", round, r.ErrorCode())
		}
		wait(t, h.Monitor(), "HotSpot recognised", func(s ddmtap.Snapshot) bool { return s.Identity.DDM == ddmtap.DDMNo })
		d.send(jdwp.AppendCommand(nil, 2, jdwp.CmdIDSizes, nil))
		d.next("IDSizes", replyTo(2), nil)
		d.c.Close()
	}
	checkNoVendorSets(t, rec)
	if n := len(rec.commands(t)); n != 2 {
		t.Errorf("%d VM connections, want 2 (one per debugger; none held)", n)
	}
}

// jdbSession drives jdb through addr, waiting for each answer before the
// next command, and returns its transcript.
func jdbSession(t *testing.T, addr string) string {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command("jdb", "-attach", host+":"+port)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out := newOutput()
	cmd.Stdout = out
	cmd.Stderr = out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	say := func(s string) { io.WriteString(stdin, s+"\n") }
	at := out.waitFor(t, 0, "main[1] ")
	say("stop in Target.work")
	at = out.waitFor(t, at, "main[1] ")
	say("cont")
	at = out.waitFor(t, at, "Breakpoint hit:")
	at = out.waitFor(t, at, "main[1] ")
	say("where")
	at = out.waitFor(t, at, "main[1] ")
	say("locals")
	at = out.waitFor(t, at, "main[1] ")
	say("cont")
	out.waitFor(t, at, "The application exited")
	stdin.Close()
	return out.String()
}

func TestHotSpotJdbTranscriptSameWithDDM(t *testing.T) {
	needJava(t)
	// Without DDM: a plain relay.
	vmAddr, _ := startJava(t)
	plain := jdbSession(t, relayTo(t, relay.Config{DialVM: relay.DialTCP(vmAddr)}))

	// With DDM: the holder pre-connects and holds the suspended VM.
	vmAddr, _ = startJava(t)
	h, rec := startHotSpotHolder(t, vmAddr)
	withDDM := jdbSession(t, relayTo(t, relay.Config{DialVM: h.Dial}))

	// jdb prints its bare "> " prompt from the command thread while the
	// event thread prints "VM Started"; where the prompt lands is a race
	// inside jdb, so prompts and blank lines are dropped before comparing.
	wait(t, h.Monitor(), "HotSpot recognised from jdb's Version", func(s ddmtap.Snapshot) bool { return s.Identity.DDM == ddmtap.DDMNo })
	checkNoVendorSets(t, rec)
	plain, withDDM = normalizeJdb(plain), normalizeJdb(withDDM)
	if plain != withDDM {
		t.Fatalf("jdb transcripts differ\n--- without DDM ---\n%s\n--- with DDM ---\n%s", plain, withDDM)
	}
	for _, want := range []string{"VM Started", "Breakpoint hit:", "Target.work", "[2] Target.main", "The application exited"} {
		if !strings.Contains(plain, want) {
			t.Fatalf("transcript lacks %q:\n%s", want, plain)
		}
	}
	t.Logf("jdb transcript (identical with and without DDM):\n%s", plain)
}

func normalizeJdb(s string) string {
	s = strings.ReplaceAll(s, "> ", "")
	// The thread prompt is printed by both of jdb's threads too, as racily
	// as the bare one ("main[1] main[1] Deferring…" or not).
	s = strings.ReplaceAll(s, "main[1] ", "")
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimRight(l, " "); l != "" && l != ">" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

// TestHotSpotDetachReattach: after a debugger detaches from a non-DDM VM
// the holder does not reconnect; the next debugger is dialled afresh and
// finds the VM as a direct debugger would.
func TestHotSpotDetachReattach(t *testing.T) {
	needJava(t)
	addr, out := startJavaClass(t, "Loop")
	h, rec := startHotSpotHolder(t, addr)
	defer checkNoVendorSets(t, rec)
	p := proxy(t, h)
	for round := 1; round <= 3; round++ {
		d := attachWhenListening(t, p)
		if round == 1 {
			d.next("VM_START", func(p jdwp.Packet) bool { return p.Cmd() == jdwp.CmdComposite }, nil)
		}
		d.send(jdwp.AppendCommand(nil, 1, jdwp.Cmd{Set: jdwp.SetVirtualMachine, Cmd: 1}, nil)) // Version
		if r := d.next("Version", replyTo(1), nil); r.ErrorCode() != 0 {
			t.Fatalf("round %d: Version error %v", round, r.ErrorCode())
		}
		d.c.Close()
		if round == 1 {
			// Detaching resumes the suspend=y VM, exactly as a direct detach does.
			out.waitFor(t, 0, "loop started")
		}
	}
}

// attachWhenListening attaches through the proxy, retrying while the VM
// has not started listening again after the previous detach (the proxy then
// closes the debugger connection, as the VM's refusal would).
func attachWhenListening(t *testing.T, addr string) *debugger {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(15 * time.Second))
		c.Write([]byte(jdwp.Handshake))
		if err := jdwp.ReadHandshake(c); err == nil {
			return &debugger{t: t, c: c, r: jdwp.NewReader(c, 0)}
		} else if time.Now().After(deadline) {
			t.Fatalf("no VM behind the proxy: %v", err)
		}
		c.Close()
		time.Sleep(50 * time.Millisecond) // polling a port that is not listening yet
	}
}
