package share

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
)

// readRelay reads what the relay session sends (the VM's replies, events
// and commands, and the proxy's answers) and routes it, until the session
// ends; then every client is closed. A reply above streamAbove is not
// held: it is streamed from the pipe to its client (streamReply).
func (h *Hub) readRelay(br *bufio.Reader) {
	r := jdwp.NewReader(br, h.streamAbove())
	for {
		p, err := r.Next()
		if err != nil {
			var tl *jdwp.TooLargeError
			if errors.As(err, &tl) {
				if err = h.big(br, tl); err == nil {
					r = jdwp.NewReader(br, h.streamAbove()) // the packet's bytes are read: nothing to skip
					continue
				}
			}
		}
		if err != nil {
			h.end(err)
			return
		}
		h.route(p)
	}
}

// streamAbove is the size above which a reply is streamed, not held.
func (h *Hub) streamAbove() int { return min(streamAbove, h.front.cfg.MaxPacketSize) }

// streamAbove: replies above it (array values, DDM heap data) are
// streamed through; everything else is held whole and routed.
const streamAbove = 1 << 20

// route routes one whole packet from the relay.
func (h *Hub) route(p jdwp.Packet) {
	h.mu.Lock()
	switch {
	case p.IsReply():
		h.reply(p)
	case p.Cmd() == jdwp.CmdEventComposite:
		h.events(p)
	default:
		h.vmCommand(p)
	}
	kicked, ctl := h.kicked(), h.controller
	h.mu.Unlock()
	h.drop(kicked)
	if ctl != nil {
		// As the relay waits for a lone debugger: the VM's side is read
		// no faster than the controller takes what it is sent.
		ctl.w.waitRoom(h.front.cfg.WriteQueueBytes, h.front.done)
	}
}

// big handles a packet above streamAbove whose header tl holds, the rest
// of it still in br: a reply is streamed to its client; any other packet
// (the relay bounds them by MaxPacketSize) is read whole and routed.
func (h *Hub) big(br *bufio.Reader, tl *jdwp.TooLargeError) error {
	head := tl.Packet()
	n := int64(head.Length()) - jdwp.HeaderSize
	if n > int64(h.front.cfg.MaxPacketSize) {
		return tl
	}
	if !head.IsReply() {
		p := make(jdwp.Packet, head.Length())
		copy(p, head)
		if _, err := io.ReadFull(br, p[jdwp.HeaderSize:]); err != nil {
			return err
		}
		h.route(p)
		return nil
	}
	h.mu.Lock()
	c := h.replyTarget(head)
	h.mu.Unlock()
	body := io.LimitReader(br, n)
	if c != nil {
		if err := c.w.stream(head, body, n); err != nil && !errors.Is(err, errWriterStopped) {
			c.log.Info().Err(err).Msg("writing a big reply to the client failed")
		}
	}
	_, err := io.Copy(io.Discard, body) // what the client did not take
	return err
}

// end closes every client once the relay session ended: what was queued
// for them (the reply to Dispose, VM_DEATH) is written first.
func (h *Hub) end(err error) {
	h.mu.Lock()
	h.ending = true
	clients := append([]*Client(nil), h.clients...)
	h.mu.Unlock()
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrClosedPipe) && !errors.Is(err, net.ErrClosed) {
		h.log.Info().Err(err).Msg("the shared VM session ended")
	}
	h.pw.stop()
	h.pipe.Close()
	for _, c := range clients {
		c.w.stop()
		go c.closeAfterWrites()
	}
	h.front.hubEnded(h)
	h.overOnce.Do(func() { close(h.over) })
}

