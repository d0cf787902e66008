package journal

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/stat"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// This file computes the critical path of every step of a journal: why a
// step costs what it costs.
//
// A step is the debugger's view of the program from one stop to the next:
// it starts at a resume command (VirtualMachine.Resume or
// ThreadReference.Resume), runs to the stop (jdwp.Composite.Stop: a
// suspending event at a location — breakpoint, single step, method entry
// or exit, exception, watchpoint, monitor event), then covers everything
// the debugger asked at that stop, and ends where the next resume command
// starts the next step (or where the session ends). A suspension that is
// not a stop (a CLASS_PREPARE or THREAD_START the debugger asked to be
// suspended at, to set a deferred breakpoint) does not end the step: the
// debugger's work there and its resume belong to the step, as the user
// waits through them. This is the live page's definition too (package web,
// SessionTracker), so both count the same steps. Step 0 is the attach: from
// the session's start to the first resume.
//
// A wait is an interval of a step during which the debugger waited for a
// VM round trip:
//
//   - a forwarded command: from the command to its reply;
//   - a belay (a command the proxy held for its own speculative command in
//     flight): from when the proxy sent that speculative command to the
//     reply, since that is the VM round trip the debugger ended up waiting
//     on; a belay whose speculative command left early overlaps the waits
//     before it and costs nothing more;
//   - a resume: from the resume command to the first suspending event
//     after it (the stop, or a suspension on the way to it), or its reply
//     if later: the round trip that runs the program;
//   - cache hits and written-behind commands (answered at once, sent to the
//     VM as the proxy's own) wait for nothing; a written-behind resume
//     still waits for its stop event.
//
// The critical path of a step is the longest chain of waits, each starting
// at or after the end of the one before (no two overlap): the serial round
// trips of the step. A command sent while another was outstanding (a
// pipelined client's second thread, or a speculative command already in
// flight) overlaps it and adds nothing, so the path counts the chain of
// waits, not the number of commands. Each wait on a link takes at least
// one round trip of the link, so steps cost at least RoundTrips × RTT; for
// a client that spends its time waiting, they cost about that plus the
// local work. The path is found greedily, the wait that ends first first,
// which gives the longest such chain; the commands on it are reported as
// the causes of the round trips.

// Link is one serial round trip on a step's critical path.
type Link struct {
	// T is when the wait began (ns since the journal's start); Offset is
	// the same since the step's start.
	T      int64         `json:"t"`
	Offset time.Duration `json:"offset_ns"`
	// Wait is the wait's length.
	Wait time.Duration `json:"wait_ns"`
	// Served is how the command was served: forwarded, belay, or resume
	// (the resume → stop event trip).
	Served string `json:"served"`
	// Name is the command that caused the round trip; for the resume,
	// "VirtualMachine.Resume → SINGLE_STEP".
	Name string `json:"name"`
	// ID is the debugger's packet ID of the command.
	ID uint32 `json:"id"`
}

// Step is one step of a session.
type Step struct {
	// Index is 0 for the attach (session start to the first resume), then
	// 1, 2, … for each resume.
	Index int `json:"step"`
	// Start and End bound the step (ns since the journal's start).
	Start    int64         `json:"start"`
	End      int64         `json:"end"`
	Duration time.Duration `json:"duration_ns"`
	// Stop is the suspending event's kinds ("SINGLE_STEP"), empty when no
	// suspending event came before the next resume; StopT is its time.
	Stop   string  `json:"stop,omitempty"`
	StopT  int64   `json:"stop_t,omitempty"`
	Thread *Uint64 `json:"thread,omitempty"`
	// Complete is false for a step the session (or the journal) ended
	// before the next resume.
	Complete bool `json:"complete"`
	// Debugger commands of the step, and how they were served.
	Commands  int `json:"commands"`
	Forwarded int `json:"forwarded"`
	CacheHits int `json:"cache_hits"`
	Belays    int `json:"belays"`
	// WrittenBehind are state-setting commands answered at once (their
	// VM round trip overlaps what follows).
	WrittenBehind int `json:"written_behind"`
	// RoundTrips is the length of the critical path: the serial round
	// trips of the step.
	RoundTrips int `json:"serial_round_trips"`
	// PathWait is the sum of the critical path's waits: RoundTrips times
	// the RTT, plus whatever made each of its round trips longer (the VM's
	// work, commands queued ahead at the VM, a loaded machine).
	PathWait time.Duration `json:"path_wait_ns"`
	// Waiting is the time during which at least one wait was outstanding.
	Waiting time.Duration `json:"waiting_ns"`
	Path    []Link        `json:"critical_path"`
}

