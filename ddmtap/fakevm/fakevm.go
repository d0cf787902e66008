// Package fakevm owns a fake DDM-speaking VM for tests, demos and
// benchmarks: a loopback JDWP endpoint with a small JDWP command subset
// (VirtualMachine Version, IDSizes, AllThreads, Suspend, Resume, Dispose)
// and the DDM client behaviour of three profiles — the layouts of the 2007
// draft design, a Dalvik-era VM and a modern ART that ignores heap
// requests — generating thread churn and heap walks at configurable rates,
// deterministically for a seed. Real DDM tools (ddmlib, adblib) talk to
// the dalvik and art profiles; see Design2007 for why not to that one.
package fakevm

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sort"
	"sync"
	"time"

	"github.com/jdwpaccel/jdwpaccel/ddm"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/rs/zerolog"
)

// Profile selects the DDM behaviour.
type Profile int

const (
	// Design2007 speaks the payload layouts of the March 2007 draft design
	// document ("Dalvik VM Debug Monitor", docs/debugmon.html), which no
	// shipped VM used: a HELO reply that ends at the app name, and THST in
	// the draft layout (u4 count; per thread u4 id, u1 state 1..8, u1
	// suspended); no FEAT, STKL, MPRQ or allocation tracking; unknown
	// requests get an empty reply. Request semantics are the shipped ones,
	// not the draft's: THST is polled and answered (the draft's u4
	// interval for periodic pushes was never built) and the HPIF summary
	// comes as a VM-originated chunk (the draft: in the reply). The
	// profile exists to exercise decoders on the draft layouts. No version
	// of ddmlib or adblib reads the draft THST (ddmlib 25.2.2 misreads its
	// u4 count as header length, entry length and count, then throws
	// BufferUnderflowException): point real tools at Dalvik or ART.
	Design2007 Profile = iota
	// Dalvik is a Dalvik-era VM (Android 4.4): HELO with user id, ABI and
	// JVM flags, FEAT, THST in the real layout, HPIF/HPSG/NHSG heap walks,
	// allocation tracking; null handler results give an empty reply.
	Dalvik
	// ART is a modern ART (adbconnection, Android 12+): HELO up to the
	// package name, FEAT, threads; no heap handlers; null results and
	// unhandled requests (THEN, HPIF, HPSG, HPGC...) get no reply at all
	// until a non-DDM packet loads the JDWP agent, then an empty reply.
	// That is ART's own behaviour since Android 9: its adbconnection
	// plugin handles DDM without the agent and, when the chunk handler
	// returns nothing, sends no reply "to match historical behavior"
	// (adbconnection.cc, HandleDataWithoutAgent); the first packet of
	// another command set loads the agent (AttachJdwpAgent), whose DDM
	// extension answers such requests with an empty reply. So a proxy
	// must not send such a VM a JDWP command of its own while only a DDM
	// client (ddmlib, adblib) is attached: the VM would load its agent and
	// answer the client what it never answers directly.
	ART
)

// Profiles lists the profile names accepted by ParseProfile.
var Profiles = []string{"design2007", "dalvik", "art"}

func (p Profile) String() string {
	if p >= 0 && int(p) < len(Profiles) {
		return Profiles[p]
	}
	return "unknown"
}

// ParseProfile maps a name of Profiles to a Profile.
func ParseProfile(s string) (Profile, error) {
	for i, n := range Profiles {
		if n == s {
			return Profile(i), nil
		}
	}
	return 0, fmt.Errorf("fakevm: unknown profile %q (want one of %v)", s, Profiles)
}

// Element is one heap allocation or free gap for an explicit heap layout.
type Element struct {
	State uint8 // §4.1 state byte without the partial bit
	Units uint32
}

