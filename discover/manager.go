package discover

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/logkey"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Log field names of this package (lower_snake, like relay's).
const (
	LogVMKey  = "vm_key"
	LogVMName = "vm_name"
	LogPort   = "port"
)

// ServeFunc serves debuggers for one VM: it accepts connections on ln
// (the VM's own port, plus those the current-VM port routes to it) and
// relays each to a connection opened with dial, until ctx ends; then it
// must close every session and return. relay.Server.Serve does exactly
// that:
//
//	func(ctx context.Context, vm discover.VM, dial discover.DialFunc, ln net.Listener) error {
//		return relay.NewServer(relay.Config{DialVM: relay.Plain(dial), ...}).Serve(ctx, ln)
//	}
//
// dial reaches the VM at its current address and fails with ErrVMGone
// once the VM is gone.
type ServeFunc func(ctx context.Context, vm VM, dial DialFunc, ln net.Listener) error

// AppNamer tells a VM's application name when it knows it (the DDM
// monitor learns it from APNM/HELO); "" when it does not.
type AppNamer interface {
	AppName(vmKey string) string
}

// PortAuto, as Config.PortBase, gives each VM a per-VM port the kernel
// chooses (the one it had before if that is free again).
const PortAuto = -1

// Config configures a Manager.
type Config struct {
	// Source finds the VMs (required).
	Source Source
	// Serve serves each VM's debuggers (required).
	Serve ServeFunc
	// PortBase is the first per-VM port; each VM gets the lowest free
	// port from PortBase on and keeps it while it lives. 0 turns per-VM
	// ports off (the current-VM listener still works); PortAuto gives
	// each VM a port the kernel chooses.
	PortBase int
	// PortSpan is how many ports from PortBase may be used (100 when zero).
	PortSpan int
	// ListenHost is the host per-VM ports bind (127.0.0.1 when empty).
	ListenHost string
	// Selected is the current-VM listener (--listen); may be nil. The
	// Manager accepts on it and closes it when Run returns.
	Selected net.Listener
	// AppNamer, if set, names VMs in listings.
	AppNamer AppNamer
	Logger   zerolog.Logger
	// Registerer, if set, receives the Manager's metrics.
	Registerer prometheus.Registerer
}

// Manager keeps the live set of VMs a Source reports, runs a listener per
// VM, and routes the current-VM listener to the selected VM.
type Manager struct {
	cfg Config
	log zerolog.Logger

	mu       sync.Mutex        // guards vms, sel, lastPort, changed, lastSnap
	vms      map[string]*entry // live VMs by key
	sel      selection
	lastPort map[string]int // the port a key last had, to give it again
	changed  chan struct{}  // closed and replaced at every change
	lastSnap []VM           // the source's last report

	recheck chan struct{} // a session ended: re-apply the last report
	wg      sync.WaitGroup
	running atomic.Bool

	vmsGauge  *prometheus.GaugeVec
	unrouted  prometheus.Counter
	vmChanges *prometheus.CounterVec
}

// entry is one live VM. vm, port and missing are guarded by Manager.mu.
type entry struct {
	key      string // == vm.Key, immutable
	keep     bool   // == vm.keepWhileInUse when added, immutable
	vm       VM
	port     int
	since    time.Time
	missing  bool // kept while in use although the source stopped reporting it
	ln       *vmListener
	cancel   context.CancelFunc
	done     chan struct{} // closed when Serve returned
	sessions atomic.Int64
}

// Status is a VM as the Manager shows it.
type Status struct {
	VM
	// Port is the VM's own listening port (0 if none).
	Port int `json:"port,omitempty"`
	// Listen is the VM's own listening address.
	Listen string `json:"listen,omitempty"`
	// Sessions counts the debugger connections the proxy holds to it.
	Sessions int `json:"sessions"`
	// Selected says the current-VM port reaches this VM now.
	Selected bool      `json:"selected"`
	Since    time.Time `json:"since"`
}

// Snapshot is the Manager's state.
type Snapshot struct {
	// Listen is the current-VM listener's address ("" if none).
	Listen string `json:"listen,omitempty"`
	// Selected is the key of the VM the current-VM port reaches now, ""
	// when none; SelectedWhy says why none.
	Selected    string `json:"selected,omitempty"`
	SelectedWhy string `json:"selected_why,omitempty"`
	// Selection is what was chosen with Select ("" for automatic).
	Selection string   `json:"selection,omitempty"`
	VMs       []Status `json:"vms"`
}

// ErrNoSuchVM is returned by Select when nothing matches.
var ErrNoSuchVM = errors.New("no such VM")

