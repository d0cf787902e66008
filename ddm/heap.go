package ddm

import (
	"encoding/binary"
	"fmt"
)

// HeapSummary is one heap of an HPIF chunk. Sizes are 32-bit on the wire.
type HeapSummary struct {
	HeapID    uint32
	TimeMs    int64 // ms since the Unix epoch
	Reason    uint8 // the "when" that caused it: 1 now, 2 next GC, 3 every GC
	MaxSize   uint32
	Size      uint32
	Allocated uint32
	Objects   uint32
}

// HeapInfo is the VM→host HPIF (unsolicited, §2.3): u4 heap count, then
// per heap u4 id, u8 timestamp, u1 reason, u4 max, u4 size, u4 allocated,
// u4 objects.
type HeapInfo struct {
	Heaps []HeapSummary
}

// ChunkType implements Payload.
func (HeapInfo) ChunkType() Type { return TypeHPIF }

// AppendData implements Payload.
func (h HeapInfo) AppendData(dst []byte) []byte {
	dst = appendU32(dst, uint32(len(h.Heaps)))
	for _, e := range h.Heaps {
		dst = appendU32(dst, e.HeapID)
		dst = binary.BigEndian.AppendUint64(dst, uint64(e.TimeMs))
		dst = append(dst, e.Reason)
		dst = appendU32(dst, e.MaxSize)
		dst = appendU32(dst, e.Size)
		dst = appendU32(dst, e.Allocated)
		dst = appendU32(dst, e.Objects)
	}
	return dst
}

// DecodeHeapInfo decodes a VM→host HPIF.
func DecodeHeapInfo(data []byte) (HeapInfo, error) {
	r := reader(data)
	n := r.Count(29)
	h := HeapInfo{Heaps: make([]HeapSummary, 0, n)}
	for i := 0; i < n && r.Err() == nil; i++ {
		h.Heaps = append(h.Heaps, HeapSummary{
			HeapID: u32(r), TimeMs: r.Int64(), Reason: r.Uint8(),
			MaxSize: u32(r), Size: u32(r), Allocated: u32(r), Objects: u32(r),
		})
	}
	return h, check(TypeHPIF, r)
}

// HeapSegment is an HPSG, HPSO or NHSG chunk (§2.3, §4): u4 heap id, u1
// allocation unit size, u4 start address, u4 offset, u4 unit count, then
// (state, units-1) byte pairs to the end. Runs aliases the packet.
type HeapSegment struct {
	T        Type
	HeapID   uint32
	Unit     uint8
	Start    uint32
	Offset   uint32
	Units    uint32
	Runs     []byte
	Elements int // number of elements in Runs (set by DecodeHeapSegment)
}

// SegmentHeaderSize is the fixed part of a segment chunk.
const SegmentHeaderSize = 17

// ChunkType implements Payload.
func (s HeapSegment) ChunkType() Type { return s.T }

// AppendData implements Payload.
func (s HeapSegment) AppendData(dst []byte) []byte {
	dst = appendU32(dst, s.HeapID)
	dst = append(dst, s.Unit)
	dst = appendU32(dst, s.Start)
	dst = appendU32(dst, s.Offset)
	dst = appendU32(dst, s.Units)
	return append(dst, s.Runs...)
}

// DecodeHeapSegment decodes a segment chunk and checks its runs: an even
// number of bytes, partial runs continued by the same state, and the units
// summing to the stated unit count (the design's rejection rule).
func DecodeHeapSegment(t Type, data []byte) (HeapSegment, error) {
	r := reader(data)
	s := HeapSegment{T: t, HeapID: u32(r), Unit: r.Uint8(), Start: u32(r), Offset: u32(r), Units: u32(r)}
	if err := check(t, r); err != nil {
		return HeapSegment{}, err
	}
	s.Runs = data[SegmentHeaderSize:]
	var units uint64
	var err error
	s.Elements, units, err = WalkRuns(s.Runs, nil)
	if err != nil {
		return HeapSegment{}, fmt.Errorf("%w: %s: %v", ErrMalformed, t, err)
	}
	if units != uint64(s.Units) {
		return HeapSegment{}, fmt.Errorf("%w: %s: runs hold %d units, header says %d", ErrMalformed, t, units, s.Units)
	}
	return s, nil
}
