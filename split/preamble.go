package split

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
)

// ProtocolVersion is the version of the split stream this build speaks. A
// near end and a far end of different versions refuse each other at
// connect, each with a message naming both versions.
const ProtocolVersion uint16 = 2

// Magic opens both preambles. It is as long as nothing else: 10 ASCII
// bytes, unlike the JDWP handshake from the fifth byte on.
const Magic = "JDWP-Split"

// Bounds of the preamble's variable parts.
const (
	maxBody     = 4096
	maxSoftware = 255
	maxToken    = 1024
	maxMessage  = 1024
	helloHeader = len(Magic) + 2 + 2     // magic, version, body length
	replyHeader = len(Magic) + 2 + 1 + 2 // magic, version, status, body length
)

// Hello flags.
const (
	// FlagProbe: no session follows; the far end answers and closes,
	// without dialling the VM. The near end probes at start to report a
	// wrong address, token or version before any debugger attaches.
	FlagProbe uint16 = 1 << 0
	// FlagPage: the stream carries HTTP/1.1 requests for the far end's
	// live page (FarConfig.Page) instead of a debugger session; the near
	// end's page shows it under /far/.
	FlagPage uint16 = 1 << 1
	// FlagAttach: the near end reads pushed bundles (package push) and
	// asks for the attach bundle: the far end sends the replies to the
	// attach's first commands as the session's first packet (ReplyAttach).
	FlagAttach uint16 = 1 << 2
	// FlagHeartbeat: the near end sends CmdHeartbeat every third of its
	// link timeout, and ends a session whose far end sent nothing for
	// that long (heartbeat.go).
	FlagHeartbeat uint16 = 1 << 3
	// FlagResume: the near end offers a resumable stream (resume.go): a
	// far end that agrees (ReplyResume) gives the session an ID and a
	// secret, and both ends frame the stream's bytes so that a session
	// outlives its link.
	FlagResume uint16 = 1 << 4
	// FlagReconnect: this connection takes up a session again after its
	// link was lost: the hello's body ends with a Resume block (the
	// session, its secret, and how many bytes the near end received), and
	// no JDWP handshake follows.
	FlagReconnect uint16 = 1 << 5
)

// Reply flags.
const (
	// ReplyAttach: the far end agreed to FlagAttach; the first JDWP packet
	// after its JDWP handshake is the attach bundle.
	ReplyAttach uint16 = 1 << 0
	// ReplyHeartbeat: the far end agreed to FlagHeartbeat: it answers
	// each CmdHeartbeat at once, and ends a session whose near end sent
	// nothing for its link timeout.
	ReplyHeartbeat uint16 = 1 << 1
	// ReplyResume: the far end agreed to FlagResume (or took up the
	// session of a FlagReconnect): the reply's body ends with a Resume
	// block, and every byte after the preamble is framed (frame.go).
	ReplyResume uint16 = 1 << 2
)

// SessionID names a resumable session; the far end draws it at random.
type SessionID [16]byte

func (id SessionID) String() string { return fmt.Sprintf("%x", id[:]) }

// Resume is the block that ends a reconnect's Hello and a resuming
// Reply's body.
type Resume struct {
	Session SessionID
	// Secret proves a reconnect is the near end that opened the session;
	// the far end sends it in its first Reply, and zeros after that.
	Secret [32]byte
	// Received is how many of the other end's stream bytes the sender
	// has received: the other end resends from there. 0 in a first Reply.
	Received uint64
}

const resumeBlock = 16 + 32 + 8

func appendResume(b []byte, r Resume) []byte {
	b = append(b, r.Session[:]...)
	b = append(b, r.Secret[:]...)
	return binary.BigEndian.AppendUint64(b, r.Received)
}

func (d *decoder) resume() Resume {
	var r Resume
	if v := d.need(resumeBlock); v != nil {
		copy(r.Session[:], v)
		copy(r.Secret[:], v[16:])
		r.Received = binary.BigEndian.Uint64(v[48:])
	}
	return r
}

// Hello is the near end's preamble.
type Hello struct {
	Version  uint16
	Software string // the near end's jdwpaccel version, for messages
	Flags    uint16
	Token    []byte // empty without a token
	Resume   Resume // with FlagReconnect
}

// Status is the far end's answer to a Hello.
type Status uint8

// Statuses.
const (
	StatusAccepted     Status = 0
	StatusVersionSkew  Status = 1
	StatusUnauthorized Status = 2
	StatusRefused      Status = 3
	// StatusGone: a reconnect for a session the far end does not hold (it
	// restarted, or the session ended).
	StatusGone Status = 4
)

