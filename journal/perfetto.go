package journal

import (
	"strconv"
)

// perfettoEncoder writes the Chrome trace-event JSON array format, which
// ui.perfetto.dev and chrome://tracing open. Each session is a process;
// its threads are tracks: the debugger view (one lane per command in
// flight, spans from command to reply, named with how they were served),
// the proxy's own traffic (speculation spans) and VM events as instants.
type perfettoEncoder struct {
	first bool // no event written yet in the current file
}

func (e *perfettoEncoder) begin(dst []byte, w *writer) []byte {
	e.first = true
	for _, s := range w.sessions {
		clear(s.perfettoNamed)
	}
	dst = append(dst, "[\n"...)
	dst = e.open(dst, "M", "process_name", 0, 0, -1)
	dst = append(dst, `,"args":{"name":"jdwpaccel journal"}}`...)
	return dst
}

func (e *perfettoEncoder) end(dst []byte, w *writer, final bool) []byte {
	// At the very end, commands still waiting are drawn up to now, marked
	// unanswered (at a rotation, their replies come in the next file).
	if final {
		now := w.now()
		for _, id := range w.order {
			dst = e.unanswered(dst, w.sessions[id], now)
		}
	}
	return append(dst, "\n]\n"...)
}

// open starts an event object: ph, name, pid, tid and ts (when ts >= 0).
func (e *perfettoEncoder) open(dst []byte, ph, name string, pid uint64, tid int, ts int64) []byte {
	if !e.first {
		dst = append(dst, ",\n"...)
	}
	e.first = false
	dst = append(dst, `{"ph":"`...)
	dst = append(dst, ph...)
	dst = append(dst, `","name":`...)
	dst = appendJSONString(dst, name)
	dst = append(dst, `,"pid":`...)
	dst = strconv.AppendUint(dst, pid, 10)
	dst = append(dst, `,"tid":`...)
	dst = strconv.AppendInt(dst, int64(tid), 10)
	if ts >= 0 {
		dst = append(dst, `,"ts":`...)
		dst = appendMicros(dst, ts)
	}
	return dst
}

// appendMicros renders nanoseconds as microseconds with three decimals.
func appendMicros(dst []byte, ns int64) []byte {
	if ns < 0 {
		dst = append(dst, '-')
		ns = -ns
	}
	dst = strconv.AppendInt(dst, ns/1000, 10)
	f := ns % 1000
	return append(dst, '.', byte('0'+f/100), byte('0'+f/10%10), byte('0'+f%10))
}

// track names a tid of a session the first time it is used in a file.
func (e *perfettoEncoder) track(dst []byte, s *sessState, tid int) []byte {
	if s.perfettoNamed[tid] {
		return dst
	}
	s.perfettoNamed[tid] = true
	var name string
	switch {
	case tid == perfettoEventsTid:
		name = "VM events, DDM (to debugger)"
	case tid >= perfettoWireTid0:
		name = "proxy's own traffic (speculation, DDM)"
		if k := tid - perfettoWireTid0; k > 0 {
			name += " #" + strconv.Itoa(k+1)
		}
	default:
		name = "debugger view"
		if k := tid - perfettoDbgTid0; k > 0 {
			name += " #" + strconv.Itoa(k+1)
		}
	}
	dst = e.open(dst, "M", "thread_name", s.id, tid, -1)
	dst = append(dst, `,"args":{"name":`...)
	dst = appendJSONString(dst, name)
	dst = append(dst, "}}"...)
	dst = e.open(dst, "M", "thread_sort_index", s.id, tid, -1)
	dst = append(dst, `,"args":{"sort_index":`...)
	dst = strconv.AppendInt(dst, int64(tid), 10)
	return append(dst, "}}"...)
}

func servedSuffix(served string) string {
	switch served {
	case ServedCacheHit:
		return " [cache hit]"
	case ServedBelay:
		return " [belay]"
	case ServedSynthetic:
		return " [speculation]"
	case ServedWriteBehind:
		return " [write-behind]"
	}
	return ""
}

