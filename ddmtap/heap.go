package ddmtap

import (
	"math/bits"
	"slices"
	"time"

	"github.com/jdwpaccel/jdwpaccel/ddm"
)

// Heap segment state byte (§4.1): bit 7 partial, bits 5..3 kind, bits 2..0
// solidity.
const (
	solidityFree   = 0
	kindNative     = 7
	numBuckets     = 10
	maxMapRuns     = 1 << 18 // merged runs kept per heap map (display only)
	histogramSlots = 33      // log2 size classes: 1 B .. 4 GiB and above
)

// Bucket keys of the DDMS Stats view (§4.4): 1 free, kind+2 otherwise.
const (
	BucketExpansion = 0
	BucketFree      = 1
)

// BucketLabels are the DDMS type labels by bucket key.
var BucketLabels = [numBuckets]string{
	"(heap expansion area)", "free", "data object", "class object",
	"1-byte array (byte[], boolean[])", "2-byte array (short[], char[])",
	"4-byte array (object[], int[], float[])", "8-byte array (long[], double[])",
	"unknown object", "non-Java object",
}

// BucketOf maps a state byte to its DDMS bucket key.
func BucketOf(state uint8) uint8 {
	if state&7 == solidityFree {
		return BucketFree
	}
	return (state>>3)&7 + 2
}

// MapRun is a stretch of heap of one bucket: adjacent elements of the same
// bucket merged, for drawing a heap map.
type MapRun struct {
	Bucket uint8
	Bytes  uint64
}

// MapSegment is one segment chunk's stretch of heap.
type MapSegment struct {
	Start  uint32
	Offset uint32
	Unit   uint8
	Bytes  uint64
	Runs   []MapRun
}

// SizeCount is how many elements have one size (the DDMS "allocation
// count per size" chart).
type SizeCount struct {
	Bytes uint64
	Count uint64
}

// BucketStats are the DDMS Stats view columns for one bucket.
type BucketStats struct {
	Bucket   uint8
	Label    string
	Count    uint64
	Total    uint64
	Smallest uint64
	Largest  uint64
	Median   uint64 // the element at index Count/2 in size order
	Average  uint64 // Total / Count
	// Sizes is the count per distinct size, smallest first (at most
	// maxSizes entries; the rest are folded into the last).
	Sizes []SizeCount
	// Histogram counts elements by log2 size class: slot i holds sizes in
	// [2^i, 2^(i+1)).
	Histogram [histogramSlots]uint64
}

const maxSizes = 256

// HeapMap is one complete heap walk (HPST … HPEN, or NHST … NHEN).
type HeapMap struct {
	HeapID    uint32
	Native    bool
	Time      time.Time
	Segments  []MapSegment
	Truncated bool // more than maxMapRuns merged runs: the map is cut, stats are whole
	Stats     []BucketStats
	Bytes     uint64
	Elements  uint64
}

// heapBuilder collects the segments of one walk. Owned by the Monitor and
// used under its lock.
type heapBuilder struct {
	active bool
	heapID uint32
	segs   []MapSegment
	runs   int
	cut    bool
	sizes  [numBuckets]map[uint64]uint64
	bytes  uint64
	elems  uint64
}

func (b *heapBuilder) start(heapID uint32) {
	*b = heapBuilder{active: true, heapID: heapID}
}

// add folds one decoded segment into the walk.
func (b *heapBuilder) add(s ddm.HeapSegment) {
	if !b.active { // HPSG without HPST: ddmlib starts a new set
		b.start(s.HeapID)
	}
	seg := MapSegment{Start: s.Start, Offset: s.Offset, Unit: s.Unit}
	unit := uint64(s.Unit)
	ddm.WalkRuns(s.Runs, func(state uint8, units uint64) { //nolint:errcheck // checked by DecodeHeapSegment
		n := units * unit
		k := BucketOf(state)
		seg.Bytes += n
		b.bytes += n
		b.elems++
		if b.sizes[k] == nil {
			b.sizes[k] = make(map[uint64]uint64)
		}
		b.sizes[k][n]++
		if l := len(seg.Runs); l > 0 && seg.Runs[l-1].Bucket == k {
			seg.Runs[l-1].Bytes += n
			return
		}
		if b.runs >= maxMapRuns {
			b.cut = true
			return
		}
		b.runs++
		seg.Runs = append(seg.Runs, MapRun{Bucket: k, Bytes: n})
	})
	b.segs = append(b.segs, seg)
}

// finish seals the walk into a HeapMap.
func (b *heapBuilder) finish(native bool, now time.Time) *HeapMap {
	m := &HeapMap{HeapID: b.heapID, Native: native, Time: now, Segments: b.segs, Truncated: b.cut, Bytes: b.bytes, Elements: b.elems}
	slices.SortFunc(m.Segments, func(x, y MapSegment) int {
		return int(int64(uint64(x.Start)+uint64(x.Offset)) - int64(uint64(y.Start)+uint64(y.Offset)))
	})
	for k, sizes := range b.sizes {
		if len(sizes) == 0 {
			continue
		}
		m.Stats = append(m.Stats, bucketStats(uint8(k), sizes))
	}
	*b = heapBuilder{}
	return m
}

func bucketStats(k uint8, sizes map[uint64]uint64) BucketStats {
	st := BucketStats{Bucket: k, Label: BucketLabels[k]}
	keys := make([]uint64, 0, len(sizes))
	for sz, c := range sizes {
		keys = append(keys, sz)
		st.Count += c
		st.Total += sz * c
		slot := 0
		if sz > 0 {
			slot = min(bits.Len64(sz)-1, histogramSlots-1)
		}
		st.Histogram[slot] += c
	}
	slices.Sort(keys)
	st.Smallest, st.Largest = keys[0], keys[len(keys)-1]
	st.Average = st.Total / st.Count
	mid, seen := st.Count/2, uint64(0)
	for _, sz := range keys {
		seen += sizes[sz]
		if seen > mid {
			st.Median = sz
			break
		}
	}
	for i, sz := range keys {
		if i < maxSizes {
			st.Sizes = append(st.Sizes, SizeCount{Bytes: sz, Count: sizes[sz]})
		} else {
			st.Sizes[maxSizes-1].Count += sizes[sz]
		}
	}
	return st
}
