package accept

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"
)

// scripted is a listener whose Accept returns what the test queues, and
// fails with net.ErrClosed once closed.
type scripted struct {
	next   chan result
	closed chan struct{}
	once   sync.Once
}

type result struct {
	c   net.Conn
	err error
}

func newScripted() *scripted {
	return &scripted{next: make(chan result, 16), closed: make(chan struct{})}
}

func (l *scripted) Accept() (net.Conn, error) {
	select {
	case r := <-l.next:
		return r.c, r.err
	case <-l.closed:
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: net.ErrClosed}
	}
}

func (l *scripted) Close() error   { l.once.Do(func() { close(l.closed) }); return nil }
func (l *scripted) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }

// osErr is Accept's error as the net package returns it for errno.
func osErr(errno syscall.Errno) error {
	return &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", errno)}
}

// A process out of descriptors keeps its listener: Loop waits, longer at
// each failure, and accepts again, instead of returning the error that
// ended a server and every session it held.
func TestLoopWaitsOutAShortage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ln := newScripted()
		for range 3 {
			ln.next <- result{err: osErr(shortages[0])}
		}
		c1, c2 := net.Pipe()
		defer c2.Close()
		ln.next <- result{c: c1}
		ln.next <- result{err: osErr(shortages[1])}
		ln.next <- result{c: c2}

		ctx, cancel := context.WithCancel(t.Context())
		type got struct {
			c  net.Conn
			at time.Duration
		}
		handled := make(chan got, 2)
		start := time.Now()
		done := make(chan error, 1)
		go func() {
			done <- Loop(ctx, ln, zerolog.Nop(), func(c net.Conn) { handled <- got{c, time.Since(start)} })
		}()
		accepted := []got{<-handled, <-handled}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Loop returned %v after its context ended; want nil", err)
		}
		// Pauses of 5, 10 and 20 ms before the first connection; the
		// shortage after it starts again from 5 ms.
		want := []got{{c1, 35 * time.Millisecond}, {c2, 40 * time.Millisecond}}
		if fmt.Sprint(accepted) != fmt.Sprint(want) {
			t.Fatalf("accepted %v; want %v", accepted, want)
		}
		select {
		case <-ln.closed:
		default:
			t.Fatal("the listener is open after Loop returned")
		}
	})
}

// A listener that ends (not a shortage, not a timeout) ends Loop with its
// error; a timeout is tried again at once.
func TestLoopReturnsWhatEndsTheListener(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ln := newScripted()
		ln.next <- result{err: &net.OpError{Op: "accept", Net: "tcp", Err: os.ErrDeadlineExceeded}}
		bad := osErr(syscall.EINVAL)
		ln.next <- result{err: bad}
		start := time.Now()
		err := Loop(t.Context(), ln, zerolog.Nop(), func(net.Conn) { t.Error("no connection was queued") })
		if !errors.Is(err, syscall.EINVAL) {
			t.Fatalf("Loop returned %v; want %v", err, bad)
		}
		if d := time.Since(start); d != 0 {
			t.Fatalf("Loop paused %v on a timeout; want none", d)
		}
		ln2 := newScripted()
		ln2.Close()
		if err := Loop(t.Context(), ln2, zerolog.Nop(), func(net.Conn) {}); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Loop on a closed listener returned %v; want net.ErrClosed", err)
		}
	})
}

// Ending the context during a pause ends Loop at once.
func TestLoopEndsDuringAPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ln := newScripted()
		for range cap(ln.next) {
			ln.next <- result{err: osErr(shortages[0])}
		}
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		if err := Loop(ctx, ln, zerolog.Nop(), func(net.Conn) {}); err != nil {
			t.Fatalf("Loop returned %v; want nil once its context ended", err)
		}
		if d := time.Since(start); d != 100*time.Millisecond {
			t.Fatalf("Loop returned after %v; want 100ms, when its context ended", d)
		}
	})
}
