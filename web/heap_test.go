package web

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"
)

func TestHeapKindOf(t *testing.T) {
	for _, tc := range []struct {
		state uint8
		want  HeapKind
	}{
		{0x00, HeapFree},
		{0x80 | 0x08, HeapFree},   // free whatever the kind bits say
		{0x01, HeapObject},        // hard, kind 0
		{0x09, HeapClass},         // hard, kind 1
		{0x11, HeapArray1},        // kind 2
		{0x19, HeapArray2},        // kind 3
		{0x21, HeapArray4},        // kind 4
		{0x29 | 0x80, HeapArray8}, // kind 5, partial
		{0x31, HeapUnknown},       // kind 6
		{0x3a, HeapNative},        // kind 7, soft
	} {
		if got := HeapKindOf(tc.state); got != tc.want {
			t.Errorf("HeapKindOf(%#x) = %v, want %v", tc.state, got, tc.want)
		}
	}
	if HeapKind(200).String() != "invalid" || HeapFree.String() != "free" {
		t.Fatal("kind labels")
	}
	if ThreadStatusLabel(1) != "running" || ThreadStatusLabel(9) != "suspended" || ThreadStatusLabel(10) != "unknown" {
		t.Fatal("thread labels")
	}
}

func TestSummarizeHeap(t *testing.T) {
	now := time.Unix(1700000000, 0)
	h := Heap{
		Info:       HeapInfo{Updated: now, MaxSize: 1 << 20, Size: 1000, Allocated: 250, Objects: 5},
		Generation: 3, Updated: now,
		Segments: []HeapSegment{
			{Start: 0x1000, UnitSize: 8, Runs: []HeapRun{{HeapObject, 2}, {HeapObject, 4}, {HeapFree, 10}, {HeapArray1, 1}}},
			{Start: 0x9000, UnitSize: 8, Runs: []HeapRun{{HeapObject, 6}, {HeapKind(77), 1}, {HeapClass, 0}}},
		},
	}
	s := SummarizeHeap(h, 1000)
	if s.Generation != 3 || s.Segments != 2 || s.TotalBytes != 24*8 {
		t.Fatalf("summary header %+v", s)
	}
	if s.Info == nil || s.Info.FreeBytes != 750 || s.Info.UsedRatio != 0.25 {
		t.Fatalf("info %+v", s.Info)
	}
	// One cell per unit when the heap is small.
	// 2+4 object units, 10 free, 1 array1, 6 object, 1 unknown (invalid).
	if want := "222222111111111142222228"; s.Map.Kinds != want || s.Map.Cells != 24 || s.Map.CellBytes != 8 {
		t.Fatalf("map %q (%d cells of %d B), want %q", s.Map.Kinds, s.Map.Cells, s.Map.CellBytes, want)
	}
	byKind := map[HeapKind]HeapKindStats{}
	for _, st := range s.Stats {
		byKind[st.Kind] = st
	}
	obj := byKind[HeapObject]
	// objects of 16, 32, 48 bytes: median is the element at index 3/2 = 1.
	if obj.Count != 3 || obj.TotalBytes != 96 || obj.Smallest != 16 || obj.Largest != 48 || obj.Median != 32 || obj.Average != 32 {
		t.Fatalf("object stats %+v", obj)
	}
	if f := byKind[HeapFree]; f.Count != 1 || f.TotalBytes != 80 {
		t.Fatalf("free stats %+v", f)
	}
	if u := byKind[HeapUnknown]; u.Count != 1 {
		t.Fatalf("invalid kind not counted as unknown: %+v", u)
	}
	if _, ok := byKind[HeapClass]; ok {
		t.Fatal("zero-unit run counted")
	}
	// Histogram: 16 B -> bin 1 ([16,32)), 32 B -> bin 2, 48 B -> bin 2, 8 B -> bin 0.
	for _, se := range s.Histogram.Series {
		if se.Kind == HeapObject && (se.Counts[1] != 1 || se.Counts[2] != 2) {
			t.Fatalf("object histogram %v", se.Counts)
		}
		if se.Kind == HeapFree {
			t.Fatal("free space in the allocation histogram")
		}
	}
	if s.Histogram.LowerBytes[0] != 0 || s.Histogram.LowerBytes[1] != 16 || len(s.Histogram.LowerBytes) != histBins {
		t.Fatalf("bounds %v", s.Histogram.LowerBytes)
	}

	// Down-sampled: 24 units into at most 5 cells of 5 units; the majority
	// wins each cell.
	d := SummarizeHeap(h, 5)
	if d.Map.Cells != 5 || d.Map.CellBytes != 40 || d.Map.Kinds != "21122" {
		t.Fatalf("down-sampled map %q (%d cells of %d B)", d.Map.Kinds, d.Map.Cells, d.Map.CellBytes)
	}
	if e := SummarizeHeap(Heap{}, 0); e.Map.Cells != 0 || e.Info != nil || e.Updated != nil || e.Stats != nil {
		t.Fatalf("empty heap summary %+v", e)
	}
}

func TestSummarizeHeapLarge(t *testing.T) {
	src := NewManualFakeSource(9)
	h := src.Heap(FakeVMID)
	s := SummarizeHeap(h, DefaultHeapCells)
	if s.Map.Cells > DefaultHeapCells || s.Map.Cells < DefaultHeapCells/2 {
		t.Fatalf("%d cells", s.Map.Cells)
	}
	if strings.Trim(s.Map.Kinds, "123456789") != "" {
		t.Fatal("map has characters outside 1-9")
	}
	var total uint64
	for _, st := range s.Stats {
		total += st.TotalBytes
	}
	if total != s.TotalBytes {
		t.Fatalf("stats add to %d, total %d", total, s.TotalBytes)
	}
}

// FuzzSummarizeHeap: any segment list summarises without panicking, and
// the map and statistics agree with the input.
func FuzzSummarizeHeap(f *testing.F) {
	f.Add([]byte{1, 2, 2, 4, 3, 0, 9, 255}, uint16(10))
	f.Add([]byte{0, 0, 77, 1}, uint16(1))
	f.Add([]byte{}, uint16(0))
	f.Fuzz(func(t *testing.T, runs []byte, cells uint16) {
		var seg HeapSegment
		seg.UnitSize = 8
		var units uint64
		for len(runs) >= 3 {
			n := uint32(binary.BigEndian.Uint16(runs[1:3]))
			seg.Runs = append(seg.Runs, HeapRun{Kind: HeapKind(runs[0]), Units: n})
			units += uint64(n)
			runs = runs[3:]
		}
		s := SummarizeHeap(Heap{Segments: []HeapSegment{seg}}, int(cells))
		if len(s.Map.Kinds) != s.Map.Cells || s.Map.Cells > max(int(cells), 1) {
			t.Fatalf("%d cells for %d requested", s.Map.Cells, cells)
		}
		if s.TotalBytes != units*8 {
			t.Fatalf("total %d, want %d", s.TotalBytes, units*8)
		}
		if units > 0 && uint64(s.Map.Cells)*s.Map.CellBytes < units*8 {
			t.Fatalf("map covers %d cells of %d B, heap has %d B", s.Map.Cells, s.Map.CellBytes, units*8)
		}
	})
}
