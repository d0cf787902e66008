package web

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/jdwpaccel/jdwpaccel/ddmtap"
	"github.com/jdwpaccel/jdwpaccel/web/convo"
)

// DDMSource is the live page's Source for the proxy: every VM it serves
// (Served), with DDM tap monitors for those that speak DDM (a monitor's
// name is its VM's ID), thread pictures read from the debuggers' JDWP
// conversations for the others (Conversation), and the accelerator's
// figures and the sessions from functions the command provides.
type DDMSource struct {
	// Monitors lists the DDM monitors; called on every request; may be nil.
	Monitors func() []*ddmtap.Monitor
	// Served lists the VMs the proxy serves (ID, Addr, Kind, App, PID),
	// with or without a monitor; nil: the monitors' VMs alone.
	Served func() []VM
	// Conversation, when set, reads threads and stacks from what the
	// debuggers asked.
	Conversation *convo.Watcher
	// AccelFunc and SessionsFunc may be nil (nothing to show).
	AccelFunc    func() AccelStats
	SessionsFunc func() []Session
}

func (d *DDMSource) monitor(id string) *ddmtap.Monitor {
	if d.Monitors == nil {
		return nil
	}
	for _, m := range d.Monitors() {
		if m.Name() == id {
			return m
		}
	}
	return nil
}

// VMs implements Source: the served VMs in their order, then monitored
// VMs not served (there are none in the proxy); a VM's debuggers are its
// open sessions'.
func (d *DDMSource) VMs() []VM {
	mons := map[string]ddmtap.Snapshot{}
	var monOrder []string
	if d.Monitors != nil {
		for _, m := range d.Monitors() {
			mons[m.Name()] = m.Snapshot()
			monOrder = append(monOrder, m.Name())
		}
	}
	var out []VM
	seen := map[string]bool{}
	if d.Served != nil {
		for _, v := range d.Served() {
			if snap, ok := mons[v.ID]; ok {
				dv := VMFromDDM(snap)
				dv.Kind, dv.Simulated = v.Kind, v.Simulated || dv.Simulated
				if dv.App == "" {
					dv.App = v.App
				}
				if dv.PID == 0 {
					dv.PID = v.PID
				}
				if v.Addr != "" {
					dv.Addr = v.Addr
				}
				if v.Status != "" {
					dv.Status = strings.TrimSuffix(v.Status+"; "+dv.Status, "; ")
				}
				v = dv
			}
			seen[v.ID] = true
			out = append(out, v)
		}
	}
	for _, name := range monOrder {
		if !seen[name] {
			out = append(out, VMFromDDM(mons[name]))
		}
	}
	sessions := d.Sessions()
	for i := range out {
		vm := &out[i]
		vm.Debuggers = []string{}
		for _, s := range sessions {
			if s.VM == vm.ID && s.Ended.IsZero() {
				vm.Debuggers = append(vm.Debuggers, s.Debugger)
			}
		}
		snap, monitored := mons[vm.ID]
		d.describe(vm, snap, monitored)
	}
	return out
}

// describe fills vm's Threads and Heap fields (and their notes).
func (d *DDMSource) describe(vm *VM, snap ddmtap.Snapshot, monitored bool) {
	ddm := monitored && snap.Identity.DDM == ddmtap.DDMYes
	switch {
	case ddm && len(ThreadsFromDDM(snap)) > 0:
		vm.Threads, vm.ThreadsNote = ThreadsDDM, "from DDM thread notifications and status polls"
	default:
		vm.Threads, vm.ThreadsNote = ThreadsNone, "no thread data yet: a debugger's conversation will show its threads"
		if ddm {
			vm.ThreadsNote = "no DDM thread data yet"
		}
		if d.Conversation != nil {
			if v, ok := d.Conversation.View(vm.ID); ok && len(v.Threads) > 0 {
				vm.Threads, vm.ThreadsNote = ThreadsJDWP, conversationNote(v)
			}
		}
	}
	switch {
	case !ddm:
		vm.Heap, vm.HeapNote = HeapNone, "this VM speaks no DDM, so it cannot be asked for a heap picture"
		if monitored && snap.Identity.DDM == ddmtap.DDMUnknown {
			vm.HeapNote = "not known yet whether this VM speaks DDM"
		}
	case snap.Support[ddmtap.FeatureNames[ddmtap.FeatHeapSegments]] == ddmtap.Unsupported.String():
		vm.Heap, vm.HeapNote = HeapUnsupported, "this VM left heap map requests unanswered (Android 12+ ignores them)"
	default:
		vm.Heap, vm.HeapNote = HeapDDM, "heap pictures are taken on request: each makes the VM collect garbage"
	}
}

