// Package ddmlibtest runs Google's ddmlib (Debian libandroid-ddms-java,
// ddmlib 25.2.2) as a real DDM peer against the fake VM, directly and
// through the proxy. testdata/DdmlibPeer.java is compiled with javac at
// test time against the Debian jars and prints ddmlib's ClientData as JSON
// lines. Without java, javac or the jars the tests skip, except under
// CI=true, where that is a failure.
package ddmlibtest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// jarDir holds the Debian jars: libandroid-ddms-java (ddmlib),
// libandroid-tools-common-java, libguava-java, libkxml2-java.
const jarDir = "/usr/share/java"

var jars = []string{"com.android.tools.ddms.ddmlib.jar", "com.android.tools.common.jar", "guava.jar", "kxml2.jar"}

var build struct {
	once    sync.Once
	dir     string // compiled classes
	java    string
	missing string // what is missing, if anything
	err     error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
	os.Exit(code)
}

// classpath compiles the peer once per test binary and returns the java
// binary and class path; it skips (fails under CI=true) when a tool or a
// jar is missing.
func classpath(t *testing.T) (java, cp string) {
	t.Helper()
	build.once.Do(compilePeer)
	if build.missing != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and %s is missing (apt-get install openjdk-17-jdk-headless libandroid-ddms-java libandroid-tools-common-java libguava-java libkxml2-java)", build.missing)
		}
		t.Skipf("%s is missing: ddmlib tests skipped", build.missing)
	}
	if build.err != nil {
		t.Fatal(build.err)
	}
	parts := []string{build.dir}
	for _, j := range jars {
		parts = append(parts, filepath.Join(jarDir, j))
	}
	return build.java, strings.Join(parts, string(os.PathListSeparator))
}

func compilePeer() {
	var javac string
	for _, tool := range []string{"java", "javac"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			build.missing = tool
			return
		}
		if tool == "java" {
			build.java = p
		} else {
			javac = p
		}
	}
	var cp []string
	for _, j := range jars {
		p := filepath.Join(jarDir, j)
		if _, err := os.Stat(p); err != nil {
			build.missing = p
			return
		}
		cp = append(cp, p)
	}
	dir, err := os.MkdirTemp("", "ddmlibpeer")
	if err != nil {
		build.err = err
		return
	}
	build.dir = dir // shared by every test of the binary; TestMain removes it
	out, err := exec.Command(javac, "-nowarn", "-d", dir, "-cp", strings.Join(cp, string(os.PathListSeparator)), filepath.Join("testdata", "DdmlibPeer.java")).CombinedOutput()
	if err != nil {
		build.err = fmt.Errorf("javac DdmlibPeer.java: %v\n%s", err, out)
	}
}

// ClientState is DdmlibPeer's JSON view of ddmlib's ClientData.
type ClientState struct {
	PID              uint32       `json:"pid"`
	DDMAware         bool         `json:"ddmAware"`
	VM               *string      `json:"vm"`
	App              *string      `json:"app"`
	ValidUserID      bool         `json:"validUserId"`
	UserID           uint32       `json:"userId"`
	ABI              *string      `json:"abi"`
	JVMFlags         *string      `json:"jvmFlags"`
	NativeDebuggable bool         `json:"nativeDebuggable"`
	Features         []string     `json:"features"`
	ThreadUpdates    bool         `json:"threadUpdates"`
	Threads          []PeerThread `json:"threads"`
	HeapInfo         []PeerHeap   `json:"heapInfo"`
	Heap             *PeerHeapMap `json:"heap"`
}

// PeerThread is one ddmlib ThreadInfo; Status is -1 until a THST reply.
type PeerThread struct {
	ID     uint32 `json:"id"`
	Name   string `json:"name"`
	Status int    `json:"status"`
	TID    uint32 `json:"tid"`
	UTime  uint32 `json:"utime"`
	STime  uint32 `json:"stime"`
	Daemon bool   `json:"daemon"`
}

