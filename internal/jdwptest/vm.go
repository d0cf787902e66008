package jdwptest

import (
	"bufio"
	"errors"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// ReplyFunc answers one command: the reply's error code and body.
type ReplyFunc func(cmd jdwp.Packet) (jdwp.ErrorCode, []byte)

// Body is a ReplyFunc answering every command with body and no error.
func Body(body []byte) ReplyFunc {
	return func(jdwp.Packet) (jdwp.ErrorCode, []byte) { return 0, body }
}

// Script is what a scripted VM does. The zero Script answers every
// command with an empty reply.
type Script struct {
	// Replies answers commands by command; others get Default.
	Replies map[jdwp.Cmd]ReplyFunc
	// Default answers the commands Replies does not list (an empty body
	// and no error when nil).
	Default ReplyFunc
	// Delay is how long the VM takes to answer each command.
	Delay time.Duration
	// After, when set, runs after each reply is written, on the goroutine
	// that answered (the connection's, or Release's for commands that
	// arrived while the VM was held): to send events after a resume, say.
	// An error ends the connection.
	After func(c *Conn, cmd jdwp.Packet) error
	// Unrecorded keeps no commands (Commands returns none) and makes the
	// VM allocate nothing per command, for benchmarks that count
	// allocations.
	Unrecorded bool
}

// VM is a scripted JDWP VM: it accepts the handshake, answers commands
// from its Script and records them, and can send events. Held (Hold), it
// goes on reading and recording commands but answers none until Release,
// as a VM busy elsewhere would; then it answers them in order.
type VM struct {
	script Script
	ln     net.Listener // nil unless started with StartVM

	mu      sync.Mutex // guards conns, cmds, held, changed and each Conn's pend and draining
	conns   map[*Conn]bool
	cmds    []jdwp.Packet
	held    bool
	changed chan struct{}  // closed and replaced when a command is recorded
	wg      sync.WaitGroup // the accept loop and the connections
}

// Conn is one debugger connection of a VM. Its writes do not interleave.
type Conn struct {
	c      net.Conn
	mu     sync.Mutex // serialises writes and guards queued
	queued []byte     // replies held back while more commands are buffered (queue)

	// pend are the commands read while the VM was held (or while earlier
	// ones were being answered after a Release), in order; draining says
	// Release is answering them. Both guarded by the VM's mu.
	pend     []jdwp.Packet
	draining bool
}

// Write writes one packet, after the replies queued before it.
func (c *Conn) Write(p jdwp.Packet) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.queued) == 0 {
		_, err := c.c.Write(p)
		return err
	}
	c.queued = append(c.queued, p...)
	return c.flushLocked()
}

// queue holds p back, to be written with the next write or flush.
func (c *Conn) queue(p jdwp.Packet) {
	c.mu.Lock()
	c.queued = append(c.queued, p...)
	c.mu.Unlock()
}

// flush writes what queue held back.
func (c *Conn) flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.flushLocked()
}

func (c *Conn) flushLocked() error {
	if len(c.queued) == 0 {
		return nil
	}
	_, err := c.c.Write(c.queued)
	c.queued = c.queued[:0]
	return err
}

// NewVM returns a VM following s; serve connections with Serve.
func NewVM(s Script) *VM {
	return &VM{script: s, conns: map[*Conn]bool{}, changed: make(chan struct{})}
}

// StartVM returns a VM following s, listening on a loopback port, closed
// when the test ends.
func StartVM(t testing.TB, s Script) *VM {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	vm := NewVM(s)
	vm.ln = ln
	vm.wg.Add(1)
	go func() {
		defer vm.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			vm.wg.Add(1)
			go func() {
				defer vm.wg.Done()
				vm.Serve(c) //nolint:errcheck // the connection's end is no test failure
			}()
		}
	}()
	t.Cleanup(vm.Close)
	return vm
}

// Addr is where a VM from StartVM listens.
func (vm *VM) Addr() string { return vm.ln.Addr().String() }

