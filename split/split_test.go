package split

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench/link"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"
)

// vmSide is a scripted VM behind a dialer that counts the far end's
// connections to it and signals each close.
type vmSide struct {
	vm     *jdwptest.VM
	dials  atomic.Int32
	closed chan struct{} // one value per VM connection the far end closed
}

func newVMSide(t testing.TB) *vmSide {
	var version jdwp.BodyWriter
	version.String("fake VM")
	return &vmSide{
		vm: jdwptest.StartVM(t, jdwptest.Script{Replies: map[jdwp.Cmd]jdwptest.ReplyFunc{
			jdwp.CmdVirtualMachineVersion: jdwptest.Body(version.Buf),
		}}),
		closed: make(chan struct{}, 16),
	}
}

// closeSignal signals when the far end closes its VM connection.
type closeSignal struct {
	net.Conn
	once   atomic.Bool
	closed chan<- struct{}
}

func (c *closeSignal) Close() error {
	if c.once.CompareAndSwap(false, true) {
		c.closed <- struct{}{}
	}
	return c.Conn.Close()
}

func (v *vmSide) dialer() relay.Dialer {
	return relay.Plain(func(ctx context.Context) (net.Conn, error) {
		v.dials.Add(1)
		c, err := relay.TCP(v.vm.Addr())(ctx)
		if err != nil {
			return nil, err
		}
		return &closeSignal{Conn: c, closed: v.closed}, nil
	})
}

// farEnd is a running far end and its log.
type farEnd struct {
	addr    string
	log     *jdwptest.Buffer
	metrics *Metrics
	reg     *prometheus.Registry
	far     *Far
	stop    func()
}

// startFar serves a far end in front of v on addr (127.0.0.1:0 for any
// port) until the test ends or stop is called.
func startFar(t testing.TB, v *vmSide, addr string, cfg FarConfig) *farEnd {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return serveFar(t, v, ln, cfg)
}

// serveFar serves a far end in front of v on ln until the test ends or
// stop is called.
func serveFar(t testing.TB, v *vmSide, ln net.Listener, cfg FarConfig) *farEnd {
	t.Helper()
	f := &farEnd{addr: ln.Addr().String(), log: &jdwptest.Buffer{}, reg: prometheus.NewRegistry()}
	f.metrics = NewMetrics(f.reg)
	cfg.Relay.DialVM = v.dialer()
	cfg.Relay.Logger = zerolog.New(f.log)
	cfg.Logger = zerolog.New(f.log)
	cfg.Metrics = f.metrics
	cfg.Software = "test-far"
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	f.far = NewFar(cfg)
	go func() {
		defer close(done)
		f.far.Serve(ctx, ln) //nolint:errcheck // nil after cancel
	}()
	f.stop = func() { cancel(); <-done }
	t.Cleanup(f.stop)
	return f
}

func (f *farEnd) count(o Outcome) float64 {
	return testutil.ToFloat64(f.metrics.conns[EndFar][o])
}

// startNear serves a near end (a plain relay whose VM is reached through
// Dialer(cfg)) and returns where debuggers attach.
func startNear(t testing.TB, cfg NearConfig) string {
	t.Helper()
	return startNearHooks(t, cfg, nil)
}

// startNearHooks is startNear with hooks.
func startNearHooks(t testing.TB, cfg NearConfig, hooks func(*relay.Session) relay.Hooks) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Software = "test-near"
	srv := relay.NewServer(relay.Config{DialVM: Dialer(cfg), Logger: cfg.Logger, DialRetry: -1, NewHooks: hooks})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ctx, ln) }() //nolint:errcheck // nil after cancel
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

func versionThrough(t *testing.T, addr string) {
	t.Helper()
	d, err := jdwptest.Attach(addr)
	if err != nil {
		t.Fatalf("attach through the near end: %v", err)
	}
	defer d.Close()
	p, err := d.Call(jdwp.CmdVirtualMachineVersion, nil)
	if err != nil {
		t.Fatalf("Version through the near end: %v", err)
	}
	if !strings.Contains(string(p.Body()), "fake VM") {
		t.Errorf("Version reply %q", p.Body())
	}
}

// selfSigned makes a certificate and key for tests, and its DER for
// pinning.
func selfSigned(t *testing.T, name string) (tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, der
}

func TestThroughFarEnd(t *testing.T) {
	v := newVMSide(t)
	f := startFar(t, v, "127.0.0.1:0", FarConfig{})
	versionThrough(t, startNear(t, NearConfig{Addr: f.addr}))
	if f.count(OutcomeAccepted) != 1 {
		t.Errorf("accepted %v connections, want 1; log:\n%s", f.count(OutcomeAccepted), f.log)
	}
}

