package ddm

import (
	"encoding/binary"
	"fmt"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// This file holds one Go type per chunk layout of the reference (§2), each
// with AppendData (encode) and a DecodeXxx function. Types whose layout
// differs by direction have a request type (host→VM) and a reply or
// unsolicited type (VM→host). Decoders copy strings; they alias nothing
// except where a field says so. Trailing bytes after the known fields are
// ignored (VMs append fields over the years).

func reader(data []byte) *jdwp.BodyReader { return jdwp.NewBodyReader(data, jdwp.IDSizes{}) }

func check(t Type, r *jdwp.BodyReader) error {
	if err := r.Err(); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrMalformed, t, err)
	}
	return nil
}

func u32(r *jdwp.BodyReader) uint32 { return uint32(r.Int32()) }

func appendU32(dst []byte, v uint32) []byte { return binary.BigEndian.AppendUint32(dst, v) }

func appendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, 1)
	}
	return append(dst, 0)
}

// Empty is a chunk with no data: FEAT, THST, HPGC, REAQ, REAL, HPDS, MPRE,
// MPSE, SPSE, MPRQ requests; HPIF/HPSG/THEN null replies have no chunk.
type Empty struct{ T Type }

// ChunkType implements Payload.
func (e Empty) ChunkType() Type { return e.T }

// AppendData implements Payload.
func (Empty) AppendData(dst []byte) []byte { return dst }

// Raw is a chunk whose data is an opaque blob (ARTT, TEST, HPDS and MPSE
// data, NHGT, VURT, VUOP, DTRC, unknown types). Data aliases the packet.
type Raw struct {
	T    Type
	Data []byte
}

// ChunkType implements Payload.
func (r Raw) ChunkType() Type { return r.T }

// AppendData implements Payload.
func (r Raw) AppendData(dst []byte) []byte { return append(dst, r.Data...) }

// U1 is a chunk holding one byte: THEN and REAE (enable), WAIT (reason),
// HPIF request (when), REAQ / MPRE / MPRQ / HPDU replies, VUGL is u4.
type U1 struct {
	T Type
	V uint8
}

// ChunkType implements Payload.
func (u U1) ChunkType() Type { return u.T }

// AppendData implements Payload.
func (u U1) AppendData(dst []byte) []byte { return append(dst, u.V) }

// DecodeU1 decodes a one-byte chunk.
func DecodeU1(t Type, data []byte) (U1, error) {
	r := reader(data)
	u := U1{T: t, V: r.Uint8()}
	return u, check(t, r)
}

// U4 is a chunk holding one u4: HELO request (server protocol version),
// EXIT (status), STKL request (thread id), THDE (thread id), HPST/HPEN/
// NHST/NHEN (heap id), STAG (stage), VULW request, VUGL (enable).
type U4 struct {
	T Type
	V uint32
}

// ChunkType implements Payload.
func (u U4) ChunkType() Type { return u.T }

// AppendData implements Payload.
func (u U4) AppendData(dst []byte) []byte { return appendU32(dst, u.V) }

// DecodeU4 decodes a one-u4 chunk.
func DecodeU4(t Type, data []byte) (U4, error) {
	r := reader(data)
	u := U4{T: t, V: u32(r)}
	return u, check(t, r)
}

// SegmentRequest is HPSG/NHSG host→VM: u1 when (0 off, 1 every GC), u1
// what (0 merged HPSG, 1 distinct objects HPSO).
type SegmentRequest struct {
	T          Type
	When, What uint8
}

// ChunkType implements Payload.
func (s SegmentRequest) ChunkType() Type { return s.T }

// AppendData implements Payload.
func (s SegmentRequest) AppendData(dst []byte) []byte { return append(dst, s.When, s.What) }

// DecodeSegmentRequest decodes an HPSG/NHSG request.
func DecodeSegmentRequest(t Type, data []byte) (SegmentRequest, error) {
	r := reader(data)
	s := SegmentRequest{T: t, When: r.Uint8(), What: r.Uint8()}
	return s, check(t, r)
}