// PeerHeap is one ddmlib ClientData.HeapInfo.
type PeerHeap struct {
	ID        uint32 `json:"id"`
	Max       uint64 `json:"max"`
	Size      uint64 `json:"size"`
	Allocated uint64 `json:"allocated"`
	Objects   uint64 `json:"objects"`
	Time      int64  `json:"time"`
	Reason    uint8  `json:"reason"`
}

// PeerHeapMap summarises ddmlib's decoded heap segments per DDMS bucket.
type PeerHeapMap struct {
	Segments int          `json:"segments"`
	Bytes    uint64       `json:"bytes"`
	Elements uint64       `json:"elements"`
	Buckets  []PeerBucket `json:"buckets"`
}

// PeerBucket is one DDMS Stats row computed from ddmlib's elements.
type PeerBucket struct {
	Bucket   uint8  `json:"bucket"`
	Count    uint64 `json:"count"`
	Total    uint64 `json:"total"`
	Smallest uint64 `json:"smallest"`
	Largest  uint64 `json:"largest"`
	Median   uint64 `json:"median"`
}

type peerEvent struct {
	Event  string       `json:"event"`
	Mask   int          `json:"mask"`
	Cmd    string       `json:"cmd"`
	Level  string       `json:"level"`
	Tag    string       `json:"tag"`
	Msg    string       `json:"msg"`
	Client *ClientState `json:"client"`
}

// Peer is one running DdmlibPeer: ddmlib connected to one VM address.
type Peer struct {
	t      *testing.T
	stdin  io.WriteCloser
	events chan peerEvent // closed when stdout ends

	mu       sync.Mutex // guards state, logs, all and profiles
	state    ClientState
	logs     []string // ddmlib warnings and errors
	all      []string // every log line ddmlib printed (all levels with startPeerAllLogs)
	profiles int      // CHANGE_METHOD_PROFILING_STATUS events consumed so far
}

// changeProfiling is ddmlib's Client.CHANGE_METHOD_PROFILING_STATUS, sent
// after each MPRQ reply.
const changeProfiling = 2048

// startPeer runs ddmlib against addr ("host:port"), claiming pid for the
// VM as adb would.
func startPeer(t *testing.T, addr string, pid uint32) *Peer {
	t.Helper()
	return startPeerEnv(t, addr, pid)
}

// startPeerAllLogs is startPeer with ddmlib logging at every level
// (verbose and debug too), for comparing what it saw line for line.
func startPeerAllLogs(t *testing.T, addr string, pid uint32) *Peer {
	t.Helper()
	return startPeerEnv(t, addr, pid, "DDMLIB_PEER_LOGS=all")
}

func startPeerEnv(t *testing.T, addr string, pid uint32, env ...string) *Peer {
	t.Helper()
	java, cp := classpath(t)
	host, port, ok := strings.Cut(addr, ":")
	if !ok {
		t.Fatalf("bad address %q", addr)
	}
	cmd := exec.Command(java, "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", cp, "com.android.ddmlib.DdmlibPeer", host, port, fmt.Sprint(pid))
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &Peer{t: t, stdin: stdin, events: make(chan peerEvent, 1024)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(p.events)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var ev peerEvent
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				ev = peerEvent{Event: "log", Level: "error", Tag: "harness", Msg: "unparsable line: " + sc.Text()}
			}
			p.events <- ev
		}
	}()
	t.Cleanup(func() {
		stdin.Close() // the peer exits at the end of its input
		exited := make(chan error, 1)
		go func() {
			for range p.events { // drain so the reader never blocks
			}
			<-done
			exited <- cmd.Wait()
		}()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			p.mu.Lock()
			t.Logf("ddmlib warnings and errors: %q\nstderr: %s", p.logs, stderr.String())
			p.mu.Unlock()
		}
	})
	return p
}

// send writes one command and waits for its acknowledgement (ddmlib has
// sent the request by then).
func (p *Peer) send(cmd string) {
	p.t.Helper()
	if _, err := io.WriteString(p.stdin, cmd+"\n"); err != nil {
		p.t.Fatalf("ddmlib peer: %s: %v", cmd, err)
	}
	p.await("ack of "+cmd, func(ev peerEvent) bool { return ev.Event == "ack" && ev.Cmd == cmd })
}

