package adbfront

import (
	"context"
	"net"
	"slices"
	"sync"

	"github.com/jdwpaccel/jdwpaccel/ddmtap"
	"github.com/jdwpaccel/jdwpaccel/internal/logkey"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/share"
)

// Relay runs the front's JDWP streams through the accelerator (its Serve
// is a JDWPFunc): one relay.Server per device process (so that its logs
// carry the device and pid, and its sessions the VM key adb:SERIAL:PID),
// each session given the stream's VM connection (relay.Server.ServeWithVM),
// and with DDM decoding a passive DDM monitor per process (ddmtap.Passive).
// A process's server lives while it has streams; its monitor stays listed
// after the last stream ends (what the app was doing when the IDE left),
// for the keptEnded most recently ended processes only, so a front that
// outlives many app restarts does not grow.
type Relay struct {
	cfg  relay.Config
	dm   *ddmtap.Metrics // nil: no DDM decoding
	mons *ddmtap.Monitors

	// redial opens another JDWP stream to a process (Front.DialJDWP), set
	// by SetRedial before the front serves; nil: none.
	redial func(ctx context.Context, t Target) (net.Conn, error)

	// onClient is told each client attaching and leaving; may be nil.
	onClient func(share.ClientEvent)

	mu      sync.Mutex // guards servers, each entry's streams, and ended
	servers map[Target]*procServer
	ended   []endedMonitor // oldest first, at most keptEnded
}

// SetRedial gives the relay a way to open another JDWP stream to a
// process (the Front's DialJDWP): a stream whose VM closes before its
// handshake (the app or the device just restarted) is then tried again on
// new streams for the relay's dial retry. Call it before the front serves.
func (r *Relay) SetRedial(dial func(ctx context.Context, t Target) (net.Conn, error)) {
	r.redial = dial
}

// keptEnded bounds the monitors of processes without streams kept listed.
const keptEnded = 16

type endedMonitor struct {
	key string
	mon *ddmtap.Monitor
}

// procServer is one device process's relay server and monitor, with the
// number of its streams running.
type procServer struct {
	srv     *relay.Server
	front   *share.Front    // shares the process's one JDWP connection among its clients
	mon     *ddmtap.Monitor // nil without DDM decoding
	streams int
}

// NewRelay returns a Relay whose servers use cfg (its VM, DialVM and
// DialRetry are each server's own) and, when ddm is not nil, decode each
// process's DDM traffic into a monitor counted in ddm.
func NewRelay(cfg relay.Config, ddm *ddmtap.Metrics) *Relay {
	return &Relay{cfg: cfg, dm: ddm, mons: ddmtap.NewMonitors(), servers: map[Target]*procServer{}}
}

// Monitors lists the processes' DDM monitors, by VM key (adb:SERIAL:PID).
func (r *Relay) Monitors() *ddmtap.Monitors { return r.mons }

// acquire returns t's server, making it (and its monitor) for t's first
// stream; each acquire is paired with a release when the stream ends.
func (r *Relay) acquire(t Target) *procServer {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ps := r.servers[t]; ps != nil {
		ps.streams++
		return ps
	}
	key := t.String()
	cfg := r.cfg
	cfg.VM = key
	cfg.DialVM = nil // each session is given its stream (ServeWithVM)
	// The relay retries for DialRetry a stream whose VM closed before its
	// handshake, on new streams to the same process (SetRedial).
	cfg.Logger = cfg.Logger.With().Str(logkey.Device, t.Serial).Int(logkey.PID, t.PID).Logger()
	ps := &procServer{streams: 1}
	if r.dm != nil {
		ps.mon = ddmtap.NewMonitor(key, cfg.Logger.With().Str(logkey.Component, "ddm").Logger(), r.dm)
		r.mons.Add(key, ps.mon)
		tap := ddmtap.Passive(ps.mon)
		cfg.NewHooks = relay.ChainHooks(cfg.NewHooks, func(*relay.Session) relay.Hooks {
			return relay.Hooks{Observers: []relay.Observer{tap}}
		})
	}
	ps.srv = relay.NewServer(cfg)
	ps.front = share.NewFront(key, share.Config{Logger: cfg.Logger.With().Str(logkey.Component, "share").Logger(), MaxPacketSize: cfg.MaxPacketSize, Metrics: cfg.Metrics, OnClient: r.onClient})
	r.servers[t] = ps
	return ps
}

// release ends one of t's streams; the last one removes t's server and
// keeps its monitor among the ended ones.
func (r *Relay) release(t Target) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ps := r.servers[t]
	if ps.streams--; ps.streams > 0 {
		return
	}
	delete(r.servers, t)
	if ps.mon == nil {
		return
	}
	r.ended = append(r.ended, endedMonitor{t.String(), ps.mon})
	if len(r.ended) > keptEnded {
		r.mons.Remove(r.ended[0].key, r.ended[0].mon) // no-op if a newer stream replaced it
		r.ended = slices.Delete(r.ended, 0, 1)
	}
}

// Serve relays one JDWP stream of process t (a JDWPFunc): client is the
// debugger, vm the stream's VM side. It closes both. Clients of a process
// share its one JDWP connection (package share): the first one's stream
// carries the session, and a later client's stream is closed unused (the
// app takes one debugger connection; Android Studio's, say, while a
// tracer observes). The first client's call returns once the session
// ended (its stream, which the caller closes on return, carries it).
func (r *Relay) Serve(ctx context.Context, client, vm net.Conn, t Target) error {
	defer client.Close()
	ps := r.acquire(t)
	defer r.release(t)
	var redial relay.Dialer
	if r.redial != nil && t.Serial != "" {
		redial = relay.Plain(func(ctx context.Context) (net.Conn, error) { return r.redial(ctx, t) })
	}
	var session chan error // the session this client's stream carries
	_, err := ps.front.Serve(ctx, client, false, func(debugger net.Conn) {
		if debugger == nil {
			vm.Close() // it joined the running session: its stream is not needed
			return
		}
		session = make(chan error, 1)
		go func() { session <- ps.srv.ServeWithVM(ctx, debugger, relay.VMConn{Conn: vm}, redial) }()
	})
	if session == nil {
		vm.Close() // unused: no handshake, or it joined the running session (closed already)
		return err
	}
	if serr := <-session; serr != nil {
		err = serr
	}
	return err
}

// Clients lists the clients attached now to the VM whose key
// (adb:SERIAL:PID, its sessions' VM) is vm.
func (r *Relay) Clients(vm string) []share.ClientInfo {
	r.mu.Lock()
	var front *share.Front
	for t, ps := range r.servers {
		if t.String() == vm {
			front = ps.front
		}
	}
	r.mu.Unlock()
	if front == nil {
		return nil
	}
	return front.Clients()
}

// OnClient, set before the front serves, is told each client attaching to
// and leaving a process's VM (the journal).
func (r *Relay) OnClient(f func(share.ClientEvent)) { r.onClient = f }