// CommandLinks counts how often a command was on critical paths.
type CommandLinks struct {
	Name  string `json:"name"`
	Links int    `json:"links"`
}

// SessionSteps are the steps of one session.
type SessionSteps struct {
	Session uint64 `json:"session"`
	// RTT is an estimate of the link's round trip: the median VM round
	// trip of the session's forwarded commands (0 without any).
	RTT time.Duration `json:"rtt_estimate_ns"`
	// MedianRoundTrips is the median of RoundTrips over the steps that
	// stopped (step 0 excluded).
	MedianRoundTrips float64 `json:"median_serial_round_trips"`
	Steps            []Step  `json:"steps"`
	// ByCommand counts the critical-path links per command over all steps
	// (step 0 excluded), most first.
	ByCommand []CommandLinks `json:"critical_by_command"`
}

// StepsReport are the steps of every session of a journal.
type StepsReport struct {
	Sessions []SessionSteps `json:"sessions"`
}

// stepCmd is a debugger command of a step.
type stepCmd struct {
	t, end   int64 // command and reply times; end < 0 without a reply
	waitFrom int64 // start of its wait (a belay's: its speculative command)
	name     string
	id       uint32
	served   string
	resume   bool
	// until is, for a resume, when the first suspending event after it
	// arrived (0 before), and untilEv that event's kinds.
	until   int64
	untilEv string
}

type stepState struct {
	Step
	cmds []*stepCmd
}

type sessSteps struct {
	id      uint64
	steps   []*stepState
	pending map[uint32]*stepCmd
	spec    map[specKey]int64 // the latest speculative command of each key
	vmLat   []time.Duration
	last    int64
	ended   bool
}

func (s *sessSteps) cur() *stepState { return s.steps[len(s.steps)-1] }

// isResume reports whether a debugger command resumes the VM or a thread.
func isResume(r *Record) bool {
	c := jdwp.Cmd{Set: jdwp.CommandSet(r.Set), Cmd: r.Cmd}
	return c == jdwp.CmdVirtualMachineResume || c == jdwp.CmdThreadReferenceResume
}

// suspends reports whether an Event.Composite suspended the VM or a thread:
// from its suspend policy when its bytes were kept, else from its kinds.
func suspends(r *Record) bool {
	if len(r.Bytes) > jdwp.HeaderSize {
		return r.Bytes[jdwp.HeaderSize] != byte(jdwp.SuspendNone)
	}
	for _, e := range r.Events {
		if k, ok := jdwp.ParseEventKind(e); ok && k.Suspends() {
			return true
		}
	}
	return false
}

// locatable reports whether an Event.Composite holds an event at a location
// (with suspends: a stop, jdwp.Composite.Stop).
func locatable(r *Record) bool {
	for _, e := range r.Events {
		if k, ok := jdwp.ParseEventKind(e); ok && k.Locatable() {
			return true
		}
	}
	return false
}

// ComputeSteps finds the steps of every session in recs (a whole journal,
// in the order it was written) and the critical path of each.
func ComputeSteps(recs []Record) *StepsReport {
	var order []*sessSteps
	by := map[uint64]*sessSteps{}
	get := func(r *Record) *sessSteps {
		s, ok := by[r.Session]
		if !ok {
			s = &sessSteps{id: r.Session, pending: map[uint32]*stepCmd{}, spec: map[specKey]int64{}}
			s.steps = []*stepState{{Step: Step{Index: 0, Start: r.T}}}
			by[r.Session] = s
			order = append(order, s)
		}
		return s
	}
	for i := range recs {
		r := &recs[i]
		switch r.Type {
		case TypeSessionStart:
			// A session number seen before starts a new session when not
			// a rotated file's re-announcement: journals shared by several
			// relay servers (the benchmark's) number each one's sessions
			// from 1.
			if s, ok := by[r.Session]; ok && !r.Continued && (s.ended || len(s.steps) > 1 || len(s.steps[0].cmds) > 0) {
				delete(by, r.Session)
			}
			get(r)
		case TypeSessionEnd:
			s := get(r)
			s.last = max(s.last, r.T)
			s.ended = true
		case TypePacket:
			s := get(r)
			s.last = max(s.last, r.T)
			s.packet(r)
		}
	}
	rep := &StepsReport{}
	for _, s := range order {
		rep.Sessions = append(rep.Sessions, s.finish())
	}
	return rep
}

