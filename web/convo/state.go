package convo

import (
	"slices"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

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

// lineAt is the source line at code index, from the method's line table:
// the line of the last entry at or before index (ok false: none).
func (mi methodInfo) lineAt(index uint64) (line int32, ok bool) {
	for _, l := range mi.lines {
		if l.index > index {
			break
		}
		line, ok = l.line, true
	}
	return line, ok
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
	if l, ok := mi.lineAt(f.Index); ok {
		f.Line = int(l)
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
