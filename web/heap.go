package web

import (
	"math/bits"
	"slices"
	"time"
)

// Heap summaries: what /api/v1/vms/{vm}/heap serves and the page draws.

const (
	// DefaultHeapCells is the map size when the request does not say.
	DefaultHeapCells = 40000
	// MaxHeapCells bounds the map a request may ask for.
	MaxHeapCells = 1 << 20
	// histogram buckets: [2^k, 2^(k+1)) bytes for k in histMinLog..histMaxLog,
	// the first bucket also holding anything smaller and the last anything
	// larger.
	histMinLog = 3
	histMaxLog = 20
	histBins   = histMaxLog - histMinLog + 1
)

// HeapSummary is the JSON form of a heap: HPIF figures, the segment map
// down-sampled to at most the requested number of cells, per-kind statistics
// (the DDMS "Stats" view) and a size histogram.
type HeapSummary struct {
	Generation uint64           `json:"generation"`
	Updated    *time.Time       `json:"updated,omitempty"`
	Info       *HeapInfoJSON    `json:"info,omitempty"`
	Segments   int              `json:"segments"`
	Truncated  bool             `json:"truncated,omitempty"`
	TotalBytes uint64           `json:"total_bytes"`
	Map        HeapMap          `json:"map"`
	Kinds      []HeapKindLegend `json:"kinds"`
	Stats      []HeapKindStats  `json:"stats"`
	Histogram  HeapHistogram    `json:"histogram"`
}

// HeapInfoJSON is the HPIF summary with DDMS's derived columns.
type HeapInfoJSON struct {
	Updated        time.Time `json:"updated"`
	MaxBytes       uint64    `json:"max_bytes"`
	SizeBytes      uint64    `json:"size_bytes"`
	AllocatedBytes uint64    `json:"allocated_bytes"`
	FreeBytes      uint64    `json:"free_bytes"`
	Objects        uint64    `json:"objects"`
	UsedRatio      float64   `json:"used_ratio"`
}

// HeapMap is the segment map: Cells characters '0'..'9', each the
// [HeapKind] covering most of the CellBytes bytes the cell stands for.
type HeapMap struct {
	Cells     int    `json:"cells"`
	CellBytes uint64 `json:"cell_bytes"`
	Kinds     string `json:"kinds"`
}

// HeapKindLegend names a kind and its DDMS colour.
type HeapKindLegend struct {
	Kind  HeapKind `json:"kind"`
	Label string   `json:"label"`
	Color string   `json:"color"`
}

// HeapKindStats is one row of the DDMS Stats table. Sizes are bytes.
type HeapKindStats struct {
	Kind       HeapKind `json:"kind"`
	Label      string   `json:"label"`
	Count      uint64   `json:"count"`
	TotalBytes uint64   `json:"total_bytes"`
	Smallest   uint64   `json:"smallest_bytes"`
	Largest    uint64   `json:"largest_bytes"`
	Median     uint64   `json:"median_bytes"`
	Average    uint64   `json:"average_bytes"`
}

// HeapHistogram counts allocated elements by size: bucket i holds sizes
// in [LowerBytes[i], LowerBytes[i+1]) (the first also smaller ones, the last
// all larger ones), one series per kind present.
type HeapHistogram struct {
	LowerBytes []uint64          `json:"lower_bytes"`
	Series     []HeapHistoSeries `json:"series"`
}

// HeapHistoSeries is one kind's histogram counts.
type HeapHistoSeries struct {
	Kind   HeapKind `json:"kind"`
	Counts []uint64 `json:"counts"`
}

// heapColors are DDMS's colours by kind.
var heapColors = [numHeapKinds]string{
	"#c0c0c0", "#000000", "#0000ff", "#00ff00", "#ff0000",
	"#ff8000", "#ffff00", "#ff8080", "#ff00ff", "#404040",
}

func heapLegend() []HeapKindLegend {
	l := make([]HeapKindLegend, 0, numHeapKinds-1)
	for k := HeapFree; k < numHeapKinds; k++ {
		l = append(l, HeapKindLegend{Kind: k, Label: k.String(), Color: heapColors[k]})
	}
	return l
}

