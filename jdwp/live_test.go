package jdwp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// liveVM is a VM startVM started: its connection, which has done the
// handshake, and what it printed after announcing its port.
type liveVM struct {
	conn net.Conn
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  strings.Builder // guarded by mu; bounded by maxVMOutput
	more chan struct{}   // signalled (capacity 1) when out grows
}

const maxVMOutput = 1 << 20

// threadDump has the VM print its threads (SIGQUIT) and returns what it
// printed since its port, once the dump is complete or 10 s passed: what
// a test that waited in vain for the VM says about it.
func (v *liveVM) threadDump() string {
	if err := v.cmd.Process.Signal(syscall.SIGQUIT); err != nil {
		return "no thread dump: " + err.Error()
	}
	deadline := time.After(10 * time.Second)
	for {
		v.mu.Lock()
		out := v.out.String()
		v.mu.Unlock()
		// HotSpot ends a thread dump with its JNI references.
		if strings.Contains(out, "JNI global refs") {
			return out
		}
		select {
		case <-v.more:
		case <-deadline:
			return out + "\n(the thread dump did not complete in 10 s)"
		}
	}
}

// startVM compiles testdata/Hello.java and starts it under the JDWP agent,
// suspended, and returns it with a connection that has done the handshake.
func startVM(t *testing.T) *liveVM {
	t.Helper()
	java := needJava(t)
	javac, err := exec.LookPath("javac")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("javac not found and CI=true: %v", err)
		}
		t.Skipf("javac not found: %v", err)
	}
	dir := t.TempDir()
	if out, err := exec.Command(javac, "-d", dir, filepath.Join("testdata", "Hello.java")).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	cmd := exec.Command(java, "-Xshare:auto", "-XX:TieredStopAtLevel=1",
		"-agentlib:jdwp=transport=dt_socket,server=y,suspend=y,address=127.0.0.1:0",
		"-cp", dir, "Hello")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	// The agent announces its port on stdout before anything else; what
	// follows is kept for threadDump.
	v := &liveVM{cmd: cmd, more: make(chan struct{}, 1)}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		re := regexp.MustCompile(`Listening for transport dt_socket at address: (\d+)`)
		sent := false
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil && !sent {
				addr <- "127.0.0.1:" + m[1]
				sent = true
				continue
			}
			v.mu.Lock()
			if v.out.Len() < maxVMOutput {
				v.out.WriteString(sc.Text())
				v.out.WriteByte('\n')
			}
			v.mu.Unlock()
			select {
			case v.more <- struct{}{}:
			default:
			}
		}
		if !sent {
			close(addr)
		}
	}()
	var a string
	select {
	case a = <-addr:
	case <-time.After(20 * time.Second):
		t.Fatal("agent did not announce its port in 20s")
	}
	if a == "" {
		t.Fatal("agent exited without announcing its port")
	}
	conn, err := net.Dial("tcp", a)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := WriteHandshake(conn); err != nil {
		t.Fatal(err)
	}
	if err := ReadHandshake(conn); err != nil {
		t.Fatal(err)
	}
	v.conn = conn
	return v
}

