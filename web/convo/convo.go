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
	"slices"
	"sync"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
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

// wanted says whether the watcher reads c's command or reply.
func wanted(c jdwp.Cmd) bool {
	switch c {
	case jdwp.CmdVirtualMachineAllThreads, jdwp.CmdVirtualMachineAllClasses, jdwp.CmdVirtualMachineAllClassesWithGeneric,
		jdwp.CmdVirtualMachineClassesBySignature, jdwp.CmdVirtualMachineResume,
		jdwp.CmdReferenceTypeSignature, jdwp.CmdReferenceTypeSignatureWithGeneric, jdwp.CmdReferenceTypeSourceFile,
		jdwp.CmdReferenceTypeMethods, jdwp.CmdReferenceTypeMethodsWithGeneric, jdwp.CmdMethodLineTable,
		jdwp.CmdThreadReferenceName, jdwp.CmdThreadReferenceStatus, jdwp.CmdThreadReferenceFrames,
		jdwp.CmdThreadReferenceFrameCount, jdwp.CmdThreadReferenceResume:
		return true
	}
	return false
}

// query is what a reply needs from its command. The State recycles it
// once the reply was read (release).
type query struct {
	cmd    jdwp.Cmd
	a, b   uint64 // thread or reference type; method
	start  int32  // Frames: first frame
	sig    string // ClassesBySignature: the signature asked for
	hasSig bool
}

type methodKey struct{ class, method uint64 }

type methodInfo struct {
	name  string
	lines []lineEntry // by code index; nil: no LineTable seen
}

type lineEntry struct {
	index uint64
	line  int32
}

type classInfo struct {
	sig, source string
}

type thread struct {
	Thread
	known bool // listed by AllThreads (or started) rather than only mentioned
}

// State is one session's conversation picture. Its methods are the
// decoder; they are not safe for concurrent use (Watcher locks).
type State struct {
	session uint64
	open    bool
	free    []*query // recycled queries
	threads map[uint64]*thread
	order   []uint64 // thread IDs, AllThreads order, then others
	classes map[uint64]classInfo
	methods map[methodKey]methodInfo
	stop    int
	running bool
	stopTID uint64
	stopEv  jdwp.EventKind
	comp    jdwp.Composite // reused by Event
	r       jdwp.BodyReader
	final   *View // once the session ended: its picture, and nothing else is kept
}

// NewState returns an empty picture.
func NewState() *State {
	return &State{
		threads: map[uint64]*thread{},
		classes: map[uint64]classInfo{}, methods: map[methodKey]methodInfo{},
	}
}

// Command reads a command whose reply the State will read, or acts on a
// resume. It returns what the reply needs, to give Reply with it (the
// Watcher keeps it in the relay's entry for the command), or nil when the
// State will not read the reply.
func (st *State) Command(c jdwp.Cmd, body []byte, sizes jdwp.IDSizes) *query {
	r := &st.r
	r.Reset(body, sizes)
	q := query{cmd: c}
	switch c {
	case jdwp.CmdVirtualMachineResume:
		st.running = true
		return nil
	case jdwp.CmdThreadReferenceResume:
		if st.stopTID == r.ObjectID() {
			st.running = true
		}
		return nil
	case jdwp.CmdVirtualMachineAllThreads, jdwp.CmdVirtualMachineAllClasses, jdwp.CmdVirtualMachineAllClassesWithGeneric:
	case jdwp.CmdVirtualMachineClassesBySignature:
		q.sig, q.hasSig = string(r.StringBytes()), true
	case jdwp.CmdReferenceTypeSignature, jdwp.CmdReferenceTypeSignatureWithGeneric, jdwp.CmdReferenceTypeSourceFile,
		jdwp.CmdReferenceTypeMethods, jdwp.CmdReferenceTypeMethodsWithGeneric:
		q.a = r.ReferenceTypeID()
	case jdwp.CmdMethodLineTable:
		q.a = r.ReferenceTypeID()
		q.b = r.MethodID()
	case jdwp.CmdThreadReferenceName, jdwp.CmdThreadReferenceStatus, jdwp.CmdThreadReferenceFrameCount:
		q.a = r.ObjectID()
	case jdwp.CmdThreadReferenceFrames:
		q.a = r.ObjectID()
		q.start = r.Int32()
	default:
		return nil
	}
	if r.Err() != nil || st.final != nil {
		return nil
	}
	var p *query
	if n := len(st.free); n > 0 {
		p = st.free[n-1]
		st.free = st.free[:n-1]
	} else {
		p = new(query)
	}
	*p = q
	return p
}

