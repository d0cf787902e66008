package adbdevice

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"sync"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/accept"
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
	var wg sync.WaitGroup
	defer wg.Wait()
	return accept.Loop(ctx, ln, d.log, func(conn net.Conn) {
		wg.Go(func() { d.ServeConn(ctx, conn) }) //nolint:errcheck // logged inside
	})
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
