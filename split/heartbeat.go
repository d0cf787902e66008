package split

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
)

// A link that dies without a word (a cable, a NAT that forgot the
// connection, a blackholing firewall) must end its session on both ends
// within about DefaultLinkTimeout, so that the far end detaches from the
// VM (which resumes) and the near end closes the debugger's connection.
// TCP keepalive alone does not do it: with unacknowledged segments in
// flight it never fires, and Linux retransmits for about 15 minutes. So
// each link socket has TCP_USER_TIMEOUT (unacknowledged data for longer
// ends the connection), and in a session both ends agreed on a heartbeat
// (FlagHeartbeat, ReplyHeartbeat) the near end sends CmdHeartbeat every
// third of its link timeout, the far end answers it at once, and each end
// ends the session when nothing came from the other for its link timeout
// (a read deadline, liveConn).

// DefaultLinkTimeout is how long a link may stay silent (with a heartbeat)
// or leave data unacknowledged (TCP_USER_TIMEOUT) before its session ends.
const DefaultLinkTimeout = 30 * time.Second

// SetLink is the vendor command set of the split stream's own messages
// (PROTOCOL.md); 0xE1 is push's.
const SetLink jdwp.CommandSet = 0xE2

// CmdHeartbeat is the near end's heartbeat: no body; the far end answers
// it at once with an empty reply. Sent only in a session whose Reply had
// ReplyHeartbeat.
var CmdHeartbeat = jdwp.Cmd{Set: SetLink, Cmd: 1}

// ErrLinkSilent is wrapped by the read error of a link that carried
// nothing for its link timeout.
var ErrLinkSilent = errors.New("split: nothing came over the link")

func linkTimeout(d time.Duration) time.Duration {
	if d <= 0 {
		return DefaultLinkTimeout
	}
	return d
}

// liveConn is a link connection whose reads fail once nothing arrives for
// timeout (none when 0): each Read arms a read deadline, unless a caller
// set one itself (a handshake's, a closing session's linger), which holds
// until cleared.
type liveConn struct {
	net.Conn
	timeout time.Duration // set before the connection is shared

	mu    sync.Mutex // guards fixed, and orders arming with explicit deadlines
	fixed bool       // a caller's read deadline is in force
}

func (c *liveConn) Read(b []byte) (int, error) {
	if c.timeout <= 0 {
		return c.Conn.Read(b)
	}
	c.mu.Lock()
	if !c.fixed {
		c.Conn.SetReadDeadline(time.Now().Add(c.timeout)) //nolint:errcheck // a closed conn fails the Read
	}
	fixed := c.fixed
	c.mu.Unlock()
	n, err := c.Conn.Read(b)
	if err != nil && !fixed && errors.Is(err, os.ErrDeadlineExceeded) {
		// Not a write timeout, as the relay would take a deadline for.
		err = fmt.Errorf("%w for %v (the link, or the other end, is gone): %v", ErrLinkSilent, c.timeout, err)
	}
	return n, err
}

func (c *liveConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fixed = !t.IsZero()
	return c.Conn.SetReadDeadline(t)
}

func (c *liveConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fixed = !t.IsZero()
	return c.Conn.SetDeadline(t)
}

// CloseWrite half-closes the connection if the one underneath can.
func (c *liveConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// setUserTimeout sets TCP_USER_TIMEOUT on c, where the system has it.
func setUserTimeout(c syscall.Conn, d time.Duration) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	return userTimeout(rc, d)
}

// NearHeartbeat returns the near end's heartbeat hooks, first in its
// chain: in a session that agreed on it (relay.LinkInfo.Heartbeat), a CmdHeartbeat
// as the session starts and every third of timeout (DefaultLinkTimeout
// when zero) after, and its replies
// absorbed before any other hook sees them. Each answer's round trip goes
// to link (NearConfig.Link; nil for none), so that the next session's
// choice of compression follows a link that changed meanwhile.
func NearHeartbeat(timeout time.Duration, link *Link) func(*relay.Session) relay.Hooks {
	every := linkTimeout(timeout) / 3
	return func(rs *relay.Session) relay.Hooks {
		if !rs.VMInfo().Heartbeat {
			return relay.Hooks{}
		}
		h := &nearBeat{done: make(chan struct{}), link: link}
		go h.run(rs, every)
		return relay.Hooks{Interceptors: []relay.Interceptor{h}}
	}
}

// nearBeat sends one session's heartbeats from its own goroutine (in the
// session's turn, Session.Do) until Close.
type nearBeat struct {
	done chan struct{}
	once sync.Once
	link *Link // where each answer's round trip goes; nil for none
}

func (h *nearBeat) run(rs *relay.Session, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	var buf []byte // owned by run
	// The first beat goes as the session starts: whether the far end
	// answers is known at once, however short the session.
	for first := true; ; first = false {
		if !first {
			select {
			case <-h.done:
				return
			case <-t.C:
			}
		}
		err := rs.Do(func(out *relay.Outbox) {
			buf = jdwp.AppendCommand(buf[:0], rs.IDs().NewSynthetic(), CmdHeartbeat, nil)
			out.SendToVM(buf, relay.Synthetic)
		})
		if err != nil {
			return // the session is closing, or its hooks are off
		}
	}
}

func (h *nearBeat) FromDebugger(*relay.Session, *relay.Frame) relay.Action { return relay.Forward }

// FromVM absorbs the far end's answers to heartbeats, and notes their
// round trips.
func (h *nearBeat) FromVM(_ *relay.Session, f *relay.Frame) relay.Action {
	if f.Kind == relay.KindReply && f.Cmd == CmdHeartbeat {
		h.link.measured(f.Latency)
		return relay.Consume
	}
	return relay.Forward
}

func (h *nearBeat) Close(*relay.Session) { h.once.Do(func() { close(h.done) }) }

// farHeartbeat is the far end's heartbeat hook, first in its chain: in a
// session that agreed on it, it answers each CmdHeartbeat at once.
func farHeartbeat(rs *relay.Session) relay.Hooks {
	if !rs.DebuggerInfo().Heartbeat {
		return relay.Hooks{}
	}
	return relay.Hooks{Interceptors: []relay.Interceptor{&farBeat{}}}
}

// farBeat answers heartbeats. ans is owned by the debugger reader
// goroutine (FromDebugger).
type farBeat struct{ ans []byte }

func (h *farBeat) FromDebugger(_ *relay.Session, f *relay.Frame) relay.Action {
	if f.Kind != relay.KindCommand || f.Cmd != CmdHeartbeat {
		return relay.Forward
	}
	f.Answer = jdwp.AppendReply(h.ans[:0], f.ID, jdwp.ErrorNone, nil)
	h.ans = f.Answer[:0]
	f.Origin = relay.CacheHit
	return relay.Consume
}

func (h *farBeat) FromVM(*relay.Session, *relay.Frame) relay.Action { return relay.Forward }
func (h *farBeat) Close(*relay.Session)                             {}
