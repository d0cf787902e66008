// Package audit owns the far end's audit log (jdwpaccel far --audit
// FILE): an append-only JSON Lines file saying who attached when, from
// where, and which state-changing commands each user sent, so that a far
// end shared by several users can be accounted for. It owns the file, the
// line format (Line: the same keys on every line) and the rule that tells
// state-changing commands (StateChanging). Lines are written as they
// happen, in the session's turn: a command's line is in the file (the
// operating system's cache of it; nothing calls fsync) before the
// command goes on to the VM.
//
//	lg, err := audit.Open("/var/log/jdwpaccel-audit.jsonl", log)
//	far := split.NewFar(split.FarConfig{Audit: lg, Hooks: relay.ChainHooks(lg.Hooks, rest)})
package audit

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/lograte"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
	"github.com/jdwpaccel/jdwpaccel/push"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/split"
	"github.com/rs/zerolog"
)

// Events of a Line.
const (
	EventAttach  = "attach"  // a session started: its user, the near end's address
	EventDetach  = "detach"  // the session ended (Detail: why, when it failed)
	EventCommand = "command" // the user's debugger sent a state-changing command (Cmd)
	EventRefused = "refused" // a connection was refused (Detail: why; Suppressed: refusals from its host not recorded since)
)

// Line is one line of the audit log. Every line has every key, so that
// the log reads as a table.
type Line struct {
	Time    time.Time `json:"time"`    // UTC
	Event   string    `json:"event"`   // EventAttach, ...
	Session uint64    `json:"session"` // the far end's session number, as in its log ("session"); 0 for a refusal
	User    string    `json:"user"`    // the user's name; "" for the unnamed token or a far end without tokens
	From    string    `json:"from"`    // the near end's address (host only, for a refusal)
	Cmd     string    `json:"cmd"`     // the command, as "Set.Command", for EventCommand
	Detail  string    `json:"detail"`  // what more there is to say: an event request's kind and policy, a refusal's reason, a failed session's error
	// Suppressed is, for a refusal, how many refusals of the same host
	// were not recorded since its last line: refusals are recorded at the
	// rate they are logged (once per host per minute).
	Suppressed int `json:"suppressed"`
}

// Log is an open audit log. Its methods are safe for concurrent use.
type Log struct {
	log     zerolog.Logger   // for failures to write
	failing *lograte.Limiter // thins those failures' log lines

	mu sync.Mutex // guards f, and the order of lines in it
	f  *os.File
}

// Open opens the audit log at path for appending (O_APPEND: each line is
// one write, after whatever is there, even with another writer), creating
// it with mode 0600. An existing file that its group or others may read
// or write is refused.
func Open(path string, log zerolog.Logger) (*Log, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		f.Close()
		return nil, fmt.Errorf("audit log %s has mode %04o: others can read or change it; chmod 600 %s", path, perm, path)
	}
	return &Log{f: f, log: log, failing: lograte.New(time.Minute, 1)}, nil
}

// Close closes the file; later lines are dropped, with a log line.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	err := l.f.Close()
	l.f = nil
	return err
}

// Write appends ln, with the time now when ln has none. A line that
// cannot be written is logged at error level (at most once a minute): the
// audit is incomplete until someone fixes the disk.
func (l *Log) Write(ln Line) {
	if ln.Time.IsZero() {
		ln.Time = time.Now()
	}
	ln.Time = ln.Time.UTC()
	b, err := json.Marshal(ln)
	if err != nil { // cannot happen: every field marshals
		panic(err)
	}
	b = append(b, '\n')
	l.mu.Lock()
	if l.f == nil {
		err = os.ErrClosed
	} else {
		_, err = l.f.Write(b)
	}
	l.mu.Unlock()
	if err != nil {
		if ok, held, _ := l.failing.Allow(""); ok {
			l.log.Error().Err(err).Int(relay.LogSuppressed, held).Str("event", ln.Event).
				Msg("cannot write the audit log: the audit misses this line (suppressed: failures not logged since the last line)")
		}
	}
}

