// Package javadebug runs Microsoft's java-debug (the Debug Adapter Protocol
// server behind VS Code's "Debugger for Java") as a measurement peer of the
// bench: it starts a java-debug built by build.sh beside this file (outside
// the repository: nothing of java-debug is kept here), attaches it to a
// debuggee as VS Code does, and at every stop asks what VS Code's UI asks
// (threads; a stack trace of 20 frames; the top frame's scopes; its
// variables; one level of each local that has children, `this` included),
// then steps over with `next`. Its results have the JDI driver's form
// (javavm.DriverResult), so bench cells compare it like any workload.
package javadebug

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/internal/stat"
)

// Profile is the workload profile name of the java-debug peer
// ("Deep/java-debug").
const Profile = "java-debug"

// DirEnv names the environment variable that, when set, gives the built
// peer's directory (build.sh's OUT) to the bench and the tests.
const DirEnv = "JDWPACCEL_JAVA_DEBUG"

// Peer is a java-debug build made by build.sh.
type Peer struct {
	Dir       string
	Version   string
	Main      string
	Classpath string
}

// ErrNoPeer is returned by Load for a directory that holds no build.
var ErrNoPeer = errors.New("javadebug: no java-debug build (make one with bench/javadebug/build.sh)")

// Load reads the build in dir (its peer.properties).
func Load(dir string) (*Peer, error) {
	data, err := os.ReadFile(filepath.Join(dir, "peer.properties"))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoPeer, err)
	}
	p := &Peer{Dir: dir}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok {
			continue
		}
		switch k {
		case "version":
			p.Version = v
		case "main":
			p.Main = v
		case "classpath":
			p.Classpath = v
		}
	}
	if p.Main == "" || p.Classpath == "" {
		return nil, fmt.Errorf("%w: %s/peer.properties lacks main or classpath", ErrNoPeer, dir)
	}
	return p, nil
}

// Options configures Run.
type Options struct {
	// Addr is the JDWP address to attach to, "host:port".
	Addr string
	// Debuggee is the debuggee main class (default Deep); the breakpoint is
	// its "// @breakpoint" line.
	Debuggee string
	// Steps is the number of steps after the breakpoint stop; Warmup the
	// number of first stops flagged as warm-up.
	Steps, Warmup int
	// Settings replaces VS Code's default java.debug.settings (JSON, as the
	// extension sends them); empty keeps the defaults (jdwp.async "auto").
	Settings string
	// Dump keeps each stop's canonical text in Stop.Text.
	Dump bool
	// AfterFirstStop, when set, is called after the breakpoint stop's work,
	// before the first step.
	AfterFirstStop func()
}

// Result is one java-debug session.
type Result struct {
	javavm.DriverResult
	// LatencyMS is what java-debug measured at attach (the time of its
	// VM_DEATH EventRequest.Set), -1 if its log did not say.
	LatencyMS int
	// Async is java-debug's decision from it under jdwp.async "auto": on
	// above 15 ms. Above 10 ms it also leaves out the Variables view's
	// toString() and logical structure (size(), toArray()).
	Async bool
}

var latencyLine = regexp.MustCompile(`Network latency for JDWP command: (\d+)ms`)

// Run starts java-debug, attaches it to opts.Addr, and drives it to the
// breakpoint and then opts.Steps steps. The adapter is killed when ctx ends.
func (p *Peer) Run(ctx context.Context, b *javavm.Build, opts Options) (*Result, error) {
	if opts.Debuggee == "" {
		opts.Debuggee = javavm.Deep
	}
	line, err := javavm.BreakpointLine(opts.Debuggee)
	if err != nil {
		return nil, err
	}
	host, port, err := splitAddr(opts.Addr)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	args := []string{"-XX:+UseSerialGC", "-Xlog:all=warning:stderr", "-cp", p.Classpath, p.Main}
	if opts.Settings != "" {
		args = append(args, opts.Settings)
	}
	cmd := exec.CommandContext(ctx, "java", args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr := javavm.NewLockedBuffer()
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("javadebug: starting java-debug: %w", err)
	}
	c := newClient(stdin)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.run(stdout)
	}()
	s := &session{c: c, opts: opts, src: filepath.Join(b.Source, opts.Debuggee+".java"), line: line,
		sourceDir: b.Source, host: host, port: port}
	res, runErr := s.drive(ctx)
	stdin.Close()
	cancel()
	<-done
	_ = cmd.Wait()
	if runErr != nil {
		return nil, fmt.Errorf("%w\njava-debug's stderr:\n%s", runErr, tailString(string(stderr.Bytes()), 4000))
	}
	res.Stderr = string(stderr.Bytes())
	res.LatencyMS = -1
	if m := latencyLine.FindStringSubmatch(res.Stderr); m != nil {
		res.LatencyMS, _ = strconv.Atoi(m[1])
	}
	res.Async = asyncOf(opts.Settings, res.LatencyMS)
	return res, nil
}

