// Package jdbtest drives the real jdb over stdin against a debuggee of
// bench/javavm, so that tests can compare jdb transcripts of direct and
// proxied sessions. Only tests import it.
package jdbtest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
)

// CommandTimeout bounds the wait for jdb's answer to one command.
var CommandTimeout = 30 * time.Second

// jdbPromptEnd matches a jdb prompt at the very end of its output: "> "
// before a thread is current, "thread[frame] " after.
var jdbPromptEnd = regexp.MustCompile(`(?:^|\n|\] |> )(?:> |[^\s\[\]]+\[\d+\] )$`)

// jdbThreadPrompt matches a thread prompt such as "main[1] "; countPrompts
// checks what precedes it.
var jdbThreadPrompt = regexp.MustCompile(`[^\s\[\]]+\[\d+\] `)

// countPrompts counts jdb prompts in b: every "> ", and every thread prompt
// at the start of a line or right after another prompt (so "arr[0] = 1" or
// a source line "numbers[0] = x;" does not count).
func countPrompts(b []byte) int {
	n := bytes.Count(b, []byte("> "))
	for _, m := range jdbThreadPrompt.FindAllIndex(b, -1) {
		i := m[0]
		if i == 0 || b[i-1] == '\n' || (i >= 2 && (string(b[i-2:i]) == "> " || string(b[i-2:i]) == "] ")) {
			n++
		}
	}
	return n
}

// jdbLeadingPrompt matches prompts at the start of a line (jdb writes its
// prompt and then the next output on the same line).
var jdbLeadingPrompt = regexp.MustCompile(`^(?:> |[^\s\[\]]+\[\d+\] )+`)

// jdbBarePrompt matches a line that is only a prompt whose trailing space
// was lost.
var jdbBarePrompt = regexp.MustCompile(`^(?:>|[^\s\[\]]+\[\d+\])$`)

// jdbEvents are the texts jdb prints for the events a resuming command waits for.
var jdbEvents = []string{
	"Breakpoint hit:", "Step completed:", "Method entered:", "Method exited:",
	"Exception occurred:", "Watchpoint hit:", "The application exited",
}

var (
	jdbObjectID = regexp.MustCompile(`\(id=\d+\)`)
	jdbThreadID = regexp.MustCompile(`(\([\w.$]+\))\d+\b`)
	jdbHexID    = regexp.MustCompile(`\b0x[0-9a-f]+\b`)
)

// isResumeCommand reports whether a jdb command resumes the VM, so that its
// answer is an event rather than the prompt jdb prints straight away.
func isResumeCommand(cmd string) bool {
	f := strings.Fields(cmd)
	if len(f) == 0 {
		return false
	}
	switch f[0] {
	case "run", "cont", "step", "stepi", "next":
		return true
	}
	return false
}

func isExitCommand(cmd string) bool {
	c := strings.TrimSpace(cmd)
	return c == "exit" || c == "quit"
}

