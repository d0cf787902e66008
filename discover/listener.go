package discover

import (
	"errors"
	"net"
	"sync"
)

// vmListener is the net.Listener a ServeFunc gets for one VM: it yields
// the connections accepted on the VM's own port and those the current-VM
// port routes to the VM, each counted as a session until closed.
type vmListener struct {
	m    *Manager
	e    *entry
	real net.Listener // the VM's own port; nil when per-VM ports are off

	conns     chan net.Conn // unbuffered: a hand-over, never a queue
	done      chan struct{} // closed by Close
	closeOnce sync.Once
	failed    chan struct{} // closed when real's Accept failed for good
	failErr   error         // written before failed is closed
}

func newVMListener(m *Manager, e *entry, real net.Listener) *vmListener {
	l := &vmListener{m: m, e: e, real: real, conns: make(chan net.Conn), done: make(chan struct{}), failed: make(chan struct{})}
	if real != nil {
		m.wg.Add(1)
		go l.pump()
	}
	return l
}

// pump hands over the connections accepted on the VM's own port.
func (l *vmListener) pump() {
	defer l.m.wg.Done()
	for {
		c, err := l.real.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			l.failErr = err
			close(l.failed)
			return
		}
		if !l.deliver(c) {
			c.Close()
			return
		}
	}
}

// deliver hands c to Accept; false if the listener closed first.
func (l *vmListener) deliver(c net.Conn) bool {
	select {
	case l.conns <- c:
		return true
	case <-l.done:
		return false
	}
}

// Accept returns the next debugger connection for the VM.
func (l *vmListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		l.e.sessions.Add(1)
		l.m.sessionChanged(l.e, false)
		return &sessionConn{Conn: c, l: l}, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-l.failed:
		select {
		case <-l.done:
			return nil, net.ErrClosed
		default:
		}
		return nil, l.failErr
	}
}

// Close closes the VM's own port and stops handing over connections.
func (l *vmListener) Close() error {
	l.closeOnce.Do(func() {
		close(l.done)
		if l.real != nil {
			l.real.Close()
		}
	})
	return nil
}

// vmAddr is the address of a VM without its own port.
type vmAddr string

func (a vmAddr) Network() string { return "discover" }
func (a vmAddr) String() string  { return string(a) }

// Addr is the VM's own port, or a name when it has none.
func (l *vmListener) Addr() net.Addr {
	if l.real != nil {
		return l.real.Addr()
	}
	return vmAddr("vm:" + l.e.key)
}

// sessionConn counts a debugger connection until it is closed.
type sessionConn struct {
	net.Conn
	l    *vmListener
	once sync.Once
}

func (c *sessionConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.e.sessions.Add(-1)
		c.l.m.sessionChanged(c.l.e, true)
	})
	return err
}
