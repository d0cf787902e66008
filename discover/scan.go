package discover

import (
	"context"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/logkey"
	"github.com/prometheus/procfs"
	"github.com/rs/zerolog"
)

// DefaultScanInterval is how often a Scan looks again.
const DefaultScanInterval = 2 * time.Second

// Scan finds JVMs with a listening JDWP socket agent on this machine, on
// the given ports, rescanning every Interval.
//
// On Linux it does not connect to anything: it reads the LISTEN sockets
// in /proc/net/tcp and /proc/net/tcp6, maps their inodes to processes via
// /proc/PID/fd, and keeps a process only if its command line (or its
// JAVA_TOOL_OPTIONS, JDK_JAVA_OPTIONS or _JAVA_OPTIONS) loads the JDWP
// agent with transport=dt_socket,server=y. A VM found this way is left
// exactly as a debugger attaching later finds it. It sees only processes
// whose /proc/PID/fd it may read (the same user, or root).
//
// HotSpot stops listening while a debugger is connected; a known VM whose
// listener vanished while its process lives on is kept and marked Busy.
//
// Where /proc/net/tcp cannot be read (not Linux), or with ConnectProbe,
// it falls back to opening and at once closing a TCP connection to each
// port. That is not harmless: HotSpot logs "Debugger failed to attach:
// handshake failed" for every probe, and any program listening on a
// scanned port sees a connection.
type Scan struct {
	Ports    PortSet
	Interval time.Duration // DefaultScanInterval when zero
	// ConnectProbe forces the connect-only probe.
	ConnectProbe bool
	Logger       zerolog.Logger

	procRoot string // "/proc" unless a test says otherwise
	onScan   func() // test hook, called after each scan
	// ports, if set, is read at each scan instead of Ports: a test hook
	// for VMs whose ports the kernel chose after the scan started.
	ports func() PortSet
}

// scanState is what one Run keeps between scans. Only Run's goroutine
// uses it.
type scanState struct {
	fs procfs.FS // the /proc to read; unused by the connect probe
	// owner maps a listening socket's inode to its process, or to -1 when
	// no readable process owns it; entries for vanished inodes are pruned.
	owner map[uint64]int
	procs map[int]procInfo // by PID
	known map[string]VM    // the last reported VMs, by key
}

// procInfo caches what a process's command line says.
type procInfo struct {
	start uint64 // starttime, to notice PID reuse
	agent jdwpAgent
	jdwp  bool
}

