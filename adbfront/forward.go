package adbfront

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/accept"
	"github.com/jdwpaccel/jdwpaccel/internal/adbwire"
	"github.com/jdwpaccel/jdwpaccel/internal/logkey"
	"github.com/rs/zerolog"
)

// Forwards of JDWP: "adb forward tcp:N jdwp:PID" is executed by the adb
// server, which would then carry a debugger attaching to tcp:N straight to
// the device, past the front. So the front executes such forwards itself:
// it listens on tcp:N (on ForwardHost, loopback by default) and relays
// each connection through a host:transport:SERIAL + jdwp:PID stream it
// opens to the adb server, like any JDWP stream. list-forward shows the
// adb server's forwards and the front's; killforward and killforward-all
// remove them. Other forwards (tcp:N tcp:M, localabstract, ...) go to the
// adb server unchanged. The front's forwards live as long as the front,
// and follow the device by serial across adb server restarts.

// forward is one of the front's own forwards.
type forward struct {
	local string // tcp:PORT as list-forward shows it
	ln    net.Listener

	mu     sync.Mutex // guards target
	target Target
}

func (fw *forward) get() Target {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	return fw.target
}

// parseTCP parses "tcp:N" (0 ≤ N ≤ 65535).
func parseTCP(local string) (int, bool) {
	p, ok := strings.CutPrefix(local, "tcp:")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(p)
	return n, err == nil && n >= 0 && n <= 65535 && strconv.Itoa(n) == p
}

// parseJDWP parses "jdwp:PID".
func parseJDWP(remote string) (int, bool) {
	p, ok := strings.CutPrefix(remote, "jdwp:")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(p)
	return n, err == nil && n > 0 && strconv.Itoa(n) == p
}

// maybeForward handles the forward requests the front executes itself
// and reports whether it did; sel is the transport the connection switched
// to, if any (it takes precedence over a plain host: prefix, as in adb).
func (f *Front) maybeForward(ctx context.Context, client net.Conn, req Request, sel *Selector, log zerolog.Logger) bool {
	if !req.Host {
		return false
	}
	use := req.Sel
	if sel != nil && req.Sel.Kind == SelectAny {
		use = *sel
	}
	switch req.Kind {
	case KindForward:
		port, okL := parseTCP(req.Local)
		pid, okR := parseJDWP(req.Remote)
		if !okL || !okR {
			return false
		}
		f.addForward(ctx, client, use, port, pid, req.NoRebind, log)
		return true
	case KindKillForward:
		f.mu.Lock()
		fw := f.forwards[req.Local]
		delete(f.forwards, req.Local)
		f.mu.Unlock()
		if fw == nil {
			return false
		}
		fw.ln.Close()
		log.Info().Str(LogLocal, fw.local).Msg("JDWP forward removed")
		client.Write([]byte("OKAYOKAY")) //nolint:errcheck // closing anyway
		return true
	case KindKillForwardAll:
		f.closeForwards()
		return false // and the adb server removes its own
	case KindListForward:
		list, err := f.query(ctx, req.Raw)
		if err != nil {
			var fe *adbwire.FailError
			if errors.As(err, &fe) {
				writeFail(client, fe.Message) //nolint:errcheck // closing anyway
			} else {
				writeFail(client, err.Error()) //nolint:errcheck // closing anyway
			}
			return true
		}
		f.mu.Lock()
		keys := make([]string, 0, len(f.forwards))
		for k := range f.forwards {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fw := f.forwards[k]
			t := fw.get()
			list += t.Serial + " " + fw.local + " jdwp:" + strconv.Itoa(t.PID) + "\n"
		}
		f.mu.Unlock()
		client.Write(adbwire.AppendMessage([]byte("OKAY"), list)) //nolint:errcheck // closing anyway
		return true
	}
	return false
}

