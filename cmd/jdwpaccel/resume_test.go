package main

// A split-mode session that outlives its link: a real OpenJDK VM, the JDI
// driver stepping through "jdwpaccel far" and "jdwpaccel proxy --far",
// and a hop between the two ends that the tests cut.

import (
	"context"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/split"
)

// resumeGap is how long the tests keep the link dead. A gap of 5 s, or
// any other shorter than --resume-within, runs the same code: the near
// end dials again with backoff (up to a second apart) until the hop
// forwards again.
const resumeGap = 1500 * time.Millisecond

// cutHop relays connections to a target; the test can cut them all (drop),
// refuse new ones for a while (setDown), and point it elsewhere.
type cutHop struct {
	ln net.Listener

	mu      sync.Mutex // guards the fields below
	target  string
	down    bool
	conns   []net.Conn
	stalled chan struct{} // closed when a stall ends; nil when not stalled
}

func startCutHop(t *testing.T, target string) *cutHop {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &cutHop{ln: ln, target: target}
	t.Cleanup(func() {
		ln.Close()
		h.mu.Lock()
		if h.stalled != nil {
			close(h.stalled)
			h.stalled = nil
		}
		h.mu.Unlock()
		h.drop()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			h.mu.Lock()
			down, target := h.down, h.target
			h.mu.Unlock()
			if down {
				c.Close()
				continue
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			h.mu.Lock()
			h.conns = append(h.conns, c, u)
			h.mu.Unlock()
			go h.pipe(u, c)
			go h.pipe(c, u)
		}
	}()
	return h
}

// pipe copies src to dst, holding what it read while the hop is stalled.
func (h *cutHop) pipe(dst, src net.Conn) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		h.mu.Lock()
		stalled := h.stalled
		h.mu.Unlock()
		if stalled != nil {
			<-stalled
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// stall stops the hop forwarding, its connections open, for d.
func (h *cutHop) stall(d time.Duration) {
	h.mu.Lock()
	ch := make(chan struct{})
	h.stalled = ch
	h.mu.Unlock()
	time.AfterFunc(d, func() {
		h.mu.Lock()
		h.stalled = nil
		h.mu.Unlock()
		close(ch)
	})
}

func (h *cutHop) addr() string { return h.ln.Addr().String() }

// drop resets every connection through the hop.
func (h *cutHop) drop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
		c.Close()
	}
	h.conns = nil
}

func (h *cutHop) setDown(down bool) {
	h.mu.Lock()
	h.down = down
	h.mu.Unlock()
}

func (h *cutHop) setTarget(addr string) {
	h.mu.Lock()
	h.target = addr
	h.mu.Unlock()
}

// count counts the log lines with message msg.
func (l logSink) count(msg string) int {
	return l.Count(func(rec map[string]any) bool { return rec["message"] == msg })
}

const (
	linkLost      = "the link to the other end was lost; the session waits for it to come back (the debugger and the VM stay connected)"
	linkBack      = "the link came back; the session goes on"
	farTookUp     = "the near end took the session up again"
	graceExpired  = "the link did not come back within the grace period; ending the session (the VM resets as after a detach)"
	farForgot     = "the far end refused to take the session up again (it restarted, or ended the session); ending the session"
	sessionOpened = "debugger session started"
)

// stepDriver runs the JDI driver against a fresh VM at addr(vm).
func stepDriver(t *testing.T, b *javavm.Build, opts javavm.DriverOptions, addr func(vm string) string) *javavm.DriverResult {
	t.Helper()
	vm := jdwptest.StartJava(t, b, opts.Debuggee)
	opts.Addr = addr(vm.Addr())
	ctx, cancel := context.WithTimeout(testCtx(t), 90*time.Second)
	defer cancel()
	res, err := javavm.RunDriver(ctx, b, opts)
	if err != nil {
		t.Fatalf("driver: %v\nVM output:\n%s", err, vm.Output())
	}
	return res
}

