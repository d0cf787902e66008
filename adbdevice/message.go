// Package adbdevice is a fake Android device that a real adb server accepts
// over TCP ("adb connect HOST:PORT"): it speaks the adb device transport
// (CNXN, OPEN, OKAY, WRTE, CLSE; see AOSP adb's protocol.txt) without
// authentication, and serves the few device services a debugger's tools
// use: jdwp:PID streams that lead to real or fake VMs, track-jdwp, jdwp,
// and a minimal shell (getprop, pidof).
//
//	d := adbdevice.New(adbdevice.Config{Processes: []adbdevice.Process{{PID: 4001, Name: "com.example.app", Addr: "127.0.0.1:5005"}}})
//	err := d.Serve(ctx, listener) // then: adb connect 127.0.0.1:PORT
package adbdevice

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Command is a transport message's command word: four ASCII characters
// read as a little-endian u32.
type Command uint32

// Message commands (protocol.txt).
const (
	CmdSYNC Command = 0x434e5953
	CmdCNXN Command = 0x4e584e43
	CmdAUTH Command = 0x48545541
	CmdOPEN Command = 0x4e45504f
	CmdOKAY Command = 0x59414b4f
	CmdCLSE Command = 0x45534c43
	CmdWRTE Command = 0x45545257
	CmdSTLS Command = 0x534c5453
)

func (c Command) String() string {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(c))
	for _, x := range b {
		if x < 'A' || x > 'Z' {
			return fmt.Sprintf("0x%08x", uint32(c))
		}
	}
	return string(b[:])
}

func (c Command) known() bool {
	switch c {
	case CmdSYNC, CmdCNXN, CmdAUTH, CmdOPEN, CmdOKAY, CmdCLSE, CmdWRTE, CmdSTLS:
		return true
	}
	return false
}

// Protocol versions: from VersionSkipChecksum on, neither side checks the
// data checksum (adb.h A_VERSION_SKIP_CHECKSUM).
const (
	VersionMin          = 0x01000000
	VersionSkipChecksum = 0x01000001
)

// HeaderSize is the size of a message header.
const HeaderSize = 24

// MaxData bounds a message's payload: adb's MAX_PAYLOAD (1 MiB).
const MaxData = 1 << 20

// Message is one transport message. The header, six little-endian u32:
//
//	0  command      CNXN, OPEN, OKAY, WRTE, CLSE, AUTH, STLS, SYNC
//	4  arg0
//	8  arg1
//	12 data_length  bytes of payload after the header
//	16 data_check   the sum of the payload's bytes (0 when skipped)
//	20 magic        command ^ 0xffffffff
type Message struct {
	Command    Command
	Arg0, Arg1 uint32
	Data       []byte
}

func (m Message) String() string {
	return fmt.Sprintf("%s(%d, %d, %d bytes)", m.Command, m.Arg0, m.Arg1, len(m.Data))
}

// Errors of the message codec. Each is fatal to the transport connection
// (protocol.txt: an invalid header or corrupt payload closes it).
var (
	ErrBadMagic    = errors.New("adb message: magic is not command ^ 0xffffffff")
	ErrUnknownCmd  = errors.New("adb message: unknown command")
	ErrTooLong     = errors.New("adb message: payload longer than allowed")
	ErrBadChecksum = errors.New("adb message: payload checksum mismatch")
)

// Checksum is the payload checksum adb uses: the sum of its bytes.
func Checksum(data []byte) uint32 {
	var s uint32
	for _, b := range data {
		s += uint32(b)
	}
	return s
}

// header is a parsed header: the data length and checksum still to check.
type header struct {
	cmd        Command
	arg0, arg1 uint32
	length     uint32
	check      uint32
}

// parseHeader validates a header: magic, known command, length ≤ maxData.
func parseHeader(h *[HeaderSize]byte, maxData uint32) (header, error) {
	le := binary.LittleEndian
	hd := header{
		cmd:    Command(le.Uint32(h[0:])),
		arg0:   le.Uint32(h[4:]),
		arg1:   le.Uint32(h[8:]),
		length: le.Uint32(h[12:]),
		check:  le.Uint32(h[16:]),
	}
	if le.Uint32(h[20:]) != uint32(hd.cmd)^0xffffffff {
		return hd, ErrBadMagic
	}
	if !hd.cmd.known() {
		return hd, fmt.Errorf("%w %s", ErrUnknownCmd, hd.cmd)
	}
	if hd.length > maxData {
		return hd, fmt.Errorf("%w: %d > %d bytes", ErrTooLong, hd.length, maxData)
	}
	return hd, nil
}

// ReadMessage reads one message from r. maxData bounds the payload
// (MaxData when 0); checksum says whether to verify the payload's
// checksum (protocol versions before VersionSkipChecksum).
func ReadMessage(r io.Reader, maxData uint32, checksum bool) (Message, error) {
	if maxData == 0 || maxData > MaxData {
		maxData = MaxData
	}
	var h [HeaderSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return Message{}, err
	}
	hd, err := parseHeader(&h, maxData)
	if err != nil {
		return Message{}, err
	}
	m := Message{Command: hd.cmd, Arg0: hd.arg0, Arg1: hd.arg1}
	if hd.length > 0 {
		m.Data = make([]byte, hd.length)
		if _, err := io.ReadFull(r, m.Data); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return Message{}, err
		}
	}
	if checksum && Checksum(m.Data) != hd.check {
		return Message{}, fmt.Errorf("%w on %s", ErrBadChecksum, m)
	}
	return m, nil
}

// AppendMessage appends m, header and payload, to dst. The checksum is
// always filled in: adb servers that skip it ignore it.
func AppendMessage(dst []byte, m Message) []byte {
	le := binary.LittleEndian
	dst = le.AppendUint32(dst, uint32(m.Command))
	dst = le.AppendUint32(dst, m.Arg0)
	dst = le.AppendUint32(dst, m.Arg1)
	dst = le.AppendUint32(dst, uint32(len(m.Data)))
	dst = le.AppendUint32(dst, Checksum(m.Data))
	dst = le.AppendUint32(dst, uint32(m.Command)^0xffffffff)
	return append(dst, m.Data...)
}
