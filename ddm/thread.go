package ddm

import (
	"encoding/binary"
	"fmt"
)

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