// conversationNote says where a conversation's thread picture comes from.
func conversationNote(v convo.View) string {
	n := "from the debugger's conversation"
	if v.Stop > 0 {
		n += ", as of stop " + strconv.Itoa(v.Stop)
	}
	switch {
	case !v.Open:
		n += " (session #" + strconv.FormatUint(v.Session, 10) + ", ended)"
	case v.Running:
		n += " (running since)"
	}
	return n
}

// Threads implements Source: DDM's threads where the VM has any, else the
// ones the latest debugger conversation showed.
func (d *DDMSource) Threads(vm string) []Thread {
	if m := d.monitor(vm); m != nil {
		if ts := ThreadsFromDDM(m.Snapshot()); len(ts) > 0 {
			return ts
		}
	}
	if d.Conversation != nil {
		if v, ok := d.Conversation.View(vm); ok {
			return ThreadsFromConversation(v)
		}
	}
	return nil
}

// Stack implements StackSource: a DDM thread's STKL frames when a DDM
// client asked for them (ddmtap has no request of its own for STKL),
// else the frames the debugger last read of the thread (by JDWP threadID,
// or for a DDM thread by its name).
func (d *DDMSource) Stack(vm, thread string) (ThreadStack, bool) {
	name := ""
	if m := d.monitor(vm); m != nil && !strings.HasPrefix(thread, "0x") {
		id, err := strconv.ParseUint(thread, 10, 32)
		if err != nil {
			return ThreadStack{}, false
		}
		for _, t := range m.Snapshot().Threads {
			if t.ID != uint32(id) || !t.Alive {
				continue
			}
			name = t.Name
			if len(t.Stack) > 0 {
				st := ThreadStack{Thread: thread, Name: t.Name, From: ThreadsDDM, Note: "from the VM's DDM stack trace (STKL)", Frames: make([]StackFrame, len(t.Stack))}
				for i, f := range t.Stack {
					st.Frames[i] = StackFrame{Class: f.Class, Method: f.Method, Source: f.File, Line: int(f.Line)}
				}
				return st, true
			}
		}
		if name == "" {
			return ThreadStack{}, false
		}
	}
	if d.Conversation == nil {
		return ThreadStack{}, false
	}
	v, ok := d.Conversation.View(vm)
	if !ok {
		return ThreadStack{}, false
	}
	for _, t := range v.Threads {
		if name != "" && t.Name != name || name == "" && hexID(t.ID) != thread {
			continue
		}
		st := stackFromConversation(v, t)
		st.Thread = thread
		return st, true
	}
	return ThreadStack{}, false
}

// CurrentStack is the stack of the thread of vm's latest stop, if the
// conversation read it.
func (d *DDMSource) CurrentStack(vm string) (ThreadStack, bool) {
	if d.Conversation == nil {
		return ThreadStack{}, false
	}
	v, ok := d.Conversation.View(vm)
	if !ok || v.StopThread == 0 {
		return ThreadStack{}, false
	}
	for _, t := range v.Threads {
		if t.ID == v.StopThread && len(t.Frames) > 0 {
			return stackFromConversation(v, t), true
		}
	}
	return ThreadStack{}, false
}

func hexID(id uint64) string { return "0x" + strconv.FormatUint(id, 16) }

