package web

import "time"

// Source is what the page shows. The command wires adapters from the relay,
// the DDM tap and the speculator to it; tests use a fake.
//
// Every method must be safe for concurrent use: HTTP handlers call them from
// their own goroutines. Returned slices belong to the caller (the handler
// does not modify them, but may hold them after the call returns), so a
// Source must hand out copies of anything it keeps changing.
// HeapRequester is optionally implemented by a Source whose VMs can be
// asked for a heap picture (DDM HPIF and HPSG); the page shows a button
// for it.
type HeapRequester interface {
	RequestHeap(vm string) error
}

type Source interface {
	// VMs are the VMs jdwpaccel is connected to, in a stable order.
	VMs() []VM
	// Threads are a VM's threads as the DDM thread monitor last saw them,
	// or nil for an unknown VM or a VM without thread data.
	Threads(vm string) []Thread
	// Heap is a VM's last complete heap picture (HPIF + HPST..HPEN).
	Heap(vm string) Heap
	// Accel are the accelerator's (speculator's) figures since start.
	Accel() AccelStats
	// Sessions are the debugger sessions, open ones first.
	Sessions() []Session
}

// VM is one debuggee.
type VM struct {
	// ID names the VM in URLs (/api/v1/vms/{id}/...); URL-safe, stable for
	// the VM's lifetime.
	ID string `json:"id"`
	// Addr is where jdwpaccel reaches the VM's JDWP port.
	Addr string `json:"addr"`
	// Ident is the VM's self-description from the DDM HELO reply
	// ("Dalvik v2.1.0"); empty when the VM is not DDM-aware.
	Ident string `json:"ident,omitempty"`
	// App is the process (application) name from HELO/APNM.
	App string `json:"app,omitempty"`
	// PID is the VM's process ID from HELO, 0 if unknown.
	PID uint32 `json:"pid,omitempty"`
	// DDM says whether the VM answered HELO (Android); false for HotSpot.
	DDM bool `json:"ddm"`
	// Debuggers are the remote addresses of the debuggers attached to the VM
	// through jdwpaccel.
	Debuggers []string `json:"debuggers"`
	// Status is a short human-readable note ("thread updates not supported
	// by this VM"), or empty.
	Status string `json:"status,omitempty"`
	// Kind is how jdwpaccel found the VM: "static" (--vm HOST:PORT),
	// "scan" (--vm scan:), "adb" (--vm adb:), or another word a source
	// chooses ("demo"); empty when unknown.
	Kind string `json:"kind,omitempty"`
	// Simulated says the VM is not a real one (a fake VM serving the page
	// in the demo); the page badges it.
	Simulated bool `json:"simulated,omitempty"`
	// Threads says where the VM's thread data comes from: ThreadsDDM,
	// ThreadsJDWP or ThreadsNone; ThreadsNote says it in words ("from the
	// debugger's conversation, as of stop 12").
	Threads     string `json:"threads"`
	ThreadsNote string `json:"threads_note,omitempty"`
	// Heap says what the VM can show of its heap: HeapDDM (it speaks DDM
	// and can be asked: POST .../heap/request), HeapUnsupported (it speaks
	// DDM but left heap requests unanswered) or HeapNone (no DDM);
	// HeapNote says it in words.
	Heap     string `json:"heap"`
	HeapNote string `json:"heap_note,omitempty"`
}

// Values of VM.Threads.
const (
	ThreadsDDM  = "ddm"  // DDM thread notifications and status polls
	ThreadsJDWP = "jdwp" // the debugger's own JDWP conversation, read passively
	ThreadsNone = "none" // nothing yet
)

// Values of VM.Heap.
const (
	HeapDDM         = "ddm"
	HeapUnsupported = "unsupported"
	HeapNone        = "none"
)