func (s *sessSteps) packet(r *Record) {
	switch {
	case r.View == ViewWire && r.Kind == KindCommand && r.Dir == DirToVM && r.Set != uint8(jdwp.SetDDM):
		s.spec[specKeyOf(r)] = r.T
	case r.IsCommandFromDebugger():
		c := &stepCmd{t: r.T, end: -1, waitFrom: r.T, name: r.Name, id: r.ID, served: r.Served, resume: isResume(r)}
		if c.name == "" {
			c.name = fmt.Sprintf("%d/%d", r.Set, r.Cmd)
		}
		if c.served == ServedBelay {
			if t, ok := s.spec[specKeyOf(r)]; ok && t <= r.T {
				c.waitFrom = t
			}
		}
		if prev := s.cur(); c.resume && (prev.Index == 0 || prev.Stop != "") {
			prev.End, prev.Complete = max(r.T, prev.Start), true // records out of time order do not make negative steps
			s.steps = append(s.steps, &stepState{Step: Step{Index: len(s.steps), Start: r.T}})
		}
		st := s.cur()
		st.cmds = append(st.cmds, c)
		st.Commands++
		switch c.served {
		case ServedCacheHit:
			st.CacheHits++
		case ServedBelay:
			st.Belays++
		case ServedWriteBehind:
			st.WrittenBehind++
		default:
			st.Forwarded++
		}
		s.pending[r.ID] = c
	case r.IsReplyToDebugger():
		if c, ok := s.pending[r.ID]; ok {
			delete(s.pending, r.ID)
			c.end = r.T
		}
		if r.Served == ServedForwarded && r.VMLatencyNs > 0 {
			s.vmLat = append(s.vmLat, time.Duration(r.VMLatencyNs))
		}
	case r.InDebuggerView() && r.Kind == KindEvent && r.Dir == DirToDebugger:
		st := s.cur()
		if st.Index == 0 || !suspends(r) {
			break
		}
		ev := strings.Join(r.Events, ",")
		if ev == "" {
			ev = "event"
		}
		for _, c := range st.cmds {
			if c.resume && c.until == 0 {
				c.until, c.untilEv = r.T, ev
			}
		}
		if st.Stop == "" && locatable(r) {
			st.Stop = ev
			st.StopT = r.T
			if r.Thread != nil {
				th := *r.Thread
				st.Thread = &th
			}
		}
	}
}

// wait is an interval during which the debugger waited for the VM.
type wait struct {
	from, to int64
	c        *stepCmd
}