// Config configures a VM. Zero values take the defaults.
type Config struct {
	Profile Profile
	Seed    uint64
	PID     uint32 // default 4242
	AppName string // default "com.example.fake"
	// Threads is the number of threads besides main at start (0: 3,
	// negative: none).
	Threads int
	// ChurnInterval is the period of thread births and deaths (0: none).
	ChurnInterval time.Duration
	// GCInterval is the period of garbage collections (0: only on HPGC).
	GCInterval time.Duration
	// HeapObjects is the number of objects a heap walk reports (default 500).
	HeapObjects int
	// Heap, if set, is the exact heap layout instead of a generated one.
	Heap []Element
	// WaitForDebugger makes the VM send WAIT before its HELO reply until a
	// non-DDM packet arrives, like Debug.waitForDebugger().
	WaitForDebugger bool
	// Now is the clock for HPIF timestamps (time.Now by default).
	Now    func() time.Time
	Logger zerolog.Logger
}

// Stats is what a test can check about the VM.
type Stats struct {
	Connections      int
	DebuggerAttached bool           // a non-DDM packet arrived on the current connection
	NonDDMPackets    int            // over all connections
	DDMRequests      map[string]int // by chunk type, over all connections
	LiveThreads      int
	Threads          map[uint32]string // live threads: DDM id → name
	GCs              int
	// DDM is what the current connection has enabled (zero without one):
	// the VM keeps these per connection and forgets them when it closes.
	DDM Settings
}

// Settings are a connection's DDM notification settings, as the last
// THEN, HPIF, HPSG and NHSG requests left them.
type Settings struct {
	ThreadNotify bool  // THEN
	HPIFWhen     uint8 // 0 never, 2 next GC, 3 every GC (1 is one-shot)
	HPSGWhen     uint8 // 0 off, 1 every GC
	HPSGWhat     uint8 // 0 HPSG, 1 HPSO
	NHSGWhen     uint8
}

// Thread is one row of the VM's thread table, as THST reports it.
type Thread struct {
	ID           uint32
	Name         string
	Status       uint8
	TID          uint32
	UTime, STime uint32
	Daemon       bool
}

type thread struct {
	id           uint32
	name         string
	status       uint8
	tid          uint32
	utime, stime uint32
	daemon       bool
}

// VM is a fake VM serving one JDWP connection at a time.
type VM struct {
	cfg Config
	ln  net.Listener

	mu       sync.Mutex // guards everything below
	rnd      *rand.Rand
	threads  map[uint32]*thread
	nextTID  uint32
	conn     *vmConn // current connection or nil
	stats    Stats
	waiting  bool
	objCount int
}

// vmConn is the state of one connection (reset by the VM when it closes).
type vmConn struct {
	c         net.Conn
	wmu       sync.Mutex // guards writes to c
	bw        *bufio.Writer
	nextID    uint32
	notify    bool
	hpifWhen  uint8
	hpsgWhen  uint8
	hpsgWhat  uint8
	nhsgWhen  uint8
	agent     bool // a non-DDM packet arrived
	allocTrak bool
}

