// Package jdwp is the JDWP wire codec: the handshake, packet framing as a
// view over the bytes, the command and error tables of the Java 17
// specification, ID sizes, bounds-checked body readers, and the one table
// of what each event kind means (eventkinds.go: a stop, a suspension, the
// VM's end). IDs have typed forms (ObjectID, ThreadID, ClassID, MethodID,
// FieldID, FrameID in ids.go) read and written beside the older untyped
// uint64 accessors.
//
// Nothing in this package allocates on the packet path: a Packet is a view
// over bytes owned by whoever read them, and a Reader reuses one buffer.
package jdwp

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Packet layout (JDWP specification, "JDWP Packets"), big-endian:
//
//	command packet                       reply packet
//	+--------+--------+-----+----+---+   +--------+--------+-----+-------+
//	| length |   id   |flags|set |cmd|   | length |   id   |flags| error |
//	|   4    |   4    |  1  | 1  | 1 |   |   4    |   4    |  1  |   2   |
//	+--------+--------+-----+----+---+   +--------+--------+-----+-------+
//	followed by length-11 bytes of data.
const (
	HeaderSize = 11

	// FlagReply marks a reply packet.
	FlagReply = 0x80

	offLength = 0
	offID     = 4
	offFlags  = 8
	offSet    = 9
	offCmd    = 10
	offError  = 9
)

// DefaultMaxPacketSize bounds a packet when the caller does not choose.
// DDM heap replies can be several megabytes, so it is generous.
const DefaultMaxPacketSize = 64 << 20

var (
	// ErrShortPacket is returned for a length field below the header size.
	ErrShortPacket = errors.New("jdwp: packet length below header size")
	// ErrPacketTooLarge is returned for a length field above the limit.
	ErrPacketTooLarge = errors.New("jdwp: packet length above limit")
)

// Packet is one whole JDWP packet, header included. It is a view: it aliases
// the bytes it was made from and is valid only as long as they are.
type Packet []byte

// Length is the length field (the whole packet, header included).
func (p Packet) Length() uint32 { return binary.BigEndian.Uint32(p[offLength:]) }

// ID is the packet id.
func (p Packet) ID() uint32 { return binary.BigEndian.Uint32(p[offID:]) }

// SetID rewrites the packet id in place.
func (p Packet) SetID(id uint32) { binary.BigEndian.PutUint32(p[offID:], id) }

// Flags is the flags byte.
func (p Packet) Flags() uint8 { return p[offFlags] }

// IsReply reports whether the reply flag is set.
func (p Packet) IsReply() bool { return p[offFlags]&FlagReply != 0 }

// CommandSet is the command set of a command packet.
func (p Packet) CommandSet() CommandSet { return CommandSet(p[offSet]) }

// Command is the command of a command packet.
func (p Packet) Command() uint8 { return p[offCmd] }

// Cmd is the (command set, command) pair of a command packet.
func (p Packet) Cmd() Cmd { return Cmd{Set: CommandSet(p[offSet]), Cmd: p[offCmd]} }

// ErrorCode is the error code of a reply packet.
func (p Packet) ErrorCode() ErrorCode { return ErrorCode(binary.BigEndian.Uint16(p[offError:])) }

// Body is the data following the header.
func (p Packet) Body() []byte { return p[HeaderSize:] }

// Valid reports whether p holds at least a header and exactly the number of
// bytes its length field announces.
func (p Packet) Valid() bool {
	return len(p) >= HeaderSize && int(p.Length()) == len(p)
}

// Clone returns a copy that the caller owns.
func (p Packet) Clone() Packet { return append(Packet(nil), p...) }

// String renders the header for logs and test failures.
func (p Packet) String() string {
	if len(p) < HeaderSize {
		return fmt.Sprintf("short packet (%d bytes)", len(p))
	}
	if p.IsReply() {
		return fmt.Sprintf("reply id=%d len=%d error=%s", p.ID(), p.Length(), p.ErrorCode().String())
	}
	return fmt.Sprintf("command id=%d len=%d %s", p.ID(), p.Length(), p.Cmd())
}

// AppendCommand appends a command packet with the given id, command and body
// to dst and returns the extended slice.
func AppendCommand(dst []byte, id uint32, c Cmd, body []byte) Packet {
	dst = binary.BigEndian.AppendUint32(dst, uint32(HeaderSize+len(body)))
	dst = binary.BigEndian.AppendUint32(dst, id)
	dst = append(dst, 0, byte(c.Set), c.Cmd)
	return append(dst, body...)
}

// AppendReply appends a reply packet with the given id, error code and body
// to dst and returns the extended slice.
func AppendReply(dst []byte, id uint32, code ErrorCode, body []byte) Packet {
	dst = binary.BigEndian.AppendUint32(dst, uint32(HeaderSize+len(body)))
	dst = binary.BigEndian.AppendUint32(dst, id)
	dst = append(dst, FlagReply)
	dst = binary.BigEndian.AppendUint16(dst, uint16(code))
	return append(dst, body...)
}

// CheckLength validates a length field against the header size and max.
func CheckLength(length uint32, max int) error {
	if length < HeaderSize {
		return fmt.Errorf("%w: %d", ErrShortPacket, length)
	}
	if uint64(length) > uint64(max) {
		return fmt.Errorf("%w: %d > %d", ErrPacketTooLarge, length, max)
	}
	return nil
}