// asyncOf is java-debug's async decision (DebugAdapterContext.asyncJDWP)
// for the settings and the latency it measured.
func asyncOf(settings string, latencyMS int) bool {
	mode := "auto"
	if settings != "" {
		var s struct {
			AsyncJDWP string `json:"asyncJDWP"`
		}
		if json.Unmarshal([]byte(settings), &s) == nil && s.AsyncJDWP != "" {
			mode = s.AsyncJDWP
		}
	}
	return mode == "on" || (mode == "auto" && latencyMS > 15)
}

// splitAddr is the host and port of a JDWP address ("host:port", "[::1]:port").
func splitAddr(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("javadebug: address %q: %w", addr, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return "", 0, fmt.Errorf("javadebug: address %q: %w", addr, err)
	}
	return host, port, nil
}

// session is one DAP conversation, as VS Code's UI holds it.
type session struct {
	c         *client
	opts      Options
	src       string
	sourceDir string
	line      int
	host      string
	port      int

	// threadFetch is VS Code's fetch of the threads 100 ms after a thread
	// started (once per 100 ms, not pushed back by later starts).
	fetchMu     sync.Mutex // guards fetchTimer
	fetchTimer  *time.Timer
	fetchesDone sync.WaitGroup
}

// Wire types of the DAP bodies the client reads.
type (
	dapThread struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	}
	dapSource struct {
		Name string `json:"name"`
		Path string `json:"path"`
	}
	dapFrame struct {
		ID     int64      `json:"id"`
		Name   string     `json:"name"`
		Line   int        `json:"line"`
		Column int        `json:"column"`
		Source *dapSource `json:"source"`
	}
	dapScope struct {
		Name               string `json:"name"`
		VariablesReference int64  `json:"variablesReference"`
	}
	dapVariable struct {
		Name               string `json:"name"`
		Value              string `json:"value"`
		Type               string `json:"type"`
		VariablesReference int64  `json:"variablesReference"`
		NamedVariables     int    `json:"namedVariables"`
		IndexedVariables   int    `json:"indexedVariables"`
		PresentationHint   *struct {
			Lazy bool `json:"lazy"`
		} `json:"presentationHint"`
	}
	stoppedBody struct {
		Reason   string `json:"reason"`
		ThreadID int64  `json:"threadId"`
	}
	threadBody struct {
		Reason   string `json:"reason"`
		ThreadID int64  `json:"threadId"`
	}
)

