package javavm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// Driver profiles: what the driver fetches at every stop.
const (
	// ProfileJDBMin is jdb after a step: frames and the thread name.
	ProfileJDBMin = "jdb-min"
	// ProfileIdeaLike is IntelliJ-like: every thread's name and status, the
	// first 20 frames with line, source and Method.IsObsolete, top-frame
	// locals and this, one level of fields, strings and array heads.
	ProfileIdeaLike = "idea-like"
	// ProfileIdeaAsync is idea-like as IntelliJ's async JDI sends it: the
	// per-thread, per-frame and per-object reads go out from several JDI
	// threads at once (DriverOptions.Threads, 8 when not set), so they
	// overlap on the wire. It sees exactly what idea-like sees.
	ProfileIdeaAsync = "idea-async"
	// ProfileVSCodeLike is Microsoft's java-debug (VS Code's Java debugger)
	// as its JDI calls go at each stop VS Code's UI shows: AllThreads and
	// the names of new threads, 20 frames with line, source and signature,
	// the top frame's locals and this, one level of each that has
	// children, then a step over with a method exit request, the thread
	// resumed alone; asynchronous (reads of a kind sent together) when
	// the VM_DEATH request it times at attach took over 15 ms. It runs
	// over Eclipse JDT's JDI, as java-debug does, when Debian's
	// libeclipse-jdt-debug-java is installed (EclipseJDI), else over the
	// JDK's (Summary.JDI says which).
	ProfileVSCodeLike = "vscode-like"
	// ProfileTranscript is idea-like plus all frames, every frame's
	// variables and the top class's statics: the widest view, for
	// correctness comparisons.
	ProfileTranscript = "transcript"
)

// Profiles lists every driver profile.
var Profiles = []string{ProfileJDBMin, ProfileIdeaLike, ProfileIdeaAsync, ProfileVSCodeLike, ProfileTranscript}

// DriverOptions configures RunDriver.
type DriverOptions struct {
	// Addr is the JDWP address to attach to, "host:port" (a VM's Addr, or
	// a proxy in front of it).
	Addr string
	// Profile is one of the Profile* constants (default idea-like).
	Profile string
	// Debuggee is the debuggee main class (default Deep); it selects the
	// breakpoint line and debuggee-specific behaviour (toString watch,
	// HotSwap redefinition at stop Steps/2, step-into for NewClasses).
	Debuggee string
	// Steps is the number of steps after the breakpoint stop.
	Steps int
	// Warmup is the number of first stops flagged as warm-up (cold JDI
	// caches) and left out of the summary medians.
	Warmup int
	// Threads > 1 runs the per-thread, per-frame and per-object queries on
	// that many JDI caller threads (an async IDE); 0 or 1 is a synchronous
	// IDE, except for ProfileIdeaAsync, which then uses 8.
	Threads int
	// Breakpoints is how many breakpoints the driver sets at attach (0 or
	// 1: the debuggee's one at its "// @breakpoint" line). The others are
	// its "// @breakpoint-extra CLASS" lines (ExtraBreakpoints), in lines
	// never reached or classes never loaded, as an IDE's other breakpoints
	// often are; MaxBreakpoints says how many a debuggee has.
	Breakpoints int
	// StepInto forces STEP_INTO; otherwise the driver steps over, except
	// for NewClasses, which it always steps into.
	StepInto bool
	// Dump makes the driver include each stop's canonical text.
	Dump bool
	// JVMArgs are extra flags for the driver's own JVM.
	JVMArgs []string
	// AfterFirstStop, when set, is called once the driver has reported the
	// breakpoint stop (stop 0); the driver waits for it to return before
	// its first step, so what the call measures (bytes on a link, say)
	// belongs to the first stop alone.
	AfterFirstStop func()
	// OnStop, when set, is called with each stop as soon as the driver
	// reports it (from a goroutine of RunDriver's), for runs that are
	// watched while they go on, or cut short by cancelling the context.
	OnStop func(Stop)
}

// Stop is one stop as the driver reported it.
type Stop struct {
	// Index is 0 for the breakpoint stop, then 1..Steps.
	Index int `json:"stop"`
	// Warmup marks the first Warmup stops.
	Warmup bool `json:"warmup"`
	// MS is the wall time of the step: from issuing the step (or the
	// resume, for stop 0) to the end of the stop's work.
	MS float64 `json:"ms"`
	// BurstMS is the time of the stop's work alone.
	BurstMS float64 `json:"burst_ms"`
	// Top is the top frame's location, "Class.method:line".
	Top string `json:"top"`
	// Digest is the SHA-256 (hex) of the canonical text of everything
	// seen at the stop, free of object IDs and timing.
	Digest string `json:"digest"`
	// Text is the canonical text itself (only with Dump).
	Text string `json:"text,omitempty"`
}