// Listen starts a VM on addr (use "127.0.0.1:0").
func Listen(addr string, cfg Config) (*VM, error) {
	if cfg.PID == 0 {
		cfg.PID = 4242
	}
	if cfg.AppName == "" {
		cfg.AppName = "com.example.fake"
	}
	if cfg.Threads == 0 {
		cfg.Threads = 3
	}
	if cfg.HeapObjects <= 0 {
		cfg.HeapObjects = 500
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	vm := &VM{
		cfg: cfg, ln: ln,
		rnd:     rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		threads: make(map[uint32]*thread),
		waiting: cfg.WaitForDebugger,
		stats:   Stats{DDMRequests: map[string]int{}},
	}
	vm.addThread("main", false)
	names := []string{"Signal Catcher", "FinalizerDaemon", "ReferenceQueueDaemon", "HeapTaskDaemon", "Binder:1", "Binder:2"}
	for i := 0; i < cfg.Threads; i++ {
		vm.addThread(names[i%len(names)], i%3 != 2)
	}
	return vm, nil
}

// Addr is the VM's JDWP address.
func (vm *VM) Addr() string { return vm.ln.Addr().String() }

// Stats returns a copy of the VM's counters.
func (vm *VM) Stats() Stats {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	s := vm.stats
	s.DDMRequests = make(map[string]int, len(vm.stats.DDMRequests))
	for k, v := range vm.stats.DDMRequests {
		s.DDMRequests[k] = v
	}
	s.LiveThreads = len(vm.threads)
	s.Threads = make(map[uint32]string, len(vm.threads))
	for id, t := range vm.threads {
		s.Threads[id] = t.name
	}
	if vc := vm.conn; vc != nil {
		s.DebuggerAttached = vc.agent
		s.DDM = Settings{ThreadNotify: vc.notify, HPIFWhen: vc.hpifWhen, HPSGWhen: vc.hpsgWhen, HPSGWhat: vc.hpsgWhat, NHSGWhen: vc.nhsgWhen}
	}
	return s
}

// Threads returns the live threads by DDM id.
func (vm *VM) Threads() []Thread {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	out := make([]Thread, 0, len(vm.threads))
	for _, id := range vm.threadIDs() {
		t := vm.threads[id]
		out = append(out, Thread{ID: t.id, Name: t.name, Status: t.status, TID: t.tid, UTime: t.utime, STime: t.stime, Daemon: t.daemon})
	}
	return out
}

// addThread creates a thread; vm.mu must be held (or the VM unshared).
func (vm *VM) addThread(name string, daemon bool) *thread {
	id := uint32(1)
	for vm.threads[id] != nil {
		id++ // ART reuses the smallest free thin-lock id
	}
	vm.nextTID++
	t := &thread{id: id, name: name, status: 1, tid: vm.cfg.PID + vm.nextTID - 1, utime: 10 * id, stime: 5 * id, daemon: daemon}
	if id == 1 {
		t.tid = vm.cfg.PID
	}
	vm.threads[id] = t
	return t
}

// Serve accepts connections until ctx ends or the listener fails. Like
// ART, a second connection while one is up is accepted and closed.
func (vm *VM) Serve(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		vm.ln.Close()
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		vm.ticker(ctx)
	}()
	for {
		c, err := vm.ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		vm.mu.Lock()
		busy := vm.conn != nil
		vm.mu.Unlock()
		if busy {
			c.Close()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			stop := context.AfterFunc(ctx, func() { c.Close() })
			defer stop()
			vm.serveConn(c)
		}()
	}
}

func (vm *VM) serveConn(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	if err := jdwp.ReadHandshake(br); err != nil {
		return
	}
	if _, err := c.Write([]byte(jdwp.Handshake)); err != nil {
		return
	}
	vc := &vmConn{c: c, bw: bufio.NewWriter(c)}
	vm.mu.Lock()
	if vm.conn != nil {
		vm.mu.Unlock()
		return
	}
	vm.conn = vc
	vm.stats.Connections++
	vm.mu.Unlock()
	defer func() {
		vm.mu.Lock()
		vm.conn = nil // the VM forgets notification settings (§2.2)
		vm.mu.Unlock()
	}()
	r := jdwp.NewReader(br, 0)
	for {
		p, err := r.Next()
		if err != nil {
			return
		}
		if p.IsReply() {
			continue
		}
		if p.Cmd() == jdwp.CmdDDMChunk {
			if !vm.ddm(vc, p) {
				return
			}
			continue
		}
		vm.jdwpCommand(vc, p)
	}
}

// send writes one packet; it is dropped if the connection failed.
func (vc *vmConn) send(p jdwp.Packet) {
	vc.wmu.Lock()
	defer vc.wmu.Unlock()
	vc.bw.Write(p) //nolint:errcheck // a dead connection ends its reader
	vc.bw.Flush()  //nolint:errcheck
}