func (s *session) drive(ctx context.Context) (*Result, error) {
	c := s.c
	// The first stop is timed from the attach request: VS Code's adapter
	// runs in the language server before a session starts, and the
	// initialize exchange here waits for this one's JVM to start.
	if err := c.call("initialize", map[string]any{
		"clientID": "vscode", "clientName": "Visual Studio Code", "adapterID": "java", "pathFormat": "path",
		"linesStartAt1": true, "columnsStartAt1": true, "supportsVariableType": true, "supportsVariablePaging": true,
		"supportsRunInTerminalRequest": true, "locale": "en", "supportsProgressReporting": true,
		"supportsInvalidatedEvent": true, "supportsMemoryReferences": true, "supportsArgsCanBeInterpretedByShell": true,
		"supportsMemoryEvent": true, "supportsStartDebuggingRequest": true,
	}, nil); err != nil {
		return nil, err
	}
	tAttach := time.Now()
	attach, err := c.send("attach", map[string]any{
		"type": "java", "name": "Attach", "request": "attach", "hostName": s.host, "port": s.port,
		"timeout": 30000, "sourcePaths": []string{s.sourceDir},
	})
	if err != nil {
		return nil, err
	}
	if err := c.wait("attach", attach, nil); err != nil {
		return nil, err
	}
	if _, err := s.awaitEvent(ctx, "initialized"); err != nil {
		return nil, err
	}
	if err := c.call("setBreakpoints", map[string]any{
		"source":      map[string]any{"name": filepath.Base(s.src), "path": s.src},
		"lines":       []int{s.line},
		"breakpoints": []map[string]any{{"line": s.line}},
	}, nil); err != nil {
		return nil, err
	}
	if err := c.call("setExceptionBreakpoints", map[string]any{"filters": []string{}}, nil); err != nil {
		return nil, err
	}
	tRun := time.Now()
	if err := c.call("configurationDone", map[string]any{}, nil); err != nil {
		return nil, err
	}
	ev, err := s.awaitEvent(ctx, "stopped")
	if err != nil {
		return nil, err
	}
	vmRun := time.Since(tRun)
	res := &Result{}
	var t0 time.Time
	for stop := 0; stop <= s.opts.Steps; stop++ {
		if stop > 0 {
			t0 = time.Now()
			var st stoppedBody
			_ = json.Unmarshal(ev.Body, &st)
			if err := c.call("next", map[string]any{"threadId": st.ThreadID}, nil); err != nil {
				return nil, err
			}
			if ev, err = s.awaitEvent(ctx, "stopped"); err != nil {
				return nil, err
			}
		}
		var st stoppedBody
		if err := json.Unmarshal(ev.Body, &st); err != nil {
			return nil, fmt.Errorf("%w: stopped event: %v", ErrMessage, err)
		}
		t1 := time.Now()
		var text strings.Builder
		top, err := s.stopWork(st.ThreadID, &text)
		if err != nil {
			return nil, fmt.Errorf("stop %d: %w", stop, err)
		}
		t2 := time.Now()
		if stop == 0 {
			res.Summary.FirstStopMS = ms(t2.Sub(tAttach))
			res.Summary.VMRunMS = ms(vmRun)
			t0 = tRun
		}
		sum := sha256.Sum256([]byte(text.String()))
		rec := javavm.Stop{Index: stop, Warmup: stop < s.opts.Warmup, MS: ms(t2.Sub(t0)), BurstMS: ms(t2.Sub(t1)),
			Top: top, Digest: hex.EncodeToString(sum[:])}
		if s.opts.Dump {
			rec.Text = text.String()
		}
		res.Stops = append(res.Stops, rec)
		if stop == 0 && s.opts.AfterFirstStop != nil {
			s.opts.AfterFirstStop()
		}
	}
	var steady []float64
	var burst []float64
	for _, st := range res.Stops {
		if !st.Warmup {
			steady = append(steady, st.MS)
			burst = append(burst, st.BurstMS)
		}
	}
	res.Summary.Stops = len(res.Stops)
	res.Summary.Measured = len(steady)
	res.Summary.MedianMS = stat.Median(steady)
	res.Summary.MedianBurstMS = stat.Median(burst)
	s.stopFetches()
	_ = c.call("disconnect", map[string]any{"restart": false, "terminateDebuggee": false}, nil)
	return res, nil
}

