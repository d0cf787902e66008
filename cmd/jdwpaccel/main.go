// Command jdwpaccel is a transparent JDWP proxy that makes Java and Android
// debugging fast over slow links. Run "jdwpaccel help" for the subcommands.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// env is what every subcommand gets: its streams. Logs go to stderr; stdout
// is for results.
type env struct {
	stdout io.Writer
	stderr io.Writer
}

// subcommand runs with its own arguments and returns an exit code.
type subcommand struct {
	name    string
	summary string
	run     func(ctx context.Context, e *env, args []string) int
}

func subcommands() []subcommand {
	return []subcommand{
		{"proxy", "relay a debugger to a VM, accelerating it", cmdProxy},
		{"far", "split mode's far end: run next to the VM, for a proxy --far next to the IDE", cmdFar},
		{"demo", "step a bundled deep program over a slow link, directly and through jdwpaccel", cmdDemo},
		{"bench", "measure step times directly and through jdwpaccel over emulated links", cmdBench},
		{"link", "emulate a slow link (RTT, jitter, bandwidth) in front of a TCP service", cmdLink},
		{"adb", "front the adb server: accelerate the JDWP streams of Android Studio and adb tools", cmdADB},
		{"fakedevice", "serve a fake Android device that a real adb server accepts (adb connect)", cmdFakeDevice},
		{"fakevm", "serve a fake DDM VM (design2007, dalvik or art) for demos and tests", cmdFakeVM},
		{"journal", "show or summarise a journal written by proxy --journal", cmdJournal},
		{"vms", "list the VMs a running proxy found (--vm scan: or adb:)", cmdVMs},
		{"select", "choose the VM that the proxy's --listen port reaches", cmdSelect},
		{"version", "print the version and build information", cmdVersion},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	limitMemory = true // memory.go
	code := run(ctx, os.Args[1:], &env{stdout: os.Stdout, stderr: os.Stderr})
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, e *env) int {
	if len(args) == 0 {
		usage(e.stderr)
		return exitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && args[0] == "help" {
			// "jdwpaccel help proxy" is "jdwpaccel proxy --help".
			return run(ctx, append(args[1:len(args):len(args)], "--help"), e)
		}
		usage(e.stdout)
		return exitOK
	case "-v", "-version", "--version":
		return cmdVersion(ctx, e, args[1:])
	}
	for _, c := range subcommands() {
		if c.name == args[0] {
			return c.run(ctx, e, args[1:])
		}
	}
	what := "command"
	if strings.HasPrefix(args[0], "-") {
		what = "flag"
	}
	fmt.Fprintf(e.stderr, "jdwpaccel: unknown %s %q\nRun \"jdwpaccel help\" for the commands.\n", what, args[0])
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprint(w, "jdwpaccel: a transparent JDWP proxy that makes debugging fast over slow links.\n\nUsage: jdwpaccel <command> [flags]\n\nCommands:\n")
	for _, c := range subcommands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, "\nRun \"jdwpaccel help <command>\" (or \"jdwpaccel <command> --help\") for a command's flags and examples,\n\"jdwpaccel --version\" (or -v) for the version.\n")
}
