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
	"math/rand/v2"
	"net"
	"sort"
	"sync"
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/rs/zerolog"
)

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
