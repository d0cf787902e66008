package jdwptest

import (
	"fmt"
	"net"
	"os"
	"syscall"
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

func pipe(name string) (a, b net.Conn, err error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	conns := [2]net.Conn{}
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), name)
		c, err := net.FileConn(f) // dups fd
		f.Close()
		if err != nil {
			if i == 1 {
				conns[0].Close()
			} else {
				syscall.Close(fds[1])
			}
			return nil, nil, fmt.Errorf("socketpair: %w", err)
		}
		conns[i] = c
	}
	an, bn := pipeAddr(name+"-a"), pipeAddr(name+"-b")
	return &pipeConn{conns[0].(*net.UnixConn), an, bn}, &pipeConn{conns[1].(*net.UnixConn), bn, an}, nil
}
