package jdwp

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestCommandHeader(t *testing.T) {
	// VirtualMachine.IDSizes, id 0x01020304, as the specification lays it out.
	raw := []byte{0, 0, 0, 11, 1, 2, 3, 4, 0, 1, 7}
	p := Packet(raw)
	if !p.Valid() || p.Length() != 11 || p.ID() != 0x01020304 || p.Flags() != 0 || p.IsReply() {
		t.Fatalf("header: %v valid=%v", p, p.Valid())
	}
	if p.CommandSet() != SetVirtualMachine || p.Command() != 7 || p.Cmd() != CmdIDSizes {
		t.Errorf("cmd = %v", p.Cmd())
	}
	if len(p.Body()) != 0 {
		t.Errorf("body %x", p.Body())
	}
	if got := p.String(); got != "command id=16909060 len=11 VirtualMachine.IDSizes" {
		t.Errorf("String = %q", got)
	}
	p.SetID(0xfffffffe)
	if !bytes.Equal(raw[4:8], []byte{0xff, 0xff, 0xff, 0xfe}) || p.ID() != 0xfffffffe {
		t.Errorf("SetID wrote %x", raw[4:8])
	}
}

func TestReplyHeader(t *testing.T) {
	raw := []byte{0, 0, 0, 13, 0, 0, 0, 9, 0x80, 0, 101, 0xaa, 0xbb}
	p := Packet(raw)
	if !p.Valid() || !p.IsReply() || p.ID() != 9 || p.ErrorCode() != ErrorAbsentInformation {
		t.Fatalf("reply: %v", p)
	}
	if !bytes.Equal(p.Body(), []byte{0xaa, 0xbb}) {
		t.Errorf("body %x", p.Body())
	}
	if got := p.String(); got != "reply id=9 len=13 error=ABSENT_INFORMATION" {
		t.Errorf("String = %q", got)
	}
	var err error = p.ErrorCode()
	if !errors.Is(err, ErrorAbsentInformation) {
		t.Error("error code is not matchable")
	}
}

func TestValid(t *testing.T) {
	for _, c := range []struct {
		raw  []byte
		want bool
	}{
		{nil, false},
		{[]byte{0, 0, 0, 11, 0, 0, 0, 1, 0, 1}, false},       // 10 bytes
		{[]byte{0, 0, 0, 12, 0, 0, 0, 1, 0, 1, 7}, false},    // length says 12
		{[]byte{0, 0, 0, 11, 0, 0, 0, 1, 0, 1, 7, 0}, false}, // extra byte
		{[]byte{0, 0, 0, 11, 0, 0, 0, 1, 0, 1, 7}, true},
	} {
		if got := Packet(c.raw).Valid(); got != c.want {
			t.Errorf("Valid(%x) = %v", c.raw, got)
		}
	}
	if got := Packet([]byte{1, 2}).String(); got != "short packet (2 bytes)" {
		t.Errorf("String of short = %q", got)
	}
}

func TestAppendRoundTrip(t *testing.T) {
	body := []byte("hello body")
	prefix := []byte("keep")
	p := AppendCommand(append([]byte(nil), prefix...), 77, CmdThreadReferenceFrames, body)
	if !bytes.HasPrefix(p, prefix) {
		t.Fatal("prefix lost")
	}
	c := p[len(prefix):]
	if !c.Valid() || c.ID() != 77 || c.IsReply() || c.Cmd() != CmdThreadReferenceFrames || !bytes.Equal(c.Body(), body) {
		t.Errorf("command round trip: %v body %q", c, c.Body())
	}
	r := AppendReply(nil, 78, ErrorInvalidThread, body)
	if !r.Valid() || r.ID() != 78 || !r.IsReply() || r.Flags() != FlagReply || r.ErrorCode() != ErrorInvalidThread || !bytes.Equal(r.Body(), body) {
		t.Errorf("reply round trip: %v", r)
	}
	cl := r.Clone()
	cl.SetID(1)
	if r.ID() != 78 {
		t.Error("Clone aliases")
	}
	// Big error codes use both bytes.
	if AppendReply(nil, 1, ErrorInvalidCount, nil).ErrorCode() != 512 {
		t.Error("error code 512 lost")
	}
}

func TestCheckLength(t *testing.T) {
	for _, c := range []struct {
		n    uint32
		max  int
		want error
	}{
		{0, 100, ErrShortPacket},
		{10, 100, ErrShortPacket},
		{11, 100, nil},
		{100, 100, nil},
		{101, 100, ErrPacketTooLarge},
		{0xffffffff, DefaultMaxPacketSize, ErrPacketTooLarge},
		{11, 10, ErrPacketTooLarge},
	} {
		err := CheckLength(c.n, c.max)
		if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("CheckLength(%d, %d) = %v, want %v", c.n, c.max, err, c.want)
		}
	}
}

func TestHandshake(t *testing.T) {
	var b bytes.Buffer
	if err := WriteHandshake(&b); err != nil || b.String() != "JDWP-Handshake" {
		t.Fatalf("WriteHandshake: %q %v", b.String(), err)
	}
	// Good, also one byte at a time, with a packet following.
	r := iotest.OneByteReader(strings.NewReader("JDWP-Handshake\x00\x00\x00\x0b"))
	if err := ReadHandshake(r); err != nil {
		t.Errorf("good handshake: %v", err)
	}
	rest, _ := io.ReadAll(r)
	if len(rest) != 4 {
		t.Errorf("handshake consumed too much: %d left", len(rest))
	}
	for _, bad := range []string{"JDWP-Handshakf", "GET / HTTP/1.1\r\n", "jdwp-handshake"} {
		if err := ReadHandshake(strings.NewReader(bad)); !errors.Is(err, ErrBadHandshake) {
			t.Errorf("bad %q: %v", bad, err)
		}
	}
	for _, short := range []string{"", "JDWP", "JDWP-Handshak"} {
		if err := ReadHandshake(strings.NewReader(short)); !errors.Is(err, ErrBadHandshake) {
			t.Errorf("short %q: %v", short, err)
		}
	}
	errRead := errors.New("boom")
	if err := ReadHandshake(iotest.ErrReader(errRead)); !errors.Is(err, errRead) {
		t.Errorf("read error: %v", err)
	}
}
