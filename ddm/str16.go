package ddm

import (
	"encoding/binary"
	"fmt"
	"unicode/utf16"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// DDM strings are UTF-16 code units, big-endian, no terminator (§ notation):
// str16(n) is n units; an lstr is u4 n followed by str16(n).

// str16Units is the length of s in UTF-16 code units.
func str16Units(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 && r <= 0x10ffff {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// appendStr16 appends s as UTF-16 code units, without a length.
func appendStr16(dst []byte, s string) []byte {
	for _, r := range s {
		if r >= 0x10000 && r <= 0x10ffff {
			r1, r2 := utf16.EncodeRune(r)
			dst = binary.BigEndian.AppendUint16(dst, uint16(r1))
			dst = binary.BigEndian.AppendUint16(dst, uint16(r2))
		} else {
			dst = binary.BigEndian.AppendUint16(dst, uint16(r))
		}
	}
	return dst
}

// appendLstr appends u4 length + str16.
func appendLstr(dst []byte, s string) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(str16Units(s)))
	return appendStr16(dst, s)
}

// readStr16 reads n UTF-16 units. Unpaired surrogates decode to U+FFFD.
func readStr16(r *jdwp.BodyReader, n uint32) string {
	if uint64(n)*2 > uint64(r.Remaining()) {
		r.Fail(fmt.Errorf("%w: string of %d UTF-16 units, %d bytes remain", ErrMalformed, n, r.Remaining()))
		return ""
	}
	b := r.Bytes(int(n) * 2)
	if len(b) == 0 {
		return ""
	}
	// Fast path: all ASCII.
	ascii := true
	for i := 0; i < len(b); i += 2 {
		if b[i] != 0 || b[i+1] >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		out := make([]byte, len(b)/2)
		for i := range out {
			out[i] = b[2*i+1]
		}
		return string(out)
	}
	u := make([]uint16, len(b)/2)
	for i := range u {
		u[i] = binary.BigEndian.Uint16(b[2*i:])
	}
	return string(utf16.Decode(u))
}

// readLstr reads u4 length + str16.
func readLstr(r *jdwp.BodyReader) string {
	return readStr16(r, uint32(r.Int32()))
}
