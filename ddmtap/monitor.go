package ddmtap

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/jdwpaccel/jdwpaccel/ddm"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/rs/zerolog"
)

// DDMState says whether a VM speaks DDM.
type DDMState uint8

const (
	// DDMUnknown: not asked yet, or HELO not answered.
	DDMUnknown DDMState = iota
	// DDMYes: the VM answered HELO with a HELO chunk.
	DDMYes
	// DDMNo: the VM answered HELO with a JDWP error (HotSpot: 99); it gets
	// no further DDM traffic.
	DDMNo
)

func (s DDMState) String() string {
	return [...]string{"unknown", "yes", "no"}[min(int(s), 2)]
}

// Support says whether a DDM feature answers.
type Support uint8

const (
	// SupportUnknown: not probed yet.
	SupportUnknown Support = iota
	// Supported: the VM answered.
	Supported
	// Unsupported: the VM left a probe unanswered past its timeout (modern
	// ART ignores heap and, on recent releases, thread requests).
	Unsupported
)

func (s Support) String() string {
	return [...]string{"unknown", "supported", "unsupported"}[min(int(s), 2)]
}

// Features the tap probes.
const (
	FeatThreadNotify = iota // THEN → THCR
	FeatThreadStatus        // THST reply
	FeatHeapInfo            // HPIF(1) → HPIF chunk
	FeatHeapSegments        // HPSG → HPST..HPEN
	FeatNativeHeap          // NHSG → NHST..NHEN
	numFeatures
)

// FeatureNames are the Snapshot.Support keys by feature.
var FeatureNames = [numFeatures]string{"thread_notify", "thread_status", "heap_info", "heap_segments", "native_heap"}

// Identity is what HELO, APNM, WAIT and FEAT said about the VM.
type Identity struct {
	DDM                DDMState
	ClientVersion      uint32
	PID                uint32
	VMIdent            string
	AppName            string
	PackageName        string
	UserID             uint32
	HasUserID          bool
	ABI                string
	JVMFlags           string
	NativeDebuggable   bool
	Stage              string
	WaitingForDebugger bool
	Features           []string
}

// Thread is one row of the thread table.
type Thread struct {
	ID         uint32 // DDM thread id (not a JDWP objectID)
	Name       string
	Status     uint8
	StatusName string
	TID        uint32
	UTime      uint32 // clock ticks
	STime      uint32
	Daemon     bool
	Alive      bool
	Created    time.Time // when THCR (or the first THST) arrived
	Died       time.Time // when THDE arrived; zero while alive
	Updated    time.Time // last THCR/THNM/THST touching it
	Stack      []ddm.StackFrame
}

// Snapshot is a copy of a Monitor's state; it shares nothing mutable with
// the monitor.
type Snapshot struct {
	Name             string
	Connected        bool
	DebuggerAttached bool
	Identity         Identity
	Support          map[string]string
	Threads          []Thread // live, by ID
	DeadThreads      []Thread // most recent last, bounded
	HeapInfo         []ddm.HeapSummary
	HeapInfoTime     time.Time
	Heap             *HeapMap // last complete Java heap walk, or nil
	NativeHeap       *HeapMap // last complete native heap walk, or nil
	Chunks           uint64
	Errors           uint64
	Version          uint64 // increases with every change
}

// StatusNames are the DDMS labels of THST status values (index = status).
var StatusNames = []string{"zombie", "running", "timed-wait", "monitor", "wait", "init", "start", "native", "vmwait", "suspended"}

// StatusName labels a THST status value.
func StatusName(s uint8) string {
	if int(s) < len(StatusNames) {
		return StatusNames[s]
	}
	return "unknown"
}

const maxDeadThreads = 256

// Monitor is the DDM state of one VM. It survives connections and
// debugger sessions. Safe for concurrent use.
type Monitor struct {
	name    string
	log     zerolog.Logger
	metrics *Metrics

	mu        sync.Mutex // guards everything below
	connected bool
	debugger  bool
	id        Identity
	support   [numFeatures]Support
	threads   map[uint32]*Thread
	epoch     uint64            // connection epoch; THCR stamps threads with it
	seen      map[uint32]uint64 // thread id → epoch of its last THCR
	dead      []Thread
	heapInfo  []ddm.HeapSummary
	heapTime  time.Time
	java, nat heapBuilder
	heap      *HeapMap
	native    *HeapMap
	chunks    uint64
	errors    uint64
	version   uint64
	changed   chan struct{} // closed and replaced on every change
	requester func() error  // asks the VM for heap data; nil when not connected
	heapOn    bool          // RequestHeap was called: keep heap updates on across reconnects
	onThread  func(ThreadChange)
}

// ThreadChange is a change of a monitor's thread table that DDM told of.
type ThreadChange struct {
	Kind ThreadChangeKind
	ID   uint32 // DDM thread id
	Name string
	Time time.Time
}

// ThreadChangeKind says what became of a thread.
type ThreadChangeKind uint8

