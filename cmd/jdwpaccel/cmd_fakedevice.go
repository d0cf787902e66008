package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"strings"

	"github.com/jdwpaccel/jdwpaccel/adbdevice"
	"github.com/jdwpaccel/jdwpaccel/relay"
)

const fakeDeviceExamples = `
Examples:
  # a JVM with a JDWP agent, then a fake device whose app com.example.app is it
  java -agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=127.0.0.1:5005 -jar app.jar
  jdwpaccel fakedevice --listen 127.0.0.1:5555 --process com.example.app=127.0.0.1:5005
  adb connect 127.0.0.1:5555
  adb -s 127.0.0.1:5555 jdwp                       # 4001
  adb -s 127.0.0.1:5555 shell pidof com.example.app
  adb -s 127.0.0.1:5555 forward tcp:8600 jdwp:4001  # then attach a debugger to 8600
`

// cmdFakeDevice serves a fake Android device over adb's TCP transport.
func cmdFakeDevice(ctx context.Context, e *env, args []string) int {
	var (
		listen, serial string
		pidBase        int
		procs, props   stringList
		lf             logFlags
	)
	fs := flag.NewFlagSet("fakedevice", flag.ContinueOnError)
	fs.StringVar(&listen, "listen", "127.0.0.1:5555", "where the adb server connects (\"adb connect ADDR\"), `ADDR`")
	fs.Var(&procs, "process", "a debuggable process, `NAME=HOST:PORT`: its jdwp:PID stream leads to the JDWP listener at HOST:PORT (a JVM's agent or \"jdwpaccel fakevm\"); repeatable")
	fs.IntVar(&pidBase, "pid-base", 4001, "the first process's `PID`; the next get the following ones")
	fs.StringVar(&serial, "serial", "jdwpaccel-fake", "the device's ro.serialno")
	fs.Var(&props, "prop", "a getprop value, `KEY=VALUE`; repeatable")
	lf.register(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: jdwpaccel fakedevice --process NAME=HOST:PORT ... [flags]\n\nServe a fake Android device that a real adb server accepts (adb connect), whose\ndebuggable processes are real or fake VMs.\n\nFlags:\n")
		printFlags(fs)
		fmt.Fprint(fs.Output(), fakeDeviceExamples)
	}
	if code, ok := parseFlags(fs, args, e); !ok {
		return code
	}
	log, err := lf.logger(e.stderr)
	if err != nil {
		fmt.Fprintf(e.stderr, "jdwpaccel fakedevice: %v\n", err)
		return exitUsage
	}
	cfg := adbdevice.Config{Serial: serial, Props: map[string]string{}, Logger: log}
	for i, p := range procs {
		name, addr, ok := strings.Cut(p, "=")
		if _, _, err := net.SplitHostPort(addr); !ok || name == "" || err != nil {
			fmt.Fprintf(e.stderr, "jdwpaccel fakedevice: bad --process %q: want NAME=HOST:PORT\n", p)
			return exitUsage
		}
		cfg.Processes = append(cfg.Processes, adbdevice.Process{PID: pidBase + i, Name: name, Addr: addr})
	}
	for _, p := range props {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			fmt.Fprintf(e.stderr, "jdwpaccel fakedevice: bad --prop %q: want KEY=VALUE\n", p)
			return exitUsage
		}
		cfg.Props[k] = v
	}
	if err := checkListen("--listen", listen, false, log); err != nil {
		fmt.Fprintf(e.stderr, "jdwpaccel fakedevice: %v\n", err)
		return exitUsage
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		log.Error().Err(err).Str(relay.LogListen, listen).Msg("cannot listen")
		return exitError
	}
	fmt.Fprintf(e.stdout, "fake device listening on %s (adb connect %s)\n", ln.Addr(), ln.Addr())
	for _, p := range cfg.Processes {
		fmt.Fprintf(e.stdout, "  pid %d  %s  -> %s\n", p.PID, p.Name, p.Addr)
	}
	if err := adbdevice.New(cfg).Serve(ctx, ln); err != nil {
		log.Error().Err(err).Msg("fake device stopped")
		return exitError
	}
	return exitOK
}
