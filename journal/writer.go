package journal

import (
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
)

// sessState is what one file's writer knows about a session: the
// session as the journal knows it (sess) and the file's own state. Only
// the writer goroutine touches it.
type sessState struct {
	*sess
	perfettoNamed map[int]bool // Perfetto tids named in the current file
	tcp           tcpState     // pcapng flow state
}

// encoder turns records into one file format. Each method appends to dst
// and returns it; s is nil for records of no session.
type encoder interface {
	begin(dst []byte, w *writer) []byte
	record(dst []byte, w *writer, s *sessState, r *Record) []byte
	end(dst []byte, w *writer, final bool) []byte
}

// writer is the state of the writer goroutine.
type writer struct {
	j        *Journal
	sink     sink
	enc      encoder
	buf      []byte // encoding buffer, reused
	rec      Record // the record being encoded, reused
	events   []string
	raw      []byte // the packet bytes of the slot being encoded (a view)
	wireID   uint32
	thread   Uint64
	sessions map[uint64]*sessState
	order    []uint64 // session IDs in start order, for re-announcing
	comp     jdwp.Composite
	fileIdx  int
	dropSeen uint64
	dirty    bool
	err      error // first write error
	failed   uint64
}

func newWriter(j *Journal, s sink, f Format) *writer {
	w := &writer{j: j, sink: s, sessions: make(map[uint64]*sessState)}
	switch f {
	case FormatPerfetto:
		w.enc = &perfettoEncoder{}
	case FormatPcapng:
		w.enc = &pcapngEncoder{}
	default:
		w.enc = jsonlEncoder{}
	}
	w.emit(w.enc.begin(w.buf[:0], w))
	return w
}

// now is the time since the journal's start, for records that carry no
// packet time.
func (w *writer) now() int64 { return time.Since(w.j.start).Nanoseconds() }

// emit writes encoded bytes and counts errors; the journal keeps going
// after a write error (it may be transient) but reports the first one.
func (w *writer) emit(b []byte) {
	w.buf = b
	if len(b) == 0 {
		return
	}
	w.dirty = true
	if _, err := w.sink.Write(b); err != nil {
		w.writeFailed(err)
		return
	}
	w.j.metrics.bytes.Add(float64(len(b)))
}

func (w *writer) writeFailed(err error) {
	w.failed++
	w.j.metrics.writeErrors.Inc()
	if w.err == nil {
		w.err = err
	}
	if w.failed == 1 || w.failed%1000 == 0 {
		w.j.log.Error().Err(err).Uint64("failures", w.failed).Msg("cannot write the journal; records are being lost")
	}
}

func (w *writer) flush() {
	if !w.dirty {
		return
	}
	w.dirty = false
	if err := w.sink.Flush(); err != nil {
		w.writeFailed(err)
	}
}

// maybeRotate rotates the file after a whole record when it is full.
func (w *writer) maybeRotate() {
	if !w.sink.ShouldRotate() {
		return
	}
	w.emit(w.enc.end(w.buf[:0], w, false))
	if err := w.sink.Rotate(); err != nil {
		w.writeFailed(err)
		return
	}
	w.j.metrics.rotations.Inc()
	w.fileIdx++
	w.emit(w.enc.begin(w.buf[:0], w))
	// Re-announce the sessions still open, so each file stands alone.
	for _, id := range w.order {
		s := w.sessions[id]
		w.rec = Record{Type: TypeSessionStart, Session: id, T: s.startT, Debugger: s.debugger, VM: s.vm, User: s.user, Continued: true}
		if s.sizes.Known() {
			w.rec.IDSizes = idSizesRecord(s.sizes)
		}
		w.emit(w.enc.record(w.buf[:0], w, s, &w.rec))
	}
}

func idSizesRecord(z jdwp.IDSizes) *IDSizesRecord {
	return &IDSizesRecord{FieldID: z.FieldID, MethodID: z.MethodID, ObjectID: z.ObjectID, ReferenceTypeID: z.ReferenceTypeID, FrameID: z.FrameID}
}