// Summary is the driver's final line.
type Summary struct {
	Stops         int     `json:"stops"`
	Measured      int     `json:"measured"`
	MedianMS      float64 `json:"median_ms"`
	MedianBurstMS float64 `json:"median_burst_ms"`
	// FirstStopMS is the time to the first stop: from before the attach to
	// the end of the breakpoint stop's work (its state shown).
	FirstStopMS float64 `json:"first_stop_ms"`
	// VMRunMS is how much of FirstStopMS the VM was running: from each
	// resume the driver sent before the breakpoint to the next event. At a
	// zero RTT it is the VM's own start-up.
	VMRunMS float64 `json:"vm_run_ms"`
	// LoadedClasses and AllClassesReplyBytes (BigApp only) are the classes
	// loaded after the last stop and the size of the AllClassesWithGeneric
	// reply listing them, header included.
	LoadedClasses        int   `json:"loaded_classes,omitempty"`
	AllClassesReplyBytes int64 `json:"all_classes_reply_bytes,omitempty"`
	// JDI is the JDI the driver attached with: "openjdk", or "eclipse"
	// (vscode-like over Eclipse JDT's JDI).
	JDI string `json:"jdi"`
	// JavaDebugLatencyMS and JavaDebugAsync (vscode-like only) are what
	// its attach measured, as java-debug's does, and decided from it.
	JavaDebugLatencyMS *int `json:"java_debug_latency_ms,omitempty"`
	JavaDebugAsync     bool `json:"java_debug_async,omitempty"`
}

// EclipseJDIJars are Eclipse JDT's JDI and what it loads at run time (OSGi's
// NLS for its messages), from Debian's libeclipse-jdt-debug-java.
var EclipseJDIJars = []string{"/usr/share/java/eclipse-jdt-debug.jar", "/usr/share/java/eclipse-osgi.jar"}

// EclipseJDI returns the class path of Eclipse JDT's JDI, or "" when its
// jars are not installed.
func EclipseJDI() string {
	for _, j := range EclipseJDIJars {
		if _, err := os.Stat(j); err != nil {
			return ""
		}
	}
	return strings.Join(EclipseJDIJars, string(os.PathListSeparator))
}

// DriverResult is a parsed driver run.
type DriverResult struct {
	Stops   []Stop
	Summary Summary
	// Stderr is what the driver JVM wrote to stderr.
	Stderr string
}

// Digests returns the per-stop digests in stop order.
func (r *DriverResult) Digests() []string {
	d := make([]string, len(r.Stops))
	for i, s := range r.Stops {
		d[i] = s.Digest
	}
	return d
}

// Steady returns the stops that are not warm-up.
func (r *DriverResult) Steady() []Stop {
	var out []Stop
	for _, s := range r.Stops {
		if !s.Warmup {
			out = append(out, s)
		}
	}
	return out
}

// ErrDriverOutput is wrapped by errors about malformed driver output.
var ErrDriverOutput = errors.New("javavm: malformed driver output")

// MaxDriverLine bounds one line of driver output (a dumped stop text).
const MaxDriverLine = 16 << 20

// ParseDriverOutput parses the driver's JSON Lines: one object per stop,
// then a summary object with "summary":true. Stops must come in order.
func ParseDriverOutput(r io.Reader) (*DriverResult, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxDriverLine)
	res := &DriverResult{}
	sawSummary := false
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if sawSummary {
			return nil, fmt.Errorf("%w: line %d after the summary", ErrDriverOutput, n)
		}
		var probe struct {
			Summary bool `json:"summary"`
		}
		if err := json.Unmarshal(line, &probe); err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrDriverOutput, n, err)
		}
		if probe.Summary {
			if err := json.Unmarshal(line, &res.Summary); err != nil {
				return nil, fmt.Errorf("%w: line %d: %v", ErrDriverOutput, n, err)
			}
			sawSummary = true
			continue
		}
		var s Stop
		if err := json.Unmarshal(line, &s); err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrDriverOutput, n, err)
		}
		if s.Index != len(res.Stops) {
			return nil, fmt.Errorf("%w: line %d: stop %d, want %d", ErrDriverOutput, n, s.Index, len(res.Stops))
		}
		if len(s.Digest) != 64 {
			return nil, fmt.Errorf("%w: line %d: digest %q", ErrDriverOutput, n, s.Digest)
		}
		res.Stops = append(res.Stops, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDriverOutput, err)
	}
	if !sawSummary {
		return nil, fmt.Errorf("%w: no summary line (driver died?)", ErrDriverOutput)
	}
	return res, nil
}

