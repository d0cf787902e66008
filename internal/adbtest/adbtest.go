// Package adbtest owns a test adb server: it speaks the adb host protocol
// (framed by adbwire: 4 hex digits of length, then the request; OKAY, or
// FAIL and a length-prefixed message) for the requests jdwpaccel's adb client makes
// (host:version, host:devices, host:track-devices, host:transport:SERIAL,
// host:transport-any, and on a device track-jdwp, jdwp:PID and
// shell:cat /proc/PID/cmdline), with fake devices whose processes' JDWP
// streams are forwarded to a dial function. It checks the framing of every
// request it reads and records violations (Errors) and the raw requests
// (Requests).
package adbtest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/adbwire"
)

// Proc is a debuggable process of a fake device.
type Proc struct {
	PID  int
	Name string // what /proc/PID/cmdline says
	// Dial opens the process's JDWP stream (a fake or real VM); nil
	// makes jdwp:PID close at once.
	Dial func() (net.Conn, error)
}

type device struct {
	state string
	procs map[int]Proc
}

// Server is a test adb server on 127.0.0.1.
type Server struct {
	ln net.Listener

	mu       sync.Mutex         // guards the fields below
	devices  map[string]*device // by serial
	requests []string           // raw requests, prefix included, in order
	errs     []error            // framing violations
	changed  chan struct{}      // closed and replaced when devices or processes change
	conns    map[net.Conn]bool  // open connections, closed by Close

	wg sync.WaitGroup
}

// Start starts a server on a free loopback port.
func Start() (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{ln: ln, devices: map[string]*device{}, changed: make(chan struct{}), conns: map[net.Conn]bool{}}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Addr is the server's address.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server, closes every connection and waits for them.
func (s *Server) Close() {
	s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// AddDevice adds (or changes the state of) a device; state "device" is
// online.
func (s *Server) AddDevice(serial, state string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := s.devices[serial]; ok {
		d.state = state
	} else {
		s.devices[serial] = &device{state: state, procs: map[int]Proc{}}
	}
	s.notifyLocked()
}

// RemoveDevice unplugs a device.
func (s *Server) RemoveDevice(serial string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.devices, serial)
	s.notifyLocked()
}

// AddProcess adds a debuggable process to a device (which must exist).
func (s *Server) AddProcess(serial string, p Proc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.devices[serial].procs[p.PID] = p
	s.notifyLocked()
}

// RemoveProcess ends a process.
func (s *Server) RemoveProcess(serial string, pid int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := s.devices[serial]; ok {
		delete(d.procs, pid)
	}
	s.notifyLocked()
}

// Requests returns the raw requests read so far (length prefix included).
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Errors returns the framing violations seen so far.
func (s *Server) Errors() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.errs)
}

func (s *Server) fail(err error) {
	s.mu.Lock()
	s.errs = append(s.errs, err)
	s.mu.Unlock()
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[c] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serve(c)
			c.Close()
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
	}
}

// readRequest reads one request, checking its framing (adbwire's: 4 hex
// digits, a non-zero length, and the whole payload); a violation is
// recorded.
func (s *Server) readRequest(c net.Conn) (string, error) {
	var raw bytes.Buffer
	req, err := adbwire.ReadRequest(io.TeeReader(c, &raw))
	if err != nil {
		if raw.Len() > 0 || !errors.Is(err, io.EOF) {
			s.fail(fmt.Errorf("request %q: %w", raw.Bytes(), err))
		}
		return "", err
	}
	s.mu.Lock()
	s.requests = append(s.requests, raw.String())
	s.mu.Unlock()
	return req, nil
}

func okay(c net.Conn) error { _, err := io.WriteString(c, adbwire.Okay); return err }

func failMsg(c net.Conn, msg string) {
	c.Write(adbwire.AppendFail(nil, msg)) //nolint:errcheck // the client may be gone
}

func message(c net.Conn, payload string) error {
	_, err := c.Write(adbwire.AppendMessage(nil, payload))
	return err
}