// dropCheck writes a dropped record when records were dropped since the
// last check.
func (w *writer) dropCheck() {
	d := w.j.dropped.Load()
	if d == w.dropSeen {
		return
	}
	w.rec = Record{Type: TypeDropped, T: w.now(), DroppedCount: d - w.dropSeen, DroppedTotal: d}
	w.dropSeen = d
	w.emit(w.enc.record(w.buf[:0], w, nil, &w.rec))
}

func (w *writer) session(id uint64) *sessState {
	s, ok := w.sessions[id]
	if !ok {
		s = &sessState{sess: w.j.session(id), perfettoNamed: make(map[int]bool, 8)}
		w.sessions[id] = s
		w.order = append(w.order, id)
	}
	return s
}

func (w *writer) endSession(id uint64) {
	delete(w.sessions, id)
	for i, o := range w.order {
		if o == id {
			w.order = append(w.order[:i], w.order[i+1:]...)
			break
		}
	}
}

// slot encodes one queued record, paired by the journal (Journal.slot);
// t is its time since the journal's start.
func (w *writer) slot(sl *slot, t int64) {
	switch sl.typ {
	case slotSessionStart:
		s := w.session(sl.session)
		w.rec = Record{Type: TypeSessionStart, Session: sl.session, T: t, Debugger: sl.debugger, VM: sl.vm, User: sl.user}
		if s.sizes.Known() {
			w.rec.IDSizes = idSizesRecord(s.sizes)
		}
		w.emit(w.enc.record(w.buf[:0], w, s, &w.rec))
	case slotSessionEnd:
		s := w.session(sl.session)
		w.rec = Record{Type: TypeSessionEnd, Session: sl.session, T: t, Err: sl.err,
			PacketsLogged: s.packets, Unanswered: s.nOpen}
		w.emit(w.enc.record(w.buf[:0], w, s, &w.rec))
		w.endSession(sl.session)
	case slotClient:
		w.rec = Record{Type: TypeClient, T: t, VM: sl.vm, Debugger: sl.debugger, Client: sl.client, Role: sl.role, Left: sl.left}
		w.emit(w.enc.record(w.buf[:0], w, nil, &w.rec))
	default:
		w.packet(sl, t)
	}
	w.maybeRotate()
}

func viewOf(o relay.Origin) string {
	switch o {
	case relay.Forwarded:
		return ViewBoth
	case relay.Synthetic:
		return ViewWire
	}
	return ViewDebugger
}

