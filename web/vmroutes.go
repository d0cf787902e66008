package web

import (
	"cmp"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// knownVM reports whether id names one of the source's VMs, answering 404
// when it does not.
func (h *Handler) knownVM(w http.ResponseWriter, id string) bool {
	for _, v := range h.src.VMs() {
		if v.ID == id {
			return true
		}
	}
	writeError(w, http.StatusNotFound, "unknown vm")
	return false
}

func (h *Handler) threads(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("vm")
	if !h.knownVM(w, id) {
		return
	}
	h.writeJSON(w, sortedThreads(h.src.Threads(id)))
}

// sortedThreads sorts DDM threads by ID; threads from a JDWP
// conversation (all ID 0) keep the VM's order.
func sortedThreads(ts []Thread) []Thread {
	ts = slices.Clone(nonNil(ts))
	slices.SortStableFunc(ts, func(a, b Thread) int { return cmp.Compare(a.ID, b.ID) })
	return ts
}

func (h *Handler) stack(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("vm")
	if !h.knownVM(w, id) {
		return
	}
	ss, ok := h.src.(StackSource)
	if !ok {
		writeError(w, http.StatusNotFound, "no stacks here")
		return
	}
	st, ok := ss.Stack(id, r.PathValue("thread"))
	if !ok {
		writeError(w, http.StatusNotFound, "no stack known for this thread")
		return
	}
	st.Frames = nonNil(st.Frames)
	h.writeJSON(w, st)
}

func (h *Handler) heap(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("vm")
	if !h.knownVM(w, id) {
		return
	}
	cells := DefaultHeapCells
	if c := r.URL.Query().Get("cells"); c != "" {
		n, err := strconv.Atoi(c)
		if err != nil || n < 1 || n > MaxHeapCells {
			writeError(w, http.StatusBadRequest, "cells must be 1.."+strconv.Itoa(MaxHeapCells))
			return
		}
		cells = n
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(h.heapSummary(id, cells)) //nolint:errcheck // the client went away
}

// heapSummary is the cached JSON summary of a VM's heap.
func (h *Handler) heapSummary(id string, cells int) []byte {
	hp := h.src.Heap(id)
	h.mu.Lock()
	e, ok := h.heaps[id]
	h.mu.Unlock()
	if ok && e.gen == hp.Generation && e.cells == cells && e.infoAt.Equal(hp.Info.Updated) {
		// the summary carries the HPIF figures too, so a new HPIF also
		// rebuilds it; the page fetches it only for a new map.
		return e.summary
	}
	b, err := json.Marshal(SummarizeHeap(hp, cells))
	if err != nil {
		h.log.Error().Err(err).Msg("web: encode heap summary")
		return []byte("{}")
	}
	b = append(b, '\n')
	h.mu.Lock()
	h.heaps[id] = heapCacheEntry{gen: hp.Generation, infoAt: hp.Info.Updated, cells: cells, summary: b}
	h.mu.Unlock()
	return b
}

// HeapSegmentsJSON is the raw segment list: each segment's runs are flat
// pairs kind, units.
type HeapSegmentsJSON struct {
	Generation uint64            `json:"generation"`
	Segments   []HeapSegmentJSON `json:"segments"`
}

// HeapSegmentJSON is one segment; Runs alternate kind and unit count.
type HeapSegmentJSON struct {
	Start    uint64   `json:"start"`
	UnitSize uint32   `json:"unit_size"`
	Runs     []uint32 `json:"runs"`
}

func (h *Handler) segments(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("vm")
	if !h.knownVM(w, id) {
		return
	}
	hp := h.src.Heap(id)
	out := HeapSegmentsJSON{Generation: hp.Generation, Segments: make([]HeapSegmentJSON, len(hp.Segments))}
	for i, s := range hp.Segments {
		runs := make([]uint32, 0, 2*len(s.Runs))
		for _, r := range s.Runs {
			runs = append(runs, uint32(r.Kind), r.Units)
		}
		out.Segments[i] = HeapSegmentJSON{Start: s.Start, UnitSize: s.UnitSize, Runs: runs}
	}
	h.writeJSON(w, out)
}

// requestHeap asks a VM for a heap picture. It takes only a JSON POST, which
// a page of another origin cannot send without a preflight this server
// never answers.
func (h *Handler) requestHeap(w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		http.Error(w, "want Content-Type: application/json", http.StatusUnsupportedMediaType)
		return
	}
	hr, ok := h.src.(HeapRequester)
	if !ok {
		http.Error(w, "heap requests are not supported here", http.StatusNotImplemented)
		return
	}
	if err := hr.RequestHeap(r.PathValue("vm")); err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}
