package split

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// TestRefusalsLoggedOncePerHost: a stranger opening many connections with
// garbage (or a near end without TLS meeting a TLS far end, once per
// retry) gets one log line per host per interval; the metric counts every
// connection.
func TestRefusalsLoggedOncePerHost(t *testing.T) {
	v := newVMSide(t)
	farCert, _ := selfSigned(t, "far")
	for _, tc := range []struct {
		name    string
		cfg     FarConfig
		send    []byte
		outcome Outcome
	}{
		{"garbage", FarConfig{}, []byte("GET / HTTP/1.1\r\n\r\n"), OutcomeBadPreamble},
		{"plain to TLS", FarConfig{TLS: ServerTLS(farCert, nil)}, append(AppendHello(nil, Hello{Version: ProtocolVersion}), jdwp.Handshake...), OutcomeTLS},
		{"wrong token", FarConfig{Token: []byte("0123456789abcdef0123")}, AppendHello(nil, Hello{Version: ProtocolVersion, Token: []byte("guess")}), OutcomeUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := startFar(t, v, "127.0.0.1:0", tc.cfg)
			const n = 40
			for range n {
				c, err := net.Dial("tcp", f.addr)
				if err != nil {
					t.Fatal(err)
				}
				c.Write(tc.send)
				c.SetReadDeadline(time.Now().Add(jdwptest.Timeout))
				buf := make([]byte, 512)
				for {
					if _, err := c.Read(buf); err != nil {
						break // the far end closed it
					}
				}
				c.Close()
			}
			jdwptest.Eventually(t, "every refusal counted", func() (bool, string) {
				return f.count(tc.outcome) == n, f.log.String()
			})
			if lines := strings.Count(f.log.String(), `"level":"warn"`); lines != 1 {
				t.Fatalf("%d warn lines for %d refused connections from one host, want 1:\n%s", lines, n, f.log)
			}
			if !strings.Contains(f.log.String(), `"near_host":"127.0.0.1"`) {
				t.Errorf("the line does not name the host:\n%s", f.log)
			}
		})
	}
	if v.dials.Load() != 0 {
		t.Error("a far end dialled the VM for a refused connection")
	}
}

// TestVersionOnlyToAuthenticated: a near end of another version without
// the token learns nothing of the far end (its Reply echoes the Hello's
// version and carries no software), and the far end neither logs at error
// nor logs the stranger's software string; with the token it gets the
// version skew, both versions named.
func TestVersionOnlyToAuthenticated(t *testing.T) {
	v := newVMSide(t)
	token := []byte("0123456789abcdef0123")
	f := startFar(t, v, "127.0.0.1:0", FarConfig{Token: token})
	stranger := strings.Repeat("x", 255)
	hello := func(tok []byte) Reply {
		t.Helper()
		c, err := net.Dial("tcp", f.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write(AppendHello(nil, Hello{Version: ProtocolVersion + 1, Software: stranger, Token: tok}))
		c.SetReadDeadline(time.Now().Add(jdwptest.Timeout))
		rep, err := ReadReply(c)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	rep := hello([]byte("guess"))
	if rep.Status != StatusUnauthorized || rep.Version != ProtocolVersion+1 || rep.Software != "" || strings.Contains(rep.Message, "test-far") {
		t.Fatalf("reply to a stranger: %+v; want unauthorized, its own version echoed, no software", rep)
	}
	if log := f.log.String(); strings.Contains(log, stranger) || strings.Contains(log, `"level":"error"`) {
		t.Fatalf("the far end logged a stranger's software string, or at error:\n%s", log)
	}
	rep = hello(token)
	if rep.Status != StatusVersionSkew || rep.Version != ProtocolVersion || rep.Software != "test-far" {
		t.Fatalf("reply to an authenticated near end of another version: %+v; want version skew with this end's version", rep)
	}
	if !strings.Contains(f.log.String(), "version skew") {
		t.Errorf("the far end did not log the skew of an authenticated near end:\n%s", f.log)
	}
}

// TestFarHandshakeCap: link connections beyond the cap that have not
// finished their preamble are closed at once; a near end with a preamble
// still gets through once a place is free.
func TestFarHandshakeCap(t *testing.T) {
	v := newVMSide(t)
	var cfg FarConfig
	cfg.Relay.MaxHandshakes = 2
	f := startFar(t, v, "127.0.0.1:0", cfg)
	var silent []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", f.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		silent = append(silent, c)
	}
	for range 3 {
		c, err := net.Dial("tcp", f.addr)
		if err != nil {
			continue
		}
		c.SetReadDeadline(time.Now().Add(jdwptest.Timeout))
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Fatal("a connection over the cap got bytes")
		} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatal("a connection over the cap was kept open")
		}
		c.Close()
	}
	jdwptest.Eventually(t, "connections over the cap counted", func() (bool, string) {
		return f.count(OutcomeOverCap) == 3, f.log.String()
	})
	silent[0].Close()
	jdwptest.Eventually(t, "a place freed", func() (bool, string) {
		return f.count(OutcomeBadPreamble) == 1, f.log.String()
	})
	versionThrough(t, startNear(t, NearConfig{Addr: f.addr}))
}