// await consumes events until one matches, keeping the latest client state
// and the ddmlib log lines; it fails the test after 20 s or if the peer
// exits.
func (p *Peer) await(what string, match func(peerEvent) bool) {
	p.t.Helper()
	timeout := time.NewTimer(20 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case ev, ok := <-p.events:
			if !ok {
				p.t.Fatalf("ddmlib peer exited while waiting for %s", what)
			}
			p.mu.Lock()
			switch ev.Event {
			case "change", "dump":
				p.state = *ev.Client
				if ev.Event == "change" && ev.Mask&changeProfiling != 0 {
					p.profiles++
				}
			case "log":
				line := ev.Level + " " + ev.Tag + ": " + ev.Msg
				p.all = append(p.all, line)
				if ev.Level == "warn" || ev.Level == "error" || ev.Level == "assert" {
					p.logs = append(p.logs, line)
				}
			case "fatal":
				p.mu.Unlock()
				p.t.Fatalf("ddmlib peer: %s", ev.Msg)
			}
			p.mu.Unlock()
			if match(ev) {
				return
			}
		case <-timeout.C:
			p.mu.Lock()
			st, logs := p.state, p.logs
			p.mu.Unlock()
			p.t.Fatalf("waiting for %s: timed out; ddmlib state %+v; logs %q", what, st, logs)
		}
	}
}

// wait returns ddmlib's client state once cond holds for it.
func (p *Peer) wait(what string, cond func(ClientState) bool) ClientState {
	p.t.Helper()
	p.mu.Lock()
	st := p.state
	p.mu.Unlock()
	if cond(st) { // already true
		return st
	}
	// ddmlib does not announce every change it makes to its client data
	// (a burst of THCR chunks can yield fewer change events than
	// threads), so while waiting, its state is also asked for once a
	// second.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := io.WriteString(p.stdin, "peek\n"); err != nil {
					return
				}
			}
		}
	}()
	p.await(what, func(ev peerEvent) bool { return ev.Client != nil && cond(*ev.Client) })
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state
}

// ready waits until ddmlib has the VM's HELO reply (and so has sent its
// connect-time requests); commands sent earlier can race with ddmlib's
// handshake, which discards what arrives with the echo.
func (p *Peer) ready() ClientState {
	p.t.Helper()
	return p.wait("ddmlib to read HELO", func(s ClientState) bool { return s.DDMAware && s.App != nil })
}

// connected waits for ready and for the reply to the MPRQ ddmlib sends
// on connect (so that sync cannot mistake it for its own), then syncs:
// ddmlib's FEAT (which reports no change) and its connect-time requests
// have been handled by then.
func (p *Peer) connected() ClientState {
	p.t.Helper()
	p.ready()
	p.until("the reply to ddmlib's connect-time MPRQ", func() bool { return p.profiles > 0 })
	return p.sync()
}

// current asks ddmlib for its state now: everything ddmlib received before
// it handled the dump command is in it.
func (p *Peer) current() ClientState {
	p.t.Helper()
	p.send("dump")
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state
}

// sync asks the VM for its method profiling status (MPRQ, which every
// profile but design2007 answers, and which nothing else in these tests
// sends) and returns ddmlib's state once the reply has been handled. The
// VM answers in order and ddmlib handles packets in order, so everything
// the VM sent before that reply is in the state.
func (p *Peer) sync() ClientState {
	p.t.Helper()
	p.mu.Lock()
	before := p.profiles
	p.mu.Unlock()
	p.send("mprq")
	p.until("MPRQ reply", func() bool { return p.profiles > before })
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state
}

// until waits until cond, called with p.mu held, holds: at once, or after
// some event (which may have been consumed by an earlier wait).
func (p *Peer) until(what string, cond func() bool) {
	p.t.Helper()
	check := func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return cond()
	}
	if !check() {
		p.await(what, func(peerEvent) bool { return check() })
	}
}

// allLogs returns every log line ddmlib printed so far.
func (p *Peer) allLogs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.all...)
}

// errors returns ddmlib's warnings and errors so far.
func (p *Peer) errors() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.logs...)
}

func deref(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}

// withTimeout is a context for waits on the monitor.
func withTimeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}