// read relays c's packets until its connection ends, then undoes it. A
// client that breaks the protocol is logged and counted as the relay
// logs a debugger that does, and only its connection closes.
func (c *Client) read(h *Hub, r *jdwp.Reader) {
	how := "closed"
	for {
		p, err := r.Next()
		if err != nil {
			reason := relay.Classify(err)
			switch {
			case reason == "" || errors.Is(err, os.ErrDeadlineExceeded):
			case relay.PeerGone(err):
				how = "dropped"
				c.log.Info().Err(err).Msg("client connection ended (reset or cut short)")
			default:
				how = "dropped"
				c.log.Error().Err(err).Str(LogReason, string(reason)).
					Msg("client broke the JDWP protocol; closed its connection (the VM's other clients go on)")
				h.front.cfg.Metrics.ProtocolError(reason)
			}
			break
		}
		h.mu.Lock()
		if p.IsReply() {
			// A reply to a command the VM sent (DDM): the VM's ID, as is.
			if !c.gone {
				h.pw.queue(p)
			}
		} else {
			h.command(c, p)
		}
		kicked := h.kicked()
		h.mu.Unlock()
		h.drop(kicked)
		h.pw.waitRoom(h.front.cfg.WriteQueueBytes, h.front.done)
	}
	h.leave(c, how)
}

// leave removes c from the hub (if it is still there) and undoes it.
func (h *Hub) leave(c *Client, how string) {
	h.mu.Lock()
	h.leaveLocked(c, how)
	h.mu.Unlock()
}

// leaveLocked removes c and undoes what it did to the VM, for c alone:
// its event requests cleared, its suspensions released, its pinned
// objects let go. The last client's leaving ends the relay session, as a
// lone debugger's would. mu is held.
func (h *Hub) leaveLocked(c *Client, how string) {
	if c.gone {
		if how != "dispose" {
			c.conn.Close()
		}
		return
	}
	c.gone = true
	c.left = how
	for i, x := range h.clients {
		if x == c {
			h.clients = append(h.clients[:i], h.clients[i+1:]...)
			break
		}
	}
	wasController := c == h.controller
	if wasController {
		h.controller = nil
	}
	last := len(h.clients) == 0
	c.log.Info().Str(LogRole, c.role.String()).Str(LogLeft, how).Int(LogOthers, len(h.clients)).Msg("client detached")
	if last {
		// The last one: the session ends as today (a Dispose it sent is
		// queued before the pipe's end).
		h.ending = true
		h.pw.stop()
		go func() {
			select {
			case <-h.pw.exited:
			case <-h.over:
			}
			h.pipe.Close()
		}()
	} else {
		h.clearOwn(c, 0)
		h.unpin(c)
		if c.held {
			h.sendOwn(jdwp.CmdVirtualMachineReleaseEvents, nil)
			c.held = false
		}
		h.releaseSuspends(c)
		if wasController {
			h.log.Info().Int(LogOthers, len(h.clients)).Msg("the controller left: the VM runs on; an observer becomes the controller by sending a controlling command")
		}
	}
	if how != "dispose" {
		c.conn.Close()
	}
	c.w.stop()
	h.front.changed()
}

// LogOthers is how many clients stay attached.
const LogOthers = "others"

// releaseSuspends resumes what c suspended and did not resume. mu is held.
func (h *Hub) releaseSuspends(c *Client) {
	for t, n := range c.threadSuspends {
		for ; n > 0; n-- {
			h.resumeThread(t)
		}
		delete(c.threadSuspends, t)
	}
	for ; c.vmSuspends > 0; c.vmSuspends-- {
		h.sendOwn(jdwp.CmdVirtualMachineResume, nil)
	}
}

// unpin lets go of the objects c kept from collection. mu is held.
func (h *Hub) unpin(c *Client) {
	var b [8]byte
	n := h.sizes.ObjectID
	for o, k := range c.pinned {
		for i := 0; i < n; i++ {
			b[i] = byte(o >> (8 * (n - 1 - i)))
		}
		for ; k > 0; k-- {
			h.sendOwn(jdwp.CmdObjectReferenceEnableCollection, b[:n])
		}
		delete(c.pinned, o)
	}
}

// lingerTimeout bounds how long a client whose session ended may still
// send before its connection closes (what it sends is read and dropped,
// so that the close does not reset the connection under the last bytes
// written to it).
const lingerTimeout = 500 * time.Millisecond

// closeAfterWrites half-closes c's connection once its writer wrote what
// was queued; its reader then drops what the client still sends until it
// closes or lingerTimeout passes.
func (c *Client) closeAfterWrites() {
	<-c.w.exited
	if cw, ok := c.conn.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
		c.conn.SetReadDeadline(time.Now().Add(lingerTimeout))
		return
	}
	c.conn.Close()
}
