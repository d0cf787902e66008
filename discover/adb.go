package discover

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/adbwire"
)

// DefaultADBPort is the adb server's port unless ANDROID_ADB_SERVER_PORT
// says otherwise.
const DefaultADBPort = 5037

// DefaultADBAddr is the local adb server's address: 127.0.0.1:5037, or the
// port in ANDROID_ADB_SERVER_PORT.
func DefaultADBAddr() string {
	port := strconv.Itoa(DefaultADBPort)
	if p := os.Getenv("ANDROID_ADB_SERVER_PORT"); p != "" {
		if n, err := strconv.Atoi(p); err == nil && n > 0 && n < 65536 {
			port = p
		}
	}
	return net.JoinHostPort("127.0.0.1", port)
}

// ADBError is a FAIL answer of the adb server.
type ADBError struct {
	Request string // the request that failed, e.g. "host:transport:SERIAL"
	Message string // the server's message, e.g. "device 'x' not found"
}

func (e *ADBError) Error() string {
	return fmt.Sprintf("adb %s: %s", e.Request, e.Message)
}

// ErrADBProtocol is wrapped by errors for answers that break the host
// protocol's framing (adbwire's).
var ErrADBProtocol = adbwire.ErrProtocol

// ErrNoADBServer is wrapped when no adb server answers at the address.
var ErrNoADBServer = errors.New("no adb server")

// ADBDevice is one line of host:devices.
type ADBDevice struct {
	Serial string `json:"serial"`
	State  string `json:"state"` // "device" when usable; "offline", "unauthorized", ...
}

// ADBClient speaks the adb host protocol to an adb server: each request
// is 4 hex digits of length and the payload; each answer OKAY, or FAIL and
// a length-prefixed message. One TCP connection per request; after
// host:transport the connection is routed to the device for one service.
type ADBClient struct {
	// Addr is the server's address (DefaultADBAddr() when empty).
	Addr string
	// Timeout bounds each request's exchange, not the streams that follow
	// (10 s when zero).
	Timeout time.Duration
}

func (c *ADBClient) addr() string {
	if c.Addr == "" {
		return DefaultADBAddr()
	}
	return c.Addr
}

func (c *ADBClient) timeout() time.Duration {
	if c.Timeout <= 0 {
		return 10 * time.Second
	}
	return c.Timeout
}

// dial connects to the adb server.
func (c *ADBClient) dial(ctx context.Context) (net.Conn, error) {
	d := net.Dialer{Timeout: c.timeout()}
	conn, err := d.DialContext(ctx, "tcp", c.addr())
	if err != nil {
		return nil, fmt.Errorf("%w at %s (start one with \"adb start-server\"): %v", ErrNoADBServer, c.addr(), err)
	}
	return conn, nil
}

// request writes req on conn and reads its status.
func request(conn net.Conn, r io.Reader, req string) error {
	if err := adbwire.CheckLength(req); err != nil {
		return err
	}
	if _, err := conn.Write(adbwire.AppendMessage(nil, req)); err != nil {
		return fmt.Errorf("adb %s: %w", req, err)
	}
	return readStatus(r, req)
}

// readStatus reads OKAY, or FAIL and its message.
func readStatus(r io.Reader, req string) error {
	err := adbwire.ReadStatus(r)
	var fe *adbwire.FailError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &fe):
		return &ADBError{Request: req, Message: fe.Message}
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("adb %s: the server closed the connection without an answer: %w", req, ErrADBProtocol)
	}
	return fmt.Errorf("adb %s: %w", req, err)
}

// withDeadline sets conn's deadline from ctx and the client's timeout,
// and closes conn if ctx ends first. The returned stop undoes both.
func (c *ADBClient) withDeadline(ctx context.Context, conn net.Conn) (stop func()) {
	dl := time.Now().Add(c.timeout())
	if d, ok := ctx.Deadline(); ok && d.Before(dl) {
		dl = d
	}
	conn.SetDeadline(dl)
	cancel := context.AfterFunc(ctx, func() { conn.Close() })
	return func() {
		cancel()
		conn.SetDeadline(time.Time{})
	}
}

