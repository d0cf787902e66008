package ddm

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// Type is a chunk type: four ASCII characters read as a big-endian u4.
type Type uint32

// MakeType returns the Type spelled by s (four characters).
func MakeType(s string) Type {
	if len(s) != 4 {
		panic("ddm: chunk type must be 4 characters: " + s) // programming error, constants only
	}
	return Type(binary.BigEndian.Uint32([]byte(s)))
}

// String is the four characters, or hex when they are not printable.
func (t Type) String() string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(t))
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return fmt.Sprintf("0x%08x", uint32(t))
		}
	}
	return string(b[:])
}

// Chunk types of the reference catalogue (§2), including design-only ones.
var (
	TypeHELO = MakeType("HELO")
	TypeFEAT = MakeType("FEAT")
	TypeAPNM = MakeType("APNM")
	TypeWAIT = MakeType("WAIT")
	TypeEXIT = MakeType("EXIT")
	TypeSTAG = MakeType("STAG")
	TypeARTT = MakeType("ARTT")
	TypeTEST = MakeType("TEST")
	TypeTHEN = MakeType("THEN")
	TypeTHCR = MakeType("THCR")
	TypeTHDE = MakeType("THDE")
	TypeTHNM = MakeType("THNM")
	TypeTHST = MakeType("THST")
	TypeSTKL = MakeType("STKL")
	TypeHPIF = MakeType("HPIF")
	TypeHPSG = MakeType("HPSG")
	TypeHPSO = MakeType("HPSO")
	TypeHPST = MakeType("HPST")
	TypeHPEN = MakeType("HPEN")
	TypeNHSG = MakeType("NHSG")
	TypeNHST = MakeType("NHST")
	TypeNHEN = MakeType("NHEN")
	TypeHPGC = MakeType("HPGC")
	TypeHPDU = MakeType("HPDU")
	TypeHPDS = MakeType("HPDS")
	TypeREAE = MakeType("REAE")
	TypeREAQ = MakeType("REAQ")
	TypeREAL = MakeType("REAL")
	TypeNHGT = MakeType("NHGT")
	TypeMPRS = MakeType("MPRS")
	TypeMPRE = MakeType("MPRE")
	TypeMPSS = MakeType("MPSS")
	TypeMPSE = MakeType("MPSE")
	TypeSPSS = MakeType("SPSS")
	TypeSPSE = MakeType("SPSE")
	TypeMPRQ = MakeType("MPRQ")
	TypeVULW = MakeType("VULW")
	TypeVURT = MakeType("VURT")
	TypeVUOP = MakeType("VUOP")
	TypeVUGL = MakeType("VUGL")
	TypeFAIL = MakeType("FAIL")
	TypeZLIB = MakeType("ZLIB")
	TypeDBGD = MakeType("DBGD")
	TypeDTRC = MakeType("DTRC")
)

// knownTypes is the reference catalogue, in its order.
var knownTypes = []Type{
	TypeHELO, TypeFEAT, TypeAPNM, TypeWAIT, TypeEXIT, TypeSTAG, TypeARTT, TypeTEST,
	TypeTHEN, TypeTHCR, TypeTHDE, TypeTHNM, TypeTHST, TypeSTKL,
	TypeHPIF, TypeHPSG, TypeHPSO, TypeHPST, TypeHPEN, TypeNHSG, TypeNHST, TypeNHEN,
	TypeHPGC, TypeHPDU, TypeHPDS, TypeREAE, TypeREAQ, TypeREAL, TypeNHGT,
	TypeMPRS, TypeMPRE, TypeMPSS, TypeMPSE, TypeSPSS, TypeSPSE, TypeMPRQ,
	TypeVULW, TypeVURT, TypeVUOP, TypeVUGL, TypeFAIL, TypeZLIB, TypeDBGD, TypeDTRC,
}

// KnownTypes returns the chunk types of the reference catalogue, in a fixed
// order (a closed set, fit for metric labels).
func KnownTypes() []Type { return slices.Clone(knownTypes) }

// Known reports whether t is in the reference catalogue.
func (t Type) Known() bool {
	for _, k := range knownTypes {
		if k == t {
			return true
		}
	}
	return false
}

// ChunkHeaderSize is the u4 type + u4 length before each chunk's data.
const ChunkHeaderSize = 8

// Chunk is one chunk. Data aliases the packet it was parsed from.
type Chunk struct {
	Type Type
	Data []byte
}

// Codec errors. Decoders wrap one of these; none is fatal to a session.
var (
	// ErrMalformed is a chunk whose data does not match its layout.
	ErrMalformed = errors.New("ddm: malformed chunk")
	// ErrChunkLength is a chunk header whose length exceeds the packet.
	ErrChunkLength = errors.New("ddm: chunk length beyond the packet")
	// ErrNotDDM is a packet that is not a (199,1) command or a reply body.
	ErrNotDDM = errors.New("ddm: not a DDM packet")
	// ErrTooLarge is a ZLIB chunk that inflates beyond MaxInflated.
	ErrTooLarge = errors.New("ddm: inflated chunk too large")
)