// Thread is one row of the thread table (DDM THCR/THNM/THST).
type Thread struct {
	// ID is the DDM thread ID (ART's thin-lock ID; main = 1), not a JDWP
	// object ID.
	ID uint32 `json:"id"`
	// TID is the Linux thread ID.
	TID uint32 `json:"tid"`
	// Name is the thread's name.
	Name string `json:"name"`
	// Status is the DDMS label of the thread's state: see [ThreadStatusLabel].
	Status string `json:"status"`
	// UTime and STime are user and system CPU time in clock ticks
	// (USER_HZ, 100 per second on Android and Linux).
	UTime uint32 `json:"utime"`
	STime uint32 `json:"stime"`
	// Daemon is the THST isDaemon flag.
	Daemon bool `json:"daemon"`

	// For threads read from the JDWP conversation (VM.Threads "jdwp"):
	// Object is the JDWP threadID in hex ("0x1a2"; ID and TID are 0),
	// Suspended the suspend status, Frames the frame count (0: unknown),
	// Top the top frame ("com.x.Main.run:42", raw IDs when the debugger
	// never resolved them), AsOfStop the stop the figures date from, and
	// Current marks the thread of the latest stop.
	Object    string `json:"object,omitempty"`
	Suspended bool   `json:"suspended,omitempty"`
	Frames    int    `json:"frames,omitempty"`
	Top       string `json:"top,omitempty"`
	AsOfStop  int    `json:"as_of_stop,omitempty"`
	Current   bool   `json:"current,omitempty"`
}

// ThreadStack is one thread's stack as the page shows it.
type ThreadStack struct {
	// Thread is the thread's key: its DDM ID in decimal, or its JDWP
	// threadID in hex ("0x1a2").
	Thread string `json:"thread"`
	Name   string `json:"name,omitempty"`
	// From says where the frames come from: "ddm" (a DDM STKL reply) or
	// "jdwp" (the frames the debugger last read); Note says it in words.
	From     string       `json:"from"`
	Note     string       `json:"note,omitempty"`
	AsOfStop int          `json:"as_of_stop,omitempty"`
	Frames   []StackFrame `json:"frames"`
}

// StackFrame is one frame of a ThreadStack. Line is -1 when unknown, -2
// in native code (a DDM frame, or a JDWP location whose code index is -1). Class and Method are empty when the
// debugger never resolved them; the IDs (hex) are then what is known.
type StackFrame struct {
	Class    string `json:"class,omitempty"`
	Method   string `json:"method,omitempty"`
	Source   string `json:"source,omitempty"`
	Line     int    `json:"line"`
	ClassID  string `json:"class_id,omitempty"`
	MethodID string `json:"method_id,omitempty"`
	Index    uint64 `json:"index,omitempty"`
}

// StackSource is optionally implemented by a Source that can show a
// thread's stack (GET /api/v1/vms/{vm}/threads/{thread}/stack, and the
// current thread's in each snapshot).
type StackSource interface {
	// Stack is the stack of the thread keyed thread (ThreadStack.Thread)
	// of vm, and whether there is one.
	Stack(vm, thread string) (ThreadStack, bool)
	// CurrentStack is the stack of the thread of vm's latest stop, if
	// known; each snapshot carries it.
	CurrentStack(vm string) (ThreadStack, bool)
}

// threadStatusLabels are DDMS's labels, indexed by the THST status byte.
var threadStatusLabels = [...]string{"zombie", "running", "timed-wait", "monitor", "wait", "init", "start", "native", "vmwait", "suspended"}

// ThreadStatusLabel is the DDMS label of a THST status byte ("running",
// "wait", ...), "unknown" when out of range.
func ThreadStatusLabel(status uint8) string {
	if int(status) < len(threadStatusLabels) {
		return threadStatusLabels[status]
	}
	return "unknown"
}

// HeapKind is the DDMS heap statistics bucket of an element: 1 for free
// space, 2+kind for allocated space, as ddmuilib's heap panel keys them.
// It is also the colour index of the heap map.
type HeapKind uint8

// Heap kinds, in DDMS order.
const (
	HeapExpansion HeapKind = iota // heap expansion area (not in any segment)
	HeapFree                      // free
	HeapObject                    // data object
	HeapClass                     // class object
	HeapArray1                    // 1-byte array (byte[], boolean[])
	HeapArray2                    // 2-byte array (short[], char[])
	HeapArray4                    // 4-byte array (Object[], int[], float[])
	HeapArray8                    // 8-byte array (long[], double[])
	HeapUnknown                   // unknown object
	HeapNative                    // non-Java object
	numHeapKinds
)

var heapKindLabels = [numHeapKinds]string{
	"heap expansion area", "free", "data object", "class object",
	"1-byte array", "2-byte array", "4-byte array", "8-byte array",
	"unknown object", "non-Java object",
}

// String is the DDMS label of k.
func (k HeapKind) String() string {
	if k < numHeapKinds {
		return heapKindLabels[k]
	}
	return "invalid"
}

