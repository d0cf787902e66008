package jdwptest

import (
	"io"
	"net"
	"sync"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// HoldAfterHandshake is a TCP hop for one client to target: it passes the
// client's JDWP handshake and everything target sends, and holds what
// else the client sends until release closes, so that the client attaches
// (first) at once and goes on only when the test says. The hop closes
// when the test ends.
func HoldAfterHandshake(t testing.TB, target string) (addr string, release chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	release = make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		s, err := net.Dial("tcp", target)
		if err != nil {
			return
		}
		defer s.Close()
		wg.Go(func() {
			io.Copy(c, s)
			c.Close()
		})
		if _, err := io.CopyN(s, c, int64(len(jdwp.Handshake))); err != nil {
			return
		}
		<-release
		io.Copy(s, c)
		s.Close()
	})
	return ln.Addr().String(), release
}