// release recycles q, once its reply was read or will not be.
func (st *State) release(q *query) {
	if len(st.free) < maxFree && st.final == nil {
		*q = query{}
		st.free = append(st.free, q)
	}
}

// Reply reads the reply (a successful one) to the command Command returned
// qp for; a nil qp (a command the State did not note) is ignored.
func (st *State) Reply(qp *query, c jdwp.Cmd, body []byte, sizes jdwp.IDSizes) {
	if qp == nil {
		return
	}
	q := *qp
	st.release(qp)
	if q.cmd != c {
		return
	}
	r := &st.r
	r.Reset(body, sizes)
	switch c {
	case jdwp.CmdVirtualMachineAllThreads:
		st.allThreads(r)
	case jdwp.CmdVirtualMachineAllClasses, jdwp.CmdVirtualMachineAllClassesWithGeneric:
		n := r.Count(1 + sizes.ReferenceTypeID + 4 + 4)
		for i := 0; i < n && r.Err() == nil; i++ {
			r.Uint8()
			ref := r.ReferenceTypeID()
			sig := r.StringBytes()
			if c == jdwp.CmdVirtualMachineAllClassesWithGeneric {
				r.StringBytes()
			}
			r.Int32()
			if r.Err() == nil {
				st.setSignature(ref, sig)
			}
		}
	case jdwp.CmdVirtualMachineClassesBySignature:
		n := r.Count(1 + sizes.ReferenceTypeID + 4)
		for i := 0; i < n && r.Err() == nil; i++ {
			r.Uint8()
			ref := r.ReferenceTypeID()
			r.Int32()
			if r.Err() == nil && q.hasSig {
				st.setSignature(ref, []byte(q.sig))
			}
		}
	case jdwp.CmdReferenceTypeSignature, jdwp.CmdReferenceTypeSignatureWithGeneric:
		if sig := r.StringBytes(); r.Err() == nil {
			st.setSignature(q.a, sig)
		}
	case jdwp.CmdReferenceTypeSourceFile:
		if src := r.StringBytes(); r.Err() == nil {
			if ci, ok := st.classes[q.a]; ok || len(st.classes) < maxClasses {
				if ci.source != string(src) {
					ci.source = string(src)
					st.classes[q.a] = ci
				}
			}
		}
	case jdwp.CmdReferenceTypeMethods, jdwp.CmdReferenceTypeMethodsWithGeneric:
		n := r.Count(sizes.MethodID + 4 + 4 + 4)
		for i := 0; i < n && r.Err() == nil; i++ {
			m := r.MethodID()
			name := r.StringBytes()
			r.StringBytes() // signature
			if c == jdwp.CmdReferenceTypeMethodsWithGeneric {
				r.StringBytes()
			}
			r.Int32() // modifiers
			if r.Err() != nil {
				break
			}
			k := methodKey{q.a, m}
			mi, ok := st.methods[k]
			if !ok && len(st.methods) >= maxMethods {
				continue
			}
			if mi.name != string(name) {
				mi.name = string(name)
				st.methods[k] = mi
			}
		}
	case jdwp.CmdMethodLineTable:
		r.Int64() // start
		r.Int64() // end
		n := r.Count(8 + 4)
		k := methodKey{q.a, q.b}
		mi, ok := st.methods[k]
		if r.Err() != nil || !ok && len(st.methods) >= maxMethods {
			return
		}
		lines := mi.lines[:0]
		for i := 0; i < n && r.Err() == nil && i < maxLines; i++ {
			idx := uint64(r.Int64())
			ln := r.Int32()
			if r.Err() == nil {
				lines = append(lines, lineEntry{idx, ln})
			}
		}
		slices.SortFunc(lines, func(a, b lineEntry) int {
			switch {
			case a.index < b.index:
				return -1
			case a.index > b.index:
				return 1
			}
			return 0
		})
		if lines == nil {
			lines = []lineEntry{}
		}
		mi.lines = lines
		st.methods[k] = mi
	case jdwp.CmdThreadReferenceName:
		name := r.StringBytes()
		if t := st.thread(q.a); r.Err() == nil && t != nil && t.Name != string(name) {
			t.Name = string(name)
		}
	case jdwp.CmdThreadReferenceStatus:
		s := r.Int32()
		sus := r.Int32()
		if t := st.thread(q.a); r.Err() == nil && t != nil {
			t.Status, t.Suspended, t.StatusStop = s, sus&1 != 0, st.stop
		}
	case jdwp.CmdThreadReferenceFrameCount:
		n := r.Int32()
		if t := st.thread(q.a); r.Err() == nil && t != nil {
			t.FrameCount = int(max(n, 0))
			if t.FramesStop != st.stop {
				t.Frames = t.Frames[:0]
			}
			t.FramesStop = st.stop
		}
	case jdwp.CmdThreadReferenceFrames:
		st.frames(r, q)
	}
}

