package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"syscall"

	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/rs/zerolog"
)

// listenerFunc says whether something on this machine listens on a TCP
// port, and whether that could be known (discover.LocalListener).
type listenerFunc func(port uint16) (listening, known bool)

// warnNoLocalVM warns at start when --vm names this machine and nothing
// listens on its port: the debugger attaching later would only get a
// reset connection. It reads /proc (through listening) and never
// connects, since a connection without a handshake makes the JDWP agent
// log a failed attach.
func warnNoLocalVM(vm string, listening listenerFunc, log zerolog.Logger) {
	host, portText, err := net.SplitHostPort(vm)
	if err != nil || !isLocalHost(host) {
		return
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return
	}
	if ok, known := listening(uint16(port)); known && !ok {
		log.Warn().Str(relay.LogVM, vm).Msgf("nothing on this machine listens on port %d: start the VM with -agentlib:jdwp=transport=dt_socket,server=y,address=%d (or correct --vm); until then a debugger that attaches here is refused", port, port)
	}
}

// isLocalHost reports whether host names this machine: localhost, a
// loopback address or an address of one of its interfaces.
func isLocalHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return false
	}
	if ip.IsLoopback() {
		return true
	}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// explainDial wraps dial so that a VM that cannot be reached fails with
// what to check, which the relay logs at the refused attach.
func explainDial(dial relay.Dialer, vm string) relay.Dialer {
	_, port, _ := net.SplitHostPort(vm)
	return func(ctx context.Context) (relay.VMConn, error) {
		vc, err := dial(ctx)
		var op *net.OpError
		if err != nil && (errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &op) && op.Op == "dial") {
			err = fmt.Errorf("%w: check that the VM runs with -agentlib:jdwp=transport=dt_socket,server=y,address=%s on %s, that --vm names that port, and that a tunnel or adb forward to it is up", err, port, vm)
		}
		return vc, err
	}
}