// DriverArgs returns the java command line (without "java") that runs the
// driver for opts; RunDriver uses it, and it is handy for running the driver
// by hand.
func DriverArgs(b *Build, opts DriverOptions) ([]string, error) {
	host, port, err := net.SplitHostPort(opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("javavm: driver address %q: %w", opts.Addr, err)
	}
	if opts.Profile == "" {
		opts.Profile = ProfileIdeaLike
	}
	if opts.Debuggee == "" {
		opts.Debuggee = Deep
	}
	line, err := BreakpointLine(opts.Debuggee)
	if err != nil {
		return nil, err
	}
	// The JVM's own warnings ("[0.5s][warning][os,thread] ...") go to
	// stdout by default, into the driver's JSON Lines: send them to stderr.
	args := append([]string{"-XX:+UseSerialGC", "-Xlog:all=warning:stderr"}, opts.JVMArgs...)
	cp := b.Classes
	if opts.Profile == ProfileVSCodeLike {
		if e := EclipseJDI(); e != "" {
			cp += string(os.PathListSeparator) + e
		}
	}
	args = append(args, "-cp", cp, "Driver",
		"--host", host, "--port", port,
		"--profile", opts.Profile,
		"--debuggee", opts.Debuggee,
		"--bp-line", strconv.Itoa(line),
		"--steps", strconv.Itoa(opts.Steps),
		"--warmup", strconv.Itoa(opts.Warmup),
		"--hotswap-dir", b.HotSwap)
	if opts.Threads > 1 {
		args = append(args, "--threads", strconv.Itoa(opts.Threads))
	}
	if opts.Breakpoints > 1 {
		extra, err := ExtraBreakpoints(opts.Debuggee)
		if err != nil {
			return nil, err
		}
		if len(extra) < opts.Breakpoints-1 {
			return nil, fmt.Errorf("%w: %s has %d breakpoints, %d asked", ErrNoBreakpoint, opts.Debuggee, len(extra)+1, opts.Breakpoints)
		}
		args = append(args, "--breakpoints", strconv.Itoa(opts.Breakpoints), "--bp-extra", strings.Join(extra[:opts.Breakpoints-1], ","))
	}
	if opts.StepInto {
		args = append(args, "--step", "into")
	}
	if opts.Dump {
		args = append(args, "--dump")
	}
	if opts.AfterFirstStop != nil {
		args = append(args, "--hold-first-stop")
	}
	return args, nil
}

// RunDriver runs the JDI workload driver against opts.Addr and returns its
// parsed per-stop results. The debuggee must be the one opts.Debuggee
// names, suspended at start or running. The driver JVM is killed if ctx is
// cancelled.
func RunDriver(ctx context.Context, b *Build, opts DriverOptions) (*DriverResult, error) {
	args, err := DriverArgs(b, opts)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, "java", args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	onStop := opts.OnStop
	if opts.AfterFirstStop != nil {
		// The driver holds after stop 0 until its stdin ends.
		release, err := cmd.StdinPipe()
		if err != nil {
			return nil, fmt.Errorf("javavm: driver: %w", err)
		}
		defer release.Close()
		onStop = func(s Stop) {
			if opts.OnStop != nil {
				opts.OnStop(s)
			}
			if s.Index == 0 {
				opts.AfterFirstStop()
				release.Close()
			}
		}
	}
	if onStop != nil {
		cmd.Stdout = io.MultiWriter(&stdout, &stopWriter{onStop: onStop})
	}
	cmd.Stderr = &stderr
	runErr := cmd.Run()
	if runErr != nil {
		return nil, fmt.Errorf("javavm: driver: %w\nstderr:\n%s\nstdout tail:\n%s", runErr, stderr.Bytes(), tail(stdout.Bytes(), 2000))
	}
	res, err := ParseDriverOutput(&stdout)
	if err != nil {
		return nil, fmt.Errorf("%w\nstderr:\n%s", err, stderr.Bytes())
	}
	res.Stderr = stderr.String()
	return res, nil
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// stopWriter splits the driver's output into lines and calls onStop for
// each stop line. Lines that are not stops (the summary) are ignored; a
// malformed line is left to ParseDriverOutput to report.
type stopWriter struct {
	onStop  func(Stop)
	partial []byte
}

func (w *stopWriter) Write(p []byte) (int, error) {
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		line := bytes.TrimSpace(w.partial[:i])
		w.partial = w.partial[i+1:]
		var s Stop
		if len(line) > 0 && json.Unmarshal(line, &s) == nil && len(s.Digest) == 64 {
			w.onStop(s)
		}
	}
	if len(w.partial) > MaxDriverLine {
		w.partial = w.partial[:0]
	}
	if len(w.partial) == 0 {
		w.partial = nil // let a large line's buffer go
	}
	return len(p), nil
}
