package ddmtap

import (
	"slices"
	"time"

	"github.com/jdwpaccel/jdwpaccel/ddm"
)

// HandlePayload applies all chunks of a DDM packet body travelling in
// direction d. Malformed or unknown chunks are counted and logged. It
// returns the type of the first chunk (0 if none).
func (m *Monitor) HandlePayload(d ddm.Direction, payload []byte) ddm.Type {
	it := ddm.NewChunks(payload)
	var first ddm.Type
	for c, ok := it.Next(); ok; c, ok = it.Next() {
		if first == 0 {
			first = c.Type
		}
		m.HandleChunk(d, c)
	}
	if err := it.Err(); err != nil {
		m.countError(ReasonChunkLength, err, "DDM packet with a bad chunk length; rest ignored")
	}
	return first
}

// HandleChunk decodes one chunk and applies it to the state.
func (m *Monitor) HandleChunk(d ddm.Direction, c ddm.Chunk) {
	m.metrics.chunk(d, c.Type)
	m.mu.Lock()
	m.chunks++
	m.mu.Unlock()
	if !c.Type.Known() {
		m.countError(ReasonUnknownType, nil, "unknown DDM chunk type "+c.Type.String()+"; ignored")
		return
	}
	p, err := ddm.Decode(d, c)
	if err != nil {
		m.countError(ReasonMalformed, err, "malformed DDM chunk; ignored")
		return
	}
	if z, ok := p.(ddm.Inflated); ok {
		p = z.Inner
	}
	if d == ddm.VMToHost {
		m.apply(p)
	}
}

// apply folds a VM→host payload into the state, and tells the
// OnThreadChange function of a thread created, renamed or dead, once the
// lock is released.
func (m *Monitor) apply(p ddm.Payload) {
	now := time.Now()
	var tc ThreadChange
	m.mu.Lock()
	defer func() {
		fn := m.onThread
		m.mu.Unlock()
		if fn != nil && tc.Kind != 0 {
			fn(tc)
		}
	}()
	switch v := p.(type) {
	case ddm.Hello:
		m.id.DDM = DDMYes
		m.id.ClientVersion, m.id.PID, m.id.VMIdent = v.ClientVersion, v.PID, v.VMIdent
		m.setAppName(v.AppName)
		if v.Optional > 0 {
			m.id.UserID, m.id.HasUserID = v.UserID, true
		}
		if v.Optional > 1 {
			m.id.ABI = v.ABI
		}
		if v.Optional > 2 {
			m.id.JVMFlags = v.JVMFlags
		}
		if v.Optional > 3 {
			m.id.NativeDebuggable = v.NativeDebuggable
		}
		if v.Optional > 4 && v.PackageName != "" {
			m.id.PackageName = v.PackageName
		}
		if v.Optional > 5 {
			m.id.Stage = v.Stage.String()
		}
	case ddm.StringList:
		if v.T == ddm.TypeFEAT {
			m.id.Features = v.Items
		}
	case ddm.AppName:
		m.setAppName(v.Name)
		if v.Optional > 0 {
			m.id.UserID, m.id.HasUserID = v.UserID, true
		}
		if v.Optional > 1 && v.PackageName != "" {
			m.id.PackageName = v.PackageName
		}
	case ddm.U1:
		if v.T == ddm.TypeWAIT && v.V == 0 && !m.debugger {
			m.id.WaitingForDebugger = true
		}
	case ddm.U4:
		tc = m.applyU4(v, now)
	case ddm.ThreadName:
		m.support[FeatThreadNotify] = Supported
		t := m.threads[v.ID]
		switch {
		case t == nil && v.T == ddm.TypeTHNM:
			// rename of a thread we never saw created
		case t == nil:
			t = &Thread{ID: v.ID, Alive: true, Created: now, Status: 5, StatusName: StatusName(5)}
			m.threads[v.ID] = t
			m.metrics.threadsAdd(1)
			tc = ThreadChange{Kind: ThreadCreated, ID: v.ID, Name: v.Name, Time: now}
		case t.Name != v.Name:
			tc = ThreadChange{Kind: ThreadRenamed, ID: v.ID, Name: v.Name, Time: now}
		}
		if t == nil {
			break
		}
		if v.T == ddm.TypeTHCR {
			m.seen[v.ID] = m.epoch
		}
		t.Name, t.Updated = v.Name, now
	case ddm.ThreadStatus:
		m.support[FeatThreadStatus] = Supported
		for _, e := range v.Threads {
			t := m.threads[e.ID]
			if t == nil {
				if m.support[FeatThreadNotify] == Supported {
					continue // like ddmlib: only threads learned via THCR
				}
				t = &Thread{ID: e.ID, Alive: true, Created: now}
				m.threads[e.ID] = t
				m.metrics.threadsAdd(1)
			}
			t.Status, t.StatusName = e.Status, StatusName(e.Status)
			t.TID, t.UTime, t.STime, t.Daemon, t.Updated = e.TID, e.UTime, e.STime, e.Daemon, now
		}
	case ddm.StackTrace:
		if t := m.threads[v.ThreadID]; t != nil {
			t.Stack = v.Frames
		}
	case ddm.HeapInfo:
		m.support[FeatHeapInfo] = Supported
		m.heapInfo, m.heapTime = v.Heaps, now
		if len(v.Heaps) > 0 {
			m.metrics.heapSummary(v.Heaps[0])
		}
	case ddm.HeapSegment:
		if v.T == ddm.TypeNHSG {
			m.nat.add(v)
		} else {
			m.java.add(v)
		}
	case ddm.Fail:
		m.errors++
		m.metrics.error(ReasonFailChunk)
		m.log.Info().Int32("fail_code", v.Code).Str("fail_message", v.Message).Msg("VM answered a DDM request with FAIL")
	default:
		return // replies and blobs the monitor does not keep
	}
	m.bump()
}