// chunk sends a VM-originated DDM chunk; vm.mu must be held.
func (vm *VM) chunk(vc *vmConn, p ddm.Payload) {
	vc.nextID++
	id := 0x10000000 + vc.nextID
	if vm.cfg.Profile == ART {
		id = 0x80000000 | vc.nextID
	}
	vc.send(ddm.AppendCommand(nil, id, p))
}

func (vm *VM) jdwpCommand(vc *vmConn, p jdwp.Packet) {
	vm.mu.Lock()
	vc.agent = true
	vm.waiting = false
	vm.stats.NonDDMPackets++
	w := jdwp.BodyWriter{Sizes: jdwp.IDSizes{FieldID: 8, MethodID: 8, ObjectID: 8, ReferenceTypeID: 8, FrameID: 8}}
	code := jdwp.ErrorCode(0)
	switch p.Cmd() {
	case jdwp.Cmd{Set: jdwp.SetVirtualMachine, Cmd: 1}: // Version
		w.String("fake " + vm.cfg.Profile.String() + " VM")
		w.Int32(1)
		w.Int32(6)
		w.String("0")
		w.String("Dalvik")
	case jdwp.CmdIDSizes:
		w.Buf = jdwp.AppendIDSizes(w.Buf, w.Sizes)
	case jdwp.Cmd{Set: jdwp.SetVirtualMachine, Cmd: 4}: // AllThreads
		ids := vm.threadIDs()
		w.Int32(int32(len(ids)))
		for _, id := range ids {
			w.ObjectID(0x1000 + uint64(id))
		}
	case jdwp.Cmd{Set: jdwp.SetVirtualMachine, Cmd: 6}, // Dispose
		jdwp.Cmd{Set: jdwp.SetVirtualMachine, Cmd: 8}, // Suspend
		jdwp.Cmd{Set: jdwp.SetVirtualMachine, Cmd: 9}: // Resume
	default:
		code = jdwp.ErrorNotImplemented
	}
	vm.mu.Unlock()
	vc.send(jdwp.AppendReply(nil, p.ID(), code, w.Buf))
}

