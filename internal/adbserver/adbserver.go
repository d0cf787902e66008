// Package adbserver runs a private instance of the real adb server (the
// adb command's "server nodaemon") on a port the kernel chose, for the
// bench's adb modes and for tests against Debian's adb.
//
// The port is never picked and then handed to adb to bind: this package
// listens on 127.0.0.1:0 itself and gives adb the listening socket
// (adb's "-L acceptfd:N"), so nothing else can take the port in between,
// and an adb client can never find the port without a listener (where
// Linux may give the client's own socket that port, and the connection
// meets itself).
package adbserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"
)

// Server is a running adb server.
type Server struct {
	// Port is the server's port on 127.0.0.1, for "adb -P Port".
	Port int
	cmd  *exec.Cmd
	out  *limitedBuffer
	done chan struct{} // closed when the process has exited
	err  error         // the process's exit; written before done is closed
	once sync.Once
}

// Addr is the server's address.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)) }

// Env is the environment an adb client needs to reach this server with
// -P, whatever the caller's environment says about another server.
func Env() []string {
	return append(os.Environ(), "ANDROID_ADB_SERVER_PORT=", "ADB_SERVER_SOCKET=", "ANDROID_SERIAL=")
}

// Start starts an adb server (the adb command found on PATH) on a port
// the kernel chooses. The server runs until Stop.
func Start() (*Server, error) {
	adb, err := exec.LookPath("adb")
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	f, err := ln.(*net.TCPListener).File() // a duplicate, for the child
	ln.Close()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s := &Server{Port: port, out: &limitedBuffer{max: 64 << 10}, done: make(chan struct{})}
	// The child's fd 3 is ExtraFiles[0].
	s.cmd = exec.Command(adb, "-L", "acceptfd:3", "server", "nodaemon")
	s.cmd.ExtraFiles = []*os.File{f}
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	s.cmd.Env = Env()
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("adb server: %w", err)
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.done)
	}()
	return s, nil
}

// Exited is closed when the server's process has exited.
func (s *Server) Exited() <-chan struct{} { return s.done }

// Output is what the server printed so far (its first 64 KiB).
func (s *Server) Output() string { return s.out.String() }

// Stop asks the server to exit (adb kill-server), kills it if it has not
// within a few seconds, and waits for it.
func (s *Server) Stop() error {
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		kill := exec.CommandContext(ctx, s.cmd.Path, "-P", strconv.Itoa(s.Port), "kill-server")
		kill.Env = Env()
		kill.Run() //nolint:errcheck // the kill below is the fallback
		select {
		case <-s.done:
		case <-ctx.Done():
			s.cmd.Process.Kill() //nolint:errcheck // it may have exited meanwhile
			<-s.done
		}
	})
	var ee *exec.ExitError
	if s.err != nil && !errors.As(s.err, &ee) {
		return s.err
	}
	return nil
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	mu  sync.Mutex // guards b
	b   bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := l.max - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