func (s Status) String() string {
	switch s {
	case StatusAccepted:
		return "accepted"
	case StatusVersionSkew:
		return "version skew"
	case StatusUnauthorized:
		return "unauthorized"
	case StatusRefused:
		return "refused"
	case StatusGone:
		return "session gone"
	}
	return fmt.Sprintf("status %d", uint8(s))
}

// Reply is the far end's preamble.
type Reply struct {
	Version  uint16
	Status   Status
	Software string // the far end's jdwpaccel version
	Message  string // why, when not accepted
	Flags    uint16 // what the far end agreed to (ReplyAttach); 0 unless accepted
	Resume   Resume // with ReplyResume
}

// Agreed is what the two ends of a session agreed in the preamble: the
// Reply's flags, and on the far end the user. The relay's sessions get it
// as a relay.LinkInfo (Link).
type Agreed struct {
	Flags uint16
	// User is, on the far end, the name of the user whose token or
	// pinned client certificate the near end presented (Users, auth.go);
	// "" for the unnamed token, and on the near end.
	User string
}

// AttachBundle says the session's first packet from the far end is the
// attach bundle (ReplyAttach).
func (a Agreed) AttachBundle() bool { return a.Flags&ReplyAttach != 0 }

// Heartbeat says the session's ends exchange heartbeats (ReplyHeartbeat).
func (a Agreed) Heartbeat() bool { return a.Flags&ReplyHeartbeat != 0 }

// Resumable says the session's stream outlives its link (ReplyResume).
func (a Agreed) Resumable() bool { return a.Flags&ReplyResume != 0 }

// Link is the agreement as the relay session's hooks read it
// (relay.Session.DebuggerInfo on the far end, VMInfo on the near end).
func (a Agreed) Link() relay.LinkInfo {
	return relay.LinkInfo{Split: true, AttachBundle: a.AttachBundle(), Heartbeat: a.Heartbeat(), Resumable: a.Resumable(), User: a.User}
}

// ErrNotSplit is wrapped by the errors for a stream that does not start
// with Magic.
var ErrNotSplit = errors.New("split: not a split preamble")

// ErrDebuggerHandshake is returned (wrapping ErrNotSplit) for a stream
// that starts with the JDWP handshake: a debugger attached to the far end
// directly instead of to the near end.
var ErrDebuggerHandshake = fmt.Errorf("%w: a JDWP debugger's handshake", ErrNotSplit)

// ErrTLSRecord is returned (wrapping ErrNotSplit) for a stream that starts
// with a TLS record: a peer speaking TLS to an end that does not.
var ErrTLSRecord = fmt.Errorf("%w: a TLS record", ErrNotSplit)

// ErrBadPreamble is wrapped by the errors for a preamble with the right
// magic and version but a malformed body.
var ErrBadPreamble = errors.New("split: malformed preamble")

// AppendHello appends h's encoding to b. Strings and token longer than
// their bounds are cut.
func AppendHello(b []byte, h Hello) []byte {
	sw := cut(h.Software, maxSoftware)
	tok := h.Token[:min(len(h.Token), maxToken)]
	n := 1 + len(sw) + 2 + 2 + len(tok)
	if h.Flags&FlagReconnect != 0 {
		n += resumeBlock
	}
	b = append(b, Magic...)
	b = binary.BigEndian.AppendUint16(b, h.Version)
	b = binary.BigEndian.AppendUint16(b, uint16(n))
	b = append(b, byte(len(sw)))
	b = append(b, sw...)
	b = binary.BigEndian.AppendUint16(b, h.Flags)
	b = binary.BigEndian.AppendUint16(b, uint16(len(tok)))
	b = append(b, tok...)
	if h.Flags&FlagReconnect != 0 {
		b = appendResume(b, h.Resume)
	}
	return b
}

// ReadHello reads a Hello from r, reading exactly its bytes and no more
// (the JDWP handshake may follow in the same segment). A hello of another
// version is returned with no error and what of its body every version
// shares (software, flags, token), as far as it could be read: what
// follows is that version's.
func ReadHello(r io.Reader) (Hello, error) {
	var hdr [helloHeader]byte
	if err := readMagic(r, hdr[:]); err != nil {
		return Hello{}, err
	}
	h := Hello{Version: binary.BigEndian.Uint16(hdr[len(Magic):])}
	body, err := readBody(r, binary.BigEndian.Uint16(hdr[len(Magic)+2:]))
	if err != nil {
		return h, err
	}
	d := decoder{b: body}
	h.Software = d.str8()
	h.Flags = d.u16()
	h.Token = d.bytes16(maxToken)
	if h.Version != ProtocolVersion {
		if d.err != nil {
			h.Flags, h.Token = 0, nil
		}
		return h, nil
	}
	if h.Flags&FlagReconnect != 0 {
		h.Resume = d.resume()
	}
	if d.err == nil && len(d.b) > 0 {
		d.err = fmt.Errorf("%w: %d bytes after the hello", ErrBadPreamble, len(d.b))
	}
	return h, d.err
}

