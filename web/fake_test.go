package web

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// FakeSource is a made-up Android app for the tests and the browser
// screenshots (it lives in a _test.go file, out of the binary):
// one DDM-aware VM with churning threads, a heap that is re-mapped every few
// steps (as after a GC), an accelerator whose figures grow, and one debugger
// session. Its data is a function of the seed and the number of steps taken,
// so two sources with the same seed stepped alike agree.
type FakeSource struct {
	period time.Duration // 0: steps only on Advance
	now    func() time.Time

	mu   sync.Mutex // guards everything below
	rng  *rand.Rand
	last time.Time // when the last automatic step was due
	tick uint64

	threads []Thread // live threads, by ID
	nextID  uint32   // next DDM thread ID
	nextTID uint32   // next Linux TID
	workers int      // pool threads created so far

	heap        Heap
	accel       AccelStats
	steps       []time.Duration // all recent step latencies, oldest first
	session     Session
	started     time.Time
	allocGrowth uint64 // bytes allocated since the last map
}

// FakeVMID is the ID of the fake source's VM.
const FakeVMID = "emulator-5554:4242"

// FakeStepPeriod is how often an automatic FakeSource steps.
const FakeStepPeriod = 500 * time.Millisecond

const (
	fakeGCEvery   = 6  // steps between heap maps
	fakeRecent    = 60 // RecentSteps length
	fakeLatWindow = 400
)

// NewFakeSource returns a fake source that takes a step every
// FakeStepPeriod of wall-clock time, lazily, whenever it is asked for data.
func NewFakeSource(seed int64) *FakeSource {
	return newFake(seed, FakeStepPeriod)
}

// NewManualFakeSource returns a fake source that changes only when Advance
// is called.
func NewManualFakeSource(seed int64) *FakeSource {
	return newFake(seed, 0)
}

func newFake(seed int64, period time.Duration) *FakeSource {
	s := &FakeSource{period: period, now: time.Now, rng: rand.New(rand.NewPCG(uint64(seed), 0x6a647770)), nextID: 1, nextTID: 4242}
	now := s.now()
	s.last, s.started = now, now
	for _, name := range []string{"main", "Runtime worker thread 0", "Signal Catcher", "ADB-JDWP Connection Control Thread", "HeapTaskDaemon", "ReferenceQueueDaemon", "FinalizerDaemon", "FinalizerWatchdogDaemon", "Binder:4242_1", "Binder:4242_2", "Binder:4242_3", "Profile Saver", "RenderThread", "OkHttp ConnectionPool", "Okio Watchdog", "AsyncTask #1"} {
		s.spawn(name)
	}
	for range 3 {
		s.spawnWorker()
	}
	s.session = Session{ID: 1, Debugger: "127.0.0.1:51234", VM: FakeVMID, Started: now}
	s.accel.Enabled = true
	s.remap()
	return s
}

func (s *FakeSource) spawn(name string) {
	daemon := name != "main" && s.rng.IntN(3) > 0
	s.threads = append(s.threads, Thread{ID: s.nextID, TID: s.nextTID, Name: name, Status: "wait", Daemon: daemon})
	s.nextID++
	s.nextTID += 1 + uint32(s.rng.IntN(7))
}

func (s *FakeSource) spawnWorker() {
	s.workers++
	s.spawn(fmt.Sprintf("pool-1-thread-%d", s.workers))
}

// Advance takes n steps.
func (s *FakeSource) Advance(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.step()
	}
}

// catchUp takes the automatic steps that are due. Callers hold mu.
func (s *FakeSource) catchUp() {
	if s.period <= 0 {
		return
	}
	now := s.now()
	due := int(now.Sub(s.last) / s.period)
	if due <= 0 {
		return
	}
	if due > 20 { // after a long pause, do not replay it all
		due = 20
		s.last = now
	} else {
		s.last = s.last.Add(time.Duration(due) * s.period)
	}
	for range due {
		s.step()
	}
}

var fakeStates = []string{"running", "running", "native", "wait", "wait", "timed-wait", "monitor"}

