package ddmtap

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/jdwpaccel/jdwpaccel/ddm"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/retag"
	"github.com/rs/zerolog"
)

// HolderConfig configures a Holder.
type HolderConfig struct {
	// Addr names the VM (its JDWP address); Dial defaults to TCP to it.
	Addr string
	Dial func(ctx context.Context) (net.Conn, error)
	// Logger, Metrics (may be nil) and the client Options.
	Logger  zerolog.Logger
	Metrics *Metrics
	Options Options
	// ReconnectDelay is the pause before reconnecting after a debugger
	// left (ddmlib waits 1 s: "the client will never answer the second
	// handshake" otherwise). Default 1 s.
	ReconnectDelay time.Duration
	// HandshakeTimeout bounds the JDWP handshake with the VM (10 s).
	HandshakeTimeout time.Duration
	// MaxHeld bounds the non-DDM bytes kept for the next debugger (4 MiB).
	MaxHeld int
	// KnownDDM says the VM is known to speak DDM (found through adb, or
	// the user said --ddm=force): the holder connects at once and sends
	// HELO. Otherwise it sends nothing and holds nothing until the VM's
	// reply to a debugger's VirtualMachine.Version names an Android
	// runtime.
	KnownDDM bool
	// OnThreadChange, if not nil, is the Monitor's (Monitor.OnThreadChange)
	// from before the holder runs, so that it misses no thread of the
	// VM's first list.
	OnThreadChange func(ThreadChange)
}

// Holder keeps a connection to one VM while no debugger is attached, so
// that the Monitor runs before and between debuggers, and hands that same
// connection to the next debugger.
//
// Which VMs are held: only VMs known to speak DDM (HolderConfig.KnownDDM,
// or a VM that answered HELO in an earlier session). A VM not known yet is
// not connected to before a debugger arrives; the VM's reply to the
// debugger's own VirtualMachine.Version decides whether it gets DDM (an
// Android runtime) or never any (HotSpot, OpenJ9, anything else; see
// link.begin for why). A VM that dies with HELO unanswered is never sent
// it again.
//
// How the VM stays clean: while holding, the proxy sends nothing but DDM
// (HELO, and for VMs that answer it FEAT, THEN, THST, heap requests), so an
// Android VM never thinks a debugger is attached, and keeps every non-DDM
// packet the VM sends to replay to the debugger before anything else. A
// held connection is never dropped before a debugger arrives (a VM may
// resume itself when its debugger leaves), except when the proxy shuts
// down. When the debugger leaves, the relay
// closes the VM connection: the VM resets its debugging state (event
// requests, suspensions, held objects) exactly as after a direct detach.
// The holder then reconnects, after ReconnectDelay, only if the VM speaks
// DDM; other VMs are dialled afresh when the next debugger arrives.
type Holder struct {
	cfg HolderConfig
	mon *Monitor
	log zerolog.Logger

	mu        sync.Mutex // guards the fields below
	held      *heldConn
	lent      int           // connections handed to debuggers and not closed yet
	dialing   chan struct{} // non-nil while a dial is in progress; closed when it ends
	connected bool          // some connection to the VM succeeded once
	running   bool

	wake chan struct{} // pokes Run to reconsider connecting (buffered, 1)
}

// NewHolder returns a Holder for the VM; Run starts it.
func NewHolder(cfg HolderConfig) *Holder {
	if cfg.Dial == nil {
		cfg.Dial = relay.TCP(cfg.Addr)
	}
	if cfg.ReconnectDelay <= 0 {
		cfg.ReconnectDelay = time.Second
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = 10 * time.Second
	}
	if cfg.MaxHeld <= 0 {
		cfg.MaxHeld = 4 << 20
	}
	cfg.Options = cfg.Options.withDefaults()
	log := cfg.Logger.With().Str(relay.LogComponent, "ddm").Logger()
	h := &Holder{
		cfg:  cfg,
		log:  log,
		mon:  NewMonitor(cfg.Addr, log, cfg.Metrics),
		wake: make(chan struct{}, 1),
	}
	h.mon.OnThreadChange(cfg.OnThreadChange)
	return h
}

// Monitor is the VM's monitor; it lives as long as the Holder.
func (h *Holder) Monitor() *Monitor { return h.mon }

