package fakevm

import (
	"math/rand/v2"

	"github.com/jdwpaccel/jdwpaccel/ddm"
)

// heapInfo summarises the current heap; vm.mu is held.
func (vm *VM) heapInfo(reason uint8) ddm.HeapInfo {
	var size, alloc, objs uint32
	for _, e := range vm.heap() {
		size += e.Units * 8
		if e.State&7 != 0 {
			alloc += e.Units * 8
			objs++
		}
	}
	return ddm.HeapInfo{Heaps: []ddm.HeapSummary{{
		HeapID: 1, TimeMs: vm.cfg.Now().UnixMilli(), Reason: reason,
		MaxSize: 256 << 20, Size: size, Allocated: alloc, Objects: objs,
	}}}
}

// heap returns the heap layout of this walk; vm.mu is held.
func (vm *VM) heap() []Element {
	if vm.cfg.Heap != nil {
		return vm.cfg.Heap
	}
	r := rand.New(rand.NewPCG(vm.cfg.Seed, uint64(vm.stats.GCs)))
	out := make([]Element, 0, 2*vm.cfg.HeapObjects)
	for i := 0; i < vm.cfg.HeapObjects; i++ {
		kind := uint8(r.IntN(6))
		units := uint32(2 + r.IntN(30))
		if kind >= 2 && r.IntN(20) == 0 {
			units = uint32(257 + r.IntN(2000)) // a large array: partial runs
		}
		out = append(out, Element{State: kind<<3 | 1, Units: units})
		if r.IntN(4) == 0 {
			out = append(out, Element{State: 0, Units: uint32(1 + r.IntN(64))})
		}
	}
	return out
}

// maxSegmentData is the largest segment chunk a VM sends (§2.3).
const maxSegmentData = 16368

// appendRuns appends an element as (state, units-1) pairs, partial bit on
// all but the last (§4.2).
func appendRuns(dst []byte, e Element) []byte {
	l := e.Units
	for l > 256 {
		dst = append(dst, e.State|0x80, 255)
		l -= 256
	}
	return append(dst, e.State, uint8(l-1))
}

// walk sends HPST, segment chunks and HPEN for the Java heap (or the
// NHxx family for the native heap); vm.mu is held.
func (vm *VM) walk(vc *vmConn, native bool) {
	st, seg, en := ddm.TypeHPST, ddm.TypeHPSG, ddm.TypeHPEN
	if native {
		st, seg, en = ddm.TypeNHST, ddm.TypeNHSG, ddm.TypeNHEN
	} else if vc.hpsgWhat == 1 {
		seg = ddm.TypeHPSO
	}
	heapID := uint32(1)
	vm.chunk(vc, ddm.U4{T: st, V: heapID})
	if native && vm.cfg.Profile != Design2007 && vm.cfg.Profile != Dalvik {
		vm.chunk(vc, ddm.U4{T: en, V: heapID})
		return
	}
	elems := vm.heap()
	base := uint32(0x12c00000)
	if native {
		base = 0x40000000
		elems = []Element{{State: 7<<3 | 1, Units: 512}, {State: 0, Units: 64}, {State: 7<<3 | 1, Units: 40}}
	}
	addr := base
	cur := ddm.HeapSegment{T: seg, HeapID: heapID, Unit: 8, Start: addr}
	flush := func() {
		if len(cur.Runs) > 0 {
			vm.chunk(vc, cur)
		}
	}
	for _, e := range elems {
		runs := appendRuns(nil, e)
		if ddm.SegmentHeaderSize+len(cur.Runs)+len(runs) > maxSegmentData {
			flush()
			cur = ddm.HeapSegment{T: seg, HeapID: heapID, Unit: 8, Start: addr}
		}
		cur.Runs = append(cur.Runs, runs...)
		cur.Units += e.Units
		addr += e.Units * 8
	}
	flush()
	vm.chunk(vc, ddm.U4{T: en, V: heapID})
}

// gc runs a collection: heap notifications as configured; vm.mu is held.
// The walk and the summaries describe the heap of the current GC count;
// the count moves on after them.
func (vm *VM) gc(vc *vmConn) {
	defer func() { vm.stats.GCs++ }()
	if vc == nil {
		return
	}
	if vc.hpifWhen == 2 || vc.hpifWhen == 3 {
		vm.chunk(vc, vm.heapInfo(vc.hpifWhen))
		if vc.hpifWhen == 2 {
			vc.hpifWhen = 0
		}
	}
	if vc.hpsgWhen == 1 {
		vm.walk(vc, false)
	}
	if vc.nhsgWhen == 1 {
		vm.walk(vc, true)
	}
}

// GC runs a collection now (as the periodic timer does).
func (vm *VM) GC() {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	vm.gc(vm.conn)
}
