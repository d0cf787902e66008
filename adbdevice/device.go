package adbdevice

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/adbwire"
	"github.com/jdwpaccel/jdwpaccel/internal/logkey"
	"github.com/rs/zerolog"
)

// Log field names of this package.
const (
	LogPeer    = "peer"    // the adb server's address
	LogService = "service" // the service a stream opened
	LogStream  = "stream"  // the device-side stream ID
)

// Process is one debuggable process of the fake device: jdwp:PID leads to
// the JDWP server (a VM's agent) at Addr.
type Process struct {
	PID  int
	Name string // e.g. com.example.app (pidof finds it by this name)
	Addr string // HOST:PORT of the VM's JDWP listener
}

// Config configures a Device.
type Config struct {
	// Serial is the device's ro.serialno (the adb server names a TCP
	// device by its address, whatever this says). Default "jdwpaccel-fake".
	Serial string
	// Processes are the debuggable processes.
	Processes []Process
	// Props are getprop values, added to (or replacing) the defaults:
	// ro.build.version.sdk 30, ro.product.model jdwpaccel_fake, ...
	Props map[string]string
	// Dial connects to a process's Addr (TCP when nil).
	Dial func(ctx context.Context, addr string) (net.Conn, error)
	// Logger receives the device's logs.
	Logger zerolog.Logger
}

// DefaultProps are the getprop values a Device answers unless Config.Props
// says otherwise.
func DefaultProps() map[string]string {
	return map[string]string{
		"ro.build.version.sdk":     "30",
		"ro.build.version.release": "11",
		"ro.build.type":            "userdebug",
		"ro.debuggable":            "1",
		"ro.product.model":         "jdwpaccel_fake",
		"ro.product.name":          "jdwpaccel_fake",
		"ro.product.device":        "jdwpaccel_fake",
		"ro.product.manufacturer":  "jdwpaccel",
		"ro.product.cpu.abi":       "x86_64",
		"ro.product.cpu.abilist":   "x86_64",
		"ro.kernel.qemu":           "0",
	}
}

// maxData is the payload size this device accepts (sent in CNXN).
const maxData = 256 << 10

// Device serves the adb device transport. Safe for concurrent use.
type Device struct {
	cfg   Config
	props map[string]string
	log   zerolog.Logger
}

// New returns a Device; Serve or ServeConn runs it.
func New(cfg Config) *Device {
	if cfg.Serial == "" {
		cfg.Serial = "jdwpaccel-fake"
	}
	if cfg.Dial == nil {
		cfg.Dial = func(ctx context.Context, addr string) (net.Conn, error) {
			d := net.Dialer{Timeout: 10 * time.Second}
			return d.DialContext(ctx, "tcp", addr)
		}
	}
	props := DefaultProps()
	maps.Copy(props, cfg.Props)
	props["ro.serialno"] = cfg.Serial
	return &Device{cfg: cfg, props: props, log: cfg.Logger.With().Str(logkey.Device, cfg.Serial).Logger()}
}

// banner is the CNXN identity: "device::" and the properties adb servers
// read from it.
func (d *Device) banner() string {
	return fmt.Sprintf("device::ro.product.name=%s;ro.product.model=%s;ro.product.device=%s;",
		d.props["ro.product.name"], d.props["ro.product.model"], d.props["ro.product.device"])
}

// Serve accepts adb server connections on ln until ctx ends (nil) or ln
// fails, then closes ln and every connection and waits for them.
func (d *Device) Serve(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		wg.Go(func() { d.ServeConn(ctx, conn) }) //nolint:errcheck // logged inside
	}
}

// ServeConn runs the transport on one adb server connection until it
// ends; it returns the error that ended it (nil when the server closed it).
func (d *Device) ServeConn(ctx context.Context, conn net.Conn) error {
	t := &transport{
		d:       d,
		conn:    conn,
		log:     d.log.With().Str(LogPeer, conn.RemoteAddr().String()).Logger(),
		streams: map[uint32]*stream{},
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	err := t.run(ctx)
	conn.Close()
	t.closeAll()
	t.wg.Wait()
	if ctx.Err() == nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		t.log.Error().Err(err).Msg("adb transport ended by an error; connection closed")
		return err
	}
	t.log.Info().Msg("adb server disconnected")
	return nil
}