// Heap is a VM's heap: the HPIF summary and the HPSG segment map.
type Heap struct {
	// Info is the last HPIF summary; zero Updated means none yet.
	Info HeapInfo
	// Generation changes with every completed segment map (HPEN); the page
	// refetches the map when it does. 0 means no map yet.
	Generation uint64
	// Updated is when the current map was completed.
	Updated time.Time
	// Segments are the map's pieces in address order.
	Segments []HeapSegment
	// Stats and Histogram, when set, are the source's own figures over the
	// map's elements (a source that merges adjacent runs of one kind must
	// set them); otherwise SummarizeHeap derives them from Segments, taking
	// each run as one element. Histogram counts are indexed by
	// HistogramBin.
	Stats     []HeapKindStats
	Histogram []HeapHistoSeries
	// Truncated says the source cut the map short; the statistics are
	// whole.
	Truncated bool
}

// HeapInfo is an HPIF heap summary. Sizes are bytes.
type HeapInfo struct {
	Updated   time.Time
	MaxSize   uint64
	Size      uint64
	Allocated uint64
	Objects   uint64
}

// HeapSegment is one HPSG piece: runs of allocation units from Start.
type HeapSegment struct {
	Start    uint64
	UnitSize uint32 // bytes per allocation unit, usually 8
	// Runs are the elements (objects and free gaps) in order, with partial
	// (continued) runs already joined, so each run is one element.
	Runs []HeapRun
}

// HeapRun is one element of a heap segment, or (see Heap.Stats) several
// adjacent elements of one kind.
type HeapRun struct {
	Kind  HeapKind
	Units uint32
}

// AccelStats are the speculative cache's figures since start.
type AccelStats struct {
	// Enabled says whether speculation is on.
	Enabled bool
	// State, when not empty, is what the page's badge says instead of
	// "speculating" or "pass-through" (a far end gone quiet on a fast
	// link), and StateNote explains it.
	State, StateNote string
	// Hits are debugger commands answered from the cache; Misses went to
	// the VM.
	Hits, Misses uint64
	// Belays are debugger commands that arrived while the proxy's own,
	// identical speculative command was still on its way to the VM: the
	// proxy held the debugger's command back (belayed it) instead of
	// sending it again, and answered it with that speculation's reply when
	// it came. The debugger waits for the rest of that round trip only, so
	// each counts as a round trip saved, like a hit.
	Belays uint64
	// RoundTripsSaved are VM round trips the debugger did not wait for.
	RoundTripsSaved uint64
	// Wasted are speculative commands whose replies were never used.
	Wasted uint64
	// Steps is how many debugger steps (resume to stop) were timed, and
	// StepLatency their latency percentiles.
	Steps       uint64
	StepLatency Percentiles
	// RecentSteps are the latest steps' latencies, oldest first (bounded by
	// the source); may be nil, then the page charts the p50 history.
	RecentSteps []time.Duration
	// StepBreakdowns are the same steps with where their time went, and
	// LastStep the latest with its commands; both may be empty.
	StepBreakdowns []StepBreakdown
	LastStep       *StepDetail
	// Run names the run these figures belong to ("" when the source has
	// no runs). When it changes, the handler starts the history over: a
	// source starting a new run (a benchmark's next mode, the demo's kept
	// VM) marks it this way.
	Run string
}

// Percentiles summarise a latency distribution.
type Percentiles struct {
	P50, P90, P99, Max time.Duration
}

// Session is one debugger connection through jdwpaccel.
type Session struct {
	ID       uint64
	Debugger string // the debugger's remote address
	VM       string // the VM's ID (see VM.ID)
	Started  time.Time
	Ended    time.Time // zero while open
	Packets  uint64    // packets relayed both ways
	Bytes    uint64    // bytes relayed both ways
	Run      string    // the run the session belongs to, when the source has runs
	// Clients are the JDWP clients sharing the session's VM connection
	// now (package share), in attach order; empty when the source does
	// not say.
	Clients []Client
}

// Client is one of the JDWP clients sharing a session: a debugger that
// controls the VM, or a tool that observes it.
type Client struct {
	Number   uint64    // numbers the VM's clients in attach order
	Addr     string    // its remote address
	Role     string    // "controller" or "observer"
	ReadOnly bool      // it attached where every client observes
	Since    time.Time // when it attached
	Requests int       // its event requests
	Denied   int64     // its commands refused by its role
}