// AppendReply appends r's encoding to b.
func AppendReply(b []byte, r Reply) []byte {
	sw := cut(r.Software, maxSoftware)
	msg := cut(r.Message, maxMessage)
	b = append(b, Magic...)
	b = binary.BigEndian.AppendUint16(b, r.Version)
	b = append(b, byte(r.Status))
	n := 1 + len(sw) + 2 + len(msg) + 2
	if r.Flags&ReplyResume != 0 {
		n += resumeBlock
	}
	b = binary.BigEndian.AppendUint16(b, uint16(n))
	b = append(b, byte(len(sw)))
	b = append(b, sw...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(msg)))
	b = append(b, msg...)
	b = binary.BigEndian.AppendUint16(b, r.Flags)
	if r.Flags&ReplyResume != 0 {
		b = appendResume(b, r.Resume)
	}
	return b
}

// ReadReply reads a Reply from r, exactly its bytes. Its layout is the
// same in every version (a later version may append to its body), so a
// reply from a far end of another version is read whole. Flags are read
// only from a reply of this version.
func ReadReply(r io.Reader) (Reply, error) {
	var hdr [replyHeader]byte
	if err := readMagic(r, hdr[:]); err != nil {
		return Reply{}, err
	}
	rep := Reply{Version: binary.BigEndian.Uint16(hdr[len(Magic):]), Status: Status(hdr[len(Magic)+2])}
	body, err := readBody(r, binary.BigEndian.Uint16(hdr[len(Magic)+3:]))
	if err != nil {
		return rep, err
	}
	d := decoder{b: body}
	rep.Software = d.str8()
	rep.Message = string(d.bytes16(maxMessage))
	if rep.Version == ProtocolVersion && d.err == nil {
		rep.Flags = d.u16()
		if rep.Flags&ReplyResume != 0 {
			rep.Resume = d.resume()
		}
	}
	return rep, d.err
}

// readMagic fills hdr from r and checks that it starts with Magic.
func readMagic(r io.Reader, hdr []byte) error {
	n, err := io.ReadFull(r, hdr[:len(Magic)])
	if err != nil {
		if n > 0 && string(hdr[:n]) != Magic[:n] {
			return fmt.Errorf("%w: got %q", ErrNotSplit, hdr[:n])
		}
		return err
	}
	if got := hdr[:len(Magic)]; string(got) != Magic {
		switch {
		case string(got) == jdwp.Handshake[:len(Magic)]:
			return ErrDebuggerHandshake
		case got[0] >= 0x14 && got[0] <= 0x17 && got[1] == 3: // content type, major version 3
			return ErrTLSRecord
		}
		return fmt.Errorf("%w: got %q", ErrNotSplit, got)
	}
	_, err = io.ReadFull(r, hdr[len(Magic):])
	return unexpected(err)
}

func readBody(r io.Reader, n uint16) ([]byte, error) {
	if int(n) > maxBody {
		return nil, fmt.Errorf("%w: body of %d bytes (at most %d)", ErrBadPreamble, n, maxBody)
	}
	body := make([]byte, n)
	_, err := io.ReadFull(r, body)
	return body, unexpected(err)
}

// unexpected turns an end of stream inside a preamble into
// io.ErrUnexpectedEOF.
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// decoder reads a preamble body with a sticky error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) need(n int) []byte {
	if d.err != nil {
		return nil
	}
	if len(d.b) < n {
		d.err = fmt.Errorf("%w: body cut short", ErrBadPreamble)
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) u16() uint16 {
	if v := d.need(2); v != nil {
		return binary.BigEndian.Uint16(v)
	}
	return 0
}

func (d *decoder) str8() string {
	l := d.need(1)
	if l == nil {
		return ""
	}
	s := d.need(int(l[0]))
	if d.err == nil && !utf8.Valid(s) {
		d.err = fmt.Errorf("%w: software version is not UTF-8", ErrBadPreamble)
	}
	return string(s)
}

func (d *decoder) bytes16(max int) []byte {
	n := int(d.u16())
	if d.err == nil && n > max {
		d.err = fmt.Errorf("%w: %d bytes where at most %d fit", ErrBadPreamble, n, max)
		return nil
	}
	return d.need(n)
}

// cut shortens s to at most n bytes.
func cut(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