// Chunks iterates over the chunks of a DDM payload defensively (§1.3):
// while at least 8 bytes remain it yields a chunk bounded by the payload.
// A chunk whose length runs past the end is an error (ErrChunkLength), and
// stops the iteration; trailing bytes fewer than 8 are an error too.
type Chunks struct {
	b   []byte
	err error
}

// NewChunks returns an iterator over payload (a packet body).
func NewChunks(payload []byte) Chunks { return Chunks{b: payload} }

// Next returns the next chunk, or false at the end or on error.
func (it *Chunks) Next() (Chunk, bool) {
	if it.err != nil || len(it.b) == 0 {
		return Chunk{}, false
	}
	if len(it.b) < ChunkHeaderSize {
		it.err = fmt.Errorf("%w: %d trailing bytes", ErrChunkLength, len(it.b))
		return Chunk{}, false
	}
	t := Type(binary.BigEndian.Uint32(it.b))
	n := binary.BigEndian.Uint32(it.b[4:])
	if uint64(n) > uint64(len(it.b)-ChunkHeaderSize) {
		it.err = fmt.Errorf("%w: %s says %d bytes, %d remain", ErrChunkLength, t, n, len(it.b)-ChunkHeaderSize)
		return Chunk{}, false
	}
	c := Chunk{Type: t, Data: it.b[ChunkHeaderSize : ChunkHeaderSize+int(n)]}
	it.b = it.b[ChunkHeaderSize+int(n):]
	return c, true
}

// Err is the error that stopped the iteration, if any.
func (it *Chunks) Err() error { return it.err }

// Payload is a decoded chunk that can encode itself.
type Payload interface {
	// ChunkType is the type this payload is sent as.
	ChunkType() Type
	// AppendData appends the chunk data (without the 8-byte header).
	AppendData(dst []byte) []byte
}

// AppendPayload appends p as a whole chunk (header and data) to dst.
func AppendPayload(dst []byte, p Payload) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0)
	dst = p.AppendData(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(p.ChunkType()))
	binary.BigEndian.PutUint32(dst[start+4:], uint32(len(dst)-start-ChunkHeaderSize))
	return dst
}

// AppendCommand appends a whole JDWP (199,1) command packet carrying the
// given chunks to dst (one chunk per packet is what VMs expect, §1.3).
func AppendCommand(dst []byte, id uint32, ps ...Payload) jdwp.Packet {
	start := len(dst)
	dst = jdwp.AppendCommand(dst, id, jdwp.CmdDDMChunk, nil)
	for _, p := range ps {
		dst = AppendPayload(dst, p)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start))
	return jdwp.Packet(dst[start:])
}

// AppendReply appends a whole JDWP reply packet carrying the given chunks
// (none for an empty reply) to dst.
func AppendReply(dst []byte, id uint32, ps ...Payload) jdwp.Packet {
	start := len(dst)
	dst = jdwp.AppendReply(dst, id, 0, nil)
	for _, p := range ps {
		dst = AppendPayload(dst, p)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start))
	return jdwp.Packet(dst[start:])
}

// MaxInflated bounds the inflated size of a ZLIB chunk.
const MaxInflated = 64 << 20

// Compressed is the design document's ZLIB chunk (§1.4; never implemented
// by any VM): u4 original type, u4 original length, then the original data
// deflated in zlib format.
type Compressed struct {
	Inner Chunk
}

// AppendData appends the ZLIB chunk's data (the Payload of a ZLIB chunk is
// Inflated, whose AppendData compresses through this).
func (c Compressed) AppendData(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(c.Inner.Type))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(c.Inner.Data)))
	var buf bytes.Buffer
	zw := zlib.NewWriter(&buf)
	zw.Write(c.Inner.Data) //nolint:errcheck // bytes.Buffer cannot fail
	zw.Close()             //nolint:errcheck
	return append(dst, buf.Bytes()...)
}

// DecodeCompressed inflates a ZLIB chunk's data. The inner data is a new
// slice the caller owns; its length must match the stated length.
func DecodeCompressed(data []byte) (Compressed, error) {
	if len(data) < 8 {
		return Compressed{}, fmt.Errorf("%w: ZLIB header needs 8 bytes, have %d", ErrMalformed, len(data))
	}
	t := Type(binary.BigEndian.Uint32(data))
	n := binary.BigEndian.Uint32(data[4:])
	if n > MaxInflated {
		return Compressed{}, fmt.Errorf("%w: %d bytes", ErrTooLarge, n)
	}
	zr, err := zlib.NewReader(bytes.NewReader(data[8:]))
	if err != nil {
		return Compressed{}, fmt.Errorf("%w: ZLIB: %v", ErrMalformed, err)
	}
	out := make([]byte, 0, min(int(n), 1<<20))
	buf := bytes.NewBuffer(out)
	m, err := io.Copy(buf, io.LimitReader(zr, int64(n)+1))
	if err != nil {
		return Compressed{}, fmt.Errorf("%w: ZLIB: %v", ErrMalformed, err)
	}
	if m != int64(n) {
		return Compressed{}, fmt.Errorf("%w: ZLIB inflates to %d bytes, header says %d", ErrMalformed, m, n)
	}
	return Compressed{Inner: Chunk{Type: t, Data: buf.Bytes()}}, nil
}
