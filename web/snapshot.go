package web

import (
	"encoding/json"
	"net/http"
	"slices"
	"time"
)

// Snapshot is what each server-sent event carries: everything the page
// shows except the heap map, which it fetches when HeapGenerations change.
type Snapshot struct {
	Time time.Time `json:"time"`
	// Role is what this monitor is the page of, when not the proxy's own
	// (WithRole): "far end".
	Role     string               `json:"role,omitempty"`
	VMs      []VM                 `json:"vms"`
	Sessions []SessionJSON        `json:"sessions"`
	Accel    AccelJSON            `json:"accel"`
	Threads  map[string][]Thread  `json:"threads"`
	Heaps    map[string]HeapBrief `json:"heaps"`
	// Stacks are, by VM, the stack of the thread of the latest stop, when
	// known (see StackSource).
	Stacks map[string]ThreadStack `json:"stacks"`
}

// HeapBrief is a VM's HPIF summary and map generation.
type HeapBrief struct {
	Generation uint64        `json:"generation"`
	Info       *HeapInfoJSON `json:"info,omitempty"`
}

// snapshot returns the current snapshot's JSON, rebuilding it when the
// cached one is interval/2 old, and records an accelerator history sample
// each time it rebuilds.
func (h *Handler) snapshot(now time.Time) []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.snap != nil && now.Sub(h.snapAt) < h.interval/2 {
		return h.snap
	}
	a := h.src.Accel()
	if a.Run != h.run {
		h.history, h.run = h.history[:0], a.Run // a new run starts its own history
	}
	h.history = append(h.history, AccelPoint{T: now.UnixMilli(), P50: a.StepLatency.P50.Seconds(), P99: a.StepLatency.P99.Seconds(), Hits: a.Hits, Misses: a.Misses})
	if len(h.history) > historyLen {
		h.history = slices.Delete(h.history, 0, len(h.history)-historyLen)
	}
	s := Snapshot{
		Time: now, Role: h.role, VMs: nonNil(h.src.VMs()), Sessions: sessionsJSON(h.src.Sessions()), Accel: accelJSON(a),
		Threads: map[string][]Thread{}, Heaps: map[string]HeapBrief{}, Stacks: map[string]ThreadStack{},
	}
	ss, _ := h.src.(StackSource)
	s.Accel.History = slices.Clone(h.history)
	for _, vm := range s.VMs {
		s.Threads[vm.ID] = sortedThreads(h.src.Threads(vm.ID))
		hp := h.src.Heap(vm.ID)
		s.Heaps[vm.ID] = HeapBrief{Generation: hp.Generation, Info: heapInfoJSON(hp.Info)}
		if ss != nil {
			if st, ok := ss.CurrentStack(vm.ID); ok {
				st.Frames = nonNil(st.Frames)
				s.Stacks[vm.ID] = st
			}
		}
	}
	b, err := json.Marshal(s)
	if err != nil {
		h.log.Error().Err(err).Msg("web: encode snapshot")
		return []byte("{}")
	}
	h.snap, h.snapAt = b, now
	return b
}

// events streams snapshots as server-sent events until the client leaves.
func (h *Handler) events(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	if startEventStream(w) != nil {
		return
	}
	h.log.Debug().Str("remote", r.RemoteAddr).Msg("web: event stream opened")
	defer h.log.Debug().Str("remote", r.RemoteAddr).Msg("web: event stream closed")
	t := time.NewTicker(h.interval)
	defer t.Stop()
	for {
		b := h.snapshot(time.Now())
		if err := writeEvent(w, "snapshot", b); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-h.closed:
			return
		case <-t.C:
		}
	}
}

// startEventStream writes the head of a server-sent event stream: its
// headers, status 200 and the client's reconnection delay.
func startEventStream(w http.ResponseWriter) error {
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	_, err := w.Write([]byte("retry: 2000\n\n"))
	return err
}

// writeEvent writes one server-sent event; data must hold no newline
// (json.Marshal output does not).
func writeEvent(w http.ResponseWriter, name string, data []byte) error {
	if _, err := w.Write([]byte("event: " + name + "\ndata: ")); err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	_, err := w.Write([]byte("\n\n"))
	return err
}