// Hello is the VM's HELO reply (§2.1). Every field after AppName is
// optional; Optional counts how many of them are present, in order:
// UserID, ABI, JVMFlags, NativeDebuggable, PackageName, Stage.
type Hello struct {
	ClientVersion    uint32
	PID              uint32
	VMIdent          string
	AppName          string
	Optional         int
	UserID           uint32
	ABI              string
	JVMFlags         string
	NativeDebuggable bool
	PackageName      string
	Stage            Type
}

// ChunkType implements Payload.
func (Hello) ChunkType() Type { return TypeHELO }

// AppendData implements Payload.
func (h Hello) AppendData(dst []byte) []byte {
	dst = appendU32(dst, h.ClientVersion)
	dst = appendU32(dst, h.PID)
	dst = appendU32(dst, uint32(str16Units(h.VMIdent)))
	dst = appendU32(dst, uint32(str16Units(h.AppName)))
	dst = appendStr16(dst, h.VMIdent)
	dst = appendStr16(dst, h.AppName)
	if h.Optional > 0 {
		dst = appendU32(dst, h.UserID)
	}
	if h.Optional > 1 {
		dst = appendLstr(dst, h.ABI)
	}
	if h.Optional > 2 {
		dst = appendLstr(dst, h.JVMFlags)
	}
	if h.Optional > 3 {
		dst = appendBool(dst, h.NativeDebuggable)
	}
	if h.Optional > 4 {
		dst = appendLstr(dst, h.PackageName)
	}
	if h.Optional > 5 {
		dst = appendU32(dst, uint32(h.Stage))
	}
	return dst
}

// DecodeHello decodes a HELO reply, reading optional fields while bytes
// remain.
func DecodeHello(data []byte) (Hello, error) {
	r := reader(data)
	var h Hello
	h.ClientVersion = u32(r)
	h.PID = u32(r)
	vl, al := u32(r), u32(r)
	h.VMIdent = readStr16(r, vl)
	h.AppName = readStr16(r, al)
	if r.Err() == nil && r.Remaining() >= 4 {
		h.UserID, h.Optional = u32(r), 1
	}
	if r.Err() == nil && r.Remaining() >= 4 {
		h.ABI, h.Optional = readLstr(r), 2
	}
	if r.Err() == nil && r.Remaining() >= 4 {
		h.JVMFlags, h.Optional = readLstr(r), 3
	}
	if r.Err() == nil && r.Remaining() >= 1 {
		h.NativeDebuggable, h.Optional = r.Bool(), 4
	}
	if r.Err() == nil && r.Remaining() >= 4 {
		h.PackageName, h.Optional = readLstr(r), 5
	}
	if r.Err() == nil && r.Remaining() >= 4 {
		h.Stage, h.Optional = Type(u32(r)), 6
	}
	return h, check(TypeHELO, r)
}

// StringList is a u4 count then count lstrs: the FEAT reply and the VULW
// reply.
type StringList struct {
	T     Type
	Items []string
}

// ChunkType implements Payload.
func (s StringList) ChunkType() Type { return s.T }

// AppendData implements Payload.
func (s StringList) AppendData(dst []byte) []byte {
	dst = appendU32(dst, uint32(len(s.Items)))
	for _, it := range s.Items {
		dst = appendLstr(dst, it)
	}
	return dst
}

// DecodeStringList decodes a FEAT or VULW reply.
func DecodeStringList(t Type, data []byte) (StringList, error) {
	r := reader(data)
	n := r.Count(4)
	s := StringList{T: t, Items: make([]string, 0, n)}
	for i := 0; i < n && r.Err() == nil; i++ {
		s.Items = append(s.Items, readLstr(r))
	}
	return s, check(t, r)
}

// AppName is the unsolicited APNM (§2.1): lstr name, then optional u4 user
// id (2012+) and lstr package name (2019+); Optional counts them.
type AppName struct {
	Name        string
	Optional    int
	UserID      uint32
	PackageName string
}

// ChunkType implements Payload.
func (AppName) ChunkType() Type { return TypeAPNM }

// AppendData implements Payload.
func (a AppName) AppendData(dst []byte) []byte {
	dst = appendLstr(dst, a.Name)
	if a.Optional > 0 {
		dst = appendU32(dst, a.UserID)
	}
	if a.Optional > 1 {
		dst = appendLstr(dst, a.PackageName)
	}
	return dst
}

