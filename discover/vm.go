// Package discover owns finding and reaching debuggable VMs: the VM
// sources chosen with --vm (a fixed HOST:PORT, a scan of the workstation's
// JDWP listeners, the processes behind a local adb server), the adb host
// protocol client (its framing is internal/adbwire's), and the Manager that keeps the live set of VMs, gives
// each its own listening port, routes the "current VM" port to the selected
// VM, and serves the small control API behind "jdwpaccel vms" and
// "jdwpaccel select".
//
//	src, _ := discover.ParseSpec("scan:8000-8040,5005", discover.SpecOptions{})
//	m, _ := discover.NewManager(discover.Config{Source: src, Serve: serve, PortBase: 8701, Selected: ln})
//	err := m.Run(ctx)
//
// Finding a VM never disturbs it: the scanner reads /proc instead of
// connecting to a JDWP listener (see Scan), and the adb source only asks
// the adb server for process lists.
package discover

import (
	"context"
	"errors"
	"net"
	"time"
)

// DialFunc opens a raw connection to a VM's JDWP agent: the JDWP handshake
// has not been exchanged on it.
type DialFunc func(ctx context.Context) (net.Conn, error)

// Source kinds, a closed set (used as a metric label).
const (
	KindStatic = "static"
	KindScan   = "scan"
	KindADB    = "adb"
)

// VM is one debuggable VM as a source last saw it.
type VM struct {
	// Key names the VM for its whole life and is unique among live VMs:
	// "tcp:HOST:PORT", "local:PID" (scan), "adb:SERIAL:PID".
	Key string `json:"key"`
	// Kind is the source kind: KindStatic, KindScan or KindADB.
	Kind string `json:"kind"`
	// Name is the main class, jar or app name when known.
	Name string `json:"name,omitempty"`
	// PID is the VM's process ID (on its device for adb), 0 if unknown.
	PID int `json:"pid,omitempty"`
	// Addr is the JDWP listener for TCP VMs ("" for adb).
	Addr string `json:"addr,omitempty"`
	// Serial is the adb device serial ("" for local VMs).
	Serial string `json:"serial,omitempty"`
	// SuspendOnStart says the VM was started with suspend=y: it waits for
	// a debugger before running main.
	SuspendOnStart bool `json:"suspend_on_start,omitempty"`
	// Busy says the source saw the VM's JDWP connection taken (HotSpot
	// stops listening while a debugger, or this proxy, is connected).
	Busy bool `json:"busy,omitempty"`

	// Dial opens a connection to the VM's JDWP agent.
	Dial DialFunc `json:"-"`

	// keepWhileInUse asks the Manager to keep the VM while it has
	// sessions even when a report omits it (the connect probe cannot see
	// a HotSpot that stopped listening because a debugger is attached).
	keepWhileInUse bool
}

// Source finds VMs. Run reports the complete current set of VMs each time
// it changes (the first report may be empty) until ctx ends, then returns
// nil; it returns an error only when it cannot run at all. report is never
// called concurrently and must not block for long; the slice is the
// source's to reuse after report returns.
type Source interface {
	Run(ctx context.Context, report func([]VM)) error
}

// ErrVMGone is returned by a Manager's dial function when the VM it was
// made for is no longer live.
var ErrVMGone = errors.New("discover: the VM is gone")

// Static is a source of one VM at a fixed TCP address, always present.
type Static struct {
	Addr string
}

// VM returns the one VM of s.
func (s Static) VM() VM {
	return VM{Key: "tcp:" + s.Addr, Kind: KindStatic, Addr: s.Addr, Dial: dialTCP(s.Addr)}
}

// Run reports s's VM once and waits for ctx.
func (s Static) Run(ctx context.Context, report func([]VM)) error {
	report([]VM{s.VM()})
	<-ctx.Done()
	return nil
}

func dialTCP(addr string) DialFunc {
	return func(ctx context.Context) (net.Conn, error) {
		d := net.Dialer{Timeout: 10 * time.Second}
		return d.DialContext(ctx, "tcp", addr)
	}
}

// sameInfo compares everything but Dial.
func (vm VM) sameInfo(o VM) bool {
	return vm.Key == o.Key && vm.Kind == o.Kind && vm.Name == o.Name && vm.PID == o.PID &&
		vm.Addr == o.Addr && vm.Serial == o.Serial && vm.SuspendOnStart == o.SuspendOnStart &&
		vm.Busy == o.Busy && vm.keepWhileInUse == o.keepWhileInUse
}