// transport is one adb server connection.
type transport struct {
	d    *Device
	conn net.Conn
	log  zerolog.Logger
	wg   sync.WaitGroup // counts service goroutines

	wmu  sync.Mutex // guards conn writes and wbuf
	wbuf []byte

	mu       sync.Mutex // guards the fields below
	online   bool       // a CNXN arrived
	maxSend  uint32     // the server's maxdata
	checksum bool       // verify payload checksums (protocol before VersionSkipChecksum)
	streams  map[uint32]*stream
	nextID   uint32
}

func (t *transport) send(m Message) error {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	t.wbuf = AppendMessage(t.wbuf[:0], m)
	_, err := t.conn.Write(t.wbuf)
	return err
}

// run reads and handles messages until the connection fails; it always
// returns the error that ended it.
func (t *transport) run(ctx context.Context) error {
	r := bufio.NewReaderSize(t.conn, 64<<10)
	for {
		t.mu.Lock()
		check := t.checksum
		t.mu.Unlock()
		m, err := ReadMessage(r, MaxData, check)
		if err != nil {
			return err
		}
		if err := t.handle(ctx, m); err != nil {
			return err
		}
	}
}

func (t *transport) handle(ctx context.Context, m Message) error {
	t.mu.Lock()
	online := t.online
	t.mu.Unlock()
	if m.Command != CmdCNXN && !online {
		t.log.Debug().Stringer("msg", m).Msg("message before CNXN; ignored")
		return nil
	}
	switch m.Command {
	case CmdCNXN:
		return t.connect(m)
	case CmdOPEN:
		t.open(ctx, m)
	case CmdOKAY:
		if s := t.stream(m.Arg1); s != nil && s.remote == m.Arg0 {
			select {
			case s.ready <- struct{}{}:
			default:
			}
		}
	case CmdWRTE:
		s := t.stream(m.Arg1)
		if s == nil || s.remote != m.Arg0 {
			return nil // closed while in flight
		}
		select {
		case s.in <- m.Data:
		default:
			t.log.Error().Uint32(LogStream, s.local).Msg("adb server wrote again before the device's OKAY; closing the stream")
			s.Close()
		}
	case CmdCLSE:
		if s := t.stream(m.Arg1); s != nil && (m.Arg0 == 0 || s.remote == m.Arg0) {
			s.closeBy(false)
		}
	case CmdAUTH, CmdSTLS:
		return fmt.Errorf("adb server sent %s: this fake device supports neither authentication nor TLS", m.Command)
	case CmdSYNC:
	}
	return nil
}

// connect answers the server's CNXN with the device's.
func (t *transport) connect(m Message) error {
	version := min(m.Arg0, uint32(VersionSkipChecksum))
	if version < VersionMin {
		return fmt.Errorf("adb server protocol version 0x%08x is too old", m.Arg0)
	}
	maxSend := min(max(m.Arg1, 1), MaxData)
	t.mu.Lock()
	t.online = true
	t.maxSend = maxSend
	t.checksum = version < VersionSkipChecksum
	t.mu.Unlock()
	t.log.Info().Str("host_banner", string(m.Data)).Uint32("version", m.Arg0).Uint32("max_data", m.Arg1).Msg("adb server connected")
	return t.send(Message{Command: CmdCNXN, Arg0: VersionSkipChecksum, Arg1: maxData, Data: []byte(t.d.banner())})
}

func (t *transport) stream(local uint32) *stream {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.streams[local]
}

func (t *transport) closeAll() {
	t.mu.Lock()
	ss := slices.Collect(maps.Values(t.streams))
	t.mu.Unlock()
	for _, s := range ss {
		s.closeBy(false)
	}
}

