package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Format is a journal file format.
type Format string

// Formats.
const (
	// FormatJSONLines is JSON Lines with the schema of SCHEMA.md; the only
	// format "jdwpaccel journal" reads back.
	FormatJSONLines Format = "jsonl"
	// FormatPerfetto is Chrome trace-event JSON that ui.perfetto.dev and
	// chrome://tracing open: one process per session.
	FormatPerfetto Format = "perfetto"
	// FormatPcapng is a pcapng capture of the debugger view as TCP, which
	// Wireshark's JDWP dissector decodes (server port 9009).
	FormatPcapng Format = "pcapng"
)

// Defaults and internal limits.
const (
	defaultRawLimit    = 4096
	defaultQueue       = 8192
	defaultMaxFiles    = 5
	defaultFlushPeriod = 200 // milliseconds
	minCopy            = 64  // bytes of a packet always copied, for decoding
	maxPcapSegment     = 65000
	perfettoEventsTid  = 1
	perfettoDbgTid0    = 100
	perfettoWireTid0   = 1000
	perfettoMaxLanes   = 64
)

// ErrUnknownFormat is returned for a format name or file extension that
// names no format.
var ErrUnknownFormat = errors.New("journal: unknown format")

// ErrSameFile is returned by OpenFiles for a file given twice.
var ErrSameFile = errors.New("journal: the same file given twice")

// ParseFormat accepts "jsonl" (also "json", "ndjson"), "perfetto" (also
// "trace", "chrome") and "pcapng" (also "pcap").
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(s) {
	case "jsonl", "json", "ndjson":
		return FormatJSONLines, nil
	case "perfetto", "trace", "chrome":
		return FormatPerfetto, nil
	case "pcapng", "pcap":
		return FormatPcapng, nil
	}
	return "", fmt.Errorf("%w %q (want jsonl, perfetto or pcapng)", ErrUnknownFormat, s)
}

// FormatFromPath picks a format from a file name: .pcapng / .pcap,
// .perfetto.json / .trace.json / .trace, and .jsonl / .ndjson / .json.
func FormatFromPath(path string) (Format, error) {
	base := strings.ToLower(filepath.Base(path))
	switch {
	case strings.HasSuffix(base, ".pcapng"), strings.HasSuffix(base, ".pcap"):
		return FormatPcapng, nil
	case strings.HasSuffix(base, ".perfetto.json"), strings.HasSuffix(base, ".trace.json"),
		strings.HasSuffix(base, ".trace"), strings.HasSuffix(base, ".perfetto"):
		return FormatPerfetto, nil
	case strings.HasSuffix(base, ".jsonl"), strings.HasSuffix(base, ".ndjson"), strings.HasSuffix(base, ".json"):
		return FormatJSONLines, nil
	}
	return "", fmt.Errorf("%w: cannot tell the format of %q from its extension; use .jsonl, .perfetto.json or .pcapng, or say which", ErrUnknownFormat, path)
}

// Options configure a Journal.
type Options struct {
	// Path is the journal file. Rotated files are Path.1 (newest) to
	// Path.MaxFiles (oldest).
	Path string
	// Format is the file format; empty means FormatFromPath(Path).
	Format Format
	// MaxBytes rotates the file when it reaches this size; 0 never
	// rotates.
	MaxBytes int64
	// MaxFiles is how many rotated files are kept (5 when zero).
	MaxFiles int
	// RawLimit is how many bytes of each packet the journal keeps
	// (4096 when zero; negative keeps none, only the decoded header).
	RawLimit int
	// QueueSize is how many records the queue between the relay and the
	// writer holds (8192 when zero); beyond it records are dropped.
	QueueSize int
	// FlushInterval bounds how long a record waits in the writer's
	// buffer (200 ms when zero).
	FlushInterval time.Duration
	// Version is the jdwpaccel version written in headers.
	Version string
	// Logger receives the journal's own logs (drops, write errors).
	Logger zerolog.Logger
	// Registerer, if not nil, receives the journal's metrics.
	Registerer prometheus.Registerer
}