func (vm *VM) threadIDs() []uint32 {
	ids := make([]uint32, 0, len(vm.threads))
	for id := range vm.threads {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

var errNoHandler = errors.New("no handler")

// ddm handles a (199,1) command: the first chunk only, like every VM.
// It returns false when the VM exits (EXIT).
func (vm *VM) ddm(vc *vmConn, p jdwp.Packet) bool {
	it := ddm.NewChunks(p.Body())
	c, ok := it.Next()
	if !ok {
		vm.nullReply(vc, p.ID())
		return true
	}
	vm.mu.Lock()
	vm.stats.DDMRequests[c.Type.String()]++
	reply, err := vm.handle(vc, c)
	vm.mu.Unlock()
	switch {
	case c.Type == ddm.TypeEXIT && err == nil:
		return false
	case err != nil || reply == nil:
		vm.nullReply(vc, p.ID())
	default:
		vc.send(ddm.AppendReply(nil, p.ID(), reply))
	}
	return true
}

// nullReply answers a request whose handler returned nothing (§5.2).
func (vm *VM) nullReply(vc *vmConn, id uint32) {
	if vm.cfg.Profile == ART {
		vm.mu.Lock()
		agent := vc.agent
		vm.mu.Unlock()
		if !agent {
			return // adbconnection without the agent: no reply at all
		}
	}
	vc.send(jdwp.AppendReply(nil, id, 0, nil))
}

// handle runs a DDM request; vm.mu is held. It returns the reply chunk,
// nil for a null result, or errNoHandler.
func (vm *VM) handle(vc *vmConn, c ddm.Chunk) (ddm.Payload, error) {
	prof := vm.cfg.Profile
	switch c.Type {
	case ddm.TypeHELO:
		if vm.waiting {
			vm.chunk(vc, ddm.U1{T: ddm.TypeWAIT, V: 0})
		}
		return vm.hello(), nil
	case ddm.TypeFEAT:
		switch prof {
		case Dalvik:
			return ddm.StringList{T: ddm.TypeFEAT, Items: []string{"hprof-heap-dump-streaming", "hprof-heap-dump", "method-trace-profiling-streaming", "method-trace-profiling"}}, nil
		case ART:
			return ddm.StringList{T: ddm.TypeFEAT, Items: []string{"hprof-heap-dump-streaming", "hprof-heap-dump", "method-sample-profiling", "method-trace-profiling-streaming", "method-trace-profiling", "view-hierarchy"}}, nil
		}
		return nil, errNoHandler
	case ddm.TypeTHEN:
		if len(c.Data) < 1 {
			return nil, errNoHandler
		}
		vc.notify = c.Data[0] != 0
		if vc.notify {
			for _, id := range vm.threadIDs() {
				t := vm.threads[id]
				vm.chunk(vc, ddm.ThreadName{T: ddm.TypeTHCR, ID: t.id, Name: t.name})
			}
		}
		return nil, nil
	case ddm.TypeTHST:
		return vm.threadStatus(), nil
	case ddm.TypeSTKL:
		if len(c.Data) < 4 || prof == Design2007 {
			return nil, errNoHandler
		}
		id := uint32(c.Data[0])<<24 | uint32(c.Data[1])<<16 | uint32(c.Data[2])<<8 | uint32(c.Data[3])
		if vm.threads[id] == nil {
			return ddm.Fail{Code: 1, Message: "Stack trace unavailable"}, nil
		}
		return ddm.StackTrace{ThreadID: id, Frames: []ddm.StackFrame{
			{Class: "java.lang.Object", Method: "wait", Line: -2},
			{Class: "com.example.fake.Worker", Method: "run", File: "Worker.java", Line: 42},
		}}, nil
	case ddm.TypeHPGC:
		vm.gc(vc)
		return nil, nil
	case ddm.TypeEXIT:
		return nil, nil
	case ddm.TypeMPRQ:
		if prof == Design2007 {
			return nil, errNoHandler
		}
		return ddm.U1{T: ddm.TypeMPRQ, V: 0}, nil // no method profiling running
	}
	if prof == ART {
		return nil, errNoHandler // Android 12+: no heap, allocation or HPROF handlers
	}
	switch c.Type {
	case ddm.TypeHPIF:
		if len(c.Data) < 1 || c.Data[0] > 3 {
			return ddm.Fail{Code: 1, Message: "Unsupported HPIF what"}, nil
		}
		if c.Data[0] == 1 {
			vm.chunk(vc, vm.heapInfo(1))
		} else {
			vc.hpifWhen = c.Data[0]
		}
		return nil, nil
	case ddm.TypeHPSG, ddm.TypeNHSG:
		if len(c.Data) < 2 || c.Data[0] > 1 || c.Data[1] > 1 {
			return ddm.Fail{Code: 1, Message: "Unsupported " + c.Type.String() + " what/when"}, nil
		}
		if c.Type == ddm.TypeHPSG {
			vc.hpsgWhen, vc.hpsgWhat = c.Data[0], c.Data[1]
		} else {
			vc.nhsgWhen = c.Data[0]
		}
		return nil, nil
	}
	if prof == Design2007 {
		return nil, errNoHandler
	}
	switch c.Type {
	case ddm.TypeREAE:
		if len(c.Data) > 0 {
			vc.allocTrak = c.Data[0] != 0
		}
		return nil, nil
	case ddm.TypeREAQ:
		b := uint8(0)
		if vc.allocTrak {
			b = 1
		}
		return ddm.U1{T: ddm.TypeREAQ, V: b}, nil
	case ddm.TypeREAL:
		return ddm.Allocations{Entries: []ddm.Allocation{
			{Size: 24, TID: 1, Class: "Ljava/lang/String;", Frames: []ddm.AllocFrame{{Class: "Lcom/example/fake/Worker;", Method: "run", File: "Worker.java", Line: 42}}},
		}}, nil
	}
	return nil, errNoHandler
}

func (vm *VM) hello() ddm.Hello {
	h := ddm.Hello{ClientVersion: 1, PID: vm.cfg.PID, AppName: vm.cfg.AppName}
	switch vm.cfg.Profile {
	case Design2007:
		h.VMIdent = "Dalvik v0.9"
	case Dalvik:
		h.VMIdent = "Dalvik v1.6.0"
		h.Optional, h.ABI, h.JVMFlags = 3, "armeabi-v7a", "CheckJNI=false"
	case ART:
		h.VMIdent = "Dalvik v2.1.0"
		h.Optional, h.ABI, h.JVMFlags, h.PackageName = 5, "64-bit (arm64)", "CheckJNI=false", vm.cfg.AppName
	}
	return h
}

func (vm *VM) threadStatus() ddm.ThreadStatus {
	ts := ddm.ThreadStatus{Design: vm.cfg.Profile == Design2007}
	for _, id := range vm.threadIDs() {
		t := vm.threads[id]
		ts.Threads = append(ts.Threads, ddm.ThreadStat{ID: t.id, Status: t.status, TID: t.tid, UTime: t.utime, STime: t.stime, Daemon: t.daemon})
	}
	return ts
}

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

// ticker drives thread churn and periodic GCs.
func (vm *VM) ticker(ctx context.Context) {
	var churn, gc <-chan time.Time
	if vm.cfg.ChurnInterval > 0 {
		t := time.NewTicker(vm.cfg.ChurnInterval)
		defer t.Stop()
		churn = t.C
	}
	if vm.cfg.GCInterval > 0 {
		t := time.NewTicker(vm.cfg.GCInterval)
		defer t.Stop()
		gc = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-churn:
			vm.Churn()
		case <-gc:
			vm.GC()
		}
	}
}

// GC runs a collection now (as the periodic timer does).
func (vm *VM) GC() {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	vm.gc(vm.conn)
}

// Churn runs one step of thread activity now: a thread is born or dies,
// and CPU times and states move on.
func (vm *VM) Churn() {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	vc := vm.conn
	notify := vc != nil && vc.notify
	maxStatus := 9 // Dalvik's internal states, 9 = suspended
	switch vm.cfg.Profile {
	case Design2007:
		maxStatus = 8 // the draft's states; suspension is a separate flag
	case ART:
		maxStatus = 4 // ART maps its states onto JDWP-like 0..4
	}
	for _, id := range vm.threadIDs() {
		t := vm.threads[id]
		t.utime += uint32(vm.rnd.IntN(5))
		t.stime += uint32(vm.rnd.IntN(3))
		t.status = uint8(1 + vm.rnd.IntN(maxStatus))
	}
	if len(vm.threads) > 1 && vm.rnd.IntN(2) == 0 {
		ids := vm.threadIDs()[1:] // main never dies
		id := ids[vm.rnd.IntN(len(ids))]
		delete(vm.threads, id)
		if notify {
			vm.chunk(vc, ddm.U4{T: ddm.TypeTHDE, V: id})
		}
		return
	}
	vm.objCount++
	t := vm.addThread(fmt.Sprintf("Worker-%d", vm.objCount), vm.rnd.IntN(2) == 0)
	if notify {
		vm.chunk(vc, ddm.ThreadName{T: ddm.TypeTHCR, ID: t.id, Name: t.name})
		if vm.cfg.Profile == ART && vm.rnd.IntN(3) == 0 {
			t.name += " (renamed)"
			vm.chunk(vc, ddm.ThreadName{T: ddm.TypeTHNM, ID: t.id, Name: t.name})
		}
	}
}