// ThreadsFromConversation are the threads a conversation showed, as table
// rows.
func ThreadsFromConversation(v convo.View) []Thread {
	out := make([]Thread, 0, len(v.Threads))
	for _, t := range v.Threads {
		row := Thread{Object: hexID(t.ID), Name: t.Name, Status: convo.StatusLabel(t.Status), Suspended: t.Suspended,
			AsOfStop: max(t.StatusStop, t.FramesStop), Current: t.ID == v.StopThread}
		if row.Name == "" {
			row.Name = "(name not read)"
		}
		if !v.Open {
			// The debugger detached: the VM resumed what it had suspended,
			// and nobody reads the threads' states any more.
			row.Status, row.Suspended, row.Current = "detached", false, false
		}
		if t.FrameCount > 0 {
			row.Frames = t.FrameCount
		}
		if len(t.Frames) > 0 {
			row.Top = frameText(t.Frames[0])
			row.Frames = max(row.Frames, len(t.Frames))
		}
		out = append(out, row)
	}
	return out
}

func stackFromConversation(v convo.View, t convo.Thread) ThreadStack {
	st := ThreadStack{Thread: hexID(t.ID), Name: t.Name, From: ThreadsJDWP, AsOfStop: t.FramesStop, Frames: make([]StackFrame, len(t.Frames))}
	st.Note = "the frames the debugger last read, as of stop " + strconv.Itoa(t.FramesStop)
	if t.FramesStop < v.Stop || v.Running && t.ID == v.StopThread {
		st.Note += " (the thread has run since)"
	}
	for i, f := range t.Frames {
		st.Frames[i] = StackFrame{Class: f.Class, Method: f.Method, Source: f.Source, Line: f.Line, ClassID: hexID(f.ClassID), MethodID: hexID(f.MethodID), Index: f.Index}
		if f.Index == nativeIndex {
			st.Frames[i].Line, st.Frames[i].Index = -2, 0
		}
	}
	return st
}

// nativeIndex is the code index of a JDWP location in a native method
// (-1 as the unsigned 64 bits it travels as).
const nativeIndex = math.MaxUint64

// frameText is "com.x.Main.run:42", with raw IDs for what is unknown.
func frameText(f convo.Frame) string {
	c := f.Class
	if c == "" {
		c = "class " + hexID(f.ClassID)
	}
	m := f.Method
	if m == "" {
		m = "method " + hexID(f.MethodID)
	}
	s := c + "." + m
	switch {
	case f.Line >= 0:
		s += ":" + strconv.Itoa(f.Line)
	case f.Index == nativeIndex:
		s += " (native)"
	default:
		s += " @" + strconv.FormatUint(f.Index, 10)
	}
	return s
}

// Heap implements Source.
func (d *DDMSource) Heap(vm string) Heap {
	if m := d.monitor(vm); m != nil {
		return HeapFromDDM(m.Snapshot())
	}
	return Heap{}
}

// RequestHeap implements HeapRequester: the VM's DDM monitor asks for a
// heap summary now and heap segments after each collection.
func (d *DDMSource) RequestHeap(vm string) error {
	m := d.monitor(vm)
	if m == nil {
		return fmt.Errorf("no DDM monitor for VM %q", vm)
	}
	return m.RequestHeap()
}

// Accel implements Source.
func (d *DDMSource) Accel() AccelStats {
	if d.AccelFunc == nil {
		return AccelStats{}
	}
	return d.AccelFunc()
}

// Sessions implements Source.
func (d *DDMSource) Sessions() []Session {
	if d.SessionsFunc == nil {
		return nil
	}
	return d.SessionsFunc()
}

