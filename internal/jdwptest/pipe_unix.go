//go:build unix

package jdwptest

import (
	"fmt"
	"net"
	"os"
	"syscall"
)

func pipe(name string) (a, b net.Conn, err error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	syscall.CloseOnExec(fds[0])
	syscall.CloseOnExec(fds[1])
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
