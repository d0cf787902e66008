package jdwp

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrShortBody is the sticky error of a BodyReader that ran out of bytes.
var ErrShortBody = errors.New("jdwp: body shorter than its contents")

// BodyReader decodes a packet body with bounds checks. After the first
// failure every read returns zero and Err reports the failure, so a decoder
// reads all its fields and checks once (a sticky error). It never allocates
// except in String, and never trusts a count beyond the bytes remaining.
type BodyReader struct {
	b     []byte
	off   int
	sizes IDSizes
	err   error
}

// NewBodyReader returns a reader over b using the given ID sizes.
func NewBodyReader(b []byte, sizes IDSizes) *BodyReader {
	return &BodyReader{b: b, sizes: sizes}
}

// Reset points r at new bytes, keeping no state from before.
func (r *BodyReader) Reset(b []byte, sizes IDSizes) {
	*r = BodyReader{b: b, sizes: sizes}
}

// Err is the first error met, or nil.
func (r *BodyReader) Err() error { return r.err }

// Offset is the number of bytes consumed.
func (r *BodyReader) Offset() int { return r.off }

// Remaining is the number of bytes not yet consumed.
func (r *BodyReader) Remaining() int { return len(r.b) - r.off }

// Sizes is the ID sizes the reader decodes with.
func (r *BodyReader) Sizes() IDSizes { return r.sizes }

// Fail records err as the sticky error unless one is already recorded.
func (r *BodyReader) Fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

// Bytes consumes n bytes and returns them (aliasing the body), or nil.
func (r *BodyReader) Bytes(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.off {
		r.err = fmt.Errorf("%w: need %d bytes at offset %d, have %d", ErrShortBody, n, r.off, len(r.b)-r.off)
		return nil
	}
	s := r.b[r.off : r.off+n]
	r.off += n
	return s
}

// Uint8 reads one byte.
func (r *BodyReader) Uint8() uint8 {
	if b := r.Bytes(1); b != nil {
		return b[0]
	}
	return 0
}

// Bool reads a boolean byte.
func (r *BodyReader) Bool() bool { return r.Uint8() != 0 }

// Int16 reads a big-endian 16-bit integer.
func (r *BodyReader) Int16() int16 {
	if b := r.Bytes(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}

// Int32 reads a big-endian 32-bit integer.
func (r *BodyReader) Int32() int32 {
	if b := r.Bytes(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

// Int64 reads a big-endian 64-bit integer.
func (r *BodyReader) Int64() int64 {
	if b := r.Bytes(8); b != nil {
		return int64(binary.BigEndian.Uint64(b))
	}
	return 0
}

// Count reads a 32-bit count of items each at least minItemSize bytes long
// and fails if the remaining bytes cannot hold that many, so callers may
// size allocations by it.
func (r *BodyReader) Count(minItemSize int) int {
	n := r.Int32()
	if r.err != nil {
		return 0
	}
	if minItemSize < 1 {
		minItemSize = 1
	}
	if n < 0 || int64(n)*int64(minItemSize) > int64(r.Remaining()) {
		r.err = fmt.Errorf("%w: count %d at offset %d exceeds %d remaining bytes", ErrShortBody, n, r.off-4, r.Remaining())
		return 0
	}
	return int(n)
}

// ID reads an ID of size bytes (1..8), zero-extended.
func (r *BodyReader) ID(size int) uint64 {
	if size < 1 || size > 8 {
		r.Fail(fmt.Errorf("%w: %d", ErrBadIDSize, size))
		return 0
	}
	b := r.Bytes(size)
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return v
}

// ObjectID reads an objectID (also threadID, stringID, arrayID, ...).
func (r *BodyReader) ObjectID() uint64 { return r.ID(r.sizes.ObjectID) }

// ReferenceTypeID reads a referenceTypeID (also classID, interfaceID, ...).
func (r *BodyReader) ReferenceTypeID() uint64 { return r.ID(r.sizes.ReferenceTypeID) }

// MethodID reads a methodID.
func (r *BodyReader) MethodID() uint64 { return r.ID(r.sizes.MethodID) }

// FieldID reads a fieldID.
func (r *BodyReader) FieldID() uint64 { return r.ID(r.sizes.FieldID) }

// FrameID reads a frameID.
func (r *BodyReader) FrameID() uint64 { return r.ID(r.sizes.FrameID) }

// StringBytes reads a JDWP string (32-bit length, modified UTF-8) and
// returns its bytes aliasing the body.
func (r *BodyReader) StringBytes() []byte {
	n := r.Int32()
	if r.err != nil {
		return nil
	}
	if n < 0 {
		r.Fail(fmt.Errorf("%w: negative string length %d", ErrShortBody, n))
		return nil
	}
	return r.Bytes(int(n))
}

// String reads a JDWP string and copies it.
func (r *BodyReader) String() string { return string(r.StringBytes()) }

// BodyWriter appends body fields to Buf.
type BodyWriter struct {
	Buf   []byte
	Sizes IDSizes
}

// Uint8 appends one byte.
func (w *BodyWriter) Uint8(v uint8) { w.Buf = append(w.Buf, v) }

// Bool appends a boolean byte.
func (w *BodyWriter) Bool(v bool) {
	if v {
		w.Uint8(1)
	} else {
		w.Uint8(0)
	}
}

// Int16 appends a big-endian 16-bit integer.
func (w *BodyWriter) Int16(v int16) { w.Buf = binary.BigEndian.AppendUint16(w.Buf, uint16(v)) }

// Int32 appends a big-endian 32-bit integer.
func (w *BodyWriter) Int32(v int32) { w.Buf = binary.BigEndian.AppendUint32(w.Buf, uint32(v)) }

// Int64 appends a big-endian 64-bit integer.
func (w *BodyWriter) Int64(v int64) { w.Buf = binary.BigEndian.AppendUint64(w.Buf, uint64(v)) }

// ID appends v as a size-byte ID.
func (w *BodyWriter) ID(v uint64, size int) {
	for i := size - 1; i >= 0; i-- {
		w.Buf = append(w.Buf, byte(v>>(8*i)))
	}
}

// ObjectID appends an objectID.
func (w *BodyWriter) ObjectID(v uint64) { w.ID(v, w.Sizes.ObjectID) }

// ReferenceTypeID appends a referenceTypeID.
func (w *BodyWriter) ReferenceTypeID(v uint64) { w.ID(v, w.Sizes.ReferenceTypeID) }

// MethodID appends a methodID.
func (w *BodyWriter) MethodID(v uint64) { w.ID(v, w.Sizes.MethodID) }

// FieldID appends a fieldID.
func (w *BodyWriter) FieldID(v uint64) { w.ID(v, w.Sizes.FieldID) }

// FrameID appends a frameID.
func (w *BodyWriter) FrameID(v uint64) { w.ID(v, w.Sizes.FrameID) }

// String appends a JDWP string.
func (w *BodyWriter) String(s string) {
	w.Int32(int32(len(s)))
	w.Buf = append(w.Buf, s...)
}