// TestAuthRefused: without the far end's credentials a near end never
// gets a JDWP byte to the VM: the far end does not even dial it.
func TestAuthRefused(t *testing.T) {
	v := newVMSide(t)
	token := []byte("0123456789abcdef0123")
	farCert, farDER := selfSigned(t, "far")
	nearCert, nearDER := selfSigned(t, "near")
	otherCert, _ := selfSigned(t, "other")
	plain := startFar(t, v, "127.0.0.1:0", FarConfig{Token: token})
	tlsToken := startFar(t, v, "127.0.0.1:0", FarConfig{TLS: ServerTLS(farCert, nil), Token: token})
	pinned := startFar(t, v, "127.0.0.1:0", FarConfig{TLS: ServerTLS(farCert, nearDER)})
	tls12 := ClientTLS(farDER, nil)
	tls12.MinVersion, tls12.MaxVersion = tls.VersionTLS12, tls.VersionTLS12
	for _, tc := range []struct {
		name    string
		far     *farEnd
		cfg     NearConfig
		outcome Outcome
		want    string
	}{
		{"no token", plain, NearConfig{}, OutcomeUnauthorized, "wants a token and this end has none"},
		{"wrong token", plain, NearConfig{Token: []byte("0123456789abcdef0124")}, OutcomeUnauthorized, "refused the token"},
		{"plain TCP to TLS", tlsToken, NearConfig{Token: token}, OutcomeTLS, "--far-cert"},
		{"wrong token over TLS", tlsToken, NearConfig{TLS: ClientTLS(farDER, nil), Token: []byte("nope")}, OutcomeUnauthorized, "refused the token"},
		{"TLS to a plain far end", plain, NearConfig{TLS: ClientTLS(farDER, nil), Token: token}, OutcomeBadPreamble, "TLS"},
		{"wrong far certificate", tlsToken, NearConfig{TLS: ClientTLS(nearDER, nil), Token: token}, OutcomeTLS, "pinned"},
		{"TLS 1.2", tlsToken, NearConfig{TLS: tls12, Token: token}, OutcomeTLS, "TLS handshake"},
		{"no client certificate", pinned, NearConfig{TLS: ClientTLS(farDER, nil)}, OutcomeTLS, "--peer-cert"},
		{"wrong client certificate", pinned, NearConfig{TLS: ClientTLS(farDER, &otherCert)}, OutcomeTLS, "--peer-cert"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.far.count(tc.outcome)
			_, err := Dialer(tc.cfg.withAddr(tc.far.addr))(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("dial error %v, want one saying %q", err, tc.want)
			}
			counted := func(want float64) {
				t.Helper()
				jdwptest.Eventually(t, "the far end's count", func() (bool, string) {
					return tc.far.count(tc.outcome) == want, tc.far.log.String()
				})
			}
			counted(before + 1)
			// And a debugger attaching through such a near end is refused
			// (the near end tries once).
			if _, err := jdwptest.Attach(startNear(t, tc.cfg.withAddr(tc.far.addr))); err == nil {
				t.Error("a debugger attached through an unauthorized near end")
			}
			counted(before + 2)
		})
	}
	if n := v.dials.Load(); n != 0 {
		t.Errorf("the far ends dialled the VM %d times for unauthorized near ends", n)
	}
	// The right credentials work, over both kinds of TLS.
	versionThrough(t, startNear(t, NearConfig{Addr: plain.addr, Token: token}))
	versionThrough(t, startNear(t, NearConfig{Addr: tlsToken.addr, TLS: ClientTLS(farDER, nil), Token: token}))
	versionThrough(t, startNear(t, NearConfig{Addr: pinned.addr, TLS: ClientTLS(farDER, &nearCert)}))
}

func (c NearConfig) withAddr(a string) NearConfig { c.Addr = a; return c }

