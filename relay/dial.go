package relay

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/retag"
)

// A VMConn is a connection to the VM for a new session, as a Dialer
// returns it.
type VMConn struct {
	Conn net.Conn
	// Handshaken says the JDWP handshake was already exchanged on Conn.
	Handshaken bool
	// Hooks, if not nil, returns the hooks that come with the connection
	// (a client that shares it with the debugger, such as the DDM tap);
	// they run before Config.NewHooks's.
	Hooks func(s *Session) Hooks
	// Reader, if not nil, is the reader of Conn the session reads the VM
	// from, for a connection read before the session: it may already hold
	// the connection's next bytes (see ddmtap.Holder).
	Reader *bufio.Reader
	// IDs, if not nil, is the connection's packet ID table, for a
	// connection that carried the proxy's own commands before the session
	// (ddmtap.Holder creates it with the connection and hands it over
	// here). Nil means a fresh connection: the session creates one. Either
	// way it is the only source of the proxy's IDs towards this VM
	// (Session.IDs).
	IDs *retag.Table
	// Info is what the dialer agreed with the peer for the session's hooks
	// (Session.VMInfo): split mode's near end passes what it agreed with
	// the far end.
	Info LinkInfo
}

// LinkInfo is what a session's connection agreed, before the session, with
// a peer that speaks more than JDWP: split mode's ends, in their preamble.
// The zero value is a plain JDWP peer.
type LinkInfo struct {
	// Split: the connection is split mode's link to the other end (the
	// near end a far end serves, or the far end a near end dialled).
	Split bool
	// AttachBundle: the far end sends the replies to the attach's first
	// commands as one bundle, the session's first packet from it.
	AttachBundle bool
	// Heartbeat: the ends exchange heartbeats, and each ends a session
	// whose link stays silent too long.
	Heartbeat bool
	// Resumable: the session's stream outlives its link (a new link
	// takes it up).
	Resumable bool
	// User is, on the far end, the name of the user whose credentials the
	// near end presented ("" for the unnamed token, or a far end without
	// users); each of the session's log lines carries it.
	User string
}

// A Dialer opens a connection to the VM for a new session.
type Dialer func(ctx context.Context) (VMConn, error)

// Plain makes a Dialer of a function that opens a plain connection (no
// handshake yet, no hooks).
func Plain(dial func(ctx context.Context) (net.Conn, error)) Dialer {
	return func(ctx context.Context) (VMConn, error) {
		c, err := dial(ctx)
		return VMConn{Conn: c}, err
	}
}

// TCP returns a function that opens a plain TCP connection to addr.
func TCP(addr string) func(ctx context.Context) (net.Conn, error) {
	return func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
}

// DialTCP returns a Dialer for a VM at addr.
func DialTCP(addr string) Dialer { return Plain(TCP(addr)) }

// reachVM dials the VM and exchanges the handshake (unless the connection
// is Handshaken), retrying for retry while the VM refuses or drops
// connections. It returns the number of attempts made.
func (srv *Server) reachVM(ctx context.Context, dial Dialer, retry time.Duration) (VMConn, *bufio.Reader, int, error) {
	deadline := time.Now().Add(retry)
	backoff := 5 * time.Millisecond
	for attempt := 1; ; attempt++ {
		vm, vmr, err := srv.tryVM(ctx, dial)
		if err == nil {
			return vm, vmr, attempt, nil
		}
		wait := min(backoff, time.Until(deadline))
		if ctx.Err() != nil || !retryable(err) || wait <= 0 {
			return VMConn{}, nil, attempt, err
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return VMConn{}, nil, attempt, err
		}
		backoff = min(2*backoff, 100*time.Millisecond)
	}
}

// tryVM is one attempt of reachVM.
func (srv *Server) tryVM(ctx context.Context, dial Dialer) (VMConn, *bufio.Reader, error) {
	dctx, cancel := context.WithTimeout(ctx, srv.cfg.HandshakeTimeout)
	defer cancel()
	vc, err := dial(dctx)
	if err != nil {
		return VMConn{}, nil, err
	}
	vm := vc.Conn
	vmr := vc.Reader
	if vmr == nil {
		vmr = bufio.NewReaderSize(vm, 64<<10)
	}
	if !vc.Handshaken {
		vm.SetDeadline(time.Now().Add(srv.cfg.HandshakeTimeout))
		err := jdwp.WriteHandshake(vm)
		if err == nil {
			err = jdwp.ReadHandshake(vmr)
		}
		if err != nil {
			vm.Close()
			return VMConn{}, nil, fmt.Errorf("VM handshake: %w", err)
		}
		vm.SetDeadline(time.Time{})
	}
	return vc, vmr, nil
}

// retryable reports whether a failure to reach the VM may be the VM not
// listening yet, or again: a refused connection, or one accepted and then
// closed or reset before the handshake.
func retryable(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