func (m *Monitor) setAppName(name string) {
	if name != "" && name != "<pre-initialized>" {
		m.id.AppName = name
	}
}

// applyU4 applies a chunk of one value; it returns the thread change of
// a THDE.
func (m *Monitor) applyU4(v ddm.U4, now time.Time) ThreadChange {
	switch v.T {
	case ddm.TypeTHDE:
		if t := m.threads[v.V]; t != nil {
			m.buryLocked(t, now)
			return ThreadChange{Kind: ThreadDied, ID: t.ID, Name: t.Name, Time: now}
		}
	case ddm.TypeHPST:
		m.support[FeatHeapSegments] = Supported
		m.java.start(v.V)
	case ddm.TypeHPEN:
		m.heap = m.java.finish(false, now)
		m.heap.HeapID = v.V
	case ddm.TypeNHST:
		m.support[FeatNativeHeap] = Supported
		m.nat.start(v.V)
	case ddm.TypeNHEN:
		m.native = m.nat.finish(true, now)
		m.native.HeapID = v.V
	case ddm.TypeSTAG:
		m.id.Stage = ddm.Type(v.V).String()
	}
	return ThreadChange{}
}

// buryLocked moves a live thread to the dead list; m.mu must be held.
func (m *Monitor) buryLocked(t *Thread, now time.Time) {
	delete(m.threads, t.ID)
	delete(m.seen, t.ID)
	m.metrics.threadsAdd(-1)
	t.Alive, t.Died = false, now
	if len(m.dead) >= maxDeadThreads {
		m.dead = slices.Delete(m.dead, 0, len(m.dead)-maxDeadThreads+1)
	}
	m.dead = append(m.dead, *t)
}

// sweepThreads retires threads not re-announced by THCR since epoch began
// (they died while no DDM connection was up). Called once the THCR burst
// that follows THEN(1) on a new connection has had time to arrive.
func (m *Monitor) sweepThreads(epoch uint64) {
	var died []ThreadChange
	m.mu.Lock()
	defer func() {
		fn := m.onThread
		m.mu.Unlock()
		if fn == nil {
			return
		}
		for _, tc := range died {
			fn(tc)
		}
	}()
	if m.support[FeatThreadNotify] != Supported {
		return
	}
	fresh := false
	for _, e := range m.seen {
		fresh = fresh || e >= epoch
	}
	if !fresh {
		return // no THCR on this connection yet: nothing to compare with
	}
	now := time.Now()
	for id, t := range m.threads {
		if m.seen[id] < epoch {
			m.buryLocked(t, now)
			died = append(died, ThreadChange{Kind: ThreadDied, ID: id, Name: t.Name, Time: now})
		}
	}
	if len(died) > 0 {
		m.bump()
	}
}