// TestVersionSkew: each end names both versions when the other speaks
// another protocol version.
func TestVersionSkew(t *testing.T) {
	v := newVMSide(t)
	f := startFar(t, v, "127.0.0.1:0", FarConfig{})

	// A near end of the next version (written by hand) meets this far end.
	c, err := net.Dial("tcp", f.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write(append(AppendHello(nil, Hello{Version: ProtocolVersion + 1, Software: "v-next"}), jdwp.Handshake...))
	c.SetReadDeadline(time.Now().Add(jdwptest.Timeout))
	rep, err := ReadReply(c)
	if err != nil || rep.Status != StatusVersionSkew || rep.Version != ProtocolVersion ||
		!strings.Contains(rep.Message, "v-next") || !strings.Contains(rep.Message, "same jdwpaccel version") {
		t.Errorf("far end's reply %+v, %v; want version skew naming both", rep, err)
	}
	if want := fmt.Sprintf("version skew: the near end speaks split protocol %d (jdwpaccel v-next), this far end speaks %d", ProtocolVersion+1, ProtocolVersion); !strings.Contains(f.log.String(), want) {
		t.Errorf("far end's log lacks the skew:\n%s", f.log)
	}

	// A far end of the next version (a fake) meets this near end.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		ReadHello(c) //nolint:errcheck // answered whatever it says
		c.Write(AppendReply(nil, Reply{Version: ProtocolVersion + 1, Status: StatusVersionSkew, Software: "v-next", Message: "skew"}))
		linger(c)
	}()
	var log jdwptest.Buffer
	_, err = Dialer(NearConfig{Addr: ln.Addr().String(), Software: "v-now", Logger: zerolog.New(&log)})(context.Background())
	var skew *SkewError
	if !errors.As(err, &skew) || skew.Far != ProtocolVersion+1 || skew.Near != ProtocolVersion {
		t.Fatalf("dial error %v, want a SkewError", err)
	}
	for _, want := range []string{fmt.Sprintf("this near end speaks split protocol %d (jdwpaccel v-now)", ProtocolVersion),
		fmt.Sprintf("speaks %d (jdwpaccel v-next)", ProtocolVersion+1), "run the same jdwpaccel version on both ends"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if log.String() != "" {
		t.Errorf("the dialer logged %q: its caller logs the error it returns, once", log.String())
	}
	if v.dials.Load() != 0 {
		t.Error("the far end dialled the VM for a near end of another version")
	}
}

// TestLinkDrop: the link dying mid-session ends the session on both ends:
// the debugger's connection closes and the far end closes its VM
// connection (as after a detach). The next session works.
func TestLinkDrop(t *testing.T) {
	v := newVMSide(t)
	f := startFar(t, v, "127.0.0.1:0", FarConfig{})
	lk, err := link.Listen(context.Background(), "127.0.0.1:0", f.addr, link.Config{}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	near := startNear(t, NearConfig{Addr: lk.Addr().String()})
	d, err := jdwptest.Attach(near)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Call(jdwp.CmdVirtualMachineVersion, nil); err != nil {
		t.Fatal(err)
	}
	lk.Close() // the link drops
	if err := d.WaitClosed(); err != nil {
		t.Errorf("the debugger's connection: %v", err)
	}
	select {
	case <-v.closed:
	case <-time.After(jdwptest.Timeout):
		t.Fatalf("the far end kept its VM connection after the link dropped; log:\n%s", f.log)
	}
	versionThrough(t, startNear(t, NearConfig{Addr: f.addr}))
}

// TestFarRestart: a far end that restarts on the same address is reached
// again by the same near end.
func TestFarRestart(t *testing.T) {
	v := newVMSide(t)
	f := startFar(t, v, "127.0.0.1:0", FarConfig{})
	near := startNear(t, NearConfig{Addr: f.addr})
	versionThrough(t, near)
	f.stop()
	if _, err := jdwptest.Attach(near); err == nil {
		t.Error("attached with the far end down")
	}
	startFar(t, v, f.addr, FarConfig{})
	versionThrough(t, near)
}

func TestReadTokenFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	os.WriteFile(good, []byte("0123456789abcdef0123\n"), 0o600)
	open := filepath.Join(dir, "open")
	os.WriteFile(open, []byte("0123456789abcdef0123\n"), 0o644)
	short := filepath.Join(dir, "short")
	os.WriteFile(short, []byte("abc\n"), 0o600)
	if tok, err := ReadTokenFile(good); err != nil || string(tok) != "0123456789abcdef0123" {
		t.Errorf("ReadTokenFile(0600) = %q, %v", tok, err)
	}
	if _, err := ReadTokenFile(open); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("ReadTokenFile(0644) = %v, want a refusal", err)
	}
	if _, err := ReadTokenFile(short); err == nil {
		t.Error("a 3-byte token was accepted")
	}
}

// TestPage: the far end's page travels over link streams, behind the
// same token as the sessions.
func TestPage(t *testing.T) {
	v := newVMSide(t)
	token := []byte("0123456789abcdef0123")
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "far page at %s", r.URL.Path)
	})
	f := startFar(t, v, "127.0.0.1:0", FarConfig{Token: token, Page: page})
	get := func(cfg NearConfig) (string, error) {
		tr := PageTransport(cfg)
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr, Timeout: jdwptest.Timeout}).Get("http://far/api/v1/snapshot")
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	if body, err := get(NearConfig{Addr: f.addr, Token: token}); err != nil || body != "far page at /api/v1/snapshot" {
		t.Errorf("page over the link: %q, %v", body, err)
	}
	if body, err := get(NearConfig{Addr: f.addr, Token: []byte("wrong")}); err == nil || !strings.Contains(err.Error(), "refused the token") {
		t.Errorf("page with a wrong token: %q, %v; want a refusal", body, err)
	}
	if f.count(OutcomePage) != 1 || v.dials.Load() != 0 {
		t.Errorf("%v page streams, %d VM dials; want 1 and none", f.count(OutcomePage), v.dials.Load())
	}
	// A far end without a page refuses page streams.
	bare := startFar(t, v, "127.0.0.1:0", FarConfig{})
	if _, err := get(NearConfig{Addr: bare.addr}); err == nil || !strings.Contains(err.Error(), "serves no page") {
		t.Errorf("page from a far end without one: %v", err)
	}
}