func (e *perfettoEncoder) record(dst []byte, w *writer, s *sessState, r *Record) []byte {
	switch r.Type {
	case TypeSessionStart:
		dst = e.open(dst, "M", "process_name", r.Session, 0, -1)
		dst = append(dst, `,"args":{"name":`...)
		dst = appendJSONString(dst, "session "+strconv.FormatUint(r.Session, 10)+": "+r.Debugger+" -> "+r.VM)
		dst = append(dst, "}}"...)
		if !r.Continued {
			dst = e.track(dst, s, perfettoEventsTid)
			dst = e.open(dst, "i", "session start", r.Session, perfettoEventsTid, r.T)
			dst = append(dst, `,"s":"p"}`...)
		}
	case TypeSessionEnd:
		dst = e.unanswered(dst, s, r.T)
		dst = e.track(dst, s, perfettoEventsTid)
		dst = e.open(dst, "i", "session end", r.Session, perfettoEventsTid, r.T)
		dst = append(dst, `,"s":"p","args":{"packets":`...)
		dst = strconv.AppendUint(dst, r.PacketsLogged, 10)
		if r.Err != "" {
			dst = append(dst, `,"err":`...)
			dst = appendJSONString(dst, r.Err)
		}
		dst = append(dst, "}}"...)
	case TypeDropped:
		dst = e.open(dst, "i", "JOURNAL DROPPED "+strconv.FormatUint(r.DroppedCount, 10)+" RECORDS", 0, 0, r.T)
		dst = append(dst, `,"s":"g"}`...)
	case TypeClient:
		what := "client " + strconv.FormatUint(r.Client, 10) + " (" + r.Role + ") " + r.Debugger
		if r.Left != "" {
			what += " left: " + r.Left
		} else {
			what += " attached"
		}
		dst = e.open(dst, "i", what, 0, 0, r.T)
		dst = append(dst, `,"s":"g"}`...)
	case TypePacket:
		dst = e.packet(dst, s, r)
	}
	return dst
}

func (e *perfettoEncoder) packet(dst []byte, s *sessState, r *Record) []byte {
	switch r.Kind {
	case KindCommand:
		return dst // drawn with its reply
	case KindReply:
		if s.matched == nil {
			dst = e.track(dst, s, perfettoEventsTid)
			dst = e.open(dst, "i", "reply without a command: id "+strconv.FormatUint(uint64(r.ID), 10), s.id, perfettoEventsTid, r.T)
			return append(dst, `,"s":"t"}`...)
		}
		m := s.matched
		tid := perfettoDbgTid0 + m.lane
		if r.Served == ServedSynthetic {
			tid = perfettoWireTid0 + m.lane
		}
		dst = e.track(dst, s, tid)
		name := r.Name
		if name == "" {
			name = m.cmd.String()
		}
		dst = e.open(dst, "X", name+servedSuffix(r.Served), s.id, tid, m.t)
		dst = append(dst, `,"cat":`...)
		dst = appendJSONString(dst, r.Served)
		dst = append(dst, `,"dur":`...)
		dst = appendMicros(dst, r.T-m.t)
		dst = append(dst, `,"args":{"id":`...)
		dst = strconv.AppendUint(dst, uint64(r.ID), 10)
		dst = append(dst, `,"served":`...)
		dst = appendJSONString(dst, r.Served)
		dst = append(dst, `,"reply_len":`...)
		dst = strconv.AppendInt(dst, int64(r.Len), 10)
		if r.Error != 0 {
			dst = append(dst, `,"error":`...)
			dst = appendJSONString(dst, r.ErrorName)
		}
		if r.Thread != nil {
			dst = append(dst, `,"thread":`...)
			dst = appendUint64JSON(dst, uint64(*r.Thread))
		}
		if r.VMLatencyNs != 0 {
			dst = append(dst, `,"vm_latency_us":`...)
			dst = appendMicros(dst, r.VMLatencyNs)
		}
		return append(dst, "}}"...)
	case KindEvent, KindDDM, KindVMCommand:
		tid := perfettoEventsTid
		if r.Served == ServedSynthetic {
			tid = perfettoWireTid0
		}
		dst = e.track(dst, s, tid)
		name := r.Name
		if r.Chunk != "" {
			name += " " + r.Chunk
		}
		for i, ev := range r.Events {
			if i == 0 {
				name += ":"
			}
			name += " " + ev
		}
		dst = e.open(dst, "i", name, s.id, tid, r.T)
		dst = append(dst, `,"s":"t","cat":`...)
		dst = appendJSONString(dst, r.Served)
		dst = append(dst, `,"args":{"id":`...)
		dst = strconv.AppendUint(dst, uint64(r.ID), 10)
		dst = append(dst, `,"len":`...)
		dst = strconv.AppendInt(dst, int64(r.Len), 10)
		if r.Thread != nil {
			dst = append(dst, `,"thread":`...)
			dst = appendUint64JSON(dst, uint64(*r.Thread))
		}
		return append(dst, "}}"...)
	}
	return dst
}

// unanswered draws the commands of s still waiting, up to t.
func (e *perfettoEncoder) unanswered(dst []byte, s *sessState, t int64) []byte {
	for p := s.open.next; p != &s.open; p = p.next {
		id := p.id
		tid := perfettoDbgTid0 + p.lane
		dst = e.track(dst, s, tid)
		dst = e.open(dst, "X", p.cmd.String()+" [no reply]", s.id, tid, p.t)
		dst = append(dst, `,"cat":"unanswered","dur":`...)
		dst = appendMicros(dst, max(t-p.t, 0))
		dst = append(dst, `,"args":{"id":`...)
		dst = strconv.AppendUint(dst, uint64(id), 10)
		dst = append(dst, "}}"...)
	}
	return dst
}