// NewManager checks cfg and returns a Manager; Run starts it.
func NewManager(cfg Config) (*Manager, error) {
	if cfg.Source == nil || cfg.Serve == nil {
		return nil, errors.New("discover: Config.Source and Config.Serve are required")
	}
	if cfg.PortBase < PortAuto || cfg.PortBase > 65535 {
		return nil, fmt.Errorf("discover: bad port base %d", cfg.PortBase)
	}
	if cfg.PortSpan <= 0 {
		cfg.PortSpan = 100
	}
	if cfg.ListenHost == "" {
		cfg.ListenHost = "127.0.0.1"
	}
	m := &Manager{
		cfg:      cfg,
		log:      cfg.Logger,
		vms:      map[string]*entry{},
		lastPort: map[string]int{},
		changed:  make(chan struct{}),
		recheck:  make(chan struct{}, 1),
		vmsGauge: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "jdwpaccel", Subsystem: "discover", Name: "vms",
			Help: "VMs currently known, by source kind.",
		}, []string{"kind"}),
		unrouted: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "jdwpaccel", Subsystem: "discover", Name: "unrouted_connections_total",
			Help: "Debugger connections to the current-VM port closed because no VM was selected.",
		}),
		vmChanges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "jdwpaccel", Subsystem: "discover", Name: "vm_changes_total",
			Help: "VMs that appeared (added) or disappeared (removed).",
		}, []string{"change"}),
	}
	for _, k := range []string{KindStatic, KindScan, KindADB} {
		m.vmsGauge.WithLabelValues(k)
	}
	m.vmChanges.WithLabelValues("added")
	m.vmChanges.WithLabelValues("removed")
	if cfg.Registerer != nil {
		for _, c := range []prometheus.Collector{m.vmsGauge, m.unrouted, m.vmChanges} {
			if err := cfg.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("discover: metrics: %w", err)
			}
		}
	}
	return m, nil
}

// Run runs the source, the per-VM listeners and the current-VM listener
// until ctx ends, then closes every listener and session and returns nil;
// it returns the source's error if the source cannot run.
func (m *Manager) Run(ctx context.Context) error {
	if !m.running.CompareAndSwap(false, true) {
		return errors.New("discover: Manager.Run called twice")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	snaps := make(chan []VM, 1) // latest report wins
	srcErr := make(chan error, 1)
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		srcErr <- m.cfg.Source.Run(ctx, func(vms []VM) {
			cp := slices.Clone(vms)
			select {
			case <-snaps:
			default:
			}
			snaps <- cp
		})
	}()
	if m.cfg.Selected != nil {
		m.log.Info().Str(logkey.Listen, m.cfg.Selected.Addr().String()).Msg("current-VM port listening; it reaches the selected VM")
		m.wg.Add(1)
		go m.acceptSelected(ctx)
	}

	var err error
loop:
	for {
		select {
		case vms := <-snaps:
			m.apply(ctx, vms)
		case <-m.recheck:
			m.mu.Lock()
			last := m.lastSnap
			m.mu.Unlock()
			m.apply(ctx, last)
		case e := <-srcErr:
			if e != nil && ctx.Err() == nil {
				err = e
				break loop
			}
			srcErr = nil // the source is done; keep serving what we have
		case <-ctx.Done():
			break loop
		}
	}
	cancel()
	if m.cfg.Selected != nil {
		m.cfg.Selected.Close()
	}
	m.mu.Lock()
	for _, e := range m.vms {
		m.removeLocked(e, true)
	}
	m.notifyLocked()
	m.mu.Unlock()
	m.wg.Wait()
	return err
}

// Changed returns a channel closed at the next change of the VM set,
// their sessions or the selection.
func (m *Manager) Changed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.changed
}

func (m *Manager) notifyLocked() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// apply makes the live set match a report.
func (m *Manager) apply(ctx context.Context, vms []VM) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lastSnap = vms
	present := make(map[string]bool, len(vms))
	changed := false
	for _, vm := range vms {
		if vm.Key == "" || vm.Dial == nil || present[vm.Key] {
			continue
		}
		present[vm.Key] = true
		if e, ok := m.vms[vm.Key]; ok {
			if !e.vm.sameInfo(vm) || e.missing {
				changed = true
			}
			e.vm, e.missing = vm, false
			continue
		}
		m.addLocked(ctx, vm)
		changed = true
	}
	for key, e := range m.vms {
		if present[key] {
			continue
		}
		if e.vm.keepWhileInUse && e.sessions.Load() > 0 {
			if !e.missing {
				e.missing, e.vm.Busy, changed = true, true, true
			}
			continue
		}
		m.removeLocked(e, false)
		changed = true
	}
	if changed {
		m.notifyLocked()
	}
}

