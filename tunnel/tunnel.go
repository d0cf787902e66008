// Package tunnel owns split mode's tunnel on the near end (jdwpaccel proxy
// --far-tunnel): a command such as kubectl port-forward or ssh -N -L that
// opens a local port leading to the far end. It runs the command, waits
// until the far end answers through its port, checks that it still does,
// restarts the command with backoff when it exits or stops leading
// anywhere, and logs its output, thinned. Debugger sessions wait for it
// (Wait) before they dial the far end.
//
//	t := tunnel.New(tunnel.Config{Argv: argv, Addr: "127.0.0.1:8720", Check: probe, Logger: log})
//	go t.Run(ctx)
//	t.Wait(ctx) // then dial 127.0.0.1:8720
package tunnel

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"sync"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/lograte"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/rs/zerolog"
)

// Log field names of this package.
const (
	LogCommand = "command" // the tunnel command's first word
	LogPID     = "pid"     // its process ID
	LogStream  = "stream"  // stdout or stderr, for a line of its output
	LogOutput  = "output"  // that line
	LogBackoff = "backoff" // how long until the next start
	LogStart   = "start"   // how many times the command was started, this one included
)

// Defaults of Config's durations.
const (
	DefaultReadyTimeout  = 30 * time.Second
	DefaultCheckEvery    = 15 * time.Second
	DefaultCheckFailures = 2
	DefaultMinBackoff    = 500 * time.Millisecond
	DefaultMaxBackoff    = 30 * time.Second
	DefaultGrace         = 3 * time.Second
)

// outputEvery is how often one distinct line of the command's output is
// logged at most (kubectl port-forward says "Handling connection for
// 8720" at each connection), and outputLines how many distinct lines are
// told apart (more share one key).
const (
	outputEvery = time.Minute
	outputLines = 64
	maxLine     = 512
)

// Config configures a Tunnel.
type Config struct {
	// Argv is the command and its arguments (Split).
	Argv []string
	// Addr is the local address the command opens, where the far end is
	// reached (proxy --far).
	Addr string
	// Check, when not nil, tells whether the far end answers through the
	// tunnel (a split probe): the tunnel is up once it succeeds, and the
	// command is restarted after CheckFailures failures in a row, checked
	// every CheckEvery. It must return nil when the far end answered,
	// even to refuse (a refusal is not the tunnel's fault). Without it,
	// the tunnel is up once Addr accepts a TCP connection.
	Check func(ctx context.Context) error
	// ReadyTimeout bounds how long a started command may take to be up
	// before it is restarted.
	ReadyTimeout  time.Duration
	CheckEvery    time.Duration
	CheckFailures int
	// MinBackoff and MaxBackoff bound the wait before a restart: it
	// doubles each time the command ends without having been up, and is
	// MinBackoff again after a command that was.
	MinBackoff, MaxBackoff time.Duration
	// Grace is how long a command has to exit after SIGTERM (to its
	// process group) before it is killed.
	Grace   time.Duration
	Logger  zerolog.Logger
	Metrics *Metrics
}

// Tunnel is a tunnel command kept running. Its methods are safe for
// concurrent use.
type Tunnel struct {
	cfg    Config
	output *lograte.Limiter // thins the command's output lines

	mu     sync.Mutex // guards up and change
	up     bool
	change chan struct{} // closed, and replaced, when up changes
}

// New returns a Tunnel for cfg, with defaults for its zero durations.
func New(cfg Config) *Tunnel {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.ReadyTimeout, DefaultReadyTimeout)
	def(&cfg.CheckEvery, DefaultCheckEvery)
	def(&cfg.MinBackoff, DefaultMinBackoff)
	def(&cfg.MaxBackoff, DefaultMaxBackoff)
	def(&cfg.Grace, DefaultGrace)
	if cfg.CheckFailures <= 0 {
		cfg.CheckFailures = DefaultCheckFailures
	}
	cfg.Logger = cfg.Logger.With().Str(LogCommand, cfg.Argv[0]).Logger()
	return &Tunnel{cfg: cfg, output: lograte.New(outputEvery, outputLines), change: make(chan struct{})}
}

// Up says whether the tunnel is up now.
func (t *Tunnel) Up() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.up
}