func (s *FakeSource) step() {
	s.tick++
	r := s.rng
	for i := range s.threads {
		t := &s.threads[i]
		if r.IntN(100) < 12 {
			t.Status = fakeStates[r.IntN(len(fakeStates))]
		}
		switch t.Status {
		case "running":
			t.UTime += 1 + uint32(r.IntN(25))
			t.STime += uint32(r.IntN(6))
		case "native":
			t.STime += 1 + uint32(r.IntN(4))
		}
	}
	// Worker churn: a new pool thread now and then, the oldest retiring
	// when there are many.
	if s.tick%2 == 0 && r.IntN(3) > 0 {
		s.spawnWorker()
	}
	var pool []int
	for i, t := range s.threads {
		if len(t.Name) > 5 && t.Name[:5] == "pool-" {
			pool = append(pool, i)
		}
	}
	if len(pool) > 6 {
		s.threads = slices.Delete(s.threads, pool[0], pool[0]+1)
	}

	// Accelerator: a couple of steps per tick, most answered from cache.
	for range 1 + r.IntN(2) {
		hits := uint64(8 + r.IntN(30))
		misses := uint64(1 + r.IntN(8))
		s.accel.Hits += hits
		s.accel.Misses += misses
		s.accel.RoundTripsSaved += hits - hits/8
		s.accel.Wasted += uint64(r.IntN(4))
		if r.IntN(5) == 0 {
			s.accel.Belays++
		}
		ms := 25 + 60*math.Exp(r.NormFloat64()*0.45)
		if r.IntN(12) == 0 {
			ms += 150 + float64(r.IntN(200)) // a slow one: cache miss storm
		}
		s.steps = append(s.steps, time.Duration(ms*float64(time.Millisecond)))
		s.accel.Steps++
	}
	if len(s.steps) > fakeLatWindow {
		s.steps = slices.Delete(s.steps, 0, len(s.steps)-fakeLatWindow)
	}
	s.accel.StepLatency = percentiles(s.steps)
	s.accel.RecentSteps = s.steps[max(0, len(s.steps)-fakeRecent):]

	s.session.Packets += uint64(80 + r.IntN(200))
	s.session.Bytes += uint64(4000 + r.IntN(20000))

	// Heap: allocation grows between GCs; every few steps a new map.
	s.allocGrowth += uint64(20000 + r.IntN(60000))
	s.heap.Info.Allocated += s.allocGrowth
	s.heap.Info.Objects += s.allocGrowth / 40
	s.heap.Info.Updated = s.now()
	if s.tick%fakeGCEvery == 0 {
		s.remap()
	}
}

// fakeKinds are allocated kinds with weights, and size ranges in units.
var fakeKinds = []struct {
	kind     HeapKind
	weight   int
	min, max int
}{
	{HeapObject, 46, 2, 8},
	{HeapArray2, 16, 3, 24},
	{HeapArray4, 14, 2, 40},
	{HeapArray1, 10, 2, 160},
	{HeapClass, 6, 12, 90},
	{HeapArray8, 4, 2, 30},
	{HeapNative, 3, 4, 120},
	{HeapUnknown, 1, 2, 6},
}