// Run drives the real jdb, attached with
// -connect com.sun.jdi.SocketAttach:hostname=H,port=P, through stdin. It
// first waits for the "VM Started" event and a prompt (the VM must have
// been started with suspend=y, as javavm.Start does), then sends each script
// line only once jdb has answered the previous one: for run, cont, step, stepi and
// next, an event ("Breakpoint hit", "Step completed", ...) followed by a
// prompt; for exit/quit, jdb's exit; otherwise a prompt. No sleeps.
//
// It returns the normalised transcript (Normalize): script lines are
// included as "$ cmd", prompts and blank lines are stripped and object IDs
// replaced, so two runs (direct vs through a proxy, or two fresh VMs) can
// be compared for equality. jdb runs with -sourcepath set to the build's
// sources, so it prints the source line at each stop.
func Run(ctx context.Context, b *javavm.Build, addr string, script []string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("jdbtest: jdb address %q: %w", addr, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var args []string
	if b.Source != "" {
		args = append(args, "-sourcepath", b.Source)
	}
	args = append(args, "-connect", "com.sun.jdi.SocketAttach:hostname="+host+",port="+port)
	cmd := exec.CommandContext(ctx, "jdb", args...)
	out := javavm.NewLockedBuffer()
	cmd.Stdout = out
	cmd.Stderr = out
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", fmt.Errorf("jdbtest: jdb: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("jdbtest: starting jdb: %w", err)
	}
	done := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(done)
	}()
	defer func() {
		cancel()
		<-done
	}()

	var transcript bytes.Buffer
	// wait reads jdb's output from off on until cond holds for it, and
	// returns the new offset.
	wait := func(off int, what string, cond func([]byte) bool) (int, error) {
		timer := time.NewTimer(CommandTimeout)
		defer timer.Stop()
		for {
			data, n, changed := out.Snapshot(off)
			if cond(data) {
				transcript.Write(data)
				return n, nil
			}
			select {
			case <-changed:
			case <-done:
				data, n, _ := out.Snapshot(off)
				transcript.Write(data)
				if cond(data) {
					return n, nil
				}
				return n, fmt.Errorf("jdbtest: jdb exited (%v) waiting for %s; transcript:\n%s", waitErr, what, transcript.Bytes())
			case <-ctx.Done():
				return n, ctx.Err()
			case <-timer.C:
				return n, fmt.Errorf("jdbtest: jdb: no %s within %v; output:\n%s%s", what, CommandTimeout, transcript.Bytes(), data)
			}
		}
	}
	// jdb prints one prompt per input line it handles and one per event,
	// from two threads, so the prompt after a resuming command ("> ", or
	// "main[1] " if the event won the race) and the event's own prompt
	// come in either order, and the initial prompt races the VM Started
	// event. Counting prompts leaves none stray to end a later wait early.
	endsWithPromptAfter := func(b []byte, marker string) bool {
		i := bytes.Index(b, []byte(marker))
		return i >= 0 && jdbPromptEnd.Match(b[i:])
	}
	started := func(b []byte) bool {
		_, rest, ok := bytes.Cut(b, []byte("Initializing jdb ..."))
		return ok && countPrompts(rest) >= 2 && endsWithPromptAfter(rest, "VM Started")
	}
	resumed := func(b []byte) bool {
		if countPrompts(b) < 2 {
			return false
		}
		for _, ev := range jdbEvents {
			if endsWithPromptAfter(b, ev) {
				return true
			}
		}
		return false
	}
	answered := func(b []byte) bool { return countPrompts(b) >= 1 && jdbPromptEnd.Match(b) }

	off, err := wait(0, "VM Started", started)
	if err != nil {
		return "", err
	}
	for _, line := range script {
		fmt.Fprintf(&transcript, "\n$ %s\n", line)
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			return "", fmt.Errorf("jdbtest: jdb: writing %q: %w", line, err)
		}
		switch {
		case isExitCommand(line):
			_ = stdin.Close()
			off, err = wait(off, "exit", func([]byte) bool {
				select {
				case <-done:
					return true
				default:
					return false
				}
			})
		case isResumeCommand(line):
			off, err = wait(off, "event after "+line, resumed)
		default:
			off, err = wait(off, "prompt after "+line, answered)
		}
		if err != nil {
			return "", err
		}
	}
	return Normalize(transcript.String()), nil
}

// Normalize makes a jdb transcript comparable across runs: it strips
// prompts, blank lines and trailing spaces, and replaces object and thread
// IDs ("(id=123)", "(java.lang.Thread)45", "0x1a") with "#". jdb prints its
// bare "> " prompt from one thread while another prints an event, so it can
// land mid-line: every "> " is removed, wherever it is (also from source
// lines such as "a > b", identically in every run).
func Normalize(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		// Each removal shortens the line, so this ends; repeating makes
		// Normalize idempotent.
		for {
			prev := line
			line = strings.TrimRight(line, " \t\r")
			line = jdbLeadingPrompt.ReplaceAllString(line, "")
			line = strings.ReplaceAll(line, "> ", "")
			line = jdbBarePrompt.ReplaceAllString(line, "")
			if line == prev {
				break
			}
		}
		if line == "" {
			continue
		}
		line = jdbObjectID.ReplaceAllString(line, "(id=#)")
		line = jdbThreadID.ReplaceAllString(line, "${1}#")
		line = jdbHexID.ReplaceAllString(line, "0x#")
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}
