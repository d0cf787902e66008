package bench

import (
	"context"
	"io"
	"net"

	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/share"
	"github.com/jdwpaccel/jdwpaccel/split"
	"github.com/rs/zerolog"
)

// startRelay runs a relay server in front of the VM dial reaches until
// ctx ends, its debuggers sharing the VM as the proxy's do (package share).
func startRelay(ctx context.Context, dial relay.Dialer, hooks func(*relay.Session) relay.Hooks, log zerolog.Logger) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := relay.NewServer(relay.Config{DialVM: dial, NewHooks: hooks, Logger: log})
	go share.Serve(ctx, srv, share.NewFront("bench", share.Config{Logger: log}), ln, nil, 0) //nolint:errcheck // ends with ctx
	return ln.Addr().String(), nil
}

// startFar runs split mode's far end in front of the VM at vmAddr until
// ctx ends.
func startFar(ctx context.Context, vmAddr string, hooks func(*relay.Session) relay.Hooks, push, compress bool, log zerolog.Logger) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	far := split.NewFar(split.FarConfig{Relay: relay.Config{DialVM: relay.DialTCP(vmAddr), Logger: log}, Hooks: hooks, Attach: push,
		ResumeWithin: split.DefaultResumeWithin, Compress: compress, Logger: log})
	go far.Serve(ctx, ln) //nolint:errcheck // ends with ctx
	return ln.Addr().String(), nil
}

// startCopy runs a plain TCP byte-copy proxy in front of target until ctx
// ends.
func startCopy(ctx context.Context, target string) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	context.AfterFunc(ctx, func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go copyConn(ctx, c, target)
		}
	}()
	return ln.Addr().String(), nil
}

func copyConn(ctx context.Context, c net.Conn, target string) {
	defer c.Close()
	var d net.Dialer
	u, err := d.DialContext(ctx, "tcp", target)
	if err != nil {
		return
	}
	defer u.Close()
	stop := context.AfterFunc(ctx, func() { c.Close(); u.Close() })
	defer stop()
	done := make(chan struct{})
	go func() { io.Copy(u, c); u.Close(); close(done) }() //nolint:errcheck // ends with either side
	io.Copy(c, u)                                         //nolint:errcheck
	c.Close()
	<-done
}