// Run scans until ctx ends.
func (s *Scan) Run(ctx context.Context, report func([]VM)) error {
	interval := s.Interval
	if interval <= 0 {
		interval = DefaultScanInterval
	}
	root := s.procRoot
	if root == "" {
		root = procfs.DefaultMountPoint
	}
	st := &scanState{owner: map[uint64]int{}, procs: map[int]procInfo{}, known: map[string]VM{}}
	probe := s.ConnectProbe
	if !probe {
		var err error
		if st.fs, err = procfs.NewFS(root); err == nil {
			_, err = os.Stat(filepath.Join(root, "net", "tcp"))
		}
		if err != nil {
			s.Logger.Warn().Err(err).Msg("cannot read /proc/net/tcp; scanning by connecting to each port, which makes HotSpot log a failed handshake")
			probe = true
		}
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	var last []VM
	first := true
	for {
		var vms []VM
		if probe {
			vms = s.probeOnce(ctx, st)
		} else {
			vms = s.scanOnce(st)
		}
		if first || !sameVMs(vms, last) {
			report(vms)
			last, first = vms, false
		}
		if s.onScan != nil {
			s.onScan()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// sameVMs compares two sorted VM lists, ignoring Dial.
func sameVMs(a, b []VM) bool {
	return slices.EqualFunc(a, b, func(x, y VM) bool {
		return x.sameInfo(y)
	})
}

type listener struct {
	addr  netip.AddrPort
	inode uint64
}

// scanOnce is one /proc scan.
func (s *Scan) scanOnce(st *scanState) []VM {
	var listeners []listener
	estab := map[uint16]bool{} // local ports with an established connection
	ports := s.Ports
	if s.ports != nil {
		ports = s.ports()
	}
	//lint:ignore SA1019 netlink, the suggested alternative, cannot read a test's fake /proc
	for _, read := range []func() (procfs.NetTCP, error){st.fs.NetTCP, st.fs.NetTCP6} {
		lines, _ := read()
		for _, l := range lines {
			local := procAddrPort(l.LocalAddr, l.LocalPort)
			p := local.Port()
			if !ports.Contains(p) {
				continue
			}
			switch l.St {
			case tcpListen:
				listeners = append(listeners, listener{local, l.Inode})
			case tcpEstablished:
				estab[p] = true
			}
		}
	}

	// Map inodes to processes: cached ones, then the known VMs' processes
	// (a HotSpot that re-listens after a debugger left has a new inode),
	// then, only if some are still unknown, every process.
	live := make(map[uint64]bool, len(listeners))
	var unknown []uint64
	for _, l := range listeners {
		live[l.inode] = true
		if _, ok := st.owner[l.inode]; !ok {
			unknown = append(unknown, l.inode)
		}
	}
	for ino := range st.owner {
		if !live[ino] {
			delete(st.owner, ino)
		}
	}
	if len(unknown) > 0 {
		want := make(map[uint64]bool, len(unknown))
		for _, ino := range unknown {
			want[ino] = true
		}
		look := func(p procfs.Proc) {
			targets, _ := p.FileDescriptorTargets() // unreadable: not ours
			for _, t := range targets {
				if ino, ok := socketInode(t); ok && want[ino] {
					st.owner[ino] = p.PID
					delete(want, ino)
				}
			}
		}
		for _, vm := range st.known {
			if len(want) == 0 {
				break
			}
			if p, err := st.fs.Proc(vm.PID); err == nil {
				look(p)
			}
		}
		if len(want) > 0 {
			procs, _ := st.fs.AllProcs()
			for _, p := range procs {
				if len(want) == 0 {
					break
				}
				look(p)
			}
		}
		for ino := range want {
			st.owner[ino] = -1
		}
	}

	byPID := map[int][]listener{}
	for _, l := range listeners {
		if pid := st.owner[l.inode]; pid > 0 {
			byPID[pid] = append(byPID[pid], l)
		}
	}
	found := map[string]VM{}
	for pid, ls := range byPID {
		info, ok := s.proc(st, pid)
		if !ok || !info.jdwp {
			continue
		}
		var l *listener
		for i := range ls {
			if int(ls[i].addr.Port()) == info.agent.port {
				l = &ls[i]
				break
			}
		}
		if l == nil && len(ls) == 1 && info.agent.port == 0 {
			l = &ls[0]
		}
		if l == nil {
			// Several listeners and none named by address=: telling which
			// is JDWP would take a connection.
			s.Logger.Debug().Int(logkey.PID, pid).Msg("JVM listens on several scanned ports and its JDWP address is not among them; skipped")
			continue
		}
		addr := dialAddr(l.addr)
		vm := VM{
			Key:            "local:" + strconv.Itoa(pid),
			Kind:           KindScan,
			Name:           info.agent.name,
			PID:            pid,
			Addr:           addr,
			SuspendOnStart: info.agent.suspend,
			Busy:           estab[l.addr.Port()],
			Dial:           dialTCP(addr),
		}
		found[vm.Key] = vm
	}
	// A known VM whose listener is gone while its process lives: a
	// debugger (perhaps this proxy) holds its only JDWP connection.
	for key, vm := range st.known {
		if _, ok := found[key]; ok {
			continue
		}
		if info, ok := s.proc(st, vm.PID); ok && info.jdwp {
			vm.Busy = true
			found[key] = vm
		}
	}
	for pid := range st.procs {
		if _, ok := found["local:"+strconv.Itoa(pid)]; !ok {
			if _, listening := byPID[pid]; !listening {
				delete(st.procs, pid)
			}
		}
	}
	st.known = found
	return sortedVMs(found)
}

// proc returns the cached or fresh command-line facts of a live process;
// ok is false when the process is gone.
func (s *Scan) proc(st *scanState, pid int) (procInfo, bool) {
	p, err := st.fs.Proc(pid)
	var stat procfs.ProcStat
	if err == nil {
		stat, err = p.Stat()
	}
	// A zombie (Z or X: exited, not yet reaped) is gone too.
	if err != nil || stat.State == "Z" || stat.State == "X" || stat.State == "x" {
		delete(st.procs, pid)
		return procInfo{}, false
	}
	if info, ok := st.procs[pid]; ok && info.start == stat.Starttime {
		return info, true
	}
	info := procInfo{start: stat.Starttime}
	if args, err := p.CmdLine(); err == nil {
		env, _ := p.Environ()
		info.agent, info.jdwp = parseJavaCommand(args, env)
	}
	st.procs[pid] = info
	return info, true
}

// dialAddr turns a listening address into one to dial.
func dialAddr(ap netip.AddrPort) string {
	a := ap.Addr()
	switch {
	case a.IsUnspecified() && a.Is4():
		a = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	case a.IsUnspecified():
		a = netip.IPv6Loopback()
	}
	return netip.AddrPortFrom(a, ap.Port()).String()
}

func sortedVMs(m map[string]VM) []VM {
	vms := make([]VM, 0, len(m))
	for _, vm := range m {
		vms = append(vms, vm)
	}
	slices.SortFunc(vms, func(a, b VM) int {
		if a.Key < b.Key {
			return -1
		}
		if a.Key > b.Key {
			return 1
		}
		return 0
	})
	return vms
}

// probeOnce is one connect-only scan of 127.0.0.1.
func (s *Scan) probeOnce(ctx context.Context, st *scanState) []VM {
	found := map[string]VM{}
	for _, p := range s.Ports.ports {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(p)))
		d := net.Dialer{Timeout: 300 * time.Millisecond}
		c, err := d.DialContext(ctx, "tcp", addr)
		key := "tcp:" + addr
		if err != nil {
			// Refused: gone, or busy with a debugger (HotSpot stops
			// listening); the Manager keeps a VM while it has sessions.
			continue
		}
		c.Close()
		found[key] = VM{Key: key, Kind: KindScan, Addr: addr, Dial: dialTCP(addr), keepWhileInUse: true}
	}
	st.known = found
	return sortedVMs(found)
}