// Thread changes: a thread the monitor did not know was created (THCR), a
// known thread got another name (THCR or THNM), a thread died (THDE, or
// not re-announced on a new connection).
const (
	ThreadCreated ThreadChangeKind = iota + 1
	ThreadRenamed
	ThreadDied
)

// OnThreadChange makes the monitor call fn with each thread change it
// applies from now on (nil: none), after the change and outside its lock,
// on the goroutine that applied it; fn must not block.
func (m *Monitor) OnThreadChange(fn func(ThreadChange)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.onThread = fn
}

// NewMonitor returns an empty monitor for the VM called name (its address).
func NewMonitor(name string, log zerolog.Logger, m *Metrics) *Monitor {
	return &Monitor{
		name:    name,
		log:     log.With().Str(relay.LogVM, name).Logger(),
		metrics: m,
		threads: make(map[uint32]*Thread),
		seen:    make(map[uint32]uint64),
		changed: make(chan struct{}),
	}
}

// Name is the VM's name (address).
func (m *Monitor) Name() string { return m.name }

// bump records a change; m.mu must be held.
func (m *Monitor) bump() {
	m.version++
	close(m.changed)
	m.changed = make(chan struct{})
}

// Snapshot returns a copy of the monitor's state.
func (m *Monitor) Snapshot() Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := Snapshot{
		Name: m.name, Connected: m.connected, DebuggerAttached: m.debugger,
		Identity: m.id, HeapInfo: slices.Clone(m.heapInfo), HeapInfoTime: m.heapTime,
		Heap: m.heap, NativeHeap: m.native, // HeapMaps are immutable once published
		Chunks: m.chunks, Errors: m.errors, Version: m.version,
		DeadThreads: slices.Clone(m.dead),
		Support:     make(map[string]string, numFeatures),
	}
	s.Identity.Features = slices.Clone(m.id.Features)
	for i, st := range m.support {
		s.Support[FeatureNames[i]] = st.String()
	}
	s.Threads = make([]Thread, 0, len(m.threads))
	for _, t := range m.threads {
		c := *t
		c.Stack = slices.Clone(t.Stack)
		s.Threads = append(s.Threads, c)
	}
	slices.SortFunc(s.Threads, func(a, b Thread) int { return int(int64(a.ID) - int64(b.ID)) })
	return s
}

// Wait blocks until cond holds for a snapshot or ctx ends; it returns the
// last snapshot and ctx's error if it ended first.
func (m *Monitor) Wait(ctx context.Context, cond func(Snapshot) bool) (Snapshot, error) {
	for {
		m.mu.Lock()
		ch := m.changed
		m.mu.Unlock()
		s := m.Snapshot()
		if cond(s) {
			return s, nil
		}
		select {
		case <-ctx.Done():
			return m.Snapshot(), ctx.Err()
		case <-ch:
		}
	}
}

// ErrNotConnected is returned by RequestHeap when no DDM connection is up.
var ErrNotConnected = errors.New("ddmtap: no DDM connection to the VM")

// RequestHeap asks the VM for a heap summary now and heap segments at every
// GC, and causes a GC so that the segments come. It does not wait; the
// data shows up in later snapshots (or the features turn unsupported).
func (m *Monitor) RequestHeap() error {
	m.mu.Lock()
	req := m.requester
	m.mu.Unlock()
	if req == nil {
		return ErrNotConnected
	}
	return req()
}

func (m *Monitor) wantHeap() {
	m.mu.Lock()
	m.heapOn = true
	m.mu.Unlock()
}

func (m *Monitor) heapWanted() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.heapOn
}

func (m *Monitor) setRequester(f func() error) {
	m.mu.Lock()
	m.requester = f
	m.mu.Unlock()
}

func (m *Monitor) setConnected(up bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.connected = up
	if up {
		m.epoch++
	}
	m.bump()
}

func (m *Monitor) currentEpoch() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.epoch
}

func (m *Monitor) setDebugger(attached bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.debugger == attached && !(attached && m.id.WaitingForDebugger) {
		return
	}
	m.debugger = attached
	if attached {
		m.id.WaitingForDebugger = false // non-DDM traffic releases waitForDebugger
	}
	m.bump()
}

func (m *Monitor) setDDM(s DDMState) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.id.DDM != s {
		m.id.DDM = s
		m.bump()
	}
}

// DDM says whether the VM speaks DDM.
func (m *Monitor) DDM() DDMState {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.id.DDM
}

func (m *Monitor) setSupport(f int, s Support) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.support[f] != s {
		m.support[f] = s
		m.bump()
	}
}

// supportOf reads a feature's state.
func (m *Monitor) supportOf(f int) Support {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.support[f]
}

// countError counts and logs a DDM problem; never fatal.
func (m *Monitor) countError(reason Reason, err error, msg string) {
	m.metrics.error(reason)
	m.mu.Lock()
	m.errors++
	m.mu.Unlock()
	m.log.Warn().Err(err).Str(relay.LogReason, string(reason)).Msg(msg)
}
