package main

// Split mode through the real commands: "jdwpaccel far" next to a real
// OpenJDK VM, "jdwpaccel proxy --far" in front of it, real jdb and JDI
// debuggers; Go fakes only where a real peer cannot misbehave as needed.

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/ddmtap/fakevm"
	"github.com/jdwpaccel/jdwpaccel/internal/jdbtest"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/internal/logsink"
	"github.com/rs/zerolog"
)

// splitEnd is one in-process "jdwpaccel far" or "jdwpaccel proxy" (with
// --far, or --vm as faultProxy starts it).
type splitEnd struct {
	addr string
	logs logSink
	stop func() // cancels it and waits for its exit
}

// startEnd runs "jdwpaccel" with args and returns once it logged the
// message listening (whose "listen" field is its address).
func startEnd(t *testing.T, listening string, args ...string) *splitEnd {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	e := &splitEnd{logs: logSink{logsink.New()}}
	args = append([]string{args[0], "--http-addr", "", "--log-format", "json", "--log-level", "debug"}, args[1:]...)
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, args, &env{stdout: io.Discard, stderr: pw})
		pw.Close()
	}()
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			e.logs.Write(sc.Bytes())
		}
	}()
	var once sync.Once
	e.stop = func() {
		once.Do(func() {
			cancel()
			if code := <-done; code != exitOK {
				t.Errorf("%s exited %d after cancel; log:\n%s", args[0], code, e.logs)
			}
			<-scanned
		})
	}
	t.Cleanup(e.stop)
	rec := e.logs.wait(t, "with the listen address", 10*time.Second, func(rec map[string]any) bool {
		return rec["message"] == listening
	})
	e.addr, _ = rec["listen"].(string)
	return e
}

const (
	farListening  = "far end listening; point the near end here (jdwpaccel proxy --far)"
	nearListening = "proxy listening; attach the debugger here"
)

func startFarEnd(t *testing.T, vm string, extra ...string) *splitEnd {
	t.Helper()
	return startEnd(t, farListening, append([]string{"far", "--vm", vm, "--listen", "127.0.0.1:0"}, extra...)...)
}

func startNearEnd(t *testing.T, far string, extra ...string) *splitEnd {
	t.Helper()
	return startEnd(t, nearListening, append([]string{"proxy", "--far", far, "--listen", "127.0.0.1:0"}, extra...)...)
}

// TestSplitRealJDB: jdb's transcript through near and far end equals the
// direct one, and the far end speculated for it.
func TestSplitRealJDB(t *testing.T) {
	b := jdwptest.JavaBuild(t)
	script := jdbtest.TranscriptScript(t)
	direct := jdbtest.Direct(testCtx(t), t, b, script)
	far := startFarEnd(t, jdwptest.StartJava(t, b, javavm.Transcript).Addr())
	near := startNearEnd(t, far.addr)
	near.logs.wait(t, "of the start probe", 10*time.Second, func(rec map[string]any) bool { return rec["message"] == "far end reached" })
	split, err := jdbtest.Run(testCtx(t), b, near.addr, script)
	if err != nil {
		t.Fatalf("%v\nnear log:\n%s\nfar log:\n%s", err, near.logs, far.logs)
	}
	jdbtest.Same(t, direct, split, "split mode")
}

// hop is a TCP relay between near and far end whose connections the test
// can cut, as a link that drops.
type hop struct {
	ln    net.Listener
	mu    sync.Mutex // guards conns
	conns []net.Conn
}

func startHop(t *testing.T, target string) *hop {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &hop{ln: ln}
	t.Cleanup(func() { ln.Close(); h.drop() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			h.mu.Lock()
			h.conns = append(h.conns, c, u)
			h.mu.Unlock()
			go func() { io.Copy(u, c); u.Close() }() //nolint:errcheck // ends with the drop
			go func() { io.Copy(c, u); c.Close() }() //nolint:errcheck
		}
	}()
	return h
}

