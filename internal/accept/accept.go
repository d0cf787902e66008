// Package accept owns the loop by which jdwpaccel's servers accept
// connections: it tells a listener that has ended from one that failed in
// passing (a timeout, or the process or the system out of descriptors or
// buffers: a flood of connections can cause that), waits and tries again
// on the latter instead of ending the server and every session it holds,
// and closes the listener when the server's context ends.
package accept

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/logkey"
	"github.com/rs/zerolog"
)

// The pause after a failure in passing doubles from MinPause up to
// MaxPause, and starts again from MinPause after a connection is accepted.
const (
	MinPause = 5 * time.Millisecond
	MaxPause = time.Second
)

// Loop accepts connections on ln and hands each to handle until ln fails
// for good or ctx ends, and closes ln when it returns. handle runs on
// Loop's goroutine, so it must not block: it starts what serves the
// connection. Once ctx ended Loop returns nil; otherwise the error that
// ended ln (net.ErrClosed, wrapped, when someone closed it). A timeout is tried
// again at once; a shortage (short) after a pause, logged at warn at most
// once a MaxPause.
func Loop(ctx context.Context, ln net.Listener, log zerolog.Logger, handle func(net.Conn)) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer func() {
		stop()
		ln.Close()
	}()
	var pause time.Duration
	var logged time.Time
	for {
		c, err := ln.Accept()
		if err == nil {
			pause = 0
			handle(c)
			continue
		}
		if ctx.Err() != nil {
			return nil
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			continue // a deadline the listener's owner set: not a failure
		}
		if !short(err) {
			return err
		}
		pause = min(max(2*pause, MinPause), MaxPause)
		if now := time.Now(); now.Sub(logged) >= MaxPause {
			logged = now
			log.Warn().Err(err).Str(logkey.Listen, ln.Addr().String()).Dur("retry_in", pause).
				Msg("cannot accept a connection now (out of file descriptors or buffers?); trying again")
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil
		}
	}
}

// short says whether err, from a listener's Accept, is a shortage after
// which the listener still works: the process or the system out of
// descriptors, buffers or memory, or a connection aborted before it was
// accepted (shortages: per system).
func short(err error) bool {
	for _, e := range shortages {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