// addLocked starts serving a new VM.
func (m *Manager) addLocked(ctx context.Context, vm VM) {
	e := &entry{key: vm.Key, keep: vm.keepWhileInUse, vm: vm, since: time.Now(), done: make(chan struct{})}
	log := m.log.With().Str(LogVMKey, vm.Key).Logger()
	var real net.Listener
	if m.cfg.PortBase != 0 {
		real, e.port = m.listenLocked(vm.Key)
		if real == nil {
			log.Error().Int(LogPort, m.cfg.PortBase).Msg("no free per-VM port; the VM is reachable only through the current-VM port")
		}
	}
	e.ln = newVMListener(m, e, real)
	m.vms[vm.Key] = e
	m.vmsGauge.WithLabelValues(vm.Kind).Inc()
	m.vmChanges.WithLabelValues("added").Inc()
	ev := log.Info().Str(LogVMName, vm.Name).Int(logkey.PID, vm.PID)
	if real != nil {
		ev = ev.Str(logkey.Listen, real.Addr().String())
	}
	ev.Msg("VM found")

	ectx, cancel := context.WithCancel(ctx)
	e.cancel = cancel
	dial := func(ctx context.Context) (net.Conn, error) {
		m.mu.Lock()
		var d DialFunc
		if cur, ok := m.vms[vm.Key]; ok && cur == e {
			d = e.vm.Dial
		}
		m.mu.Unlock()
		if d == nil {
			return nil, ErrVMGone
		}
		return d(ctx)
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer close(e.done)
		err := m.cfg.Serve(ectx, vm, dial, e.ln)
		if err != nil && ectx.Err() == nil {
			log.Error().Err(err).Msg("serving the VM's debuggers failed")
		}
	}()
}

// listenLocked opens the VM's own port: the one the key had before if
// free, else the lowest free one from PortBase, or with PortAuto one the
// kernel chooses.
func (m *Manager) listenLocked(key string) (net.Listener, int) {
	used := map[int]bool{}
	for _, e := range m.vms {
		if e.port != 0 {
			used[e.port] = true
		}
	}
	try := func(p int) net.Listener {
		if p <= 0 || p > 65535 || used[p] {
			return nil
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(m.cfg.ListenHost, strconv.Itoa(p)))
		if err != nil {
			return nil
		}
		return ln
	}
	if p, ok := m.lastPort[key]; ok {
		if ln := try(p); ln != nil {
			return ln, p
		}
	}
	remember := func(ln net.Listener) (net.Listener, int) {
		p := ln.Addr().(*net.TCPAddr).Port
		if len(m.lastPort) > 4096 {
			clear(m.lastPort)
		}
		m.lastPort[key] = p
		return ln, p
	}
	if m.cfg.PortBase == PortAuto {
		ln, err := net.Listen("tcp", net.JoinHostPort(m.cfg.ListenHost, "0"))
		if err != nil {
			return nil, 0
		}
		return remember(ln)
	}
	for p := m.cfg.PortBase; p < m.cfg.PortBase+m.cfg.PortSpan; p++ {
		if ln := try(p); ln != nil {
			return remember(ln)
		}
	}
	return nil, 0
}

// removeLocked stops serving a VM: its listener closes and its sessions
// end (Serve's context is cancelled).
func (m *Manager) removeLocked(e *entry, shutdown bool) {
	delete(m.vms, e.vm.Key)
	e.cancel()
	e.ln.Close()
	m.vmsGauge.WithLabelValues(e.vm.Kind).Dec()
	m.vmChanges.WithLabelValues("removed").Inc()
	ev := m.log.Info()
	msg := "VM gone; its port and sessions are closed"
	if shutdown {
		ev, msg = m.log.Debug(), "shutting down: VM's port and sessions closed"
	}
	ev.Str(LogVMKey, e.vm.Key).Str(LogVMName, e.vm.Name).Int64("sessions", e.sessions.Load()).Msg(msg)
}

// sessionChanged is called when a debugger connection to e opens or closes.
func (m *Manager) sessionChanged(e *entry, ended bool) {
	m.mu.Lock()
	m.notifyLocked()
	m.mu.Unlock()
	if ended && e.keep {
		select {
		case m.recheck <- struct{}{}:
		default:
		}
	}
}

func (m *Manager) statusLocked(e, selected *entry) Status {
	st := Status{VM: e.vm, Port: e.port, Sessions: int(e.sessions.Load()), Selected: e == selected, Since: e.since}
	st.Name = m.nameOf(e)
	if e.port != 0 {
		st.Listen = net.JoinHostPort(m.cfg.ListenHost, strconv.Itoa(e.port))
	}
	return st
}

// List returns the live VMs, sorted by key, and the selection.
func (m *Manager) List() Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	var snap Snapshot
	if m.cfg.Selected != nil {
		snap.Listen = m.cfg.Selected.Addr().String()
	}
	sel, why := m.resolveLocked()
	if sel != nil {
		snap.Selected = sel.vm.Key
	} else {
		snap.SelectedWhy = why
	}
	if m.sel.key != "" {
		snap.Selection = m.sel.key
	}
	snap.VMs = make([]Status, 0, len(m.vms))
	for _, e := range m.vms {
		snap.VMs = append(snap.VMs, m.statusLocked(e, sel))
	}
	slices.SortFunc(snap.VMs, func(a, b Status) int { return strings.Compare(a.Key, b.Key) })
	return snap
}