// Refused records a refused connection from host (split.Auditor).
func (l *Log) Refused(host, reason string, suppressed int) {
	l.Write(Line{Event: EventRefused, From: host, Detail: reason, Suppressed: suppressed})
}

// Hooks are a far end session's hooks that record its attach, detach and
// the state-changing commands of its debugger.
func (l *Log) Hooks(*relay.Session) relay.Hooks {
	return relay.Hooks{Observers: []relay.Observer{(*observer)(l)}}
}

// observer is the Log as a session observer.
type observer Log

// user is the name of the session's user: the far end puts what it
// agreed with the near end (split.Agreed, as relay.LinkInfo) in the session's DebuggerInfo.
func user(s *relay.Session) string {
	return s.DebuggerInfo().User
}

func (o *observer) line(s *relay.Session, event string) Line {
	return Line{Event: event, Session: s.ID, User: user(s), From: s.DebuggerAddr().String()}
}

// SessionStart records the attach.
func (o *observer) SessionStart(s *relay.Session) {
	(*Log)(o).Write(o.line(s, EventAttach))
}

// SessionEnd records the detach, with the error that ended the session.
func (o *observer) SessionEnd(s *relay.Session, err error) {
	ln := o.line(s, EventDetach)
	if err != nil {
		ln.Detail = err.Error()
	}
	(*Log)(o).Write(ln)
}

// Observe records each state-changing command the debugger sent (not the
// proxy's own), as it goes to the VM: a line says the user sent it, not
// that the VM carried it out.
func (o *observer) Observe(s *relay.Session, f *relay.Frame) {
	if f.Dir != relay.ToVM || f.Kind != relay.KindCommand || f.Origin == relay.Synthetic {
		return
	}
	body := f.Packet.Body()
	if !StateChanging(f.Cmd, body) {
		return
	}
	ln := o.line(s, EventCommand)
	ln.Time = f.Time
	ln.Cmd = f.Cmd.String()
	if f.Cmd == jdwp.CmdEventRequestSet {
		ln.Detail = jdwp.EventKind(body[0]).String() + ", suspend " + jdwp.SuspendPolicy(body[1]).String()
	}
	(*Log)(o).Write(ln)
}

// StateChanging reports whether a debugger's command cmd, with body,
// changes the VM's state in a way the audit records. The rule reads the
// effect column of the command table (keyable.Describe):
//
//   - audited: every command whose effect is mutate (set values, pop
//     frames, force early return, stop or interrupt a thread, create
//     objects and strings, set the default stratum, dispose, exit),
//     invoke (InvokeMethod, NewInstance), redefine, or unknown (a command
//     not in the table may change anything);
//   - audited too, though their effect is read-only for the cache: event
//     requests that stop the VM (EventRequest.Set with a suspend policy
//     other than NONE: breakpoints, steps, watchpoints that suspend) and
//     their removal (EventRequest.Clear and ClearAllBreakpoints, whatever
//     the request's policy: the far end does not track requests);
//   - not audited: the split link's own messages (push.SetPush,
//     split.SetLink: the near end's, not the user's), read-only commands, resume and suspend (the ordinary
//     run and stop of any debugger, a line per step), DisposeObjects (the
//     debugger's housekeeping of object IDs), and DDM.Chunk (Android's
//     monitor traffic, several packets a second).
func StateChanging(cmd jdwp.Cmd, body []byte) bool {
	switch cmd {
	case jdwp.CmdEventRequestSet:
		return len(body) >= 2 && jdwp.SuspendPolicy(body[1]) != jdwp.SuspendNone
	case jdwp.CmdEventRequestClear, jdwp.CmdEventRequestClearAllBreakpoints:
		return true
	case jdwp.CmdDDMChunk:
		return false
	}
	if cmd.Set == push.SetPush || cmd.Set == split.SetLink {
		return false
	}
	info, _ := keyable.Describe(cmd)
	switch info.Effect {
	case keyable.EffectReadOnly, keyable.EffectResume, keyable.EffectSuspendVM, keyable.EffectSuspendThread, keyable.EffectDisposeObjects:
		return false
	}
	return true
}