// remap draws a new heap map, as the VM would send after a GC.
func (s *FakeSource) remap() {
	r := s.rng
	const unit = 8
	var segs []HeapSegment
	var allocated, objects uint64
	add := func(runs *[]HeapRun, k HeapKind, units int) {
		*runs = append(*runs, HeapRun{Kind: k, Units: uint32(units)})
		if k != HeapFree {
			allocated += uint64(units) * unit
			objects++
		}
	}
	pick := func() (HeapKind, int) {
		w := r.IntN(100)
		for _, fk := range fakeKinds {
			if w < fk.weight {
				return fk.kind, fk.min + r.IntN(fk.max-fk.min+1)
			}
			w -= fk.weight
		}
		return HeapObject, 4
	}
	// Main space: a dense part of class objects (the boot image), then
	// allocation regions each favouring one kind (as thread-local buffers
	// fill with what their thread allocates), holes that grow and shrink
	// from one map to the next, and free space at the end.
	total := 380000 + r.IntN(60000)
	var runs []HeapRun
	frag := 6 + int(s.tick/fakeGCEvery)%4*5
	used, regionEnd := 0, 0
	var theme HeapKind
	for used < total*4/5 {
		if used >= regionEnd {
			regionEnd = used + 1500 + r.IntN(6000)
			theme, _ = pick()
		}
		var k HeapKind
		var n int
		switch {
		case used < total/10:
			k, n = HeapClass, 10+r.IntN(80)
			if r.IntN(3) == 0 {
				k, n = pick()
			}
		case r.IntN(100) < frag:
			k, n = HeapFree, 1+r.IntN(40)
			if r.IntN(30) == 0 {
				n = 400 + r.IntN(2500)
			}
		case r.IntN(100) < 55:
			k, n = pick()
			for k != theme {
				k, n = pick()
			}
		default:
			k, n = pick()
		}
		add(&runs, k, n)
		used += n
	}
	add(&runs, HeapFree, total-used)
	segs = append(segs, HeapSegment{Start: 0x12c00000, UnitSize: unit, Runs: runs})

	// Large object space: a few big arrays (bitmaps, buffers) with gaps.
	runs = nil
	for range 5 + r.IntN(5) {
		k := HeapArray1
		if r.IntN(4) == 0 {
			k = HeapArray4
		}
		add(&runs, k, 1536+r.IntN(9000))
		if r.IntN(3) == 0 {
			add(&runs, HeapFree, 512+r.IntN(4000))
		}
	}
	segs = append(segs, HeapSegment{Start: 0x70000000, UnitSize: unit, Runs: runs})

	var size uint64
	for _, sg := range segs {
		for _, rn := range sg.Runs {
			size += uint64(rn.Units) * unit
		}
	}
	now := s.now()
	s.heap = Heap{
		Info:       HeapInfo{Updated: now, MaxSize: 256 << 20, Size: size, Allocated: allocated, Objects: objects},
		Generation: s.heap.Generation + 1,
		Updated:    now,
		Segments:   segs,
	}
	s.allocGrowth = 0
}

// VMs implements Source.
func (s *FakeSource) VMs() []VM {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.catchUp()
	return []VM{{
		ID: FakeVMID, Addr: "127.0.0.1:8600", Ident: "Dalvik v2.1.0", App: "com.example.shop",
		PID: 4242, DDM: true, Debuggers: []string{s.session.Debugger}, Kind: "adb", Simulated: true,
		Threads: ThreadsDDM, ThreadsNote: "from DDM thread notifications and status polls", Heap: HeapDDM,
	}}
}

// Threads implements Source.
func (s *FakeSource) Threads(vm string) []Thread {
	if vm != FakeVMID {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.catchUp()
	return slices.Clone(s.threads)
}

// Heap implements Source. The segments are shared with later calls but
// never modified: a new map replaces them.
func (s *FakeSource) Heap(vm string) Heap {
	if vm != FakeVMID {
		return Heap{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.catchUp()
	return s.heap
}

// Accel implements Source.
func (s *FakeSource) Accel() AccelStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.catchUp()
	a := s.accel
	a.RecentSteps = slices.Clone(a.RecentSteps)
	return a
}

// Sessions implements Source.
func (s *FakeSource) Sessions() []Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.catchUp()
	return []Session{s.session}
}

// Stack implements StackSource: the main thread (DDM ID 1) has a stack,
// as if DDMS had asked for it (STKL).
func (s *FakeSource) Stack(vm, thread string) (ThreadStack, bool) {
	if vm != FakeVMID || thread != "1" {
		return ThreadStack{}, false
	}
	return ThreadStack{Thread: "1", Name: "main", From: ThreadsDDM, Note: "from the VM's DDM stack trace (STKL)", Frames: []StackFrame{
		{Class: "android.os.MessageQueue", Method: "nativePollOnce", Line: -2},
		{Class: "android.os.Looper", Method: "loop", Source: "Looper.java", Line: 193},
		{Class: "com.example.shop.MainActivity", Method: "onCreate", Source: "MainActivity.java", Line: 42},
	}}, true
}

// CurrentStack implements StackSource: no stop, no current stack.
func (s *FakeSource) CurrentStack(string) (ThreadStack, bool) { return ThreadStack{}, false }