// packet builds and encodes a packet record, with what the journal paired
// it with (Journal.pair).
func (w *writer) packet(sl *slot, t int64) {
	s := w.session(sl.session)
	r := &w.rec
	*r = Record{
		Type: TypePacket, Session: sl.session, T: t,
		View: viewOf(sl.origin), Dir: sl.dir.String(), Kind: sl.kind.String(),
		ID: sl.id, Len: sl.length, Served: sl.origin.String(),
		Events: w.events[:0],
	}
	if sl.wireID != sl.id {
		w.wireID = sl.wireID
		r.WireID = &w.wireID
	}
	b := sl.buf
	w.raw = b
	if rl := w.j.opts.RawLimit; rl > 0 {
		r.Bytes = b[:min(len(b), rl)]
		r.Truncated = len(r.Bytes) < sl.length
	}
	var body []byte
	if len(b) >= jdwp.HeaderSize {
		body = b[jdwp.HeaderSize:]
	}
	cmd := sl.cmd
	isReply := sl.kind == relay.KindReply || sl.kind == relay.KindDebuggerReply
	if isReply && len(b) >= jdwp.HeaderSize {
		code := jdwp.Packet(b).ErrorCode()
		r.Error = uint16(code)
		if code != 0 {
			r.ErrorName = code.String()
		}
	}

	// Pairing (Journal.pair).
	thread, hasThread := sl.thread, sl.hasThread
	switch c := sl.rec; {
	case sl.kind == relay.KindEvent:
		thread, hasThread = w.decodeEvents(r, body, s.sizes)
	case answer(sl.kind) && c != nil:
		r.LatencyNs = t - c.t
		if cmd == (jdwp.Cmd{}) {
			cmd = c.cmd
		}
	}
	if sl.kind == relay.KindReply && sl.latency > 0 {
		r.VMLatencyNs = sl.latency.Nanoseconds()
	}
	r.Set, r.Cmd = uint8(cmd.Set), cmd.Cmd
	if cmd != (jdwp.Cmd{}) {
		r.Name = cmd.String()
	}
	if cmd.Set == jdwp.SetDDM && len(body) >= 4 {
		r.Chunk = chunkType(body)
	}
	if hasThread {
		w.thread = Uint64(thread)
		r.Thread = &w.thread
	}
	w.emit(w.enc.record(w.buf[:0], w, s, r))
	w.events = r.Events[:0]

	// The VM's IDSizes reply taught the journal the sizes: say so.
	if sl.learned {
		w.rec = Record{Type: TypeIDSizes, Session: sl.session, T: t, IDSizes: idSizesRecord(s.sizes)}
		w.emit(w.enc.record(w.buf[:0], w, s, &w.rec))
	}
}

// maxEventNames bounds the event kinds listed for one composite.
const maxEventNames = 32

func (w *writer) decodeEvents(r *Record, body []byte, z jdwp.IDSizes) (uint64, bool) {
	if !z.Known() {
		// Before the IDSizes reply (VM_START comes first) only the first
		// event's kind can be read: it precedes every ID.
		if _, first, ok := jdwp.CompositeHead(body); ok {
			r.Events = append(r.Events, first.String())
		}
		return 0, false
	}
	w.comp.Decode(body, z) //nolint:errcheck // a truncated body still yields its first events
	var thread uint64
	has := false
	for i := range w.comp.Events {
		e := &w.comp.Events[i]
		if len(r.Events) < maxEventNames {
			r.Events = append(r.Events, e.Kind.String())
		}
		if !has && e.Thread != 0 {
			thread, has = e.Thread, true
		}
	}
	return thread, has
}

// chunkType renders a DDM chunk type, or "" when it is not printable.
func chunkType(body []byte) string {
	for _, c := range body[:4] {
		if c < 0x20 || c > 0x7e {
			return ""
		}
	}
	return string(body[:4])
}

// threadOf extracts the thread a command is about, when its layout starts
// with (or puts early) a threadID.
func threadOf(c jdwp.Cmd, body []byte, z jdwp.IDSizes) (uint64, bool) {
	if !z.Known() {
		return 0, false
	}
	off := -1
	switch c.Set {
	case jdwp.SetThreadReference, jdwp.SetStackFrame:
		off = 0
	case jdwp.SetClassType:
		if c.Cmd == 3 || c.Cmd == 4 { // InvokeMethod, NewInstance: clazz, thread
			off = z.ReferenceTypeID
		}
	case jdwp.SetInterfaceType:
		if c.Cmd == 1 { // InvokeMethod: clazz, thread
			off = z.ReferenceTypeID
		}
	case jdwp.SetObjectReference:
		if c.Cmd == 6 { // InvokeMethod: object, thread
			off = z.ObjectID
		}
	}
	n := z.ObjectID
	if off < 0 || len(body) < off+n || n > 8 {
		return 0, false
	}
	var v uint64
	for _, c := range body[off : off+n] {
		v = v<<8 | uint64(c)
	}
	return v, true
}

// close ends the file: records for sessions still open, the trailer, and
// a flush and sync.
func (w *writer) close() error {
	w.emit(w.enc.end(w.buf[:0], w, true))
	if err := w.sink.Close(); err != nil {
		w.writeFailed(err)
	}
	return w.err
}
