package ddm

import (
	"encoding/binary"
	"fmt"
)

// Direction of a chunk: the same type has different layouts host→VM and
// VM→host.
type Direction uint8

const (
	// HostToVM is a request from a DDM server (the proxy, ddmlib).
	HostToVM Direction = iota
	// VMToHost is a reply or an unsolicited chunk from the VM.
	VMToHost
)

func (d Direction) String() string {
	if d == HostToVM {
		return "to_vm"
	}
	return "from_vm"
}

// Decode decodes one chunk travelling in direction d into its Payload type.
// Unknown types and blobs come back as Raw (aliasing c.Data); a ZLIB chunk
// is inflated and its inner chunk decoded. Errors wrap ErrMalformed (or
// ErrTooLarge); they are never fatal to the caller.
func Decode(d Direction, c Chunk) (Payload, error) {
	if d == HostToVM {
		return decodeRequest(c)
	}
	return decodeFromVM(c)
}

func decodeRequest(c Chunk) (Payload, error) {
	switch c.Type {
	case TypeHELO, TypeEXIT, TypeSTKL, TypeVULW, TypeVUGL:
		return DecodeU4(c.Type, c.Data)
	case TypeTHEN, TypeREAE, TypeHPIF:
		return DecodeU1(c.Type, c.Data)
	case TypeHPSG, TypeNHSG:
		return DecodeSegmentRequest(c.Type, c.Data)
	case TypeHPDU:
		return DecodeFilename(c.Type, c.Data)
	case TypeMPRS, TypeMPSS, TypeSPSS:
		return DecodeProfiling(c.Type, c.Data)
	case TypeFEAT, TypeTHST, TypeHPGC, TypeREAQ, TypeREAL, TypeHPDS, TypeMPRE, TypeMPSE, TypeSPSE, TypeMPRQ, TypeNHGT, TypeDBGD:
		if len(c.Data) == 0 {
			return Empty{T: c.Type}, nil
		}
		if c.Type == TypeTHST && len(c.Data) >= 4 {
			// The design's "u4 interval" (never implemented by a VM).
			return DecodeU4(c.Type, c.Data)
		}
		return Raw{T: c.Type, Data: c.Data}, nil
	case TypeZLIB:
		return decodeZLIB(HostToVM, c.Data)
	}
	return Raw{T: c.Type, Data: c.Data}, nil
}

func decodeFromVM(c Chunk) (Payload, error) {
	switch c.Type {
	case TypeHELO:
		return DecodeHello(c.Data)
	case TypeFEAT, TypeVULW:
		return DecodeStringList(c.Type, c.Data)
	case TypeAPNM:
		return DecodeAppName(c.Data)
	case TypeWAIT, TypeREAQ, TypeMPRE, TypeMPRQ, TypeHPDU:
		return DecodeU1(c.Type, c.Data)
	case TypeTHDE, TypeHPST, TypeHPEN, TypeNHST, TypeNHEN, TypeSTAG:
		return DecodeU4(c.Type, c.Data)
	case TypeTHCR, TypeTHNM:
		return DecodeThreadName(c.Type, c.Data)
	case TypeTHST:
		return DecodeThreadStatus(c.Data)
	case TypeSTKL:
		return DecodeStackTrace(c.Data)
	case TypeHPIF:
		return DecodeHeapInfo(c.Data)
	case TypeHPSG, TypeHPSO, TypeNHSG:
		return DecodeHeapSegment(c.Type, c.Data)
	case TypeREAL:
		return DecodeAllocations(c.Data)
	case TypeFAIL:
		return DecodeFail(c.Data)
	case TypeZLIB:
		return decodeZLIB(VMToHost, c.Data)
	}
	return Raw{T: c.Type, Data: c.Data}, nil
}

// Inflated is a decoded ZLIB chunk: the inner chunk's payload.
type Inflated struct {
	Inner Payload
}

// ChunkType implements Payload: a ZLIB chunk.
func (Inflated) ChunkType() Type { return TypeZLIB }

// AppendData implements Payload by compressing the inner chunk again.
func (z Inflated) AppendData(dst []byte) []byte {
	return Compressed{Inner: Chunk{Type: z.Inner.ChunkType(), Data: z.Inner.AppendData(nil)}}.AppendData(dst)
}

func decodeZLIB(d Direction, data []byte) (Payload, error) {
	c, err := DecodeCompressed(data)
	if err != nil {
		return nil, err
	}
	if c.Inner.Type == TypeZLIB {
		return nil, fmt.Errorf("%w: nested ZLIB", ErrMalformed)
	}
	p, err := Decode(d, c.Inner)
	if err != nil {
		return nil, err
	}
	return Inflated{Inner: p}, nil
}

// AllocFrame is one frame of a recorded allocation. Line: -2 native, -1 no
// source.
type AllocFrame struct {
	Class, Method, File string
	Line                int16
}

// Allocation is one entry of the allocation tracker (REAL reply).
type Allocation struct {
	Size   uint32
	TID    uint16
	Class  string
	Frames []AllocFrame
}

