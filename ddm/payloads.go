package ddm

import (
	"encoding/binary"
	"fmt"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// This file and hello.go, thread.go, heap.go and profiling.go hold one Go
// type per chunk layout of the reference (§2), each with AppendData
// (encode) and a DecodeXxx function. Types whose layout differs by
// direction have a request type (host→VM) and a reply or unsolicited type
// (VM→host). Decoders copy strings; they alias nothing except where a
// field says so. Trailing bytes after the known fields are ignored (VMs
// append fields over the years).

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