// Wait returns nil once the tunnel is up, or ctx's error.
func (t *Tunnel) Wait(ctx context.Context) error {
	for {
		t.mu.Lock()
		up, ch := t.up, t.change
		t.mu.Unlock()
		if up {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (t *Tunnel) setUp(v bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.up != v {
		t.up = v
		t.cfg.Metrics.setUp(v)
		close(t.change)
		t.change = make(chan struct{})
	}
}

// Run runs the command, and again each time it ends, until ctx is done;
// then it stops the command and returns.
func (t *Tunnel) Run(ctx context.Context) {
	backoff := t.cfg.MinBackoff
	for start := 1; ; start++ {
		wasUp := t.runOnce(ctx, start)
		if ctx.Err() != nil {
			return
		}
		if wasUp {
			backoff = t.cfg.MinBackoff
		}
		t.cfg.Logger.Warn().Dur(LogBackoff, backoff).Int(LogStart, start).Msg("restarting the tunnel command")
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return
		}
		if !wasUp {
			backoff = min(2*backoff, t.cfg.MaxBackoff)
		}
	}
}

// runOnce runs the command once, until it exits, it is not up within
// ReadyTimeout, the far end stops answering through it, or ctx is done.
// It reports whether the command was up.
func (t *Tunnel) runOnce(ctx context.Context, start int) (wasUp bool) {
	cmd := exec.Command(t.cfg.Argv[0], t.cfg.Argv[1:]...)
	ownGroup(cmd)
	out, errOut := t.lines("stdout"), t.lines("stderr")
	cmd.Stdout, cmd.Stderr = out, errOut
	// A process that inherited the output pipes and outlived the command
	// must not hold Wait.
	cmd.WaitDelay = t.cfg.Grace
	log := t.cfg.Logger.With().Int(LogStart, start).Logger()
	if err := cmd.Start(); err != nil {
		log.Error().Err(err).Msg("cannot start the tunnel command")
		return false
	}
	t.cfg.Metrics.started()
	log = log.With().Int(LogPID, cmd.Process.Pid).Logger()
	log.Info().Strs("argv", t.cfg.Argv).Msg("tunnel command started")
	exited := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		out.flush()
		errOut.flush()
		exited <- err
	}()
	stop := func(reason, why string) {
		t.cfg.Metrics.ended(reason)
		t.setUp(false)
		signal(cmd, false)
		select {
		case <-exited:
		case <-time.After(t.cfg.Grace):
			signal(cmd, true)
			<-exited
		}
		log.Info().Msg("tunnel command stopped: " + why)
	}
	defer t.setUp(false)

	// Wait until it is up: poll, every 100 ms at first, every 2 s at most.
	ready := time.NewTimer(t.cfg.ReadyTimeout)
	defer ready.Stop()
	for poll := 100 * time.Millisecond; ; poll = min(2*poll, 2*time.Second) {
		err := t.check(ctx)
		if err == nil {
			break
		}
		select {
		case err := <-exited:
			t.cfg.Metrics.ended(EndExited)
			log.Warn().Err(err).Msg("the tunnel command exited before the far end answered through it")
			return false
		case <-ready.C:
			stop(EndNotUp, fmt.Sprintf("the far end did not answer through it within %v (last: %v)", t.cfg.ReadyTimeout, err))
			return false
		case <-ctx.Done():
			stop(EndStopped, "shutting down")
			return false
		case <-time.After(poll):
		}
	}
	t.setUp(true)
	log.Info().Str("addr", t.cfg.Addr).Msg("tunnel up: the far end answers through it")

	every := time.NewTicker(t.cfg.CheckEvery)
	defer every.Stop()
	failures := 0
	for {
		select {
		case err := <-exited:
			t.setUp(false) // before the line: whoever reads it sees the tunnel down
			t.cfg.Metrics.ended(EndExited)
			log.Warn().Err(err).Msg("the tunnel command exited")
			return true
		case <-ctx.Done():
			stop(EndStopped, "shutting down")
			return true
		case <-every.C:
			err := t.check(ctx)
			if err == nil {
				failures = 0
				continue
			}
			failures++
			log.Warn().Err(err).Int("failures", failures).Msg("the far end does not answer through the tunnel")
			if failures >= t.cfg.CheckFailures {
				stop(EndSilent, fmt.Sprintf("the far end did not answer through it %d times in a row", failures))
				return true
			}
		}
	}
}

// check tells whether the far end answers through the tunnel (Check), or
// without Check whether its port accepts.
func (t *Tunnel) check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, t.cfg.CheckEvery)
	defer cancel()
	if t.cfg.Check != nil {
		return t.cfg.Check(ctx)
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", t.cfg.Addr)
	if err != nil {
		return err
	}
	return c.Close()
}

// lines is a writer of the command's output stream that logs each line,
// thinned: one distinct line at most once per outputEvery.
func (t *Tunnel) lines(stream string) *lineLog {
	return &lineLog{t: t, stream: stream}
}

// lineLog logs what the command writes to one of its streams, a line at
// a time. Written by the one goroutine exec copies the stream with, then
// flushed after it ended.
type lineLog struct {
	t      *Tunnel
	stream string
	buf    []byte // a line not yet ended
}

func (l *lineLog) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := 0
		for i < len(p) && p[i] != '\n' {
			i++
		}
		if len(l.buf) < maxLine {
			l.buf = append(l.buf, p[:min(i, maxLine-len(l.buf))]...)
		}
		if i == len(p) {
			break
		}
		l.emit()
		p = p[i+1:]
	}
	return n, nil
}

func (l *lineLog) flush() {
	if len(l.buf) > 0 {
		l.emit()
	}
}

// emit logs the line in buf (stdout at info, stderr at warn) unless the
// same line was logged less than outputEvery ago.
func (l *lineLog) emit() {
	line := string(l.buf)
	l.buf = l.buf[:0]
	ok, held, _ := l.t.output.Allow(l.stream + "\x00" + line)
	if !ok {
		return
	}
	ev := l.t.cfg.Logger.Info()
	if l.stream == "stderr" {
		ev = l.t.cfg.Logger.Warn()
	}
	ev.Str(LogStream, l.stream).Str(LogOutput, line).Int(relay.LogSuppressed, held).
		Msg("the tunnel command said (suppressed: like lines not logged since)")
}