// addForward executes forward:tcp:PORT;jdwp:PID for the device use picks,
// answering as the adb server does: OKAY OKAY (and the port when PORT was
// 0), or FAIL.
func (f *Front) addForward(ctx context.Context, client net.Conn, use Selector, port, pid int, noRebind bool, log zerolog.Logger) {
	serial, err := f.query(ctx, use.Prefix()+"get-serialno")
	if err != nil {
		var fe *adbwire.FailError
		if errors.As(err, &fe) {
			writeFail(client, fe.Message) //nolint:errcheck // closing anyway
		} else {
			writeFail(client, err.Error()) //nolint:errcheck // closing anyway
		}
		return
	}
	t := Target{Serial: serial, PID: pid}
	local := "tcp:" + strconv.Itoa(port)
	if port != 0 {
		f.mu.Lock()
		fw := f.forwards[local]
		if fw != nil && !noRebind {
			fw.mu.Lock()
			fw.target = t
			fw.mu.Unlock()
		}
		f.mu.Unlock()
		if fw != nil {
			if noRebind {
				writeFail(client, "cannot rebind existing socket") //nolint:errcheck // closing anyway
				return
			}
			log.Info().Str(LogLocal, local).Str(logkey.Device, serial).Int(logkey.PID, pid).Msg("JDWP forward rebound")
			client.Write([]byte("OKAYOKAY")) //nolint:errcheck // closing anyway
			return
		}
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(f.cfg.ForwardHost, strconv.Itoa(port)))
	if err != nil {
		writeFail(client, "cannot bind listener: "+err.Error()) //nolint:errcheck // closing anyway
		return
	}
	actual := ln.Addr().(*net.TCPAddr).Port
	fw := &forward{local: "tcp:" + strconv.Itoa(actual), ln: ln, target: t}
	f.mu.Lock()
	if f.forwards == nil || f.ctx == nil || f.ctx.Err() != nil {
		f.mu.Unlock()
		ln.Close()
		writeFail(client, "the front is shutting down") //nolint:errcheck // closing anyway
		return
	}
	fctx := f.ctx
	f.forwards[fw.local] = fw
	f.mu.Unlock()
	f.wg.Go(func() { f.serveForward(fctx, fw) })
	log.Info().Str(LogLocal, fw.local).Str(logkey.Device, serial).Int(logkey.PID, pid).Msg("JDWP forward: the front listens and relays through the accelerator")
	out := []byte("OKAYOKAY")
	if port == 0 {
		out = adbwire.AppendMessage(out, strconv.Itoa(actual))
	}
	client.Write(out) //nolint:errcheck // closing anyway
}

// serveForward accepts debuggers on a forward until its listener closes.
func (f *Front) serveForward(ctx context.Context, fw *forward) {
	err := accept.Loop(ctx, fw.ln, f.log, func(conn net.Conn) {
		f.wg.Go(func() {
			t := fw.get()
			log := f.log.With().Str(LogClient, conn.RemoteAddr().String()).Str(LogLocal, fw.local).Logger()
			vm, attempts, err := f.dialJDWPRetry(ctx, t)
			if err != nil {
				log.Warn().Err(err).Str(logkey.Device, t.Serial).Int(logkey.PID, t.PID).Int(logkey.Attempts, attempts).
					Msg("cannot open the JDWP stream for a forwarded debugger; reset its connection before its handshake")
				refuse(conn)
				return
			}
			defer conn.Close()
			defer vm.Close()
			stop := context.AfterFunc(ctx, func() { conn.Close(); vm.Close() })
			defer stop()
			f.runJDWP(ctx, conn, vm, t, log)
		})
	})
	f.mu.Lock()
	if f.forwards[fw.local] == fw {
		delete(f.forwards, fw.local)
	}
	f.mu.Unlock()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		f.log.Error().Err(err).Str(LogLocal, fw.local).Msg("JDWP forward stopped accepting")
	}
}

// closeForwards closes every forward's listener.
func (f *Front) closeForwards() {
	f.mu.Lock()
	fws := make([]*forward, 0, len(f.forwards))
	for k, fw := range f.forwards {
		fws = append(fws, fw)
		delete(f.forwards, k)
	}
	f.mu.Unlock()
	for _, fw := range fws {
		fw.ln.Close()
	}
}

// dialJDWPRetry opens t's JDWP stream, trying again for DialRetry while
// it cannot (the adb server restarting, the device offline or not back
// yet). It returns the number of attempts made.
func (f *Front) dialJDWPRetry(ctx context.Context, t Target) (net.Conn, int, error) {
	deadline := time.Now().Add(f.cfg.DialRetry)
	pause := 10 * time.Millisecond
	for attempt := 1; ; attempt++ {
		vm, err := f.dialJDWP(ctx, t.Serial, t.PID)
		if err == nil {
			return vm, attempt, nil
		}
		wait := min(pause, time.Until(deadline))
		if wait <= 0 || ctx.Err() != nil {
			return nil, attempt, err
		}
		tm := time.NewTimer(wait)
		select {
		case <-tm.C:
		case <-ctx.Done():
			tm.Stop()
			return nil, attempt, err
		}
		pause = min(2*pause, 200*time.Millisecond)
	}
}

// refuse resets a debugger's connection (closes it with a TCP reset), so
// that it reports a refused or reset connection rather than a handshake
// cut short.
func refuse(c net.Conn) {
	if l, ok := c.(interface{ SetLinger(int) error }); ok {
		l.SetLinger(0) //nolint:errcheck // closing anyway
	}
	c.Close()
}
