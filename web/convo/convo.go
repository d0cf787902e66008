// Package convo reads the debugger's JDWP conversation passively and keeps
// what it learns about the VM's threads: their IDs (VirtualMachine.AllThreads
// and thread start/death events), names (ThreadReference.Name), statuses
// (ThreadReference.Status) and stacks (ThreadReference.Frames), with class
// and method names and source lines where the debugger or the speculator
// read them (ReferenceType.Signature, ReferenceType.Methods,
// ReferenceType.SourceFile, Method.LineTable). It never sends anything to
// the VM: a HotSpot VM speaks no DDM, and this is the thread view the live
// page can show for it.
//
//	w := convo.NewWatcher(func(s *relay.Session) string { return vmID })
//	hooks.Observers = append(hooks.Observers, w)
//	v, ok := w.View(vmID)
//
// Observe costs a switch for the packets it ignores (most of them) and
// allocates only to keep what it learned, and a small record for a command
// it reads while more of them await their replies than ever before in the
// session (it recycles them).
package convo

import (
	"sync"

	"github.com/jdwpaccel/jdwpaccel/relay"
)

// Bounds on what one session keeps, so that a hostile or huge conversation
// cannot grow the watcher without limit.
const (
	maxThreads = 4096
	maxClasses = 1 << 16
	maxMethods = 1 << 16
	maxFrames  = 1024
	maxLines   = 4096
	maxVMs     = 256 // VMs whose ended session's picture is kept
	maxFree    = 64  // recycled queries kept per session
)

// Thread status values of ThreadReference.Status (JDWP.ThreadStatus).
const (
	StatusUnknown  int32 = -1
	StatusZombie   int32 = 0
	StatusRunning  int32 = 1
	StatusSleeping int32 = 2
	StatusMonitor  int32 = 3
	StatusWait     int32 = 4
)

// StatusLabel names a JDWP thread status.
func StatusLabel(s int32) string {
	switch s {
	case StatusZombie:
		return "zombie"
	case StatusRunning:
		return "running"
	case StatusSleeping:
		return "sleeping"
	case StatusMonitor:
		return "monitor"
	case StatusWait:
		return "wait"
	}
	return "unknown"
}

// View is what a VM's latest debugger session has shown of its threads.
type View struct {
	// Session is the relay session's ID; Open says it is still open.
	Session uint64
	Open    bool
	// Stop counts the stops (jdwp.Composite.Stop) seen in the session; Running says
	// the debugger resumed the VM since the last one.
	Stop    int
	Running bool
	// StopThread is the thread of the last stop, StopEvent its event kind.
	StopThread uint64
	StopEvent  string
	// Threads in the order the VM listed them (AllThreads), then any
	// learned otherwise.
	Threads []Thread
}

// Thread is one thread as the conversation showed it.
type Thread struct {
	ID   uint64 // JDWP threadID
	Name string // "" until a Name reply was seen
	// Status is a JDWP thread status (StatusUnknown until a Status reply),
	// Suspended its suspend status, both as of stop StatusStop.
	Status     int32
	Suspended  bool
	StatusStop int
	// FrameCount is the last FrameCount reply (-1: none), Frames the frames
	// the last Frames reply listed from the top, both as of stop
	// FramesStop.
	FrameCount int
	Frames     []Frame
	FramesStop int
}

// Frame is one stack frame, resolved as far as the conversation allows.
type Frame struct {
	ClassID, MethodID, Index uint64
	// Class is the class's name ("com.example.Main"), Method the method's
	// name, Source the source file, Line the line (-1: unknown); empty
	// when the debugger never asked.
	Class, Method, Source string
	Line                  int
}

// Watcher is a relay observer (add it to each session's Hooks.Observers)
// that keeps, per VM, what the latest session's conversation showed of
// the VM's threads. Safe for concurrent use.
type Watcher struct {
	vmOf func(*relay.Session) string

	mu       sync.Mutex // guards sessions and latest
	sessions map[*relay.Session]*State
	latest   map[string]*State // by VM ID; kept after the session ends
}

// NewWatcher returns a Watcher naming each session's VM with vmOf.
func NewWatcher(vmOf func(*relay.Session) string) *Watcher {
	return &Watcher{vmOf: vmOf, sessions: map[*relay.Session]*State{}, latest: map[string]*State{}}
}

// SessionStart implements relay.SessionObserver.
func (w *Watcher) SessionStart(s *relay.Session) {
	st := NewState()
	st.session, st.open = s.ID, true
	vm := w.vmOf(s)
	w.mu.Lock()
	w.sessions[s] = st
	w.latest[vm] = st
	w.mu.Unlock()
}

// SessionEnd implements relay.SessionObserver: the session's picture stays
// the VM's latest until another session starts.
// The session's tables are released: only its resolved view stays.
func (w *Watcher) SessionEnd(s *relay.Session, _ error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.sessions[s]
	if st == nil {
		return
	}
	delete(w.sessions, s)
	st.open = false
	v := st.View()
	*st = State{final: &v}
	if len(w.latest) > maxVMs {
		for vm, o := range w.latest {
			if o.final != nil && len(w.latest) > maxVMs {
				delete(w.latest, vm) // a VM long gone, most likely
			}
		}
	}
}

// Observe implements relay.Observer. Packets of commands the watcher does
// not read cost a switch and return.
func (w *Watcher) Observe(s *relay.Session, f *relay.Frame) {
	var q *query
	switch f.Kind {
	case relay.KindCommand:
		if !wanted(f.Cmd) {
			return
		}
	case relay.KindReply:
		if q, _ = f.Data(slot).(*query); q == nil {
			return // a reply to a command the watcher did not note
		}
	case relay.KindEvent:
	default:
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.sessions[s]
	if st == nil {
		return
	}
	sizes, ok := s.IDSizes()
	switch {
	case f.Kind == relay.KindReply:
		if ok && f.Packet.ErrorCode() == 0 {
			st.Reply(q, f.Cmd, f.Packet.Body(), sizes)
		} else {
			st.release(q)
		}
	case !ok:
	case f.Kind == relay.KindCommand:
		if q := st.Command(f.Cmd, f.Packet.Body(), sizes); q != nil {
			f.SetData(slot, q)
		}
	case f.Kind == relay.KindEvent:
		st.Event(f.Packet.Body(), sizes)
	}
}

// slot is where the watcher keeps what a reply needs from its command (a
// *query) in the relay's entry for the command: the relay pairs each
// command with its answer (a VM reply or the proxy's answer), so the
// watcher keeps no table of commands in flight of its own.
var slot = relay.NewSlot()

// View is the latest session's picture of vm's threads, and whether there
// is one.
func (w *Watcher) View(vm string) (View, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.latest[vm]
	if st == nil {
		return View{}, false
	}
	return st.View(), true
}
