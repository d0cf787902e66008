package split

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// In a session whose ends agreed on resuming (FlagResume, ReplyResume),
// the bytes after the preamble travel in frames (PROTOCOL.md, "The
// resumable stream"): each carries the sequence number of its first byte
// (the count of the stream's bytes before it) and an acknowledgement (the
// count of the other direction's bytes received so far).

// Frame kinds.
const (
	frameData byte = 1 // seq, ack, payload: the stream's bytes from seq on
	frameAck  byte = 2 // ack only: no payload, seq is the sender's next
	frameFin  byte = 3 // the end of the sender's bytes: seq is their count
)

// Frame bounds.
const (
	frameHeader     = 1 + 8 + 8 + 4 // kind, seq, ack, payload length
	maxFramePayload = 64 << 10
)

// ErrBadFrame is wrapped by the errors for a malformed frame.
var ErrBadFrame = errors.New("split: malformed frame")

// frame is one decoded frame; payload aliases the reader's buffer.
type frame struct {
	kind     byte
	seq, ack uint64
	payload  []byte
}

// appendFrame appends a frame to b.
func appendFrame(b []byte, kind byte, seq, ack uint64, payload []byte) []byte {
	b = append(b, kind)
	b = binary.BigEndian.AppendUint64(b, seq)
	b = binary.BigEndian.AppendUint64(b, ack)
	b = binary.BigEndian.AppendUint32(b, uint32(len(payload)))
	return append(b, payload...)
}

// readFrame reads one frame from r into buf (grown as needed, and
// returned for the next call).
func readFrame(r io.Reader, buf []byte) (frame, []byte, error) {
	if cap(buf) < frameHeader+maxFramePayload {
		buf = make([]byte, frameHeader, frameHeader+maxFramePayload)
	}
	hdr := buf[:frameHeader] // in buf: an array here would escape to the heap at every frame
	if _, err := io.ReadFull(r, hdr); err != nil {
		return frame{}, buf, err
	}
	f := frame{kind: hdr[0], seq: binary.BigEndian.Uint64(hdr[1:]), ack: binary.BigEndian.Uint64(hdr[9:])}
	n := binary.BigEndian.Uint32(hdr[17:])
	switch {
	case f.kind == frameData && (n == 0 || n > maxFramePayload):
		return f, buf, fmt.Errorf("%w: data frame of %d bytes (1 to %d)", ErrBadFrame, n, maxFramePayload)
	case f.kind == frameAck || f.kind == frameFin:
		if n != 0 {
			return f, buf, fmt.Errorf("%w: frame of kind %d with %d bytes of payload", ErrBadFrame, f.kind, n)
		}
		return f, buf, nil
	case f.kind != frameData:
		return f, buf, fmt.Errorf("%w: unknown kind %d", ErrBadFrame, f.kind)
	}
	f.payload = buf[frameHeader : frameHeader+n]
	_, err := io.ReadFull(r, f.payload)
	return f, buf, unexpected(err)
}