// open starts the service an OPEN names, or refuses it with CLSE.
func (t *transport) open(ctx context.Context, m Message) {
	dest := string(m.Data)
	if i := strings.IndexByte(dest, 0); i >= 0 {
		dest = dest[:i] // names travel NUL-terminated
	}
	if m.Arg0 == 0 {
		t.log.Error().Str(LogService, dest).Msg("OPEN with stream ID 0; ignored")
		return
	}
	log := t.log.With().Str(LogService, dest).Logger()
	svc, err := t.d.service(ctx, dest)
	if err != nil {
		log.Info().Err(err).Msg("service refused")
		t.send(Message{Command: CmdCLSE, Arg0: 0, Arg1: m.Arg0}) //nolint:errcheck // the reader sees a dead connection
		return
	}
	t.mu.Lock()
	t.nextID++
	s := &stream{
		t: t, local: t.nextID, remote: m.Arg0, maxSend: t.maxSend,
		in: make(chan []byte, 1), ready: make(chan struct{}, 1), done: make(chan struct{}),
	}
	t.streams[s.local] = s
	t.mu.Unlock()
	log = log.With().Uint32(LogStream, s.local).Logger()
	if err := t.send(Message{Command: CmdOKAY, Arg0: s.local, Arg1: s.remote}); err != nil {
		svc.close()
		s.closeBy(false)
		return
	}
	log.Debug().Msg("service opened")
	t.wg.Go(func() {
		defer s.Close()
		svc.run(ctx, s, log)
	})
}

// stream is one open service stream. It is an io.ReadWriteCloser for the
// service: Read returns what the server wrote (acknowledging each WRTE once
// consumed), Write sends WRTEs one at a time, each after the server's OKAY.
type stream struct {
	t             *transport
	local, remote uint32
	maxSend       uint32
	in            chan []byte   // WRTE payloads; one at a time by protocol
	ready         chan struct{} // the server's OKAY after our WRTE
	done          chan struct{} // closed when the stream is closed
	once          sync.Once
	rbuf          []byte // unread rest of the current WRTE (Read's goroutine only)
	wmu           sync.Mutex
}

func (s *stream) Read(p []byte) (int, error) {
	if len(s.rbuf) == 0 {
		select {
		case b := <-s.in:
			s.rbuf = b
			if len(b) == 0 {
				s.ack()
				return 0, nil
			}
		case <-s.done:
			return 0, io.EOF
		}
	}
	n := copy(p, s.rbuf)
	s.rbuf = s.rbuf[n:]
	if len(s.rbuf) == 0 {
		s.ack()
	}
	return n, nil
}

func (s *stream) ack() {
	s.t.send(Message{Command: CmdOKAY, Arg0: s.local, Arg1: s.remote}) //nolint:errcheck // the reader sees a dead connection
}

func (s *stream) Write(p []byte) (int, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	n := 0
	for len(p) > 0 {
		c := p[:min(len(p), int(s.maxSend))]
		select {
		case <-s.done:
			return n, net.ErrClosed
		default:
		}
		if err := s.t.send(Message{Command: CmdWRTE, Arg0: s.local, Arg1: s.remote, Data: c}); err != nil {
			return n, err
		}
		select {
		case <-s.ready:
		case <-s.done:
			return n, net.ErrClosed
		}
		n += len(c)
		p = p[len(c):]
	}
	return n, nil
}

// Close closes the stream from the device's side (CLSE to the server).
func (s *stream) Close() error {
	s.closeBy(true)
	return nil
}

// closeBy closes the stream once; tell says whether to send CLSE (not
// when the server closed it or the connection is gone).
func (s *stream) closeBy(tell bool) {
	s.once.Do(func() {
		close(s.done)
		s.t.mu.Lock()
		delete(s.t.streams, s.local)
		s.t.mu.Unlock()
		if tell {
			s.t.send(Message{Command: CmdCLSE, Arg0: s.local, Arg1: s.remote}) //nolint:errcheck // the reader sees a dead connection
		}
	})
}

// service is an opened device service.
type service interface {
	run(ctx context.Context, s *stream, log zerolog.Logger)
	close() // releases what opening took, when run never starts
}

// service opens the service named dest.
func (d *Device) service(ctx context.Context, dest string) (service, error) {
	switch {
	case dest == "track-jdwp":
		return trackJDWP{d}, nil
	case dest == "jdwp":
		return output(d.pidList()), nil
	case strings.HasPrefix(dest, "jdwp:"):
		pid, err := strconv.Atoi(strings.TrimPrefix(dest, "jdwp:"))
		if err != nil {
			return nil, fmt.Errorf("bad pid in %q", dest)
		}
		p, ok := d.process(pid)
		if !ok {
			return nil, fmt.Errorf("no debuggable process %d", pid)
		}
		conn, err := d.cfg.Dial(ctx, p.Addr)
		if err != nil {
			return nil, fmt.Errorf("process %d (%s): %w", pid, p.Name, err)
		}
		return &pipe{conn: conn, p: p}, nil
	case strings.HasPrefix(dest, "shell:"), strings.HasPrefix(dest, "exec:"):
		_, cmd, _ := strings.Cut(dest, ":")
		return output(d.shell(cmd)), nil
	}
	return nil, errors.New("unknown service")
}