// query sends a host request that answers OKAY and one message.
func (c *ADBClient) query(ctx context.Context, req string) ([]byte, error) {
	conn, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	stop := c.withDeadline(ctx, conn)
	defer stop()
	if err := request(conn, conn, req); err != nil {
		return nil, ctxErr(ctx, err)
	}
	b, err := adbwire.ReadMessage(conn)
	if err != nil {
		return nil, ctxErr(ctx, fmt.Errorf("adb %s: %w", req, err))
	}
	return b, nil
}

func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// Version returns the server's protocol version (host:version).
func (c *ADBClient) Version(ctx context.Context) (int, error) {
	b, err := c.query(ctx, "host:version")
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(string(b), 16, 32)
	if err != nil {
		return 0, fmt.Errorf("adb host:version: %q: %w", b, ErrADBProtocol)
	}
	return int(v), nil
}

// Devices lists the devices the server knows (host:devices).
func (c *ADBClient) Devices(ctx context.Context) ([]ADBDevice, error) {
	b, err := c.query(ctx, "host:devices")
	if err != nil {
		return nil, err
	}
	return parseDevices(b)
}

// parseDevices parses "SERIAL\tSTATE\n" lines.
func parseDevices(b []byte) ([]ADBDevice, error) {
	var ds []ADBDevice
	for _, line := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		serial, state, ok := strings.Cut(line, "\t")
		if !ok || serial == "" {
			return nil, fmt.Errorf("adb: device line %q: %w", line, ErrADBProtocol)
		}
		ds = append(ds, ADBDevice{Serial: serial, State: strings.TrimSpace(state)})
	}
	return ds, nil
}