func (h *Holder) poke() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// Run connects to the VM and monitors it until ctx ends, reconnecting
// when a debugger leaves a DDM VM. At the end it disables what it enabled
// on a held connection and closes it.
func (h *Holder) Run(ctx context.Context) error {
	h.mu.Lock()
	if h.running {
		h.mu.Unlock()
		return errors.New("ddmtap: Holder.Run called twice")
	}
	h.running = true
	h.mu.Unlock()
	backoff := time.Duration(0)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			h.shutdown()
			return nil
		case <-h.wake:
		case <-timer.C:
		}
		if !h.wantConn() {
			continue
		}
		err := h.hold(ctx)
		if err == nil {
			backoff = 0
			continue
		}
		if ctx.Err() != nil {
			continue
		}
		backoff = min(max(2*backoff, time.Second), 30*time.Second)
		h.cfg.Metrics.error(ReasonDial)
		h.log.Info().Err(err).Dur("retry_in", backoff).Msg("cannot connect to the VM for monitoring; will retry")
		timer.Reset(backoff)
	}
}

// wantConn says whether Run should connect now.
func (h *Holder) wantConn() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.held != nil || h.lent > 0 || h.dialing != nil {
		return false
	}
	switch h.mon.DDM() {
	case DDMYes:
		return true
	case DDMUnknown:
		return h.cfg.KnownDDM && !h.connected
	}
	return false
}

// dial opens and handshakes a VM connection, marking the holder as
// dialling so that Run and Dial never dial at the same time.
func (h *Holder) dial(ctx context.Context) (net.Conn, error) {
	conn, err := h.cfg.Dial(ctx)
	if err != nil {
		return nil, err
	}
	conn.SetDeadline(time.Now().Add(h.cfg.HandshakeTimeout))
	if err := jdwp.WriteHandshake(conn); err != nil {
		conn.Close()
		return nil, err
	}
	if err := jdwp.ReadHandshake(conn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("VM handshake: %w", err)
	}
	conn.SetDeadline(time.Time{})
	h.mu.Lock()
	h.connected = true
	h.mu.Unlock()
	return conn, nil
}

// beginDial claims the dialler slot, or returns a channel to wait on.
func (h *Holder) beginDial() (mine bool, wait chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dialing != nil {
		return false, h.dialing
	}
	h.dialing = make(chan struct{})
	return true, nil
}

func (h *Holder) endDial() {
	h.mu.Lock()
	close(h.dialing)
	h.dialing = nil
	h.mu.Unlock()
}

// hold connects and starts holding the connection for monitoring.
func (h *Holder) hold(ctx context.Context) error {
	mine, _ := h.beginDial()
	if !mine {
		return nil
	}
	defer h.endDial()
	conn, err := h.dial(ctx)
	if err != nil {
		return err
	}
	w := &connWriter{conn: conn}
	l := h.newLink()
	l.setSend(w.write)
	hc := &heldConn{h: h, conn: conn, br: bufio.NewReaderSize(conn, readerSize), w: w, l: l, done: make(chan struct{})}
	h.mu.Lock()
	h.held = hc
	h.mu.Unlock()
	go hc.read()
	l.begin()
	h.log.Info().Str(relay.LogVM, h.cfg.Addr).Msg("holding a VM connection for monitoring until a debugger arrives")
	return nil
}

// shutdown disables the proxy's DDM settings on a held connection and
// closes it (the one time a held connection is dropped without a
// debugger: the proxy is exiting).
func (h *Holder) shutdown() {
	h.mu.Lock()
	hc := h.held
	h.held = nil
	h.mu.Unlock()
	if hc == nil {
		return
	}
	if h.mon.DDM() == DDMYes {
		hc.l.request(ddm.U1{T: ddm.TypeTHEN, V: 0}) //nolint:errcheck // best effort on the way out
		hc.l.mu.Lock()
		heap := hc.l.heapAsked
		hc.l.mu.Unlock()
		if heap {
			hc.l.request(ddm.U1{T: ddm.TypeHPIF, V: 0})                         //nolint:errcheck
			hc.l.request(ddm.SegmentRequest{T: ddm.TypeHPSG})                   //nolint:errcheck
			hc.l.request(ddm.SegmentRequest{T: ddm.TypeNHSG, When: 0, What: 0}) //nolint:errcheck
		}
	}
	hc.w.disable()
	hc.conn.Close()
	<-hc.done
	hc.l.close()
}

// Dial is the relay.Dialer of the VM: it hands the held connection to the
// debugger, with the non-DDM packets held for it read first, or dials a
// fresh one. The connection comes handshaken, with the DDM tap of its link
// as its hooks (none for a pass-through connection).
func (h *Holder) Dial(ctx context.Context) (relay.VMConn, error) {
	for {
		if c := h.take(); c != nil {
			return c.vmConn(), nil
		}
		mine, wait := h.beginDial()
		if !mine {
			select {
			case <-wait:
				continue // the dial in progress may have produced a held connection
			case <-ctx.Done():
				return relay.VMConn{}, ctx.Err()
			}
		}
		c, err := h.dialFresh(ctx)
		if err != nil {
			return relay.VMConn{}, err
		}
		return c.vmConn(), nil
	}
}