// DecodeAppName decodes an APNM chunk.
func DecodeAppName(data []byte) (AppName, error) {
	r := reader(data)
	a := AppName{Name: readLstr(r)}
	if r.Err() == nil && r.Remaining() >= 4 {
		a.UserID, a.Optional = u32(r), 1
	}
	if r.Err() == nil && r.Remaining() >= 4 {
		a.PackageName, a.Optional = readLstr(r), 2
	}
	return a, check(TypeAPNM, r)
}

// ThreadName is THCR (thread created) and THNM (renamed): u4 thread id,
// lstr name. The id is the VM's small thread id, not a JDWP objectID.
type ThreadName struct {
	T    Type
	ID   uint32
	Name string
}

// ChunkType implements Payload.
func (t ThreadName) ChunkType() Type { return t.T }

// AppendData implements Payload.
func (t ThreadName) AppendData(dst []byte) []byte {
	return appendLstr(appendU32(dst, t.ID), t.Name)
}

// DecodeThreadName decodes THCR or THNM.
func DecodeThreadName(t Type, data []byte) (ThreadName, error) {
	r := reader(data)
	tn := ThreadName{T: t, ID: u32(r)}
	tn.Name = readLstr(r)
	return tn, check(t, r)
}

// ThreadStat is one THST entry.
type ThreadStat struct {
	ID     uint32
	Status uint8
	TID    uint32
	UTime  uint32
	STime  uint32
	Daemon bool
	// Suspended is the design document's flag (Design layout only).
	Suspended bool
}

// ThreadStatus is the THST reply (§2.2): u1 headerLen (4), u1 bytesPerEntry
// (18), u2 count, entries of u4 id, u1 status, u4 tid, u4 utime, u4 stime,
// u1 isDaemon; extra header and entry bytes are skipped. Design is the 2007
// layout instead: u4 count, entries of u4 id, u1 state, u1 suspended.
type ThreadStatus struct {
	Design  bool
	Threads []ThreadStat
}

// ChunkType implements Payload.
func (ThreadStatus) ChunkType() Type { return TypeTHST }

// AppendData implements Payload.
func (t ThreadStatus) AppendData(dst []byte) []byte {
	if t.Design {
		dst = appendU32(dst, uint32(len(t.Threads)))
		for _, e := range t.Threads {
			dst = appendU32(dst, e.ID)
			dst = append(dst, e.Status)
			dst = appendBool(dst, e.Suspended)
		}
		return dst
	}
	dst = append(dst, 4, 18)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(t.Threads)))
	for _, e := range t.Threads {
		dst = appendU32(dst, e.ID)
		dst = append(dst, e.Status)
		dst = appendU32(dst, e.TID)
		dst = appendU32(dst, e.UTime)
		dst = appendU32(dst, e.STime)
		dst = appendBool(dst, e.Daemon)
	}
	return dst
}

// DecodeThreadStatus decodes a THST reply in either layout. A first byte
// of 0 cannot be a real headerLen (≥ 4), so it marks the design layout.
func DecodeThreadStatus(data []byte) (ThreadStatus, error) {
	r := reader(data)
	if len(data) > 0 && data[0] == 0 {
		n := r.Count(6)
		t := ThreadStatus{Design: true, Threads: make([]ThreadStat, 0, n)}
		for i := 0; i < n && r.Err() == nil; i++ {
			t.Threads = append(t.Threads, ThreadStat{ID: u32(r), Status: r.Uint8(), Suspended: r.Bool()})
		}
		return t, check(TypeTHST, r)
	}
	hl, el := int(r.Uint8()), int(r.Uint8())
	n := int(uint16(r.Int16()))
	if r.Err() == nil && (hl < 4 || el < 17) {
		r.Fail(fmt.Errorf("header length %d or entry length %d too small", hl, el))
	}
	r.Bytes(hl - 4)
	if r.Err() == nil && n*el > r.Remaining() {
		r.Fail(fmt.Errorf("%d entries of %d bytes, %d bytes remain", n, el, r.Remaining()))
	}
	t := ThreadStatus{Threads: make([]ThreadStat, 0, n)}
	for i := 0; i < n && r.Err() == nil; i++ {
		e := ThreadStat{ID: u32(r), Status: r.Uint8(), TID: u32(r), UTime: u32(r), STime: u32(r)}
		if el >= 18 {
			e.Daemon = r.Bool()
			r.Bytes(el - 18)
		}
		t.Threads = append(t.Threads, e)
	}
	return t, check(TypeTHST, r)
}

