package adbtest

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// The server's own framing checks catch what a broken client would send.
func TestFramingViolations(t *testing.T) {
	s, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, raw := range []string{"0x0Chost:version", "0000", "000Chost:vers"} {
		c, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, raw)
		if strings.HasSuffix(raw, "vers") {
			c.(*net.TCPConn).CloseWrite()
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		b, _ := io.ReadAll(c) // the server closes without answering
		c.Close()
		if len(b) != 0 {
			t.Errorf("%q answered %q", raw, b)
		}
	}
	if got := len(s.Errors()); got != 3 {
		t.Fatalf("%d violations recorded, want 3: %v", got, s.Errors())
	}
	// A well-framed request (lowercase hex is allowed) is answered.
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "000chost:version")
	b := make([]byte, 12)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c, b); err != nil || string(b) != "OKAY00040029" {
		t.Fatalf("%q, %v", b, err)
	}
	if r := s.Requests(); len(r) != 1 || r[0] != "000chost:version" {
		t.Fatalf("%q", r)
	}
}