func (d *Device) process(pid int) (Process, bool) {
	for _, p := range d.cfg.Processes {
		if p.PID == pid {
			return p, true
		}
	}
	return Process{}, false
}

func (d *Device) pidList() string {
	var b strings.Builder
	for _, p := range d.cfg.Processes {
		fmt.Fprintf(&b, "%d\n", p.PID)
	}
	return b.String()
}

// shell answers the few commands tools ask a device: getprop, pidof,
// echo, cat /proc/PID/cmdline (discovery's process names). Anything else
// gets the shell's "not found".
func (d *Device) shell(cmd string) string {
	f := strings.Fields(cmd)
	if len(f) == 0 {
		return ""
	}
	switch f[0] {
	case "getprop":
		if len(f) > 1 {
			return d.props[f[1]] + "\n"
		}
		var b strings.Builder
		for _, k := range slices.Sorted(maps.Keys(d.props)) {
			fmt.Fprintf(&b, "[%s]: [%s]\n", k, d.props[k])
		}
		return b.String()
	case "pidof":
		var pids []string
		for _, name := range f[1:] {
			if name == "-s" {
				continue
			}
			for _, p := range d.cfg.Processes {
				if p.Name == name {
					pids = append(pids, strconv.Itoa(p.PID))
				}
			}
		}
		if len(pids) == 0 {
			return ""
		}
		if slices.Contains(f, "-s") {
			pids = pids[:1]
		}
		return strings.Join(pids, " ") + "\n"
	case "echo":
		return strings.Join(f[1:], " ") + "\n"
	case "cat":
		var b strings.Builder
		for _, path := range f[1:] {
			b.WriteString(d.cat(path))
		}
		return b.String()
	}
	return "/system/bin/sh: " + f[0] + ": inaccessible or not found\n"
}

// cat is what cat prints of path: a debuggable process's command line
// (its name, NUL-terminated, as the kernel gives it), else cat's error.
func (d *Device) cat(path string) string {
	if rest, ok := strings.CutPrefix(path, "/proc/"); ok {
		if pid, ok := strings.CutSuffix(rest, "/cmdline"); ok {
			if n, err := strconv.Atoi(pid); err == nil {
				if p, ok := d.process(n); ok {
					return p.Name + "\x00"
				}
			}
		}
	}
	return "cat: " + path + ": No such file or directory\n"
}

// output writes a fixed text and closes.
type output string

func (o output) run(_ context.Context, s *stream, log zerolog.Logger) {
	if _, err := io.WriteString(s, string(o)); err != nil {
		log.Debug().Err(err).Msg("output not delivered")
	}
}

func (output) close() {}

// trackJDWP sends the process list once (the list never changes) and
// keeps the stream open until the server closes it.
type trackJDWP struct{ d *Device }

func (tj trackJDWP) run(ctx context.Context, s *stream, log zerolog.Logger) {
	list := tj.d.pidList()
	if _, err := s.Write(adbwire.AppendMessage(nil, list)); err != nil {
		return
	}
	select {
	case <-s.done:
	case <-ctx.Done():
	}
}

func (trackJDWP) close() {}

// pipe relays a jdwp:PID stream to the VM's JDWP listener.
type pipe struct {
	conn net.Conn
	p    Process
}

func (p *pipe) run(_ context.Context, s *stream, log zerolog.Logger) {
	log = log.With().Int(logkey.PID, p.p.PID).Str(logkey.VM, p.p.Addr).Logger()
	log.Info().Msg("JDWP stream opened to the VM")
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(p.conn, s) //nolint:errcheck // ends when either side closes
		if tc, ok := p.conn.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
	}()
	io.Copy(s, p.conn) //nolint:errcheck // ends when either side closes
	p.conn.Close()
	s.Close()
	<-done
	log.Info().Msg("JDWP stream closed")
}

func (p *pipe) close() { p.conn.Close() }
