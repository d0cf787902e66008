package discover

import (
	"github.com/prometheus/procfs"
)

// LocalListener reports whether a socket of this machine (this network
// namespace) listens on TCP port, read from /proc/net/tcp and tcp6 as the
// scan reads them: without connecting, since a connection without a JDWP
// handshake makes the VM's agent log a failed attach. known is false
// where /proc cannot be read (not Linux).
func LocalListener(port uint16) (listening, known bool) {
	return localListener("/proc", port)
}

func localListener(root string, port uint16) (listening, known bool) {
	fs, err := procfs.NewFS(root)
	if err != nil {
		return false, false
	}
	//lint:ignore SA1019 netlink, the suggested alternative, cannot read a test's fake /proc
	for _, read := range []func() (procfs.NetTCP, error){fs.NetTCP, fs.NetTCP6} {
		lines, err := read()
		if err != nil {
			continue
		}
		known = true
		for _, l := range lines {
			if l.St == tcpListen && l.LocalPort == uint64(port) {
				return true, true
			}
		}
	}
	return false, known
}
