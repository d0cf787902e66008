package jdwp

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Buffer sizes of a Reader. The packet buffer starts at initialBufSize and
// doubles, capped by the packet's announced length, only as the packet's
// bytes arrive: a peer that announces a huge packet and stalls commits no
// more memory than it has sent. A buffer grown beyond keepBufSize for one
// big packet is dropped before the next one, so that memory returns to the
// runtime; below it the grown buffer is kept and steady-state reading does
// not allocate.
const (
	initialBufSize = 4096
	keepBufSize    = 1 << 20
)

// Reader reads whole packets from a stream. It owns one buffer and reuses
// it: the Packet returned by Next is valid only until the following call
// to Next.
type Reader struct {
	br  *bufio.Reader
	max int
	buf []byte // owned by the Reader; the last packet returned aliases it
	// skip is the number of bytes of an oversized packet (reported by Next
	// as a *TooLargeError) still to be discarded before the next packet
	// (int64: a length field does not fit a 32-bit int).
	skip int64
}

// NewReader returns a Reader over r that rejects packets above max bytes
// (DefaultMaxPacketSize when max <= 0). If r is already a *bufio.Reader it
// is used as is, so bytes it buffered are not lost.
func NewReader(r io.Reader, max int) *Reader {
	if max <= 0 {
		max = DefaultMaxPacketSize
	}
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, 64<<10)
	}
	return &Reader{br: br, max: max, buf: make([]byte, initialBufSize)}
}

// Buffered is the number of bytes already read from the stream and not yet
// returned as packets; a forwarder flushes when it reaches zero.
func (r *Reader) Buffered() int { return r.br.Buffered() }

// Owned reports whether p, the packet the last call to Next returned, is
// in a buffer the Reader will never use again, so that the caller may keep
// p after calling Next again, without copying it. That is the case of a
// packet above 1 MiB: its buffer grew for it alone and is dropped before
// the next packet.
func (r *Reader) Owned(p Packet) bool {
	return len(p) > keepBufSize && cap(r.buf) > keepBufSize && &p[0] == &r.buf[0]
}

// HasPacket reports whether a whole packet is already buffered, so that a
// forwarder can delay its flush until the burst has been written.
func (r *Reader) HasPacket() bool {
	n := r.br.Buffered()
	if n < 4 {
		return false
	}
	b, _ := r.br.Peek(4)
	return int64(binary.BigEndian.Uint32(b)) <= int64(n)
}

// ErrTruncated is returned when the stream ends inside a packet.
var ErrTruncated = errors.New("jdwp: stream ended inside a packet")

// TooLargeError is returned by Next for a packet whose length field is
// above the Reader's limit. It carries the packet's header, so a caller can
// tell a reply from a command and answer it; the rest of the packet has
// not been read. A caller that goes on calling Next skips the packet's
// remaining bytes, without buffering them, and reads the packet after it.
type TooLargeError struct {
	Header [HeaderSize]byte // the packet's header; its length field is Length
	Max    int              // the Reader's limit
}

// Packet is a view of the header (not a valid packet: Length is above its
// length), for IsReply, ID, Cmd and String.
func (e *TooLargeError) Packet() Packet { return Packet(e.Header[:]) }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%v: %d > %d (%v)", ErrPacketTooLarge, e.Packet().Length(), e.Max, e.Packet())
}

// Unwrap makes errors.Is(err, ErrPacketTooLarge) hold.
func (e *TooLargeError) Unwrap() error { return ErrPacketTooLarge }

// Next reads the next packet. At a clean end of stream between packets it
// returns io.EOF; inside a packet, ErrTruncated; for a length field below
// the header size, an error wrapping ErrShortPacket; for one above the
// limit, a *TooLargeError (wrapping ErrPacketTooLarge) once its header has
// arrived. The packet buffer grows only as the packet's bytes arrive.
func (r *Reader) Next() (Packet, error) {
	for r.skip > 0 {
		n, err := r.br.Discard(int(min(r.skip, 1<<30)))
		r.skip -= int64(n)
		if err != nil {
			if err == io.EOF {
				return nil, fmt.Errorf("%w (skipping an oversized packet, %d bytes left)", ErrTruncated, r.skip)
			}
			return nil, err
		}
	}
	if cap(r.buf) > keepBufSize {
		r.buf = make([]byte, initialBufSize)
	}
	// The length field is read into the owned buffer: a local array would
	// escape through io.ReadFull and cost an allocation per packet.
	hdr := r.buf[:4]
	if _, err := io.ReadFull(r.br, hdr); err != nil {
		if err == io.ErrUnexpectedEOF {
			return nil, ErrTruncated
		}
		return nil, err
	}
	length := binary.BigEndian.Uint32(hdr)
	if err := CheckLength(length, r.max); err != nil {
		if errors.Is(err, ErrPacketTooLarge) {
			return nil, r.tooLarge(err)
		}
		return nil, err
	}
	n := int(length)
	p := r.buf[:4]
	for len(p) < n {
		if len(p) == len(r.buf) {
			grown := make([]byte, min(n, 2*len(r.buf)))
			copy(grown, p)
			r.buf = grown
		}
		have := len(p)
		m, err := io.ReadFull(r.br, r.buf[have:min(n, len(r.buf))])
		p = r.buf[:have+m]
		if err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return nil, fmt.Errorf("%w (%d of %d bytes)", ErrTruncated, len(p), n)
			}
			return nil, err
		}
	}
	return Packet(p), nil
}

// tooLarge reads the rest of an oversized packet's header and arranges for
// its body to be skipped. lengthErr is CheckLength's error, returned as is
// when the header does not arrive whole.
func (r *Reader) tooLarge(lengthErr error) error {
	if _, err := io.ReadFull(r.br, r.buf[4:HeaderSize]); err != nil {
		return lengthErr
	}
	e := &TooLargeError{Max: r.max}
	copy(e.Header[:], r.buf[:HeaderSize])
	r.skip = int64(e.Packet().Length()) - HeaderSize
	return e
}

// Handshake is the 14 ASCII bytes each side sends once before any packet.
const Handshake = "JDWP-Handshake"

// ErrBadHandshake is returned when the peer's first 14 bytes are not the
// handshake.
var ErrBadHandshake = errors.New("jdwp: bad handshake")

// ReadHandshake reads and checks the 14-byte handshake from r. A stream
// ending early gives an error wrapping both ErrBadHandshake and
// io.ErrUnexpectedEOF.
func ReadHandshake(r io.Reader) error {
	var b [len(Handshake)]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		if err == io.ErrUnexpectedEOF || err == io.EOF {
			return fmt.Errorf("%w: stream ended after %q: %w", ErrBadHandshake, trimZero(b[:]), io.ErrUnexpectedEOF)
		}
		return err
	}
	if string(b[:]) != Handshake {
		return fmt.Errorf("%w: got %q", ErrBadHandshake, b[:])
	}
	return nil
}

func trimZero(b []byte) []byte {
	for i, c := range b {
		if c == 0 {
			return b[:i]
		}
	}
	return b
}

// WriteHandshake writes the 14-byte handshake to w.
func WriteHandshake(w io.Writer) error {
	_, err := io.WriteString(w, Handshake)
	return err
}
