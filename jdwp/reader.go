package jdwp

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Reader reads whole packets from a stream. It owns one buffer, grown to
// the largest packet seen, and reuses it: the Packet returned by Next is
// valid only until the following call to Next.
type Reader struct {
	br  *bufio.Reader
	max int
	buf []byte // owned by the Reader; the last packet returned aliases it
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
	return &Reader{br: br, max: max, buf: make([]byte, 4096)}
}

// Buffered is the number of bytes already read from the stream and not yet
// returned as packets; a forwarder flushes when it reaches zero.
func (r *Reader) Buffered() int { return r.br.Buffered() }

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

// Next reads the next packet. At a clean end of stream between packets it
// returns io.EOF; inside a packet, ErrTruncated; for a bad length field, an
// error wrapping ErrShortPacket or ErrPacketTooLarge, before any allocation.
func (r *Reader) Next() (Packet, error) {
	// The length field is read into the owned buffer (always at least 4096
	// bytes): a local array would escape through io.ReadFull and cost an
	// allocation per packet.
	hdr := r.buf[:4]
	if _, err := io.ReadFull(r.br, hdr); err != nil {
		if err == io.ErrUnexpectedEOF {
			return nil, ErrTruncated
		}
		return nil, err
	}
	length := binary.BigEndian.Uint32(hdr)
	if err := CheckLength(length, r.max); err != nil {
		return nil, err
	}
	n := int(length)
	if cap(r.buf) < n {
		old := r.buf
		r.buf = make([]byte, n)
		copy(r.buf, old[:4])
	}
	p := r.buf[:n]
	if m, err := io.ReadFull(r.br, p[4:]); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, fmt.Errorf("%w (%d of %d bytes)", ErrTruncated, 4+m, n)
		}
		return nil, err
	}
	return Packet(p), nil
}

// Handshake is the 14 ASCII bytes each side sends once before any packet.
const Handshake = "JDWP-Handshake"

// ErrBadHandshake is returned when the peer's first 14 bytes are not the
// handshake.
var ErrBadHandshake = errors.New("jdwp: bad handshake")

// ReadHandshake reads and checks the 14-byte handshake from r.
func ReadHandshake(r io.Reader) error {
	var b [len(Handshake)]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		if err == io.ErrUnexpectedEOF || err == io.EOF {
			return fmt.Errorf("%w: stream ended after %q", ErrBadHandshake, trimZero(b[:]))
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