// recordingHop relays one connection to target and keeps a copy of each
// direction's bytes.
func recordingHop(t *testing.T, target string) (addr string, up, down *jdwptest.Buffer, done <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	up, down = &jdwptest.Buffer{}, &jdwptest.Buffer{}
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		u, err := net.Dial("tcp", target)
		if err != nil {
			return
		}
		defer u.Close()
		half := make(chan struct{})
		go func() {
			io.Copy(io.MultiWriter(u, up), c) //nolint:errcheck // ends with the session
			u.(*net.TCPConn).CloseWrite()
			close(half)
		}()
		io.Copy(io.MultiWriter(c, down), u) //nolint:errcheck
		c.(*net.TCPConn).CloseWrite()
		<-half
	}()
	return ln.Addr().String(), up, down, finished
}

// recordThreeCalls runs one session of three VirtualMachine.Version calls
// through a near end of cfg (its Addr set here) and f, with a recordingHop
// between them, and returns each direction's bytes once the stream ended.
func recordThreeCalls(t *testing.T, f *farEnd, cfg NearConfig) (up, down *jdwptest.Buffer) {
	t.Helper()
	addr, up, down, done := recordingHop(t, f.addr)
	cfg.Addr = addr
	d, err := jdwptest.Attach(startNear(t, cfg))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := d.Call(jdwp.CmdVirtualMachineVersion, nil); err != nil {
			t.Fatal(err)
		}
	}
	d.Close()
	select {
	case <-done:
	case <-time.After(jdwptest.Timeout):
		t.Fatal("the stream did not end with the session")
	}
	return up, down
}

// TestStreamIsJDWP: past its preamble, each direction of the stream is
// the JDWP handshake and whole JDWP packets, as any JDWP reader expects.
func TestStreamIsJDWP(t *testing.T) {
	v := newVMSide(t)
	f := startFar(t, v, "127.0.0.1:0", FarConfig{Token: []byte("0123456789abcdef0123")})
	up, down := recordThreeCalls(t, f, NearConfig{Token: []byte("0123456789abcdef0123")})
	packets := func(r io.Reader) (cmds, replies int) {
		t.Helper()
		if err := jdwp.ReadHandshake(r); err != nil {
			t.Fatalf("no handshake after the preamble: %v", err)
		}
		return countPackets(t, r)
	}
	ur := strings.NewReader(up.String())
	if h, err := ReadHello(ur); err != nil || string(h.Token) != "0123456789abcdef0123" {
		t.Fatalf("near→far hello %+v, %v", h, err)
	}
	if cmds, _ := packets(ur); cmds != 3 {
		t.Errorf("near→far carried %d commands, want the debugger's 3", cmds)
	}
	dr := strings.NewReader(down.String())
	if rep, err := ReadReply(dr); err != nil || rep.Status != StatusAccepted {
		t.Fatalf("far→near reply %+v, %v", rep, err)
	}
	if _, replies := packets(dr); replies != 3 {
		t.Errorf("far→near carried %d replies, want 3", replies)
	}
}

// TestAttachAgreed: the attach bundle is agreed only when the near end
// asks for it and the far end pushes it, and both ends' sessions see the
// same answer (the far end's as DebuggerInfo, the near end's as the
// connection's Info).
func TestAttachAgreed(t *testing.T) {
	for _, tc := range []struct{ ask, push bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		v := newVMSide(t)
		farInfo := make(chan relay.LinkInfo, 1)
		f := startFar(t, v, "127.0.0.1:0", FarConfig{Attach: tc.push, Hooks: func(rs *relay.Session) relay.Hooks {
			farInfo <- rs.DebuggerInfo()
			return relay.Hooks{}
		}})
		vc, err := Dialer(NearConfig{Addr: f.addr, Attach: tc.ask, Logger: zerolog.Nop()})(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		want := tc.ask && tc.push
		if vc.Info.AttachBundle != want {
			t.Errorf("ask %v, push %v: near end's info %#v, want attach bundle %v", tc.ask, tc.push, vc.Info, want)
		}
		select {
		case info := <-farInfo:
			if info.AttachBundle != want {
				t.Errorf("ask %v, push %v: far end's info %#v, want attach bundle %v", tc.ask, tc.push, info, want)
			}
		case <-time.After(jdwptest.Timeout):
			t.Fatal("the far end's session did not start")
		}
		vc.Conn.Close()
		f.stop()
	}
}