// parsePIDList parses a track-jdwp message: one decimal PID per line.
func parsePIDList(b []byte) ([]int, error) {
	var pids []int
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		pid, err := strconv.Atoi(line)
		if err != nil || pid <= 0 {
			return nil, fmt.Errorf("adb track-jdwp: PID %q: %w", line, ErrADBProtocol)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// transportRequest is the request routing a connection to serial (any
// single device when serial is empty).
func transportRequest(serial string) string {
	if serial == "" {
		return "host:transport-any"
	}
	return "host:transport:" + serial
}

// openService connects, routes the connection to serial and opens
// service there. The returned reader holds any bytes read past the answer.
func (c *ADBClient) openService(ctx context.Context, serial, service string) (net.Conn, *bufio.Reader, error) {
	conn, err := c.dial(ctx)
	if err != nil {
		return nil, nil, err
	}
	stop := c.withDeadline(ctx, conn)
	br := bufio.NewReader(conn)
	if err := request(conn, br, transportRequest(serial)); err != nil {
		stop()
		conn.Close()
		return nil, nil, ctxErr(ctx, deviceError(serial, err))
	}
	if err := request(conn, br, service); err != nil {
		stop()
		conn.Close()
		return nil, nil, ctxErr(ctx, err)
	}
	stop()
	return conn, br, nil
}

// deviceError makes a transport failure say what to do.
func deviceError(serial string, err error) error {
	var ae *ADBError
	if !errors.As(err, &ae) {
		return err
	}
	switch {
	case serial == "" && strings.Contains(ae.Message, "no devices"):
		return fmt.Errorf("no Android device or emulator is connected to adb (check \"adb devices\"): %w", err)
	case serial == "" && strings.Contains(ae.Message, "more than one"):
		return fmt.Errorf("several devices are connected; name one with adb:SERIAL (see \"adb devices\"): %w", err)
	case serial != "" && strings.Contains(ae.Message, "not found"):
		return fmt.Errorf("device %q is not connected to adb (check \"adb devices\"): %w", serial, err)
	}
	return err
}

// bufConn is a net.Conn whose reads first drain a bufio.Reader.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// JDWPProcesses returns the debuggable PIDs of device serial now: the
// first message of track-jdwp.
func (c *ADBClient) JDWPProcesses(ctx context.Context, serial string) ([]int, error) {
	conn, br, err := c.openService(ctx, serial, "track-jdwp")
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	stop := c.withDeadline(ctx, conn)
	defer stop()
	b, err := adbwire.ReadMessage(br)
	if err != nil {
		return nil, ctxErr(ctx, fmt.Errorf("adb track-jdwp on %s: %w", deviceName(serial), err))
	}
	return parsePIDList(b)
}

// ErrNotDebuggable is wrapped when a PID is not among a device's
// debuggable processes.
var ErrNotDebuggable = errors.New("not a debuggable process")

// DialJDWP opens the JDWP stream of process pid on device serial (any
// single device when serial is empty): it checks that pid is among the
// device's debuggable processes (track-jdwp), then opens host:transport
// and jdwp:PID. The JDWP handshake has not been exchanged on the returned
// connection.
func (c *ADBClient) DialJDWP(ctx context.Context, serial string, pid int) (net.Conn, error) {
	pids, err := c.JDWPProcesses(ctx, serial)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(pids, pid) {
		return nil, fmt.Errorf("process %d on %s has exited or is not debuggable (debuggable: %v): %w", pid, deviceName(serial), pids, ErrNotDebuggable)
	}
	conn, br, err := c.openService(ctx, serial, "jdwp:"+strconv.Itoa(pid))
	if err != nil {
		var ae *ADBError
		if errors.As(err, &ae) && strings.HasPrefix(ae.Request, "jdwp:") {
			return nil, fmt.Errorf("process %d on %s is not debuggable or has exited: %w", pid, deviceName(serial), err)
		}
		return nil, err
	}
	if br.Buffered() == 0 {
		return conn, nil
	}
	return &bufConn{Conn: conn, r: br}, nil
}

func deviceName(serial string) string {
	if serial == "" {
		return "the device"
	}
	return strconv.Quote(serial)
}

// TrackJDWP streams the debuggable PIDs of device serial (track-jdwp):
// fn gets the full list each time it changes, until ctx ends (nil) or the
// stream fails.
func (c *ADBClient) TrackJDWP(ctx context.Context, serial string, fn func(pids []int)) error {
	conn, br, err := c.openService(ctx, serial, "track-jdwp")
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	for {
		b, err := adbwire.ReadMessage(br)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("adb track-jdwp on %s: the device went away", deviceName(serial))
			}
			return fmt.Errorf("adb track-jdwp on %s: %w", deviceName(serial), err)
		}
		pids, err := parsePIDList(b)
		if err != nil {
			return err
		}
		fn(pids)
	}
}

// TrackDevices streams the device list (host:track-devices): fn gets the
// full list each time it changes, until ctx ends (nil) or the stream fails.
func (c *ADBClient) TrackDevices(ctx context.Context, fn func([]ADBDevice)) error {
	conn, err := c.dial(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := c.withDeadline(ctx, conn)
	br := bufio.NewReader(conn)
	if err := request(conn, br, "host:track-devices"); err != nil {
		stop()
		return ctxErr(ctx, err)
	}
	stop()
	stopClose := context.AfterFunc(ctx, func() { conn.Close() })
	defer stopClose()
	for {
		b, err := adbwire.ReadMessage(br)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("adb host:track-devices: %w", err)
		}
		ds, err := parseDevices(b)
		if err != nil {
			return err
		}
		fn(ds)
	}
}

// Shell runs cmd with the shell service on device serial and returns at
// most 64 KiB of its output.
func (c *ADBClient) Shell(ctx context.Context, serial, cmd string) ([]byte, error) {
	conn, br, err := c.openService(ctx, serial, "shell:"+cmd)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	stop := c.withDeadline(ctx, conn)
	defer stop()
	b, err := io.ReadAll(io.LimitReader(br, 64<<10))
	if err != nil {
		return b, ctxErr(ctx, err)
	}
	return b, nil
}
