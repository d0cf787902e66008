package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/jdwpaccel/jdwpaccel/adbdevice"
	"github.com/jdwpaccel/jdwpaccel/adbfront"
	"github.com/jdwpaccel/jdwpaccel/bench"
	"github.com/jdwpaccel/jdwpaccel/internal/adbserver"
	"github.com/jdwpaccel/jdwpaccel/internal/logkey"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/speculator"
	"github.com/rs/zerolog"
)

// adbBenchModes are the bench modes through a real adb server: each cell
// starts an adb server on a port the kernel chose (internal/adbserver), a fake device (adbdevice) whose
// process 4001 is the link to the cell's VM, and connects them; "adb"
// attaches the driver to the adb server's own forward of jdwp:4001,
// "adb-front" to a forward made through "jdwpaccel adb" with speculation.
// The link sits between the fake device and the VM, so the adb protocol's
// own acknowledgements do not cross it (on a real Wi-Fi adb link they do,
// which costs both modes more).
func adbBenchModes(log zerolog.Logger) map[string]func() (bench.Mode, error) {
	return map[string]func() (bench.Mode, error){
		"adb": func() (bench.Mode, error) {
			if _, err := exec.LookPath("adb"); err != nil {
				return bench.Mode{}, errNoADB
			}
			return bench.Mode{Name: "adb", Via: func(ctx context.Context, vmAddr string) (string, error) {
				port, _, err := startBenchADB(ctx, vmAddr, log)
				if err != nil {
					return "", err
				}
				return benchForward(ctx, port)
			}}, nil
		},
		"adb-front": func() (bench.Mode, error) {
			if _, err := exec.LookPath("adb"); err != nil {
				return bench.Mode{}, errNoADB
			}
			sp := speculator.New(speculator.Config{}, log, nil)
			return bench.Mode{Name: "adb-front", Stats: sp.Stats, Via: func(ctx context.Context, vmAddr string) (string, error) {
				port, _, err := startBenchADB(ctx, vmAddr, log)
				if err != nil {
					return "", err
				}
				front, err := startBenchFront(ctx, port, guarded(sp.Hooks), log)
				if err != nil {
					return "", err
				}
				return benchForward(ctx, front)
			}}, nil
		},
	}
}

var errNoADB = errors.New("the adb modes need the adb command (apt-get install -y adb)")

// runADBClient runs the adb client against the server on port. Its output
// goes to a file: "adb start-server" leaves a daemon holding its stdout.
func runADBClient(ctx context.Context, port int, args ...string) (string, error) {
	f, err := os.CreateTemp("", "jdwpaccel-adb")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	cmd := exec.CommandContext(ctx, "adb", append([]string{"-P", strconv.Itoa(port)}, args...)...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = adbserver.Env()
	err = cmd.Run()
	out, rerr := os.ReadFile(f.Name())
	if err == nil {
		err = rerr
	}
	if err != nil {
		return string(out), fmt.Errorf("adb -P %d %s: %w: %s", port, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// startBenchADB starts an adb server and a fake device leading to vmAddr,
// connected; both stop when ctx ends. It returns the server's port and the
// device's serial.
func startBenchADB(ctx context.Context, vmAddr string, log zerolog.Logger) (int, string, error) {
	srv, err := adbserver.Start()
	if err != nil {
		return 0, "", err
	}
	port := srv.Port
	context.AfterFunc(ctx, func() {
		if err := srv.Stop(); err != nil {
			log.Warn().Err(err).Str(logkey.Listen, srv.Addr()).Msg("cannot stop the bench's adb server")
		}
	})
	// failed adds what the adb server printed to err when the server has
	// died: the likely cause.
	failed := func(err error) (int, string, error) {
		select {
		case <-srv.Exited():
			return 0, "", fmt.Errorf("%w (the adb server at %s exited; its output:\n%s)", err, srv.Addr(), srv.Output())
		default:
			return 0, "", err
		}
	}
	dln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, "", err
	}
	dev := adbdevice.New(adbdevice.Config{Processes: []adbdevice.Process{{PID: 4001, Name: "bench", Addr: vmAddr}}, Logger: log})
	go dev.Serve(ctx, dln) //nolint:errcheck // ends with ctx
	serial := dln.Addr().String()
	if _, err := runADBClient(ctx, port, "connect", serial); err != nil {
		return failed(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := runADBClient(wctx, port, "-s", serial, "wait-for-device"); err != nil {
		return failed(err)
	}
	return port, serial, nil
}

// startBenchFront serves an adb front before the adb server on upstream,
// relaying JDWP streams with hooks, until ctx ends; it returns its port.
func startBenchFront(ctx context.Context, upstream int, hooks func(*relay.Session) relay.Hooks, log zerolog.Logger) (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	front := adbfront.New(adbfront.Config{
		Upstream: "127.0.0.1:" + strconv.Itoa(upstream),
		JDWP:     adbfront.NewRelay(relay.Config{NewHooks: hooks, Logger: log}, nil).Serve, // as "jdwpaccel adb" relays
		Logger:   log,
	})
	go front.Serve(ctx, ln) //nolint:errcheck // ends with ctx
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// benchForward forwards a free local port to jdwp:4001 through the adb
// server (or front) on port and returns its address.
func benchForward(ctx context.Context, port int) (string, error) {
	out, err := runADBClient(ctx, port, "forward", "tcp:0", "jdwp:4001")
	if err != nil {
		return "", err
	}
	p := strings.TrimSpace(out)
	if _, err := strconv.Atoi(p); err != nil {
		return "", fmt.Errorf("adb forward printed %q", out)
	}
	return "127.0.0.1:" + p, nil
}