func (s *Server) serve(c net.Conn) {
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	req, err := s.readRequest(c)
	if err != nil {
		return
	}
	c.SetReadDeadline(time.Time{})
	switch {
	case req == "host:version":
		okay(c)
		message(c, fmt.Sprintf("%04x", 41))
	case req == "host:devices":
		okay(c)
		message(c, s.deviceList())
	case req == "host:track-devices":
		okay(c)
		s.stream(c, s.deviceList)
	case req == "host:transport-any":
		serial, msg := s.anyDevice()
		if msg != "" {
			failMsg(c, msg)
			return
		}
		okay(c)
		s.device(c, serial)
	case strings.HasPrefix(req, "host:transport:"):
		serial := strings.TrimPrefix(req, "host:transport:")
		s.mu.Lock()
		d, ok := s.devices[serial]
		online := ok && d.state == "device"
		s.mu.Unlock()
		if !ok {
			failMsg(c, fmt.Sprintf("device '%s' not found", serial))
			return
		}
		if !online {
			failMsg(c, "device offline")
			return
		}
		okay(c)
		s.device(c, serial)
	default:
		failMsg(c, "unknown host service")
	}
}

func (s *Server) deviceList() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	serials := make([]string, 0, len(s.devices))
	for k := range s.devices {
		serials = append(serials, k)
	}
	slices.Sort(serials)
	var b strings.Builder
	for _, k := range serials {
		fmt.Fprintf(&b, "%s\t%s\n", k, s.devices[k].state)
	}
	return b.String()
}

func (s *Server) anyDevice() (string, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var online []string
	for k, d := range s.devices {
		if d.state == "device" {
			online = append(online, k)
		}
	}
	switch len(online) {
	case 0:
		return "", "no devices/emulators found"
	case 1:
		return online[0], ""
	}
	return "", "more than one device/emulator"
}

// stream writes list() now and after every change until the peer goes or
// the list is "" for a gone device (gone reports it).
func (s *Server) stream(c net.Conn, list func() string) {
	peerGone := make(chan struct{})
	go func() {
		io.Copy(io.Discard, c) //nolint:errcheck // only waiting for EOF
		close(peerGone)
	}()
	last := "\x00"
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		cur := list()
		if cur != last {
			if message(c, cur) != nil {
				return
			}
			last = cur
		}
		select {
		case <-ch:
		case <-peerGone:
			return
		}
	}
}

// device serves one device service on a connection routed to serial.
func (s *Server) device(c net.Conn, serial string) {
	req, err := s.readRequest(c)
	if err != nil {
		return
	}
	switch {
	case req == "track-jdwp":
		okay(c)
		gone := make(chan struct{})
		var once sync.Once
		s.stream(c, func() string {
			s.mu.Lock()
			defer s.mu.Unlock()
			d, ok := s.devices[serial]
			if !ok {
				once.Do(func() { close(gone); c.Close() })
				return ""
			}
			pids := make([]int, 0, len(d.procs))
			for p := range d.procs {
				pids = append(pids, p)
			}
			slices.Sort(pids)
			var b strings.Builder
			for _, p := range pids {
				fmt.Fprintf(&b, "%d\n", p)
			}
			return b.String()
		})
	case strings.HasPrefix(req, "jdwp:"):
		pid, _ := strconv.Atoi(strings.TrimPrefix(req, "jdwp:"))
		p, ok := s.proc(serial, pid)
		// adbd answers OKAY once the service is open; for a process that
		// is not debuggable the stream then ends at once.
		okay(c)
		if !ok || p.Dial == nil {
			return
		}
		vm, err := p.Dial()
		if err != nil {
			return
		}
		defer vm.Close()
		done := make(chan struct{})
		go func() {
			io.Copy(vm, c) //nolint:errcheck
			vm.Close()
			close(done)
		}()
		io.Copy(c, vm) //nolint:errcheck
		c.Close()
		<-done
	case strings.HasPrefix(req, "shell:cat /proc/") && strings.HasSuffix(req, "/cmdline"):
		pid, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(req, "shell:cat /proc/"), "/cmdline"))
		okay(c)
		if p, ok := s.proc(serial, pid); ok {
			io.WriteString(c, p.Name+"\x00") //nolint:errcheck
		} else {
			fmt.Fprintf(c, "cat: /proc/%d/cmdline: No such file or directory\n", pid)
		}
	default:
		failMsg(c, "closed")
	}
}

func (s *Server) proc(serial string, pid int) (Proc, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.devices[serial]
	if !ok {
		return Proc{}, false
	}
	p, ok := d.procs[pid]
	return p, ok
}
