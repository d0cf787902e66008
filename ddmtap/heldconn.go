package ddmtap

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// readerSize is the buffer of a held connection's reader, as the relay's.
const readerSize = 64 << 10

// heldConn is a connection held while no debugger is attached. Its reader
// goroutine owns br, under and keep until done is closed.
type heldConn struct {
	h    *Holder
	conn net.Conn
	// br reads conn. Packets are framed with Peek and discarded only once
	// handled, so a read deadline set by take never loses a byte: the
	// bytes of an incomplete packet stay buffered for the debugger. A
	// packet larger than br's buffer is peeked through a bigger reader
	// stacked on br (under holds the readers below, each reading the one
	// before it), popped again once empty.
	br       *bufio.Reader
	under    []*bufio.Reader
	w        *connWriter
	l        *link
	stopping atomic.Bool
	done     chan struct{}
	keep     []byte // whole non-DDM packets kept for the debugger
	err      error  // why reading ended, unless stopped by take
}

// read handles packets until the connection fails or take stops it with a
// read deadline. A panic in the DDM client is recovered (logged and
// counted), and the held connection dropped as if the VM had closed it.
func (hc *heldConn) read() {
	defer close(hc.done)
	defer func() {
		if v := recover(); v != nil {
			hc.l.recovered("held connection reader", v)
			hc.fail(fmt.Errorf("ddmtap: the DDM client panicked: %v", v))
		}
	}()
	for {
		p, err := hc.next()
		if err != nil {
			hc.fail(err)
			return
		}
		if ours, chunk := hc.l.fromVM(p); !ours && !chunk {
			if len(hc.keep)+len(p) > hc.h.cfg.MaxHeld {
				hc.err = fmt.Errorf("ddmtap: more than %d bytes of non-DDM packets while holding", hc.h.cfg.MaxHeld)
				return
			}
			hc.keep = append(hc.keep, p...)
		}
		hc.br.Discard(len(p)) //nolint:errcheck // the bytes are buffered: peeked
		for len(hc.under) > 0 && hc.br.Buffered() == 0 {
			hc.br, hc.under = hc.under[len(hc.under)-1], hc.under[:len(hc.under)-1]
		}
	}
}

// next returns the next whole packet without consuming it: the packet
// aliases br's buffer until it is discarded.
func (hc *heldConn) next() (jdwp.Packet, error) {
	hdr, err := hc.br.Peek(4)
	if err != nil {
		return nil, err
	}
	n := jdwp.Packet(hdr).Length()
	if err := jdwp.CheckLength(n, jdwp.DefaultMaxPacketSize); err != nil {
		return nil, err
	}
	if int(n) > hc.br.Size() {
		hc.under = append(hc.under, hc.br)
		hc.br = bufio.NewReaderSize(hc.br, int(n))
	}
	b, err := hc.br.Peek(int(n))
	return jdwp.Packet(b), err
}

// fail records why reading ended. A bad length field leaves the
// connection held, for take to drop when a debugger arrives; any other
// error but take's deadline means the VM closed the held connection: it is
// dropped.
func (hc *heldConn) fail(err error) {
	var ne net.Error
	if hc.stopping.Load() && errors.As(err, &ne) && ne.Timeout() {
		return
	}
	hc.err = err
	if errors.Is(err, jdwp.ErrShortPacket) || errors.Is(err, jdwp.ErrPacketTooLarge) {
		return
	}
	h := hc.h
	h.mu.Lock()
	if h.held != hc {
		h.mu.Unlock()
		return
	}
	h.held = nil
	h.mu.Unlock()
	hc.conn.Close()
	h.lost(hc.l, err)
	go hc.l.close()
	h.log.Info().Err(err).Msg("VM closed the held connection")
	h.poke()
}

// handOver returns the reader the debugger's session reads the VM from,
// with the packets kept for the debugger first, and how many bytes it
// holds already. Called once reading stopped.
func (hc *heldConn) handOver() (*bufio.Reader, int) {
	held := len(hc.keep)
	for _, r := range append(hc.under, hc.br) {
		held += r.Buffered()
	}
	if len(hc.keep) == 0 {
		return hc.br, held
	}
	return bufio.NewReaderSize(io.MultiReader(bytes.NewReader(hc.keep), hc.br), readerSize), held
}

// lentConn is a VM connection handed to a relay session; Close tells the
// holder the debugger is gone.
type lentConn struct {
	net.Conn
	h    *Holder
	l    *link         // nil for a pass-through connection
	w    *connWriter   // pre-session writer of a fresh connection, or nil
	br   *bufio.Reader // the session's reader of a held connection, or nil
	once sync.Once
}

func (c *lentConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.h.release(c) })
	return err
}