// TestLiveVM drives a real HotSpot VM: learns its ID sizes, sets event
// requests (encoded by AppendEventRequestSet), resumes it and decodes every
// Event.Composite it sends until it dies. With JDWP_WRITE_CORPUS=1 it saves
// what it saw as fuzz seeds under testdata/fuzz.
func TestLiveVM(t *testing.T) {
	vm := startVM(t)
	conn := vm.conn
	var raw bytes.Buffer // everything the VM sent after the handshake
	rd := NewReader(io.TeeReader(conn, &raw), 0)
	var out []byte
	send := func(id uint32, c Cmd, body []byte) {
		out = AppendCommand(out[:0], id, c, body)
		if _, err := conn.Write(out); err != nil {
			t.Fatalf("write %v: %v", c, err)
		}
	}
	// read returns the next packet, collecting the composites among them.
	var composites [][]byte
	read := func() (Packet, error) {
		p, err := rd.Next()
		if err == nil && !p.IsReply() && p.Cmd() == CmdComposite {
			composites = append(composites, bytes.Clone(p.Body()))
		}
		return p, err
	}
	reply := func(id uint32) Packet {
		for {
			p, err := read()
			if err != nil {
				t.Fatalf("read: %v (%d bytes so far)", err, raw.Len())
			}
			if p.IsReply() {
				if p.ID() != id || p.ErrorCode() != ErrorNone {
					t.Fatalf("reply %v, want id %d without error", p, id)
				}
				return p.Clone()
			}
		}
	}

	send(1, CmdVirtualMachineIDSizes, nil)
	sizes, err := ParseIDSizes(reply(1).Body())
	if err != nil {
		t.Fatal(err)
	}
	requests := []EventRequestSet{
		{EventClassPrepare, SuspendNone, []Modifier{{Kind: ModClassMatch, Pattern: []byte("Hello")}}},
		{EventException, SuspendNone, []Modifier{{Kind: ModExceptionOnly, Caught: true, Uncaught: true}, {Kind: ModClassMatch, Pattern: []byte("Hello")}}},
		{EventMethodExitWithReturnValue, SuspendNone, []Modifier{{Kind: ModClassMatch, Pattern: []byte("Hello")}, {Kind: ModCount, Count: 1}}},
		// Monitor events filter on the monitor's class: Hello waits on an Object.
		{EventMonitorWait, SuspendNone, []Modifier{{Kind: ModClassMatch, Pattern: []byte("java.lang.Object")}}},
		{EventMonitorWaited, SuspendNone, []Modifier{{Kind: ModClassMatch, Pattern: []byte("java.lang.Object")}}},
		{EventThreadStart, SuspendNone, nil},
		{EventThreadDeath, SuspendNone, nil},
	}
	var reqBodies [][]byte
	for i := range requests {
		body := AppendEventRequestSet(nil, sizes, &requests[i])
		reqBodies = append(reqBodies, body)
		var back EventRequestSet
		if err := back.Decode(body, sizes); err != nil {
			t.Fatalf("decode own request: %v", err)
		}
		id := uint32(10 + i)
		send(id, CmdEventRequestSet, body)
		if r := NewBodyReader(reply(id).Body(), sizes); r.Int32() == 0 || r.Err() != nil {
			t.Fatalf("request %d: no request ID (%v)", i, r.Err())
		}
	}
	// The agent reports VM_START from its event helper thread, which
	// suspends every thread first: a resume that reached the VM before
	// that found nothing suspended, and the VM stayed suspended for good
	// (the test's reads then timed out, under load). A debugger resumes
	// once it has the event, as JDI does.
	for !startSeen(composites) {
		if _, err := read(); err != nil {
			t.Fatalf("read before VM_START: %v", err)
		}
	}
	send(50, CmdVirtualMachineResume, nil)
	reply(50)
	// The VM runs Hello to its end and sends VM_DEATH, its last event
	// (then it closes, in its own time).
	for {
		p, err := read()
		if errors.Is(err, io.EOF) || isReset(err) {
			break
		}
		if err != nil {
			t.Fatalf("read after resume (%d composites): %v\n%s", len(composites), err, vm.threadDump())
		}
		if !p.IsReply() && p.Cmd() == CmdComposite && StartsWithVMDeath(p.Body()) {
			break
		}
	}

	seen := map[EventKind]int{}
	var sigs []string
	var c Composite
	for i, body := range composites {
		if err := c.Decode(body, sizes); err != nil {
			t.Errorf("composite %d (%x): %v", i, body, err)
			continue
		}
		again := AppendComposite(nil, sizes, &c)
		if !bytes.Equal(again, body) {
			t.Errorf("composite %d re-encodes differently:\n got %x\nwant %x", i, again, body)
		}
		for _, e := range c.Events {
			seen[e.Kind]++
			if e.Kind == EventClassPrepare {
				sigs = append(sigs, string(e.Signature))
			}
			switch e.Kind {
			case EventMethodExitWithReturnValue: // the first exit in Hello is twice(21)
				if e.Value != (Value{TagInt, 42}) {
					t.Errorf("twice(21) returned %v", e.Value)
				}
			case EventMonitorWait: // lock.wait(1)
				if e.Timeout != 1 || e.Object.Tag != TagObject || e.Object.IsNull() {
					t.Errorf("monitor wait: %+v", e)
				}
			case EventException: // caught in main
				if e.CatchLocation.Class != e.Location.Class || e.CatchLocation.Index <= e.Location.Index || e.Object.IsNull() {
					t.Errorf("exception: %+v", e)
				}
			}
		}
	}
	t.Logf("sizes %+v, %d composites, kinds %v, prepared %v", sizes, len(composites), seen, sigs)
	if len(composites) == 0 || func() bool { _ = c.Decode(composites[0], sizes); return c.Events[0].Kind != EventVMStart }() {
		t.Error("first composite is not VM_START")
	}
	for _, k := range []EventKind{EventVMStart, EventClassPrepare, EventException, EventMethodExitWithReturnValue,
		EventMonitorWait, EventMonitorWaited, EventThreadStart, EventThreadDeath, EventVMDeath} {
		if seen[k] == 0 {
			t.Errorf("no %s event seen", k)
		}
	}
	if !slices.Contains(sigs, "LHello;") {
		t.Errorf("no CLASS_PREPARE for LHello;: %v", sigs)
	}

	if os.Getenv("JDWP_WRITE_CORPUS") == "1" && sizes == sizes8 {
		writeCorpus(t, "FuzzReadPacket", "live-stream", fmt.Sprintf("[]byte(%s)", strconv.Quote(string(raw.Bytes()[:min(raw.Len(), 2048)]))))
		done := map[EventKind]bool{}
		for _, body := range composites {
			_ = c.Decode(body, sizes)
			k := c.Events[0].Kind
			if done[k] {
				continue
			}
			done[k] = true
			writeCorpus(t, "FuzzComposite", "live-"+strings.ToLower(k.String()),
				fmt.Sprintf("[]byte(%s)\nuint16(%d)", strconv.Quote(string(body)), fuzzSizes8))
		}
		for i, body := range reqBodies {
			writeCorpus(t, "FuzzBodyReader", fmt.Sprintf("live-request-%d", i),
				fmt.Sprintf("[]byte(%s)\nuint16(%d)", strconv.Quote(string(append([]byte{opRequestSet}, body...))), fuzzSizes8))
		}
	}
}

func isReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset")
}

func writeCorpus(t *testing.T, target, name, values string) {
	t.Helper()
	dir := filepath.Join("testdata", "fuzz", target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte("go test fuzz v1\n"+values+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// startSeen says whether one of composites reports VM_START.
func startSeen(composites [][]byte) bool {
	for _, body := range composites {
		if _, k, ok := CompositeHead(body); ok && k == EventVMStart {
			return true
		}
	}
	return false
}