func (s *sessSteps) finish() SessionSteps {
	out := SessionSteps{Session: s.id, RTT: stat.Median(s.vmLat)}
	links := map[string]int{}
	var rts []float64
	for _, st := range s.steps {
		if !st.Complete {
			st.End = max(s.last, st.Start)
		}
		st.Duration = time.Duration(st.End - st.Start)
		var ws []wait
		for _, c := range st.cmds {
			switch {
			case c.resume && c.until > 0:
				ws = append(ws, wait{from: c.t, to: max(c.until, c.end), c: c})
			case c.end < 0, c.served == ServedCacheHit, c.served == ServedWriteBehind && !c.resume:
			default:
				ws = append(ws, wait{from: min(c.waitFrom, c.t), to: c.end, c: c})
			}
		}
		st.Path, st.Waiting = criticalPath(ws, st)
		st.RoundTrips = len(st.Path)
		for _, l := range st.Path {
			st.PathWait += l.Wait
		}
		if st.Index > 0 {
			for _, l := range st.Path {
				links[l.Name]++
			}
			if st.Stop != "" {
				rts = append(rts, float64(st.RoundTrips))
			}
		}
		out.Steps = append(out.Steps, st.Step)
	}
	out.MedianRoundTrips = stat.Median(rts)
	for n, k := range links {
		out.ByCommand = append(out.ByCommand, CommandLinks{Name: n, Links: k})
	}
	slices.SortFunc(out.ByCommand, func(a, b CommandLinks) int {
		if c := cmp.Compare(b.Links, a.Links); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out
}

// criticalPath picks the longest chain of non-overlapping waits (greedily,
// the one that ends first first) and measures the union of all waits.
func criticalPath(ws []wait, st *stepState) ([]Link, time.Duration) {
	slices.SortStableFunc(ws, func(a, b wait) int {
		if c := cmp.Compare(a.to, b.to); c != 0 {
			return c
		}
		return cmp.Compare(b.from, a.from)
	})
	var path []Link
	last := int64(-1 << 63)
	for _, w := range ws {
		if w.from < last {
			continue
		}
		last = w.to
		l := Link{T: w.from, Offset: time.Duration(w.from - st.Start), Wait: time.Duration(w.to - w.from), Served: w.c.served, Name: w.c.name, ID: w.c.id}
		if w.c.resume && w.c.until > 0 {
			l.Served = "resume"
			l.Name += " → " + w.c.untilEv
		}
		path = append(path, l)
	}
	// The union of the waits, from the intervals sorted by start.
	slices.SortFunc(ws, func(a, b wait) int { return cmp.Compare(a.from, b.from) })
	var union time.Duration
	var curFrom, curTo int64
	open := false
	for _, w := range ws {
		if open && w.from <= curTo {
			curTo = max(curTo, w.to)
			continue
		}
		if open {
			union += time.Duration(curTo - curFrom)
		}
		curFrom, curTo, open = w.from, w.to, true
	}
	if open {
		union += time.Duration(curTo - curFrom)
	}
	return path, union
}

// StepsLegend explains WriteText's columns.
const StepsLegend = `# A step runs from a resume command through the next stop at a location to the next resume; suspensions
# that are not stops (class prepare, thread start) do not end it (step 0: from attaching to the first resume).
# serial RTs: the critical path, the longest chain of waits for the VM that followed one another
# (forwarded commands, belays from their speculative command, the resume until the stop event;
# cache hits and commands overlapping another wait add none). RTs×RTT: that chain at the
# session's estimated RTT; path ms: the chain's waits as they were (longer than RTs×RTT when
# round trips were slowed, e.g. by commands queued at the VM); waiting: time with any wait
# outstanding; the rest of the step is local work (debugger, proxy, the program running).`

// WriteText renders the report: per session a table of steps, then, unless
// brief, each step's critical path with the command that caused each
// round trip, and the commands most often on the paths.
func (rep *StepsReport) WriteText(w io.Writer, brief bool) error {
	fmt.Fprintln(w, StepsLegend)
	for _, ss := range rep.Sessions {
		fmt.Fprintf(w, "\nsession %d: %d steps, RTT estimate %s (median VM round trip of forwarded commands), median serial round trips per step %g\n",
			ss.Session, max(len(ss.Steps)-1, 0), dur(ss.RTT), ss.MedianRoundTrips)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprint(tw, "step\tstart s\tstop\tthread\tms\tcmds\tfwd\thit\tbelay\twb\tserial RTs\tRTs×RTT ms\tpath ms\twaiting ms\t\n")
		for _, st := range ss.Steps {
			stop, thread := st.Stop, "-"
			switch {
			case st.Index == 0:
				stop = "attach"
			case stop == "":
				stop = "-"
			}
			if st.Thread != nil {
				thread = fmt.Sprintf("0x%x", uint64(*st.Thread))
			}
			idx := fmt.Sprint(st.Index)
			if !st.Complete {
				idx += "*"
			}
			fmt.Fprintf(tw, "%s\t%.6f\t%s\t%s\t%.1f\t%d\t%d\t%d\t%d\t%d\t%d\t%.1f\t%.1f\t%.1f\t\n", idx, float64(st.Start)/1e9, stop, thread,
				ms(st.Duration), st.Commands, st.Forwarded, st.CacheHits, st.Belays, st.WrittenBehind, st.RoundTrips,
				float64(st.RoundTrips)*ms(ss.RTT), ms(st.PathWait), ms(st.Waiting))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if ss.Steps != nil && !ss.Steps[len(ss.Steps)-1].Complete {
			fmt.Fprintln(w, "* the session ended before the next resume")
		}
		if brief {
			continue
		}
		for _, st := range ss.Steps {
			fmt.Fprintf(w, "\nstep %d: %d serial round trips in %.1f ms\n", st.Index, st.RoundTrips, ms(st.Duration))
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprint(tw, "  #\tat ms\twait ms\tserved\tcommand\tid\n")
			for i, l := range st.Path {
				fmt.Fprintf(tw, "  %d\t%.1f\t%.1f\t%s\t%s\t%d\n", i+1, ms(l.Offset), ms(l.Wait), l.Served, l.Name, l.ID)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
		if len(ss.ByCommand) > 0 {
			fmt.Fprintln(w, "\ncommands on the critical paths (steps 1 and later):")
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprint(tw, "  command\tlinks\n")
			for _, c := range ss.ByCommand {
				fmt.Fprintf(tw, "  %s\t%d\n", c.Name, c.Links)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
