package ddmtap

import (
	"context"
	"maps"
	"slices"
	"sync"
)

// Monitors are the monitors of several VMs by VM key (each monitor is
// named by its VM's key, which is also its ID on the live page): the VMs
// discovery found, or the processes behind the adb front. It lists them for
// the page and names VMs for discovery (discover.AppNamer). Safe for
// concurrent use.
type Monitors struct {
	mu    sync.Mutex // guards byKey
	byKey map[string]*Monitor
}

// NewMonitors returns an empty set.
func NewMonitors() *Monitors { return &Monitors{byKey: map[string]*Monitor{}} }

// Add makes m the monitor of the VM key.
func (r *Monitors) Add(key string, m *Monitor) {
	r.mu.Lock()
	r.byKey[key] = m
	r.mu.Unlock()
}

// Remove drops key's monitor if it is still m (a VM that came back under
// the same key may already have a new one).
func (r *Monitors) Remove(key string, m *Monitor) {
	r.mu.Lock()
	if r.byKey[key] == m {
		delete(r.byKey, key)
	}
	r.mu.Unlock()
}

// List returns the monitors sorted by VM key; the slice is the caller's.
func (r *Monitors) List() []*Monitor {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := slices.Sorted(maps.Keys(r.byKey))
	out := make([]*Monitor, len(keys))
	for i, k := range keys {
		out[i] = r.byKey[k]
	}
	return out
}

// AppName implements discover.AppNamer: the application name the VM's
// DDM HELO/APNM gave (else its package name), "" when not known.
func (r *Monitors) AppName(vmKey string) string {
	r.mu.Lock()
	m := r.byKey[vmKey]
	r.mu.Unlock()
	if m == nil {
		return ""
	}
	id := m.Snapshot().Identity
	if id.AppName != "" {
		return id.AppName
	}
	return id.PackageName
}

// Start runs a Holder for the VM cfg.Addr names until ctx ends or stop is
// called, with its monitor listed under that key meanwhile. stop ends the
// holder (disabling the DDM features it enabled on a held connection and
// closing it), waits for it and unlists the monitor; call it once the VM's
// relay server has returned.
func (r *Monitors) Start(ctx context.Context, cfg HolderConfig) (h *Holder, stop func()) {
	h = NewHolder(cfg)
	r.Add(cfg.Addr, h.Monitor())
	hctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.Run(hctx) //nolint:errcheck // Run returns nil when hctx ends
	}()
	return h, func() {
		cancel()
		<-done
		r.Remove(cfg.Addr, h.Monitor())
	}
}