// TestSplitResumeStepping: a JDI client steps through split mode while
// the link dies: once for resumeGap (the hop refusing new connections
// meanwhile), then ten times in a row, one drop per step; and while the
// link stalls (the hop forwards nothing for resumeGap, its connections
// open: shorter than the link timeout, TCP holds the bytes). Every stop's
// digest (everything the client saw: frames, variables, values) equals a
// direct session's, the far end opened one VM session for it all, and a
// stranger holding the token and the session's ID (say, from a log) but
// not its secret cannot take it over.
func TestSplitResumeStepping(t *testing.T) {
	b := jdwptest.JavaBuild(t)
	opts := javavm.DriverOptions{Debuggee: javavm.Deep, Profile: javavm.ProfileIdeaLike, Steps: 16, Warmup: 1}
	direct := stepDriver(t, b, opts, func(vm string) string { return vm })

	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("correct horse battery staple\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	token, err := split.ReadTokenFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	var far, near *splitEnd
	var h *cutHop
	var strangerStatus split.Status
	opts.OnStop = func(s javavm.Stop) {
		switch {
		case s.Index == 1:
			strangerStatus = stranger(t, far, token)
		case s.Index == 2:
			h.setDown(true)
			h.drop()
			time.AfterFunc(resumeGap, func() { h.setDown(false) })
		case s.Index >= 4 && s.Index < 14:
			h.drop()
		case s.Index == 15:
			h.stall(resumeGap)
		}
	}
	res := stepDriver(t, b, opts, func(vm string) string {
		far = startFarEnd(t, vm, "--token-file", tokenFile)
		h = startCutHop(t, far.addr)
		near = startNearEnd(t, h.addr(), "--token-file", tokenFile)
		return near.addr
	})
	if !slices.Equal(direct.Digests(), res.Digests()) {
		t.Errorf("digests differ from the direct session's:\ndirect %v\nsplit  %v", direct.Digests(), res.Digests())
	}
	if n := near.logs.count(linkBack); n < 11 {
		t.Errorf("the near end resumed %d times, want 11 (one drop with a gap, ten in a row)\nnear log:\n%s", n, near.logs)
	}
	if n := far.logs.count(sessionOpened); n != 1 {
		t.Errorf("the far end opened %d VM sessions, want 1", n)
	}
	if strangerStatus != split.StatusRefused {
		t.Errorf("a stranger with the token and without the secret: status %v, want refused", strangerStatus)
	}
	for _, s := range res.Stops {
		t.Logf("stop %2d: %7.1f ms", s.Index, s.MS)
	}
	// The steps after the gap and the stall waited for the link.
	for _, i := range []int{3, 16} {
		if i < len(res.Stops) && res.Stops[i].MS < float64(resumeGap.Milliseconds()) {
			t.Errorf("stop %d took %.1f ms: the link's fault before it did not hold it up (%v)", i, res.Stops[i].MS, resumeGap)
		}
	}
}

// stranger tries to take the far end's session over with the token and
// the session's ID from its log, without the secret.
func stranger(t *testing.T, far *splitEnd, token []byte) split.Status {
	rec := far.logs.Find(func(rec map[string]any) bool { _, ok := rec[split.LogLinkSession]; return ok })
	if rec == nil {
		t.Error("the far end logged no session ID")
		return 0
	}
	var id split.SessionID
	if b, err := hex.DecodeString(rec[split.LogLinkSession].(string)); err != nil || len(b) != len(id) {
		t.Errorf("session ID %v", rec[split.LogLinkSession])
		return 0
	} else {
		copy(id[:], b)
	}
	c, err := net.Dial("tcp", far.addr)
	if err != nil {
		t.Error(err)
		return 0
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	hello := split.AppendHello(nil, split.Hello{Version: split.ProtocolVersion, Flags: split.FlagReconnect, Token: token,
		Resume: split.Resume{Session: id}})
	if _, err := c.Write(hello); err != nil {
		t.Error(err)
		return 0
	}
	rep, err := split.ReadReply(c)
	if err != nil {
		t.Error(err)
	}
	return rep.Status
}

// TestSplitResumeGraceExpires: a link gone for longer than --resume-within
// ends the session on both ends, each saying why; the VM resets (no thread
// stays suspended at the breakpoint) and the next attach works.
func TestSplitResumeGraceExpires(t *testing.T) {
	b := jdwptest.JavaBuild(t)
	// The next attach's VM connection is the agent's second: at the port it
	// listens on again, held.
	port := heldPort(t)
	startJVMAt(t, b, port, javavm.Shallow)
	far := startFarEnd(t, vmAddr(port), "--resume-within", "1s")
	h := startCutHop(t, far.addr)
	near := startNearEnd(t, h.addr(), "--resume-within", "1s")

	d := attach(t, near.addr)
	d.idSizes()
	d.breakAtMain(javavm.Shallow)
	h.setDown(true)
	h.drop()
	if err := readUntilClosed(d.conn, 15*time.Second); !connEnded(err) {
		t.Errorf("the debugger's connection after the grace: %v", err)
	}
	for name, e := range map[string]*splitEnd{"near": near, "far": far} {
		e.logs.wait(t, "on the "+name+" end saying the grace passed", 15*time.Second, func(rec map[string]any) bool {
			return rec["message"] == graceExpired
		})
	}
	far.logs.sessionEnd(t, 1)
	h.setDown(false)
	d2 := attach(t, near.addr)
	d2.idSizes()
	counts := d2.suspendCounts()
	if len(counts) == 0 {
		t.Fatal("no threads")
	}
	for i, n := range counts {
		if n != 0 {
			t.Errorf("thread %d of %d has suspend count %d: the VM did not reset when the session ended", i, len(counts), n)
		}
	}
}

// TestSplitResumeFarRestarted: the far end restarts (a new process, a new
// address behind the same tunnel) while the link is down: the near end's
// reconnect learns that the session is gone and ends the debugger's
// session with a line that says so; the VM reset with the old far end,
// and the next attach works.
func TestSplitResumeFarRestarted(t *testing.T) {
	b := jdwptest.JavaBuild(t)
	// The restarted far end's VM connection is the agent's second: at the
	// port it listens on again, held.
	port := heldPort(t)
	startJVMAt(t, b, port, javavm.Shallow)
	far := startFarEnd(t, vmAddr(port))
	h := startCutHop(t, far.addr)
	near := startNearEnd(t, h.addr())

	d := attach(t, near.addr)
	d.idSizes()
	d.breakAtMain(javavm.Shallow)
	h.setDown(true)
	h.drop()
	near.logs.wait(t, "of the link loss", 15*time.Second, func(rec map[string]any) bool { return rec["message"] == linkLost })
	far.stop()
	far2 := startFarEnd(t, vmAddr(port))
	h.setTarget(far2.addr)
	h.setDown(false)
	if err := readUntilClosed(d.conn, 15*time.Second); !connEnded(err) {
		t.Errorf("the debugger's connection after the far end restarted: %v", err)
	}
	rec := near.logs.wait(t, "saying the far end forgot the session", 15*time.Second, func(rec map[string]any) bool {
		return rec["message"] == farForgot
	})
	if e, _ := rec["error"].(string); !strings.Contains(e, "does not hold the session") {
		t.Errorf("near end's reason %q", e)
	}
	d2 := attach(t, near.addr)
	d2.idSizes()
	for i, n := range d2.suspendCounts() {
		if n != 0 {
			t.Errorf("thread %d has suspend count %d: the VM did not reset", i, n)
		}
	}
}