// drop resets every connection through the hop.
func (h *hop) drop() {
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

// TestSplitLinkDrop: without resuming (--resume-within 0), the link
// dropping while the VM is stopped at a breakpoint ends the session on
// both ends: the debugger's connection closes, the far end logs the end
// and closes its VM connection, so the VM resets (no thread stays
// suspended) and the next session works.
func TestSplitLinkDrop(t *testing.T) {
	b := jdwptest.JavaBuild(t)
	// The next session's VM connection is the agent's second: at the port
	// it listens on again, held.
	port := heldPort(t)
	startJVMAt(t, b, port, javavm.Shallow)
	far := startFarEnd(t, vmAddr(port), "--resume-within", "0")
	h := startHop(t, far.addr)
	near := startNearEnd(t, h.ln.Addr().String(), "--resume-within", "0")

	d := attach(t, near.addr)
	d.idSizes()
	d.breakAtMain(javavm.Shallow)
	h.drop()
	if err := readUntilClosed(d.conn, 15*time.Second); !connEnded(err) {
		t.Errorf("the debugger's connection after the link dropped: %v", err)
	}
	if end := near.logs.sessionEnd(t, 1); end["closed_by"] != "vm" {
		t.Errorf("near end's session end %v; want closed_by=vm (the link)", end)
	}
	if end := far.logs.sessionEnd(t, 1); end["closed_by"] != "debugger" {
		t.Errorf("far end's session end %v; want closed_by=debugger (the link)", end)
	}

	d2 := attach(t, near.addr)
	d2.idSizes()
	counts := d2.suspendCounts()
	if len(counts) == 0 {
		t.Fatal("no threads")
	}
	for i, n := range counts {
		if n != 0 {
			t.Errorf("thread %d of %d has suspend count %d: the VM did not reset when the link dropped", i, len(counts), n)
		}
	}
}

// TestSplitFarRestart: the far end restarting on its address between
// sessions is survived by the near end: the next session works.
func TestSplitFarRestart(t *testing.T) {
	b := jdwptest.JavaBuild(t)
	// The restarted far end's VM connection is the agent's second, and the
	// far end restarts where the near end found it (the test's point):
	// both at ports held.
	port := heldPort(t)
	startJVMAt(t, b, port, javavm.Shallow)
	far := startFarEnd(t, vmAddr(port), "--listen", heldAddr(t))
	near := startNearEnd(t, far.addr)
	d := attach(t, near.addr)
	if v := d.version(); !strings.Contains(v, "Java") {
		t.Errorf("version %q", v)
	}
	d.conn.Close()
	// Between sessions: once it left (a client attaching before would
	// share its session).
	near.logs.wait(t, "of the debugger leaving", 10*time.Second, func(rec map[string]any) bool {
		return rec["message"] == "client detached" && rec["debugger"] == d.conn.LocalAddr().String()
	})
	far.stop()
	if _, err := tryAttach(near.addr); err == nil {
		t.Error("a debugger attached while the far end was down")
	}
	startEnd(t, farListening, "far", "--vm", vmAddr(port), "--listen", far.addr)
	d2 := attach(t, near.addr)
	if v := d2.version(); !strings.Contains(v, "Java") {
		t.Errorf("version after the far end restarted %q", v)
	}
}

// writeTLSFiles writes a self-signed certificate and its key (0600) to
// dir, as openssl would.
func writeTLSFiles(t *testing.T, dir, name string) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	cert, key = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// TestSplitRemoteTLSToken: a far end on all interfaces, with TLS and a
// token, warns, and lets in exactly the near end with its certificate
// pinned and the token; one with a wrong token is refused at its start
// with a message saying so, and stops.
func TestSplitRemoteTLSToken(t *testing.T) {
	b := jdwptest.JavaBuild(t)
	dir := t.TempDir()
	cert, key := writeTLSFiles(t, dir, "far")
	token, wrong := filepath.Join(dir, "token"), filepath.Join(dir, "wrong")
	os.WriteFile(token, []byte("correct horse battery staple\n"), 0o600)
	os.WriteFile(wrong, []byte("incorrect horse battery staple\n"), 0o600)
	vm := startJVM(t, b, javavm.Shallow)
	far := startFarEnd(t, vm.addr(), "--listen", "0.0.0.0:0", "--allow-remote", "--tls-cert", cert, "--tls-key", key, "--token-file", token)
	if far.logs.Find(func(rec map[string]any) bool {
		return rec["level"] == "warn" && strings.Contains(rec["message"].(string), "non-loopback")
	}) == nil {
		t.Errorf("no warning about listening beyond loopback:\n%s", far.logs)
	}
	_, farPort, _ := net.SplitHostPort(far.addr)
	farAddr := net.JoinHostPort("127.0.0.1", farPort)

	// A near end with the wrong token stops at start.
	if code, _, raw := runToExit(t, "proxy", "--far", farAddr, "--listen", "127.0.0.1:0", "--far-cert", cert, "--token-file", wrong); code != exitError || !strings.Contains(raw, "refused the token") {
		t.Errorf("near end with the wrong token: exit %d, want %d and a log saying the far end refused the token:\n%s", code, exitError, raw)
	}
	far.logs.wait(t, "of the refusal", 10*time.Second, func(rec map[string]any) bool { return rec["reason"] == "unauthorized" })

	good := startNearEnd(t, farAddr, "--far-cert", cert, "--token-file", token)
	d := attach(t, good.addr)
	if v := d.version(); !strings.Contains(v, "Java") {
		t.Errorf("version %q", v)
	}
}

func TestSplitUsage(t *testing.T) {
	dir := t.TempDir()
	cert, key := writeTLSFiles(t, dir, "far")
	open := filepath.Join(dir, "open")
	os.WriteFile(open, []byte("0123456789abcdef0123\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"far"}, "--vm HOST:PORT is required"},
		{[]string{"far", "--vm", "scan:"}, "bad --vm"},
		{[]string{"far", "--vm", "127.0.0.1:1", "--listen", "0.0.0.0:0"}, "pass --allow-remote with TLS"},
		{[]string{"far", "--vm", "127.0.0.1:1", "--listen", "0.0.0.0:0", "--allow-remote"}, "it needs TLS"},
		{[]string{"far", "--vm", "127.0.0.1:1", "--listen", "0.0.0.0:0", "--allow-remote", "--tls-cert", cert, "--tls-key", key}, "needs --token-file, --users-file or --peer-cert"},
		{[]string{"far", "--vm", "127.0.0.1:1", "--tls-cert", cert}, "go together"},
		{[]string{"far", "--vm", "127.0.0.1:1", "--token-file", open}, "chmod 600"},
		{[]string{"proxy", "--vm", "127.0.0.1:1", "--far", "127.0.0.1:2"}, "not both"},
		{[]string{"proxy", "--vm", "127.0.0.1:1", "--token-file", open}, "go with --far"},
		{[]string{"proxy", "--far", "nonsense"}, "bad --far"},
		{[]string{"proxy", "--far", "127.0.0.1:2", "--token-file", open}, "chmod 600"},
		{[]string{"proxy", "--far", "127.0.0.1:2", "--tls-cert", cert, "--tls-key", key}, "needs --far-cert"},
	} {
		code, out, errOut := runCapture(append(c.args, "--http-addr", "")...)
		if code != exitUsage || !strings.Contains(out+errOut, c.want) {
			t.Errorf("%q: exit %d, output %q; want exit %d saying %q", c.args, code, out+errOut, exitUsage, c.want)
		}
	}
}

// TestSplitFarPage: the far end's DDM monitor (here of a fake Android VM:
// no real ART runs here) shows on the near end's page, under /far/, over
// the link and behind its token.
func TestSplitFarPage(t *testing.T) {
	vm, err := fakevm.Listen("127.0.0.1:0", fakevm.Config{Profile: fakevm.Dalvik, Seed: 3, Threads: 4, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go vm.Serve(ctx) //nolint:errcheck // ends with ctx
	token := filepath.Join(t.TempDir(), "token")
	os.WriteFile(token, []byte("0123456789abcdef0123\n"), 0o600)
	far := startFarEnd(t, vm.Addr(), "--ddm=force", "--ddm-poll", "200ms", "--token-file", token)
	near := startNearEnd(t, far.addr, "--token-file", token, "--http-addr", "127.0.0.1:0")
	rec := near.logs.wait(t, "with the far end's page", 10*time.Second, func(rec map[string]any) bool {
		return strings.HasPrefix(rec["message"].(string), "the far end's live monitor")
	})
	url, _ := rec["url"].(string)
	if !strings.HasSuffix(url, "/far/") {
		t.Fatalf("far page URL %q", url)
	}
	jdwptest.Eventually(t, "the far end's DDM threads on the near end's page", func() (bool, string) {
		s := getSnapshot(t, url)
		for _, th := range s.Threads {
			if len(th) >= 4 {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", s)
	})
	if s := getSnapshot(t, url); s.Role != "far end" {
		t.Errorf("the far end's page, under /far/, has role %q, want far end", s.Role)
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Errorf("the far end's page: %s, %s", resp.Status, resp.Header.Get("Content-Type"))
	}
}