func (st *State) allThreads(r *jdwp.BodyReader) {
	n := r.Count(r.Sizes().ObjectID)
	seen := make(map[uint64]bool, min(n, maxThreads))
	var order []uint64
	for i := 0; i < n && r.Err() == nil && i < maxThreads; i++ {
		id := r.ObjectID()
		if r.Err() != nil || seen[id] {
			continue
		}
		seen[id] = true
		order = append(order, id)
	}
	if r.Err() != nil {
		return
	}
	for id := range st.threads {
		if !seen[id] {
			delete(st.threads, id)
		}
	}
	for _, id := range order {
		if t := st.thread(id); t != nil {
			t.known = true
		}
	}
	st.order = order
}

func (st *State) frames(r *jdwp.BodyReader, q query) {
	t := st.thread(q.a)
	n := r.Count(r.Sizes().FrameID + 1 + r.Sizes().ReferenceTypeID + r.Sizes().MethodID + 8)
	if t == nil || r.Err() != nil || q.start < 0 {
		return
	}
	if t.FramesStop != st.stop {
		t.Frames, t.FrameCount = t.Frames[:0], -1
	}
	at := int(q.start)
	if at > len(t.Frames) {
		return // a gap: keep what is contiguous from the top
	}
	fs := t.Frames[:at]
	for i := 0; i < n && r.Err() == nil && len(fs) < maxFrames; i++ {
		r.FrameID()
		loc := r.Location()
		if r.Err() == nil {
			fs = append(fs, Frame{ClassID: loc.Class, MethodID: loc.Method, Index: loc.Index, Line: -1})
		}
	}
	t.Frames, t.FramesStop = fs, st.stop
}