// stopWork asks what VS Code's UI asks at a stop and writes what it saw,
// without IDs, to out; it returns the top frame as "name:line".
func (s *session) stopWork(threadID int64, out *strings.Builder) (string, error) {
	c := s.c
	var threads struct {
		Threads []dapThread `json:"threads"`
	}
	if err := c.call("threads", nil, &threads); err != nil {
		return "", err
	}
	names := make([]string, 0, len(threads.Threads))
	for _, t := range threads.Threads {
		names = append(names, t.Name)
	}
	sort.Strings(names)
	fmt.Fprintf(out, "threads %d\n", len(names))
	for _, n := range names {
		fmt.Fprintf(out, "thread %s\n", n)
	}
	var trace struct {
		StackFrames []dapFrame `json:"stackFrames"`
		TotalFrames int        `json:"totalFrames"`
	}
	if err := c.call("stackTrace", map[string]any{"threadId": threadID, "startFrame": 0, "levels": 20}, &trace); err != nil {
		return "", err
	}
	if len(trace.StackFrames) == 0 {
		return "", errors.New("javadebug: no stack frames at a stop")
	}
	fmt.Fprintf(out, "frames %d\n", trace.TotalFrames)
	for _, f := range trace.StackFrames {
		src := "?"
		if f.Source != nil {
			src = f.Source.Name
		}
		fmt.Fprintf(out, "frame %s:%d %s\n", f.Name, f.Line, src)
	}
	topFrame := trace.StackFrames[0]
	var scopes struct {
		Scopes []dapScope `json:"scopes"`
	}
	if err := c.call("scopes", map[string]any{"frameId": topFrame.ID}, &scopes); err != nil {
		return "", err
	}
	for _, sc := range scopes.Scopes {
		fmt.Fprintf(out, "scope %s\n", sc.Name)
		vars, err := s.variables(sc.VariablesReference, 0)
		if err != nil {
			return "", err
		}
		for _, v := range vars {
			fmt.Fprintf(out, "var %s: %s = %s%s\n", v.Name, v.Type, scrubIDs(v.Value), v.hint())
		}
		// One level of each that has children: what a user sees who
		// opens the objects of the Variables view.
		for _, v := range vars {
			if v.VariablesReference <= 0 {
				continue
			}
			kids, err := s.variables(v.VariablesReference, v.IndexedVariables)
			if err != nil {
				return "", err
			}
			for _, k := range kids {
				fmt.Fprintf(out, "var %s.%s: %s = %s%s\n", v.Name, k.Name, k.Type, scrubIDs(k.Value), k.hint())
			}
		}
	}
	return fmt.Sprintf("%s:%d", topFrame.Name, topFrame.Line), nil
}

// hint is how the Variables view marks an entry beyond its value: a value
// shown on demand (lazy: a toString() override or a collection's details).
func (v dapVariable) hint() string {
	if v.PresentationHint != nil && v.PresentationHint.Lazy {
		return " (lazy)"
	}
	return ""
}

// variables asks for a container's children as VS Code's Variables view
// does: always with filter "indexed" and, for an array or a collection, the
// count of its indexed children (up to VS Code's chunk of 100 a request).
func (s *session) variables(ref int64, indexed int) ([]dapVariable, error) {
	var body struct {
		Variables []dapVariable `json:"variables"`
	}
	args := map[string]any{"variablesReference": ref, "filter": "indexed"}
	if indexed > 0 {
		args["count"] = min(indexed, 100)
	}
	if err := s.c.call("variables", args, &body); err != nil {
		return nil, err
	}
	return body.Variables, nil
}

// awaitEvent waits for the named event, handling the others as VS Code
// does: a thread start schedules a threads request 100 ms later.
func (s *session) awaitEvent(ctx context.Context, name string) (*message, error) {
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case m, ok := <-s.c.events:
			if !ok {
				return nil, fmt.Errorf("javadebug: the adapter ended while waiting for %q", name)
			}
			if m.Event == name {
				return m, nil
			}
			switch m.Event {
			case "thread":
				var tb threadBody
				if json.Unmarshal(m.Body, &tb) == nil && tb.Reason == "started" {
					s.scheduleThreadFetch()
				}
			case "terminated", "exited":
				return nil, fmt.Errorf("javadebug: the session ended (%s) while waiting for %q", m.Event, name)
			}
		}
	}
}

func (s *session) scheduleThreadFetch() {
	s.fetchMu.Lock()
	defer s.fetchMu.Unlock()
	if s.fetchTimer != nil {
		return
	}
	s.fetchesDone.Add(1)
	s.fetchTimer = time.AfterFunc(100*time.Millisecond, func() {
		defer s.fetchesDone.Done()
		s.fetchMu.Lock()
		s.fetchTimer = nil
		s.fetchMu.Unlock()
		_ = s.c.call("threads", nil, nil)
	})
}

// stopFetches cancels a scheduled threads request and waits for one under way.
func (s *session) stopFetches() {
	s.fetchMu.Lock()
	if s.fetchTimer != nil && s.fetchTimer.Stop() {
		s.fetchTimer = nil
		s.fetchesDone.Done()
	}
	s.fetchMu.Unlock()
	s.fetchesDone.Wait()
}

// objectID is java-debug's rendering of an object's JDWP ID ("Payload@17"
// and "(id=17)"), which differs from VM to VM and proxy to proxy.
var objectID = regexp.MustCompile(`(@|id=)[0-9a-fx]+`)

func scrubIDs(v string) string { return objectID.ReplaceAllString(v, "${1}ID") }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func tailString(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
