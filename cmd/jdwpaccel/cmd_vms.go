package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jdwpaccel/jdwpaccel/discover"
	"github.com/rs/zerolog"
)

const vmsExamples = `
Examples:
  # the VMs a running "jdwpaccel proxy --vm scan:" or "--vm adb:" serves
  jdwpaccel vms
  # without a proxy: look once for JVMs listening on this machine, or on adb devices
  jdwpaccel vms --vm scan:
  jdwpaccel vms --vm adb:
`

func cmdVMs(ctx context.Context, e *env, args []string) int {
	fs := flag.NewFlagSet("vms", flag.ContinueOnError)
	httpAddr := fs.String("http-addr", vmsDefaultHTTPAddr, "the running proxy's HTTP address, `HOST:PORT`")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	spec := fs.String("vm", "", "instead of asking a proxy, look for VMs once: `scan[:PORTS]` or adb[:SERIAL]")
	var vf vmFlags
	vf.register(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: jdwpaccel vms [flags]\n\nList the VMs a running proxy found: their ports, pid, app name, and whether a debugger is attached.\n\nFlags:\n")
		printFlags(fs)
		fmt.Fprint(fs.Output(), vmsExamples)
	}
	if code, ok := parseFlags(fs, args, e); !ok {
		return code
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()

	var snap discover.Snapshot
	if *spec != "" {
		src, err := discover.ParseSpec(*spec, discover.SpecOptions{
			ScanInterval: vf.scanInterval, ConnectProbe: vf.connectProbe, ADBAddr: vf.adbServer, Logger: zerolog.New(zerolog.ConsoleWriter{Out: e.stderr, TimeFormat: time.TimeOnly}).Level(zerolog.WarnLevel),
		})
		if err != nil {
			fmt.Fprintf(e.stderr, "jdwpaccel vms: %v\n", err)
			return exitUsage
		}
		if a, ok := src.(*discover.ADB); ok {
			// Say plainly when adb cannot help, rather than "no VMs".
			ds, err := a.Client.Devices(ctx)
			if err != nil {
				fmt.Fprintf(e.stderr, "jdwpaccel vms: %v\n", err)
				return exitError
			}
			if len(ds) == 0 {
				fmt.Fprint(e.stderr, "jdwpaccel vms: no Android device or emulator is connected to adb (check \"adb devices\")\n")
				return exitError
			}
		}
		vms, err := discover.Discover(ctx, src, 2*time.Second)
		if err != nil {
			fmt.Fprintf(e.stderr, "jdwpaccel vms: %v\n", err)
			return exitError
		}
		for _, vm := range vms {
			snap.VMs = append(snap.VMs, discover.Status{VM: vm})
		}
	} else {
		var err error
		snap, err = (&discover.Client{Addr: *httpAddr}).VMs(ctx)
		if err != nil {
			fmt.Fprintf(e.stderr, "jdwpaccel vms: %v\n", err)
			return exitError
		}
	}
	if snap.VMs == nil {
		snap.VMs = []discover.Status{}
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(snap); err != nil {
			return exitError
		}
		return exitOK
	}
	printVMs(e.stdout, snap, *spec != "")
	return exitOK
}

// printVMs writes the table of "jdwpaccel vms".
func printVMs(w io.Writer, snap discover.Snapshot, oneShot bool) {
	if len(snap.VMs) == 0 {
		fmt.Fprintln(w, "no VMs found")
	} else {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "\tVM\tPORT\tPID\tNAME\tDEBUGGER\tREACHES")
		for _, v := range snap.VMs {
			mark := ""
			if v.Selected {
				mark = "*"
			}
			port := "-"
			if v.Listen != "" {
				port = v.Listen
			}
			pid := "-"
			if v.PID != 0 {
				pid = strconv.Itoa(v.PID)
			}
			name := v.Name
			if name == "" {
				name = "-"
			}
			if v.SuspendOnStart && !v.Busy && v.Sessions == 0 {
				name += " (suspend=y)"
			}
			reaches := v.Addr
			if v.Serial != "" {
				reaches = "adb " + v.Serial
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", mark, v.Key, port, pid, name, debuggerState(v, oneShot), reaches)
		}
		tw.Flush()
	}
	switch {
	case oneShot:
	case snap.Selected != "":
		fmt.Fprintf(w, "\n%s reaches %s (* above)\n", snap.Listen, snap.Selected)
	case snap.Listen != "":
		fmt.Fprintf(w, "\n%s reaches no VM: %s\n", snap.Listen, snap.SelectedWhy)
	}
}

func debuggerState(v discover.Status, oneShot bool) string {
	switch {
	case v.Sessions == 1:
		return "attached (via jdwpaccel)"
	case v.Sessions > 1:
		return fmt.Sprintf("%d attached (via jdwpaccel)", v.Sessions)
	case v.Busy:
		return "attached (elsewhere)"
	case v.Kind == discover.KindADB:
		return "unknown"
	}
	return "no"
}

func cmdSelect(ctx context.Context, e *env, args []string) int {
	fs := flag.NewFlagSet("select", flag.ContinueOnError)
	httpAddr := fs.String("http-addr", vmsDefaultHTTPAddr, "the running proxy's HTTP address, `HOST:PORT`")
	auto := fs.Bool("auto", false, "go back to automatic selection (the only VM, when there is one)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: jdwpaccel select [flags] VM

Choose the VM a running proxy's --listen port (the current-VM port) reaches:
VM is a key, an app or main-class name, or a pid, as "jdwpaccel vms" shows.
A name keeps matching when the app restarts. Debuggers already attached stay
where they are.

Flags:
`)
		printFlags(fs)
		fmt.Fprint(fs.Output(), "\nExamples:\n  jdwpaccel select com.example.app\n  jdwpaccel select local:12345\n  jdwpaccel select --auto\n")
	}
	var pos []string
	if code, ok := parseWith(fs, e, func() (err error) {
		pos, err = parseInterleaved(fs, args)
		return err
	}); !ok {
		return code
	}
	var query string
	switch {
	case *auto && len(pos) == 0:
	case !*auto && len(pos) == 1:
		query = strings.TrimSpace(pos[0])
		if query == "" {
			return usageFailure(e, "select", errors.New("empty VM"))
		}
	default:
		return usageFailure(e, "select", errors.New("name one VM (or pass --auto)"))
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	st, err := (&discover.Client{Addr: *httpAddr}).Select(ctx, query)
	if err != nil {
		fmt.Fprintf(e.stderr, "jdwpaccel select: %v\n", err)
		return exitError
	}
	if query == "" {
		fmt.Fprintln(e.stdout, "automatic selection")
		return exitOK
	}
	name := st.Name
	if name == "" {
		name = "-"
	}
	fmt.Fprintf(e.stdout, "selected %s (%s, pid %d)\n", st.Key, name, st.PID)
	return exitOK
}