// dialFresh dials a new connection for a debugger (the dialler slot is
// held by the caller).
func (h *Holder) dialFresh(ctx context.Context) (*lentConn, error) {
	defer h.endDial()
	conn, err := h.dial(ctx)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	busy := h.lent > 0
	h.lent++
	h.mu.Unlock()
	if busy {
		// Another debugger holds the VM: plain pass-through, no DDM (the VM
		// will refuse or queue this connection as it would directly).
		return &lentConn{Conn: conn, h: h}, nil
	}
	w := &connWriter{conn: conn}
	l := h.newLink()
	l.setSend(w.write)
	l.begin()
	return &lentConn{Conn: conn, h: h, l: l, w: w}, nil
}

// take hands over the held connection, or returns nil.
func (h *Holder) take() *lentConn {
	h.mu.Lock()
	hc := h.held
	h.held = nil
	if hc != nil {
		h.lent++
	}
	h.mu.Unlock()
	if hc == nil {
		return nil
	}
	hc.w.disable() // no more writes of the holding phase
	hc.l.setSend(nil)
	hc.stopping.Store(true)
	hc.conn.SetReadDeadline(time.Now())
	<-hc.done
	hc.conn.SetReadDeadline(time.Time{})
	if hc.err != nil {
		h.log.Info().Err(hc.err).Msg("held VM connection ended before the debugger arrived; dialling afresh")
		hc.conn.Close()
		hc.l.close()
		h.mu.Lock()
		h.lent--
		h.mu.Unlock()
		return nil
	}
	br, held := hc.handOver()
	h.log.Info().Int("held_bytes", held).Msg("handing the held VM connection to the debugger")
	return &lentConn{Conn: hc.conn, h: h, l: hc.l, br: br}
}

func (h *Holder) newLink() *link {
	return newLink(h.mon, h.log, h.cfg.Options, retag.NewTable(), h.cfg.KnownDDM)
}

// lost is called when a VM connection ended: if HELO was still
// unanswered, it may be what ended it, so the VM is never sent it again.
func (h *Holder) lost(l *link, err error) {
	if !l.probePending() {
		return
	}
	l.mon.setDDM(DDMNo)
	h.cfg.Metrics.error(ReasonProbeLost)
	h.log.Warn().Err(err).Str(relay.LogVM, h.cfg.Addr).Msg("VM closed the connection before answering the proxy's DDM HELO; no DDM traffic to it again (if it crashed, start it again; --ddm=false avoids DDM altogether)")
}

// release is called once when a lent connection is closed.
func (h *Holder) release(c *lentConn) {
	if c.l != nil {
		h.lost(c.l, nil)
		c.l.close()
	}
	h.mu.Lock()
	h.lent--
	h.mu.Unlock()
	if h.mon.DDM() == DDMYes {
		time.AfterFunc(h.cfg.ReconnectDelay, h.poke)
	}
}

// vmConn is the connection as the relay takes it, with the DDM tap of its
// link as its hooks.
func (c *lentConn) vmConn() relay.VMConn {
	vc := relay.VMConn{Conn: c, Handshaken: true, Reader: c.br}
	if c.l != nil {
		vc.IDs = c.l.ids // the connection's one ID table, from the holding phase on
		vc.Hooks = func(*relay.Session) relay.Hooks {
			return relay.Hooks{Interceptors: []relay.Interceptor{tap{l: c.l}}, Observers: []relay.Observer{sessionStart{c}}}
		}
	}
	return vc
}

// sessionStart hands the link's writes to the session once it runs: the
// hooks are made while the session is still being built, and a send from
// the link's own goroutine before then races with it. Until then a fresh
// connection's pre-session writer keeps writing. During the session the
// link's requests go to the VM in the session's turn (relay.Session.Do),
// whichever goroutine makes them: the tap's hook calls, the link's loop,
// the page asking for heap data.
type sessionStart struct{ c *lentConn }

// Observe implements relay.Observer.
func (sessionStart) Observe(*relay.Session, *relay.Frame) {}

// SessionStart implements relay.SessionObserver.
func (o sessionStart) SessionStart(s *relay.Session) {
	if o.c.w != nil {
		o.c.w.disable() // the session's writer takes over
	}
	o.c.l.setSession(s, func(p jdwp.Packet) error {
		return s.Do(func(out *relay.Outbox) {
			s.Yield(out) // the VM as the program left it: no suspension of the speculator's (relay.Yielder)
			out.SendToVM(p, relay.Synthetic)
		})
	})
}

// SessionEnd implements relay.SessionObserver.
func (sessionStart) SessionEnd(*relay.Session, error) {}