// Event reads an Event.Composite: stops, thread starts and deaths, class
// prepares.
func (st *State) Event(body []byte, sizes jdwp.IDSizes) {
	c := &st.comp
	c.Decode(body, sizes) //nolint:errcheck // use the events decoded before any failure
	if e, ok := c.Stop(); ok {
		st.stop++
		st.running = false
		st.stopTID, st.stopEv = e.Thread, e.Kind
		if t := st.thread(e.Thread); t != nil {
			t.Frames = append(t.Frames[:0], Frame{ClassID: e.Location.Class, MethodID: e.Location.Method, Index: e.Location.Index, Line: -1})
			t.FramesStop, t.FrameCount = st.stop, -1
		}
	}
	for i := range c.Events {
		e := &c.Events[i]
		switch e.Kind {
		case jdwp.EventThreadStart:
			if t := st.thread(e.Thread); t != nil {
				t.known = true
			}
		case jdwp.EventThreadDeath:
			if _, ok := st.threads[e.Thread]; ok {
				delete(st.threads, e.Thread)
				st.order = slices.DeleteFunc(st.order, func(id uint64) bool { return id == e.Thread })
			}
		case jdwp.EventClassPrepare:
			st.setSignature(e.TypeID, e.Signature)
		}
	}
}

// thread returns the thread with id, adding it unless the table is full.
func (st *State) thread(id uint64) *thread {
	if t := st.threads[id]; t != nil {
		return t
	}
	if len(st.threads) >= maxThreads || id == 0 {
		return nil
	}
	t := &thread{Thread: Thread{ID: id, Status: StatusUnknown, FrameCount: -1}}
	st.threads[id] = t
	st.order = append(st.order, id)
	return t
}

func (st *State) setSignature(ref uint64, sig []byte) {
	ci, ok := st.classes[ref]
	if !ok && len(st.classes) >= maxClasses {
		return
	}
	if ci.sig != string(sig) {
		ci.sig = string(sig)
		st.classes[ref] = ci
	}
}

// View is a copy of the picture, with frames resolved.
func (st *State) View() View {
	if st.final != nil {
		v := *st.final
		v.Threads = slices.Clone(v.Threads)
		for i := range v.Threads {
			v.Threads[i].Frames = slices.Clone(v.Threads[i].Frames)
		}
		return v
	}
	v := View{Session: st.session, Open: st.open, Stop: st.stop, Running: st.running, StopThread: st.stopTID}
	if st.stopEv != 0 {
		v.StopEvent = st.stopEv.String()
	}
	v.Threads = make([]Thread, 0, len(st.order))
	for _, id := range st.order {
		t := st.threads[id]
		if t == nil {
			continue
		}
		c := t.Thread
		c.Frames = make([]Frame, len(t.Frames))
		for i, f := range t.Frames {
			c.Frames[i] = st.resolve(f)
		}
		v.Threads = append(v.Threads, c)
	}
	return v
}

// resolve names f's class, method, source and line where known.
func (st *State) resolve(f Frame) Frame {
	if ci, ok := st.classes[f.ClassID]; ok {
		f.Class = ClassName(ci.sig)
		f.Source = ci.source
	}
	mi, ok := st.methods[methodKey{f.ClassID, f.MethodID}]
	if !ok {
		return f
	}
	f.Method = mi.name
	f.Line = -1
	for _, l := range mi.lines {
		if l.index > f.Index {
			break
		}
		f.Line = int(l.line)
	}
	return f
}

// ClassName turns a type signature into a Java name: "Lcom/x/Main;" is
// "com.x.Main", "[I" is "int[]".
func ClassName(sig string) string {
	dims := 0
	for dims < len(sig) && sig[dims] == '[' {
		dims++
	}
	s := sig[dims:]
	var name string
	switch {
	case len(s) >= 2 && s[0] == 'L' && s[len(s)-1] == ';':
		b := []byte(s[1 : len(s)-1])
		for i, c := range b {
			if c == '/' {
				b[i] = '.'
			}
		}
		name = string(b)
	case len(s) == 1:
		name = map[byte]string{'Z': "boolean", 'B': "byte", 'C': "char", 'S': "short", 'I': "int", 'J': "long", 'F': "float", 'D': "double", 'V': "void"}[s[0]]
		if name == "" {
			name = s
		}
	default:
		name = s
	}
	for range dims {
		name += "[]"
	}
	return name
}