// Allocations is the REAL reply (§2.3): u1 msgHeaderLen (15), u1
// entryHeaderLen (9), u1 frameLen (8), u2 entry count, u4 offset to the
// string tables, u2 class / method / file name counts; entries of u4 size,
// u2 tid, u2 class index, u1 depth, then depth frames of u2 class, u2
// method, u2 file, s2 line; then the three tables as lstr lists.
type Allocations struct {
	Entries []Allocation
}

// ChunkType implements Payload.
func (Allocations) ChunkType() Type { return TypeREAL }

// AppendData implements Payload.
func (a Allocations) AppendData(dst []byte) []byte {
	type table struct {
		idx  map[string]uint16
		list []string
	}
	add := func(t *table, s string) uint16 {
		if i, ok := t.idx[s]; ok {
			return i
		}
		i := uint16(len(t.list))
		t.idx[s] = i
		t.list = append(t.list, s)
		return i
	}
	classes := &table{idx: map[string]uint16{}}
	methods := &table{idx: map[string]uint16{}}
	files := &table{idx: map[string]uint16{}}
	var body []byte
	for _, e := range a.Entries {
		body = appendU32(body, e.Size)
		body = binary.BigEndian.AppendUint16(body, e.TID)
		body = binary.BigEndian.AppendUint16(body, add(classes, e.Class))
		body = append(body, uint8(len(e.Frames)))
		for _, f := range e.Frames {
			body = binary.BigEndian.AppendUint16(body, add(classes, f.Class))
			body = binary.BigEndian.AppendUint16(body, add(methods, f.Method))
			body = binary.BigEndian.AppendUint16(body, add(files, f.File))
			body = binary.BigEndian.AppendUint16(body, uint16(f.Line))
		}
	}
	dst = append(dst, 15, 9, 8)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(a.Entries)))
	dst = appendU32(dst, uint32(15+len(body)))
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(classes.list)))
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(methods.list)))
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(files.list)))
	dst = append(dst, body...)
	for _, t := range []*table{classes, methods, files} {
		for _, s := range t.list {
			dst = appendLstr(dst, s)
		}
	}
	return dst
}

// DecodeAllocations decodes a REAL reply, honouring the header's sizes
// (extra header, entry and frame bytes are skipped).
func DecodeAllocations(data []byte) (Allocations, error) {
	r := reader(data)
	hl, el, fl := int(r.Uint8()), int(r.Uint8()), int(r.Uint8())
	n := int(uint16(r.Int16()))
	off := int64(u32(r))
	nc, nm, nf := int(uint16(r.Int16())), int(uint16(r.Int16())), int(uint16(r.Int16()))
	if r.Err() == nil && (hl < 15 || el < 9 || fl < 8) {
		r.Fail(fmt.Errorf("header sizes %d/%d/%d too small", hl, el, fl))
	}
	if r.Err() == nil && (off < int64(hl) || off > int64(len(data))) {
		r.Fail(fmt.Errorf("string table offset %d outside %d..%d", off, hl, len(data)))
	}
	if err := check(TypeREAL, r); err != nil {
		return Allocations{}, err
	}
	// String tables first, so entries can be resolved as they are read.
	tr := reader(data[off:])
	readTable := func(k int) []string {
		if tr.Err() == nil && k*4 > tr.Remaining() {
			tr.Fail(fmt.Errorf("%d strings cannot fit in %d bytes", k, tr.Remaining()))
		}
		out := make([]string, 0, k)
		for i := 0; i < k && tr.Err() == nil; i++ {
			out = append(out, readLstr(tr))
		}
		return out
	}
	classes, methods, files := readTable(nc), readTable(nm), readTable(nf)
	if err := check(TypeREAL, tr); err != nil {
		return Allocations{}, err
	}
	name := func(t []string, i uint16) string {
		if int(i) < len(t) {
			return t[i]
		}
		r.Fail(fmt.Errorf("string index %d beyond table of %d", i, len(t)))
		return ""
	}
	er := reader(data[:off])
	er.Bytes(hl)
	if er.Err() == nil && n*el > er.Remaining() {
		er.Fail(fmt.Errorf("%d entries of %d bytes, %d bytes remain", n, el, er.Remaining()))
	}
	a := Allocations{Entries: make([]Allocation, 0, n)}
	for i := 0; i < n && er.Err() == nil && r.Err() == nil; i++ {
		e := Allocation{Size: u32(er), TID: uint16(er.Int16())}
		e.Class = name(classes, uint16(er.Int16()))
		depth := int(er.Uint8())
		er.Bytes(el - 9)
		if er.Err() == nil && depth*fl > er.Remaining() {
			er.Fail(fmt.Errorf("%d frames of %d bytes, %d bytes remain", depth, fl, er.Remaining()))
		}
		e.Frames = make([]AllocFrame, 0, depth)
		for j := 0; j < depth && er.Err() == nil; j++ {
			c, m, f := uint16(er.Int16()), uint16(er.Int16()), uint16(er.Int16())
			line := er.Int16()
			er.Bytes(fl - 8)
			e.Frames = append(e.Frames, AllocFrame{Class: name(classes, c), Method: name(methods, m), File: name(files, f), Line: line})
		}
		a.Entries = append(a.Entries, e)
	}
	if err := check(TypeREAL, er); err != nil {
		return Allocations{}, err
	}
	return a, check(TypeREAL, r)
}
