package web

import (
	"fmt"
	"strings"
	"time"

	"github.com/jdwpaccel/jdwpaccel/ddmtap"
)

// DDMSource is a Source over DDM tap monitors, one VM per monitor (its
// name, the VM's address, is the VM's ID), with the accelerator's figures
// and the sessions from functions the command provides.
type DDMSource struct {
	// Monitors lists the monitors to show; called on every request.
	Monitors func() []*ddmtap.Monitor
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

// VMs implements Source; a VM's debuggers are its open sessions'.
func (d *DDMSource) VMs() []VM {
	if d.Monitors == nil {
		return nil
	}
	sessions := d.Sessions()
	var out []VM
	for _, m := range d.Monitors() {
		vm := VMFromDDM(m.Snapshot())
		for _, s := range sessions {
			if s.VM == vm.ID && s.Ended.IsZero() {
				vm.Debuggers = append(vm.Debuggers, s.Debugger)
			}
		}
		out = append(out, vm)
	}
	return out
}

// Threads implements Source.
func (d *DDMSource) Threads(vm string) []Thread {
	if m := d.monitor(vm); m != nil {
		return ThreadsFromDDM(m.Snapshot())
	}
	return nil
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
	case !s.Connected:
		notes = append(notes, "not connected")
	case id.DDM == ddmtap.DDMNo:
		notes = append(notes, "not an Android VM: no DDM thread or heap data")
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