// StackFrame is one STKL frame; Line -2 is native code.
type StackFrame struct {
	Class, Method, File string
	Line                int32
}

// StackTrace is the STKL reply: u4 reserved (0), u4 thread id, u4 depth,
// frames of lstr class, lstr method, lstr file (length 0 = none), s4 line.
type StackTrace struct {
	ThreadID uint32
	Frames   []StackFrame
}

// ChunkType implements Payload.
func (StackTrace) ChunkType() Type { return TypeSTKL }

// AppendData implements Payload.
func (s StackTrace) AppendData(dst []byte) []byte {
	dst = appendU32(dst, 0)
	dst = appendU32(dst, s.ThreadID)
	dst = appendU32(dst, uint32(len(s.Frames)))
	for _, f := range s.Frames {
		dst = appendLstr(dst, f.Class)
		dst = appendLstr(dst, f.Method)
		dst = appendLstr(dst, f.File)
		dst = appendU32(dst, uint32(f.Line))
	}
	return dst
}

// DecodeStackTrace decodes an STKL reply.
func DecodeStackTrace(data []byte) (StackTrace, error) {
	r := reader(data)
	r.Int32()
	s := StackTrace{ThreadID: u32(r)}
	n := r.Count(16)
	s.Frames = make([]StackFrame, 0, n)
	for i := 0; i < n && r.Err() == nil; i++ {
		f := StackFrame{Class: readLstr(r), Method: readLstr(r), File: readLstr(r)}
		f.Line = r.Int32()
		s.Frames = append(s.Frames, f)
	}
	return s, check(TypeSTKL, r)
}

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

// Fail is the generic FAIL chunk (§1.6): s4 code, lstr message.
type Fail struct {
	Code    int32
	Message string
}

// ChunkType implements Payload.
func (Fail) ChunkType() Type { return TypeFAIL }

// AppendData implements Payload.
func (f Fail) AppendData(dst []byte) []byte {
	return appendLstr(appendU32(dst, uint32(f.Code)), f.Message)
}

// DecodeFail decodes a FAIL chunk.
func DecodeFail(data []byte) (Fail, error) {
	r := reader(data)
	f := Fail{Code: r.Int32()}
	f.Message = readLstr(r)
	return f, check(TypeFAIL, r)
}

// Filename is the HPDU request: lstr file name on the device.
type Filename struct {
	T    Type
	Name string
}

// ChunkType implements Payload.
func (f Filename) ChunkType() Type { return f.T }

// AppendData implements Payload.
func (f Filename) AppendData(dst []byte) []byte { return appendLstr(dst, f.Name) }

// DecodeFilename decodes an HPDU request.
func DecodeFilename(t Type, data []byte) (Filename, error) {
	r := reader(data)
	f := Filename{T: t, Name: readLstr(r)}
	return f, check(t, r)
}

// Profiling is the MPRS / MPSS / SPSS request (§2.5): u4 buffer size, u4
// flags, then for MPRS an lstr device file, for SPSS a u4 interval in µs.
type Profiling struct {
	T              Type
	BufferSize     uint32
	Flags          uint32
	File           string // MPRS only
	IntervalMicros uint32 // SPSS only
}

// ChunkType implements Payload.
func (p Profiling) ChunkType() Type { return p.T }

// AppendData implements Payload.
func (p Profiling) AppendData(dst []byte) []byte {
	dst = appendU32(appendU32(dst, p.BufferSize), p.Flags)
	switch p.T {
	case TypeMPRS:
		dst = appendLstr(dst, p.File)
	case TypeSPSS:
		dst = appendU32(dst, p.IntervalMicros)
	}
	return dst
}

// DecodeProfiling decodes an MPRS, MPSS or SPSS request.
func DecodeProfiling(t Type, data []byte) (Profiling, error) {
	r := reader(data)
	p := Profiling{T: t, BufferSize: u32(r), Flags: u32(r)}
	switch t {
	case TypeMPRS:
		p.File = readLstr(r)
	case TypeSPSS:
		p.IntervalMicros = u32(r)
	}
	return p, check(t, r)
}
