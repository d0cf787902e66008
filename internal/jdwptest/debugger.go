package jdwptest

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// Debugger is a scripted JDWP debugger: it sends commands with IDs from 1
// and reads what comes back. Every read and write has a deadline of
// Timeout. Its methods return errors rather than fail a test, so that it
// can run on any goroutine.
type Debugger struct {
	c  net.Conn
	r  *jdwp.Reader
	id uint32
}

// Attach dials addr and exchanges the handshake.
func Attach(addr string) (*Debugger, error) {
	c, err := net.DialTimeout("tcp", addr, Timeout)
	if err != nil {
		return nil, err
	}
	d, err := AttachConn(c)
	if err != nil {
		c.Close()
		return nil, err
	}
	return d, nil
}

// AttachConn exchanges the handshake on c (a socket or one end of a
// net.Pipe).
func AttachConn(c net.Conn) (*Debugger, error) {
	c.SetDeadline(time.Now().Add(Timeout)) //nolint:errcheck // net.Pipe and TCP support deadlines
	if err := jdwp.WriteHandshake(c); err != nil {
		return nil, err
	}
	br := bufio.NewReader(c)
	if err := jdwp.ReadHandshake(br); err != nil {
		return nil, err
	}
	return &Debugger{c: c, r: jdwp.NewReader(br, 0)}, nil
}

// Conn is the debugger's connection.
func (d *Debugger) Conn() net.Conn { return d.c }

// Send sends a command with the next ID and returns that ID.
func (d *Debugger) Send(cmd jdwp.Cmd, body []byte) (uint32, error) {
	d.id++
	d.c.SetWriteDeadline(time.Now().Add(Timeout)) //nolint:errcheck
	_, err := d.c.Write(jdwp.AppendCommand(nil, d.id, cmd, body))
	return d.id, err
}

// Next reads the next packet (a reply or an event).
func (d *Debugger) Next() (jdwp.Packet, error) { return d.NextWithin(Timeout) }

// NextWithin reads the next packet, failing with os.ErrDeadlineExceeded
// when none comes within wait (to check that nothing comes).
func (d *Debugger) NextWithin(wait time.Duration) (jdwp.Packet, error) {
	d.c.SetReadDeadline(time.Now().Add(wait)) //nolint:errcheck
	return d.r.Next()
}

// Call sends a command and returns its reply, skipping the packets that
// come before it (events). The reply is valid until the next read.
func (d *Debugger) Call(cmd jdwp.Cmd, body []byte) (jdwp.Packet, error) {
	id, err := d.Send(cmd, body)
	if err != nil {
		return nil, err
	}
	for {
		p, err := d.Next()
		if err != nil {
			return nil, fmt.Errorf("waiting for the reply to %v: %w", cmd, err)
		}
		if p.IsReply() && p.ID() == id {
			return p, nil
		}
	}
}

// WaitClosed waits for the peer to end the connection and says what
// happened instead when it does not: a packet came, or nothing within
// Timeout.
func (d *Debugger) WaitClosed() error {
	p, err := d.Next()
	switch {
	case err == nil:
		return fmt.Errorf("got a packet %v instead of the connection's end", p)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return errors.New("the connection was not closed")
	}
	return nil
}

// Close closes the connection.
func (d *Debugger) Close() error { return d.c.Close() }