// slot types.
const (
	slotPacket uint8 = iota
	slotSessionStart
	slotSessionEnd
	slotClient
)

// slot is one queued record. The ring owns every slot and its buf; a slot
// between head and head+count belongs to the writer until it releases it.
type slot struct {
	typ     uint8
	dir     relay.Direction
	kind    relay.Kind
	origin  relay.Origin
	session uint64
	id      uint32
	wireID  uint32
	cmd     jdwp.Cmd
	length  int
	time    time.Time
	latency time.Duration
	buf     []byte // copy of the packet's first bytes, ID set to the debugger's
	// rec is a command's cmdRec, or the one of the command an answer
	// answers (nil if none); thread, hasThread and learned are set by
	// Journal.pair.
	rec       *cmdRec
	thread    uint64
	hasThread bool
	learned   bool
	// Session start and end, and client records.
	debugger, vm string
	// Client records only (Journal.Client).
	client     uint64
	role, left string
	user       string // split mode's far end: the session's user (sessionUser)
	sizes      jdwp.IDSizes
	err        string
}

// Journal records every packet of every session it observes. It is a
// relay.Observer and relay.SessionObserver; share one among all sessions.
type Journal struct {
	opts    Options
	log     zerolog.Logger
	start   time.Time
	keep    int // bytes of each packet copied into a slot
	metrics *metrics

	mu     sync.Mutex // guards ring, head, count, closed and free
	ring   []slot
	head   int
	count  int
	closed bool
	free   []*cmdRec // recycled cmdRecs (newRec, recycle)

	dropped atomic.Uint64 // records dropped because the ring was full
	wake    chan struct{} // capacity 1: the ring became non-empty
	quit    chan struct{} // closed by Close
	done    chan struct{} // closed when the writer has finished
	werr    error         // each file's first write error; written by the writer, read after done

	ws       []*writer        // one per file; owned by the writer goroutine
	sessions map[uint64]*sess // by session ID; owned by the writer goroutine
	freed    []*cmdRec        // released by the batch being written; owned by the writer goroutine
}

// Open creates the journal file (replacing any file at Path, after rotating
// it away if MaxBytes is set) and starts the writer.
func Open(opts Options) (*Journal, error) {
	return OpenFiles(opts, File{Path: opts.Path, Format: opts.Format})
}

// File is one file of a journal.
type File struct {
	Path string
	// Format is the file's format; empty means FormatFromPath(Path).
	Format Format
}

// OpenFiles is Open for several files at once, each in its own format (one
// run can write .jsonl, .perfetto.json and .pcapng): the journal copies
// each packet once, and its writer encodes it into every file. Each file
// rotates on its own by opts.MaxBytes. opts.Path and opts.Format are
// ignored. Every file's format is checked before any file is created.
func OpenFiles(opts Options, files ...File) (*Journal, error) {
	if len(files) == 0 {
		return nil, errors.New("journal: no file")
	}
	files = slices.Clone(files) // formats are filled in below
	seen := map[string]bool{}
	for i := range files {
		f := &files[i]
		if f.Format == "" {
			ff, err := FormatFromPath(f.Path)
			if err != nil {
				return nil, err
			}
			f.Format = ff
		}
		if _, err := ParseFormat(string(f.Format)); err != nil {
			return nil, err
		}
		abs, err := filepath.Abs(f.Path)
		if err != nil {
			return nil, fmt.Errorf("journal: %w", err)
		}
		if seen[abs] {
			return nil, fmt.Errorf("%w: %s", ErrSameFile, f.Path)
		}
		seen[abs] = true
	}
	sinks := make([]sink, 0, len(files))
	formats := make([]Format, 0, len(files))
	for _, f := range files {
		s, err := openFileSink(f.Path, opts.MaxBytes, maxFiles(opts))
		if err != nil {
			for _, o := range sinks {
				o.Close() //nolint:errcheck // already failing
			}
			return nil, err
		}
		sinks = append(sinks, s)
		formats = append(formats, f.Format)
	}
	opts.Path, opts.Format = files[0].Path, files[0].Format
	return start(opts, sinks, formats), nil
}

