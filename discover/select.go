package discover

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/jdwpaccel/jdwpaccel/internal/accept"
	"github.com/jdwpaccel/jdwpaccel/internal/logkey"
)

// selection is what Select chose: a key and, to follow an app across
// restarts, its name.
type selection struct {
	key, name string
}

// acceptSelected accepts on the current-VM listener and hands each
// connection to the selected VM's listener.
func (m *Manager) acceptSelected(ctx context.Context) {
	defer m.wg.Done()
	err := accept.Loop(ctx, m.cfg.Selected, m.log, func(c net.Conn) {
		m.mu.Lock()
		e, why := m.resolveLocked()
		m.mu.Unlock()
		if e == nil {
			m.unrouted.Inc()
			m.log.Warn().Str("debugger", c.RemoteAddr().String()).Str(logkey.Reason, why).Msg("debugger connected to the current-VM port, but no VM is selected; closing it")
			c.Close()
			return
		}
		m.log.Debug().Str(LogVMKey, e.vm.Key).Msg("current-VM port: routing a debugger")
		m.wg.Go(func() {
			if !e.ln.deliver(c) {
				c.Close()
			}
		})
	})
	if err != nil && !errors.Is(err, net.ErrClosed) {
		m.log.Error().Err(err).Msg("current-VM listener failed")
	}
}

// nameOf is the VM's application name: the AppNamer's if it knows one.
func (m *Manager) nameOf(e *entry) string {
	if m.cfg.AppNamer != nil {
		if n := m.cfg.AppNamer.AppName(e.vm.Key); n != "" {
			return n
		}
	}
	return e.vm.Name
}

// resolveLocked returns the VM the current-VM port reaches now, or why
// there is none.
func (m *Manager) resolveLocked() (*entry, string) {
	if m.sel.key != "" {
		if e, ok := m.vms[m.sel.key]; ok {
			return e, ""
		}
		if m.sel.name != "" {
			var match []*entry
			for _, e := range m.vms {
				if m.nameOf(e) == m.sel.name {
					match = append(match, e)
				}
			}
			if len(match) == 1 {
				return match[0], ""
			}
			if len(match) > 1 {
				return nil, fmt.Sprintf("the selected VM %s is gone and %d VMs are named %q; run \"jdwpaccel select\"", m.sel.key, len(match), m.sel.name)
			}
		}
		return nil, fmt.Sprintf("the selected VM %s is gone; run \"jdwpaccel select\"", m.sel.key)
	}
	switch len(m.vms) {
	case 0:
		return nil, "no VM found (yet)"
	case 1:
		for _, e := range m.vms {
			return e, ""
		}
	}
	return nil, fmt.Sprintf("%d VMs found; choose one with \"jdwpaccel select\"", len(m.vms))
}

// Select chooses the VM the current-VM port reaches: by key, by name
// (application name, main class or jar; followed across restarts), or by
// PID. An empty query goes back to automatic (the only VM, if one).
// Debuggers already connected stay where they are.
func (m *Manager) Select(query string) (Status, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if query == "" {
		m.sel = selection{}
		m.notifyLocked()
		m.log.Info().Msg("current-VM port: automatic selection")
		return Status{}, nil
	}
	e, ok := m.vms[query]
	if !ok {
		var match []*entry
		for _, c := range m.vms {
			if m.nameOf(c) == query || strconv.Itoa(c.vm.PID) == query {
				match = append(match, c)
			}
		}
		switch len(match) {
		case 0:
			return Status{}, fmt.Errorf("%w matches %q (by key, name or pid)", ErrNoSuchVM, query)
		case 1:
			e = match[0]
		default:
			keys := make([]string, len(match))
			for i, c := range match {
				keys[i] = c.vm.Key
			}
			slices.Sort(keys)
			return Status{}, fmt.Errorf("%q matches %d VMs (%s); select one by key", query, len(match), strings.Join(keys, ", "))
		}
	}
	m.sel = selection{key: e.vm.Key, name: m.nameOf(e)}
	m.notifyLocked()
	m.log.Info().Str(LogVMKey, e.vm.Key).Str(LogVMName, m.sel.name).Msg("current-VM port: VM selected")
	return m.statusLocked(e, e), nil
}
