package relay_test

import (
	"context"
	"io"
	"net"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/rs/zerolog"
)

// copyProxy is the baseline: a plain byte copy in each direction.
func copyProxy(b testing.TB, target string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				u, err := net.Dial("tcp", target)
				if err != nil {
					c.Close()
					return
				}
				go func() { io.Copy(u, c); u.Close() }()
				io.Copy(c, u)
				c.Close()
			}()
		}
	}()
	b.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}

func relayProxy(b testing.TB, target string) string { return serveProxy(b, target, nil) }

// hookedProxy is the relay with a hook that sees every packet and lets it
// through: each packet goes through the session's turn and outbox.
func hookedProxy(b testing.TB, target string) string {
	return serveProxy(b, target, func(*relay.Session) relay.Hooks {
		return relay.Hooks{Interceptors: []relay.Interceptor{idle{}}, Observers: []relay.Observer{nopObserver{}}}
	})
}

type nopObserver struct{}

func (nopObserver) Observe(*relay.Session, *relay.Frame) {}

func serveProxy(b testing.TB, target string, hooks func(*relay.Session) relay.Hooks) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := relay.NewServer(relay.Config{DialVM: relay.DialTCP(target), Logger: zerolog.Nop(), NewHooks: hooks})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Serve(ctx, ln); close(done) }()
	b.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

func dialJDWP(b testing.TB, addr string) net.Conn {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	if err := jdwp.WriteHandshake(c); err != nil {
		b.Fatal(err)
	}
	if err := jdwp.ReadHandshake(c); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

// BenchmarkForward compares round trips (command + reply: two forwarded
// packets) through a plain byte copy, through the relay, and through the
// relay with hooks that let everything through (each packet in the
// session's turn, its outbox applied), in one run: the difference is the
// relay's added latency. Reported: p50 and p99 round
// trip, and allocations per op (whole process, so the relay's goroutines
// count).
func BenchmarkForward(b *testing.B) {
	// Every command gets an empty reply; the VM allocates nothing per
	// command.
	vm := jdwptest.StartVM(b, jdwptest.Script{Unrecorded: true})
	for _, bc := range []struct {
		name string
		addr func(testing.TB, string) string
	}{
		{"copy", copyProxy},
		{"relay", relayProxy},
		{"hooked", hookedProxy},
	} {
		b.Run(bc.name+"/pingpong", func(b *testing.B) {
			c := dialJDWP(b, bc.addr(b, vm.Addr()))
			r := jdwp.NewReader(c, 0)
			cmd := jdwp.AppendCommand(nil, 0, jdwp.Cmd{Set: 11, Cmd: 6}, make([]byte, 24))
			var id uint32
			jdwptest.RoundTrips(b, func() {
				id++
				cmd.SetID(id)
				if _, err := c.Write(cmd); err != nil {
					b.Fatal(err)
				}
				if _, err := r.Next(); err != nil {
					b.Fatal(err)
				}
			})
		})
		b.Run(bc.name+"/pipelined", func(b *testing.B) {
			c := dialJDWP(b, bc.addr(b, vm.Addr()))
			const window = 64
			done := make(chan error, 1)
			n := b.N
			go func() {
				r := jdwp.NewReader(c, 0)
				for range n {
					if _, err := r.Next(); err != nil {
						done <- err
						return
					}
				}
				done <- nil
			}()
			cmd := jdwp.AppendCommand(nil, 0, jdwp.Cmd{Set: 11, Cmd: 6}, make([]byte, 24))
			burst := make([]byte, 0, window*len(cmd))
			b.ReportAllocs()
			b.ResetTimer()
			for sent := 0; sent < n; {
				burst = burst[:0]
				for k := 0; k < window && sent < n; k++ {
					sent++
					cmd.SetID(uint32(sent))
					burst = append(burst, cmd...)
				}
				if _, err := c.Write(burst); err != nil {
					b.Fatal(err)
				}
			}
			if err := <-done; err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(2*n)/b.Elapsed().Seconds(), "packets/s")
		})
	}
}