func maxFiles(opts Options) int {
	if opts.MaxFiles <= 0 {
		return defaultMaxFiles
	}
	return opts.MaxFiles
}

func start(opts Options, sinks []sink, formats []Format) *Journal {
	if opts.QueueSize <= 0 {
		opts.QueueSize = defaultQueue
	}
	if opts.RawLimit == 0 {
		opts.RawLimit = defaultRawLimit
	}
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = defaultFlushPeriod * time.Millisecond
	}
	if opts.Version == "" {
		opts.Version = "(devel)"
	}
	keep := max(opts.RawLimit, minCopy)
	j := &Journal{
		opts:    opts,
		log:     opts.Logger,
		start:   time.Now(),
		keep:    keep,
		metrics: newMetrics(opts.Registerer),
		ring:    make([]slot, opts.QueueSize),
		wake:    make(chan struct{}, 1),
		quit:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	j.fillFree()
	for i, s := range sinks {
		j.ws = append(j.ws, newWriter(j, s, formats[i]))
	}
	go j.run()
	return j
}

// Start is the journal's time origin: record times are relative to it.
func (j *Journal) Start() time.Time { return j.start }

// Dropped is the number of records dropped so far because the writer could
// not keep up.
func (j *Journal) Dropped() uint64 { return j.dropped.Load() }

// reserve returns the next free slot with j.mu held, or nil (mu released)
// when the record must be dropped.
func (j *Journal) reserve() *slot {
	j.mu.Lock()
	if j.closed || j.count == len(j.ring) {
		j.mu.Unlock()
		j.dropped.Add(1)
		j.metrics.dropped.Inc()
		return nil
	}
	i := j.head + j.count
	if i >= len(j.ring) {
		i -= len(j.ring)
	}
	return &j.ring[i]
}

// commit publishes the reserved slot and releases j.mu.
func (j *Journal) commit() {
	j.count++
	first := j.count == 1
	j.mu.Unlock()
	if first {
		select {
		case j.wake <- struct{}{}:
		default:
		}
	}
}

// Observe queues a copy of the frame. It never blocks on I/O: when the
// queue is full the record is dropped and counted.
func (j *Journal) Observe(s *relay.Session, f *relay.Frame) {
	sl := j.reserve()
	if sl == nil {
		return
	}
	p := f.Packet
	sl.typ = slotPacket
	sl.dir, sl.kind, sl.origin = f.Dir, f.Kind, f.Origin
	sl.session = s.ID
	sl.id = f.ID
	sl.cmd = f.Cmd
	sl.length = len(p)
	sl.time = f.Time
	sl.latency = f.Latency
	sl.wireID = f.ID
	sl.rec = nil
	switch f.Kind {
	case relay.KindCommand, relay.KindVMCommand:
		sl.rec = j.newRec()
		f.SetData(dataSlot, sl.rec) // back with the answer (relay.Frame.Data)
	case relay.KindReply, relay.KindDebuggerReply:
		sl.rec, _ = f.Data(dataSlot).(*cmdRec)
	}
	n := min(len(p), j.keep)
	if cap(sl.buf) < n {
		// Grown once per slot to the largest packet it held (up to keep).
		sl.buf = make([]byte, 0, max(n, min(j.keep, 256)))
	}
	sl.buf = append(sl.buf[:0], p[:n]...)
	if len(p) >= jdwp.HeaderSize {
		sl.wireID = p.ID()
		if f.Origin != relay.Synthetic && sl.wireID != f.ID {
			binary.BigEndian.PutUint32(sl.buf[4:], f.ID)
		}
	}
	j.commit()
}

