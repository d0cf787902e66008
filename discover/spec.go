package discover

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// SpecOptions are the settings a --vm spec does not carry.
type SpecOptions struct {
	// ScanInterval is a scan's period (DefaultScanInterval when zero).
	ScanInterval time.Duration
	// ConnectProbe makes scans connect instead of reading /proc.
	ConnectProbe bool
	// ADBAddr is the adb server (DefaultADBAddr() when empty).
	ADBAddr string
	Logger  zerolog.Logger
}

// SpecHelp describes the --vm forms.
const SpecHelp = `HOST:PORT       a VM's JDWP listener (tcp:HOST:PORT also works)
scan[:PORTS]    JVMs with a JDWP listener on this machine, on PORTS (default ` + DefaultScanPorts + `), rescanned
adb[:SERIAL]    the debuggable processes of every device (or of SERIAL) behind the local adb server
adb:SERIAL:PID  one process of one device (for a network serial: adb:HOST:PORT:PID)`

// ParseSpec turns a --vm value into a Source.
func ParseSpec(spec string, opt SpecOptions) (Source, error) {
	switch {
	case spec == "":
		return nil, fmt.Errorf("empty VM spec; one of:\n%s", SpecHelp)
	case spec == "scan" || strings.HasPrefix(spec, "scan:"):
		ports := strings.TrimPrefix(strings.TrimPrefix(spec, "scan"), ":")
		if ports == "" {
			ports = DefaultScanPorts
		}
		ps, err := ParsePorts(ports)
		if err != nil {
			return nil, fmt.Errorf("bad VM spec %q: %w", spec, err)
		}
		return &Scan{Ports: ps, Interval: opt.ScanInterval, ConnectProbe: opt.ConnectProbe, Logger: opt.Logger}, nil
	case spec == "adb" || strings.HasPrefix(spec, "adb:"):
		serial, pid, err := parseADBSpec(strings.TrimPrefix(strings.TrimPrefix(spec, "adb"), ":"))
		if err != nil {
			return nil, fmt.Errorf("bad VM spec %q: %w", spec, err)
		}
		return &ADB{Client: &ADBClient{Addr: opt.ADBAddr}, Serial: serial, PID: pid, Retry: opt.ScanInterval, Logger: opt.Logger}, nil
	}
	addr := strings.TrimPrefix(spec, "tcp:")
	_, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return nil, fmt.Errorf("bad VM spec %q; one of:\n%s", spec, SpecHelp)
	}
	if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
		return nil, fmt.Errorf("bad VM spec %q: bad port %q", spec, port)
	}
	return Static{Addr: addr}, nil
}

// parseADBSpec splits "", "SERIAL", "SERIAL:PID" or "HOST:PORT:PID".
func parseADBSpec(s string) (serial string, pid int, err error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return s, 0, nil
	}
	head, tail := s[:i], s[i+1:]
	n, convErr := strconv.Atoi(tail)
	if convErr != nil || n <= 0 {
		// SERIAL with a colon but no PID, e.g. "host:5555" is caught
		// below; anything else is malformed.
		return "", 0, fmt.Errorf("bad PID %q (want adb:SERIAL:PID)", tail)
	}
	if !strings.Contains(head, ":") && isHost(head) {
		// "192.168.1.5:5555": a network device's serial, no PID.
		return s, 0, nil
	}
	if head == "" {
		return "", 0, fmt.Errorf("empty serial before PID %d", n)
	}
	return head, n, nil
}

// isHost says whether s is an IP address or "localhost" (the head of a
// network serial).
func isHost(s string) bool {
	if s == "localhost" {
		return true
	}
	_, err := netip.ParseAddr(s)
	return err == nil
}

// Discover runs src once and returns the VMs it finds: a Scan's or
// Static's first report, or an ADB's last report after settle (the device
// lists arrive one by one), or what was reported when ctx ends.
func Discover(ctx context.Context, src Source, settle time.Duration) ([]VM, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type rep struct{ vms []VM }
	reps := make(chan rep, 1)
	oneShot := true
	if _, ok := src.(*ADB); ok {
		oneShot = false
	}
	errc := make(chan error, 1)
	go func() {
		errc <- src.Run(ctx, func(vms []VM) {
			cp := append([]VM(nil), vms...)
			select {
			case <-reps:
			default:
			}
			reps <- rep{cp}
		})
	}()
	var last []VM
	var timer <-chan time.Time
	if !oneShot {
		timer = time.After(settle)
	}
	for {
		select {
		case r := <-reps:
			last = r.vms
			if oneShot {
				cancel()
				<-errc
				return last, nil
			}
		case <-timer:
			cancel()
			<-errc
			return last, nil
		case err := <-errc:
			return last, err
		case <-ctx.Done():
			<-errc
			return last, nil
		}
	}
}