// SummarizeHeap builds the summary of h with a map of at most cells cells
// (clamped to 1..MaxHeapCells). Runs of invalid kinds count as unknown
// objects; runs of zero units are skipped.
func SummarizeHeap(h Heap, cells int) HeapSummary {
	cells = min(max(cells, 1), MaxHeapCells)
	s := HeapSummary{Generation: h.Generation, Segments: len(h.Segments), Truncated: h.Truncated, Kinds: heapLegend()}
	if !h.Updated.IsZero() {
		t := h.Updated
		s.Updated = &t
	}
	s.Info = heapInfoJSON(h.Info)

	// Per-kind size counts, in units of bytes; sizes repeat a lot, so a map
	// of distinct sizes is much smaller than the element list.
	var sizes [numHeapKinds]map[uint64]uint64
	var hist [numHeapKinds][]uint64
	var totalUnits uint64
	for _, seg := range h.Segments {
		unit := uint64(max(seg.UnitSize, 1))
		for _, r := range seg.Runs {
			if r.Units == 0 {
				continue
			}
			k := normKind(r.Kind)
			n := uint64(r.Units) * unit
			s.TotalBytes += n
			totalUnits += uint64(r.Units)
			if sizes[k] == nil {
				sizes[k] = map[uint64]uint64{}
			}
			sizes[k][n]++
			if k != HeapFree {
				if hist[k] == nil {
					hist[k] = make([]uint64, histBins)
				}
				hist[k][histBin(n)]++
			}
		}
	}
	if h.Stats != nil {
		s.Stats = h.Stats
	} else {
		for k := HeapFree; k < numHeapKinds; k++ {
			if sizes[k] != nil {
				s.Stats = append(s.Stats, kindStats(k, sizes[k]))
			}
		}
	}
	s.Histogram.LowerBytes = make([]uint64, histBins)
	for i := range s.Histogram.LowerBytes {
		s.Histogram.LowerBytes[i] = 1 << (histMinLog + i)
	}
	s.Histogram.LowerBytes[0] = 0
	if h.Histogram != nil {
		for _, se := range h.Histogram {
			if len(se.Counts) == histBins {
				s.Histogram.Series = append(s.Histogram.Series, se)
			}
		}
	} else {
		for k := HeapObject; k < numHeapKinds; k++ {
			if hist[k] != nil {
				s.Histogram.Series = append(s.Histogram.Series, HeapHistoSeries{Kind: k, Counts: hist[k]})
			}
		}
	}
	s.Map = heapMap(h.Segments, totalUnits, cells)
	return s
}

// heapInfoJSON is in with DDMS's derived columns, nil when there is no
// summary yet.
func heapInfoJSON(in HeapInfo) *HeapInfoJSON {
	if in.Updated.IsZero() {
		return nil
	}
	j := &HeapInfoJSON{Updated: in.Updated, MaxBytes: in.MaxSize, SizeBytes: in.Size, AllocatedBytes: in.Allocated, Objects: in.Objects}
	if in.Size > in.Allocated {
		j.FreeBytes = in.Size - in.Allocated
	}
	if in.Size > 0 {
		j.UsedRatio = float64(in.Allocated) / float64(in.Size)
	}
	return j
}

func normKind(k HeapKind) HeapKind {
	if k == HeapExpansion || k >= numHeapKinds {
		return HeapUnknown
	}
	return k
}

// HistogramBins is the number of size histogram buckets.
const HistogramBins = histBins

// HistogramBin is the size histogram bucket of an element of n bytes.
func HistogramBin(n uint64) int { return histBin(n) }

func histBin(n uint64) int {
	b := bits.Len64(n) - 1 - histMinLog
	return min(max(b, 0), histBins-1)
}

func kindStats(k HeapKind, sizes map[uint64]uint64) HeapKindStats {
	keys := make([]uint64, 0, len(sizes))
	st := HeapKindStats{Kind: k, Label: k.String()}
	for n, c := range sizes {
		keys = append(keys, n)
		st.Count += c
		st.TotalBytes += n * c
	}
	slices.Sort(keys)
	st.Smallest, st.Largest = keys[0], keys[len(keys)-1]
	st.Average = st.TotalBytes / st.Count
	// DDMS's median: the element at index count/2 of the sorted list.
	mid := st.Count / 2
	for _, n := range keys {
		if c := sizes[n]; mid < c {
			st.Median = n
			break
		} else {
			mid -= c
		}
	}
	return st
}

// heapMap down-samples the segments, laid end to end, to at most cells
// cells of a whole number of allocation units each; a cell takes the kind
// that covers most of it. Units are counted across segments regardless of
// their unit sizes (they are all 8 bytes on real VMs); CellBytes uses the
// first segment's unit size.
func heapMap(segs []HeapSegment, totalUnits uint64, cells int) HeapMap {
	if totalUnits == 0 {
		return HeapMap{}
	}
	per := (totalUnits + uint64(cells) - 1) / uint64(cells) // units per cell
	n := int((totalUnits + per - 1) / per)
	out := make([]byte, 0, n)
	var acc [numHeapKinds]uint64
	var filled uint64 // units in the current cell
	flush := func() {
		best := HeapKind(0)
		for k := HeapFree; k < numHeapKinds; k++ {
			if acc[k] > acc[best] {
				best = k
			}
		}
		out = append(out, '0'+byte(best))
		acc = [numHeapKinds]uint64{}
		filled = 0
	}
	for _, seg := range segs {
		for _, r := range seg.Runs {
			k := normKind(r.Kind)
			left := uint64(r.Units)
			for left > 0 {
				take := min(left, per-filled)
				acc[k] += take
				filled += take
				left -= take
				if filled == per {
					flush()
				}
			}
		}
	}
	if filled > 0 {
		flush()
	}
	unit := uint64(1)
	if len(segs) > 0 && segs[0].UnitSize > 0 {
		unit = uint64(segs[0].UnitSize)
	}
	return HeapMap{Cells: len(out), CellBytes: per * unit, Kinds: string(out)}
}