// SessionStart queues a session start record.
func (j *Journal) SessionStart(s *relay.Session) {
	sl := j.reserve()
	if sl == nil {
		return
	}
	*sl = slot{typ: slotSessionStart, session: s.ID, time: time.Now(), buf: sl.buf[:0],
		debugger: addrString(s.DebuggerAddr), vm: addrString(s.VMAddr), user: sessionUser(s)}
	sl.sizes, _ = s.IDSizes()
	j.commit()
}

// sessionUser is the name of the user on the far end of split mode (what
// its preamble agreed, its user in the session's DebuggerInfo), or
// "".
func sessionUser(s *relay.Session) string {
	return s.DebuggerInfo().User
}

// SessionEnd queues a session end record.
func (j *Journal) SessionEnd(s *relay.Session, err error) {
	sl := j.reserve()
	if sl == nil {
		return
	}
	*sl = slot{typ: slotSessionEnd, session: s.ID, time: time.Now(), buf: sl.buf[:0]}
	if err != nil {
		sl.err = err.Error()
	}
	j.commit()
}

// Client queues a record of a client of a shared VM attaching (left "")
// or leaving (left says how): its number on the VM named vm, its address
// and its role.
func (j *Journal) Client(vm string, number uint64, addr, role, left string) {
	sl := j.reserve()
	if sl == nil {
		return
	}
	*sl = slot{typ: slotClient, time: time.Now(), buf: sl.buf[:0], vm: vm, client: number, debugger: addr, role: role, left: left}
	j.commit()
}

// addrString renders an address, tolerating a session without connections.
func addrString(f func() net.Addr) (s string) {
	defer func() {
		if recover() != nil {
			s = ""
		}
	}()
	a := f()
	if a == nil {
		return ""
	}
	return a.String()
}

// Close stops accepting records, writes every queued one, ends the files
// (trailer, flush, sync) and returns each file's first write error. Call it after
// the relay's sessions have ended.
func (j *Journal) Close() error {
	j.mu.Lock()
	already := j.closed
	j.closed = true
	j.mu.Unlock()
	if !already {
		close(j.quit)
	}
	<-j.done
	return j.werr
}

// run is the writer goroutine: it drains the ring in batches.
func (j *Journal) run() {
	defer close(j.done)
	tick := time.NewTicker(j.opts.FlushInterval)
	defer tick.Stop()
	var lastWarn time.Time
	var warned uint64
	for {
		if d := j.dropped.Load(); d != warned && time.Since(lastWarn) >= time.Second {
			j.log.Warn().Uint64("dropped_total", d).Uint64("dropped", d-warned).
				Msg("journal cannot keep up with the relay: records DROPPED (the journal marks where); raise --journal-queue or write to a faster disk")
			warned, lastWarn = d, time.Now()
		}
		j.mu.Lock()
		head, n := j.head, j.count
		j.mu.Unlock()
		if n > 0 {
			for _, w := range j.ws {
				w.dropCheck()
			}
			for k := range n {
				i := head + k
				if i >= len(j.ring) {
					i -= len(j.ring)
				}
				j.slot(&j.ring[i])
			}
			j.metrics.records.Add(float64(n))
			j.mu.Lock()
			j.head = (j.head + n) % len(j.ring)
			j.count -= n
			j.recycle()
			j.mu.Unlock()
			continue
		}
		select {
		case <-j.wake:
		case <-tick.C:
			for _, w := range j.ws {
				w.dropCheck()
				w.flush()
			}
		case <-j.quit:
			j.mu.Lock()
			n := j.count
			j.mu.Unlock()
			if n > 0 {
				continue // drain first; Observe adds nothing after closed
			}
			if d := j.dropped.Load(); d != warned {
				j.log.Warn().Uint64("dropped_total", d).Msg("journal dropped records")
			}
			var errs []error
			for _, w := range j.ws {
				w.dropCheck()
				errs = append(errs, w.close())
			}
			j.werr = errors.Join(errs...)
			return
		}
	}
}
