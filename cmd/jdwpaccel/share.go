package main

import (
	"context"
	"net"
	"sync"

	"github.com/jdwpaccel/jdwpaccel/journal"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/share"
	"github.com/jdwpaccel/jdwpaccel/web"
)

// fronts holds the share.Front of each VM the proxy serves, by VM name
// (the name its sessions report, relay.Config.VM or --vm), so that the
// page can list each session's clients with their roles.
type fronts struct {
	mu sync.Mutex // guards byVM
	// byVM: a VM's front while it is served.
	byVM map[string]*share.Front
	// onClient is told each client attaching and leaving (the log; the
	// journal when there is one); may be nil.
	onClient func(share.ClientEvent)
}

// serve runs cfg's relay server for the clients of ln and readOnly (nil:
// none), sharing the VM named vm among them, until ctx ends.
func (fs *fronts) serve(ctx context.Context, cfg relay.Config, vm string, ln, readOnly net.Listener) error {
	f := share.NewFront(vm, share.Config{
		Logger:        cfg.Logger.With().Str(relay.LogComponent, "share").Logger(),
		MaxPacketSize: cfg.MaxPacketSize,
		Metrics:       cfg.Metrics,
		OnClient:      fs.onClient,
	})
	fs.mu.Lock()
	if fs.byVM == nil {
		fs.byVM = map[string]*share.Front{}
	}
	fs.byVM[vm] = f
	fs.mu.Unlock()
	defer func() {
		fs.mu.Lock()
		if fs.byVM[vm] == f {
			delete(fs.byVM, vm)
		}
		fs.mu.Unlock()
	}()
	return share.Serve(ctx, relay.NewServer(cfg), f, ln, readOnly, cfg.MaxHandshakes)
}

// clients lists the clients attached to the VM named vm now.
func (fs *fronts) clients(vm string) []share.ClientInfo {
	fs.mu.Lock()
	f := fs.byVM[vm]
	fs.mu.Unlock()
	if f == nil {
		return nil
	}
	return f.Clients()
}

// journalClients records each client of a shared VM attaching and
// leaving in j.
func journalClients(j *journal.Journal) func(share.ClientEvent) {
	return func(ev share.ClientEvent) {
		j.Client(ev.VM, ev.Client.Number, ev.Client.Addr, ev.Client.Role, ev.How)
	}
}

// withClients gives each open session of ss the clients that share its
// VM now (clients lists them by VM name).
func withClients(ss []web.Session, clients func(vm string) []share.ClientInfo) []web.Session {
	for i := range ss {
		if !ss[i].Ended.IsZero() {
			continue
		}
		for _, c := range clients(ss[i].VM) {
			ss[i].Clients = append(ss[i].Clients, web.Client{Number: c.Number, Addr: c.Addr, Role: c.Role, ReadOnly: c.ReadOnly,
				Since: c.Since, Requests: c.Requests, Denied: c.Denied})
		}
	}
	return ss
}
