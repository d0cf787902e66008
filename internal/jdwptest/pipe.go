package jdwptest

import (
	"net"
	"testing"
)

// pipeAddr names one end of a Pipe in logs.
type pipeAddr string

func (a pipeAddr) Network() string { return "pipe" }
func (a pipeAddr) String() string  { return string(a) }

// pipeConn is one end of a Pipe: a Unix stream socket, which half-closes
// (CloseWrite) like TCP, with addresses that say which end it is.
type pipeConn struct {
	*net.UnixConn
	local, remote pipeAddr
}

func (c *pipeConn) LocalAddr() net.Addr  { return c.local }
func (c *pipeConn) RemoteAddr() net.Addr { return c.remote }

// Pipe returns the two ends of a connected, in-memory, full-duplex stream
// (socketpair(2), AF_UNIX, SOCK_STREAM) that buffers in the kernel and
// supports half-close and deadlines, as a TCP connection does, without a
// port: a fuzz target that needs real connections makes them with Pipe,
// so its executions leave no TIME_WAIT sockets behind. name labels the
// ends in logs ("name-a", "name-b"). Both ends are closed at the end of
// the test.
func Pipe(t testing.TB, name string) (a, b net.Conn) {
	t.Helper()
	a, b, err := pipe(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}