// VMFromDDM is the VM a DDM monitor snapshot describes (without
// debuggers: the monitor knows only whether one is attached).
func VMFromDDM(s ddmtap.Snapshot) VM {
	id := s.Identity
	vm := VM{ID: s.Name, Addr: s.Name, Ident: id.VMIdent, App: id.AppName, PID: id.PID, DDM: id.DDM == ddmtap.DDMYes, Debuggers: []string{}}
	if vm.App == "" {
		vm.App = id.PackageName
	}
	var notes []string
	switch {
	case !s.Connected && id.DDM == ddmtap.DDMYes:
		notes = append(notes, "DDM connection down")
	case id.DDM == ddmtap.DDMNo:
		notes = append(notes, "not an Android VM: it speaks no DDM")
	}
	if id.WaitingForDebugger && !s.DebuggerAttached {
		notes = append(notes, "waiting for a debugger")
	}
	if s.Support["thread_status"] == ddmtap.Unsupported.String() {
		notes = append(notes, "thread status not supported by this VM")
	}
	if s.Support["heap_segments"] == ddmtap.Unsupported.String() {
		notes = append(notes, "heap maps not supported by this VM (Android 12+)")
	}
	vm.Status = strings.Join(notes, "; ")
	return vm
}

// ThreadsFromDDM are a DDM monitor snapshot's live threads.
func ThreadsFromDDM(s ddmtap.Snapshot) []Thread {
	out := make([]Thread, 0, len(s.Threads))
	for _, t := range s.Threads {
		if !t.Alive {
			continue
		}
		out = append(out, Thread{ID: t.ID, TID: t.TID, Name: t.Name, Status: ThreadStatusLabel(t.Status), UTime: t.UTime, STime: t.STime, Daemon: t.Daemon})
	}
	return out
}

// HeapFromDDM is a DDM monitor snapshot's Java heap: the first HPIF
// summary and the last complete segment map with the tap's statistics
// (its map merges adjacent runs of one kind).
func HeapFromDDM(s ddmtap.Snapshot) Heap {
	var h Heap
	if len(s.HeapInfo) > 0 {
		hi := s.HeapInfo[0]
		t := s.HeapInfoTime
		if t.IsZero() {
			t = time.UnixMilli(hi.TimeMs)
		}
		h.Info = HeapInfo{Updated: t, MaxSize: uint64(hi.MaxSize), Size: uint64(hi.Size), Allocated: uint64(hi.Allocated), Objects: uint64(hi.Objects)}
	}
	m := s.Heap
	if m == nil {
		return h
	}
	h.Generation = uint64(m.Time.UnixNano())
	h.Updated = m.Time
	h.Truncated = m.Truncated
	h.Segments = make([]HeapSegment, len(m.Segments))
	for i, seg := range m.Segments {
		unit := uint64(max(seg.Unit, 1))
		runs := make([]HeapRun, 0, len(seg.Runs))
		for _, r := range seg.Runs {
			runs = append(runs, HeapRun{Kind: HeapKind(r.Bucket), Units: uint32(min(r.Bytes/unit, 1<<32-1))})
		}
		h.Segments[i] = HeapSegment{Start: uint64(seg.Start) + uint64(seg.Offset), UnitSize: uint32(unit), Runs: runs}
	}
	h.Stats = []HeapKindStats{}
	var hist [numHeapKinds][]uint64
	for _, st := range m.Stats {
		k := HeapKind(st.Bucket)
		if k >= numHeapKinds {
			continue
		}
		h.Stats = append(h.Stats, HeapKindStats{Kind: k, Label: k.String(), Count: st.Count, TotalBytes: st.Total, Smallest: st.Smallest, Largest: st.Largest, Median: st.Median, Average: st.Average})
		if k < HeapObject {
			continue
		}
		if hist[k] == nil {
			hist[k] = make([]uint64, HistogramBins)
		}
		for slot, c := range st.Histogram { // slot i: sizes in [2^i, 2^(i+1))
			hist[k][HistogramBin(1<<slot)] += c
		}
	}
	h.Histogram = []HeapHistoSeries{}
	for k := HeapObject; k < numHeapKinds; k++ {
		if hist[k] != nil {
			h.Histogram = append(h.Histogram, HeapHistoSeries{Kind: k, Counts: hist[k]})
		}
	}
	return h
}