// Serve runs one connection (a socket or one end of a net.Pipe) until it
// fails or ends, then closes it. It returns nil when the peer went away.
func (vm *VM) Serve(nc net.Conn) error {
	c := &Conn{c: nc}
	vm.mu.Lock()
	vm.conns[c] = true
	vm.mu.Unlock()
	defer func() {
		vm.mu.Lock()
		delete(vm.conns, c)
		vm.mu.Unlock()
		nc.Close()
	}()
	br := bufio.NewReader(nc)
	if err := jdwp.ReadHandshake(br); err != nil {
		return err
	}
	if err := jdwp.WriteHandshake(nc); err != nil {
		return err
	}
	r := jdwp.NewReader(br, 0)
	var out []byte
	for {
		p, err := r.Next()
		if err != nil {
			return nil // the debugger (or the proxy) went away
		}
		if p.IsReply() {
			continue
		}
		if !vm.script.Unrecorded {
			p = p.Clone()
			vm.mu.Lock()
			vm.cmds = append(vm.cmds, p)
			vm.notifyLocked()
			if vm.held || c.draining || len(c.pend) > 0 {
				c.pend = append(c.pend, p) // answered by Release, in order
				vm.mu.Unlock()
				continue
			}
			vm.mu.Unlock()
		}
		// The replies to the commands already here go out in one write,
		// as a busy agent's share TCP segments.
		if out, err = vm.answer(c, p, out, !r.HasPacket()); err != nil {
			return err
		}
	}
}

// answer replies to p on c (with the replies queued before it, when
// flush), then runs the script's After. out is scratch space, returned.
func (vm *VM) answer(c *Conn, p jdwp.Packet, out []byte, flush bool) ([]byte, error) {
	if vm.script.Delay > 0 {
		time.Sleep(vm.script.Delay)
	}
	f := vm.script.Replies[p.Cmd()]
	if f == nil {
		f = vm.script.Default
	}
	var code jdwp.ErrorCode
	var body []byte
	if f != nil {
		code, body = f(p)
	}
	out = jdwp.AppendReply(out[:0], p.ID(), code, body)
	c.queue(out)
	if flush {
		if err := c.flush(); err != nil {
			return out, err
		}
	}
	if vm.script.After != nil {
		if err := vm.script.After(c, p); err != nil {
			return out, err
		}
	}
	return out, nil
}

func (vm *VM) notifyLocked() {
	close(vm.changed)
	vm.changed = make(chan struct{})
}

// Hold makes the VM answer no command until Release; it still reads and
// records them (Commands, Count). Not for an Unrecorded VM.
func (vm *VM) Hold() {
	vm.mu.Lock()
	vm.held = true
	vm.mu.Unlock()
}

// Release answers, in order, the commands that arrived while the VM was
// held, then lets it answer as they come again. A connection whose
// answer fails is closed.
func (vm *VM) Release() {
	vm.mu.Lock()
	vm.held = false
	conns := make([]*Conn, 0, len(vm.conns))
	for c := range vm.conns {
		if len(c.pend) > 0 && !c.draining {
			c.draining = true
			conns = append(conns, c)
		}
	}
	vm.mu.Unlock()
	for _, c := range conns {
		vm.drain(c)
	}
}

// drain answers c's pending commands; c.draining is set.
func (vm *VM) drain(c *Conn) {
	var out []byte
	for {
		vm.mu.Lock()
		if len(c.pend) == 0 || vm.held {
			c.draining = false
			vm.mu.Unlock()
			return
		}
		p := c.pend[0]
		c.pend = c.pend[1:]
		last := len(c.pend) == 0
		vm.mu.Unlock()
		var err error
		if out, err = vm.answer(c, p, out, last); err != nil {
			c.c.Close()
			vm.mu.Lock()
			c.pend, c.draining = nil, false
			vm.mu.Unlock()
			return
		}
	}
}

// Count is how many commands c the VM received so far.
func (vm *VM) Count(c jdwp.Cmd) int {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	n := 0
	for _, p := range vm.cmds {
		if p.Cmd() == c {
			n++
		}
	}
	return n
}

// Changed is closed when the VM next records a command: a signal to
// Await on, then read Commands or Count.
func (vm *VM) Changed() <-chan struct{} {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	return vm.changed
}

// Send writes p (an event, say) to every open connection.
func (vm *VM) Send(p jdwp.Packet) error {
	vm.mu.Lock()
	conns := make([]*Conn, 0, len(vm.conns))
	for c := range vm.conns {
		conns = append(conns, c)
	}
	vm.mu.Unlock()
	if len(conns) == 0 {
		return errors.New("jdwptest: no connection to send to")
	}
	var errs []error
	for _, c := range conns {
		errs = append(errs, c.Write(p))
	}
	return errors.Join(errs...)
}

// Commands returns the commands received so far, in order.
func (vm *VM) Commands() []jdwp.Packet {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	return slices.Clone(vm.cmds)
}

// Connections is how many connections are open.
func (vm *VM) Connections() int {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	return len(vm.conns)
}

// Close stops listening, closes every connection and waits for their
// goroutines.
func (vm *VM) Close() {
	if vm.ln != nil {
		vm.ln.Close()
	}
	vm.mu.Lock()
	for c := range vm.conns {
		c.c.Close()
	}
	vm.mu.Unlock()
	vm.wg.Wait()
}
