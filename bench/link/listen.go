package link

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/accept"
	"github.com/rs/zerolog"
)

// Log field names used by this package.
const (
	logTo       = "to"
	logConn     = "conn"
	logRemote   = "remote"
	logErr      = "err"
	logBytesUp  = "bytes_up"   // client -> target
	logBytesDn  = "bytes_down" // target -> client
	logDuration = "duration"
)

// DialFunc opens a connection to the target for one accepted client.
type DialFunc func(ctx context.Context) (net.Conn, error)

// Link is a running hop: it accepts clients on a listener and relays each one
// to its own connection to the target, through the emulated link.
type Link struct {
	ln     net.Listener
	dial   DialFunc
	cfg    Config
	log    zerolog.Logger
	ctx    context.Context // cancelled by Close or the parent context; ends every session
	cancel context.CancelFunc
	wg     sync.WaitGroup // the accept loop and every session
	nextID atomic.Uint64

	mu    sync.Mutex            // guards conns
	conns map[net.Conn]struct{} // both sides of every connection carried, for DropEvery
	drops atomic.Int64
	// up and down count the bytes delivered to the target and back to the
	// clients, over every session so far.
	up, down atomic.Int64
}

// dialTimeout bounds each dial to the target.
const dialTimeout = 10 * time.Second

// Listen listens on listenAddr (TCP) and relays every client to targetAddr
// through a link configured by cfg, until ctx is cancelled or Close is
// called.
func Listen(ctx context.Context, listenAddr, targetAddr string, cfg Config, log zerolog.Logger) (*Link, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", listenAddr)
	if err != nil {
		return nil, err
	}
	d := net.Dialer{Timeout: dialTimeout}
	dial := func(ctx context.Context) (net.Conn, error) {
		return d.DialContext(ctx, "tcp", targetAddr)
	}
	l, err := Serve(ctx, ln, dial, cfg, log.With().Str(logTo, targetAddr).Logger())
	if err != nil {
		ln.Close()
		return nil, err
	}
	return l, nil
}

// Serve runs a link on ln (which it then owns and closes), calling dial once
// per accepted client, until ctx is cancelled or Close is called.
func Serve(ctx context.Context, ln net.Listener, dial DialFunc, cfg Config, log zerolog.Logger) (*Link, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	l := &Link{ln: ln, dial: dial, cfg: cfg, log: log, conns: map[net.Conn]struct{}{}}
	l.ctx, l.cancel = context.WithCancel(ctx)
	context.AfterFunc(l.ctx, func() { ln.Close() })
	l.wg.Go(l.acceptLoop)
	if cfg.DropEvery > 0 {
		l.wg.Go(l.dropLoop)
	}
	return l, nil
}

// dropLoop closes every connection the link carries every DropEvery.
func (l *Link) dropLoop() {
	t := time.NewTicker(l.cfg.DropEvery)
	defer t.Stop()
	for {
		select {
		case <-l.ctx.Done():
			return
		case <-t.C:
		}
		l.mu.Lock()
		n := len(l.conns)
		if n > 0 {
			l.drops.Add(1) // before the closes, which the link's clients see
		}
		for c := range l.conns {
			c.Close()
		}
		l.mu.Unlock()
		if n > 0 {
			l.log.Debug().Int("conns", n).Msg("link dropped its connections (--drop-every)")
		}
	}
}

// Drops is how many times DropEvery closed the link's connections (ticks
// with none open are not counted).
func (l *Link) Drops() int64 { return l.drops.Load() }

// track adds c to the connections DropEvery closes, or removes it.
func (l *Link) track(c net.Conn, on bool) {
	if l.cfg.DropEvery <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if on {
		l.conns[c] = struct{}{}
	} else {
		delete(l.conns, c)
	}
}

// Bytes returns the bytes the link has delivered so far, over all its
// sessions: AToB from clients to the target, BToA back. Bytes still queued
// in the link are not counted yet.
func (l *Link) Bytes() Stats { return Stats{AToB: l.up.Load(), BToA: l.down.Load()} }

// Addr is the address the link accepts clients on.
func (l *Link) Addr() net.Addr { return l.ln.Addr() }

// Close stops accepting, tears down every session (queued bytes are
// dropped) and waits until all the link's goroutines have ended.
func (l *Link) Close() error {
	l.cancel()
	err := l.ln.Close()
	l.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

func (l *Link) acceptLoop() {
	err := accept.Loop(l.ctx, l.ln, l.log, func(c net.Conn) {
		id := l.nextID.Add(1)
		l.wg.Go(func() { l.serveConn(c, id) })
	})
	if err != nil && !errors.Is(err, net.ErrClosed) {
		l.log.Warn().Err(err).Msg("link stopped accepting")
	}
}

func (l *Link) serveConn(c net.Conn, id uint64) {
	log := l.log.With().Uint64(logConn, id).Str(logRemote, c.RemoteAddr().String()).Logger()
	start := time.Now()
	t, err := l.dial(l.ctx)
	if err != nil {
		ev := log.Warn()
		if l.ctx.Err() != nil {
			ev = log.Debug() // the link is closing
		}
		ev.Str(logErr, err.Error()).Msg("link dial to target failed")
		c.Close()
		return
	}
	log.Debug().Msg("link connection opened")
	l.track(c, true)
	l.track(t, true)
	st, err := pipe(l.ctx, c, t, l.cfg, id, &l.up, &l.down)
	l.track(c, false)
	l.track(t, false)
	ev := log.Debug()
	if err != nil && l.ctx.Err() == nil {
		ev = log.Info().Str(logErr, err.Error())
	}
	ev.Int64(logBytesUp, st.AToB).Int64(logBytesDn, st.BToA).
		Dur(logDuration, time.Since(start)).Msg("link connection closed")
}
