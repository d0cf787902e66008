package split

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

func TestHelloRoundTrip(t *testing.T) {
	for _, h := range []Hello{
		{Version: ProtocolVersion, Software: "v1.2.3", Flags: FlagProbe, Token: []byte("0123456789abcdef")},
		{Version: ProtocolVersion},
	} {
		b := AppendHello(nil, h)
		b = append(b, jdwp.Handshake...)
		r := bytes.NewReader(b)
		got, err := ReadHello(iotest.OneByteReader(r))
		if err != nil {
			t.Fatalf("ReadHello(%+v): %v", h, err)
		}
		if got.Version != h.Version || got.Software != h.Software || got.Flags != h.Flags || !bytes.Equal(got.Token, h.Token) {
			t.Errorf("ReadHello = %+v, want %+v", got, h)
		}
		// Exactly the hello was read: the handshake is left for the relay.
		if rest, _ := io.ReadAll(r); string(rest) != jdwp.Handshake {
			t.Errorf("left %q after the hello, want the handshake", rest)
		}
	}
}

// TestHelloOtherVersion: a hello of another version is read far enough to
// name its version and software, whatever its body holds after them.
func TestHelloOtherVersion(t *testing.T) {
	b := AppendHello(nil, Hello{Version: 7, Software: "v9.0.0"})
	b = append(b, "future fields"...)
	b[len(Magic)+3] += byte(len("future fields")) // body length
	got, err := ReadHello(bytes.NewReader(b))
	if err != nil || got.Version != 7 || got.Software != "v9.0.0" {
		t.Errorf("ReadHello = %+v, %v; want version 7 from v9.0.0", got, err)
	}
	// Its token is read too (every version starts its body alike), so
	// that the far end checks it before naming any version.
	b = AppendHello(nil, Hello{Version: 7, Software: "v9.0.0", Flags: FlagProbe, Token: []byte("tok")})
	b = append(b, "future fields"...)
	b[len(Magic)+3] += byte(len("future fields"))
	got, err = ReadHello(bytes.NewReader(b))
	if err != nil || got.Version != 7 || string(got.Token) != "tok" || got.Flags != FlagProbe {
		t.Errorf("ReadHello = %+v, %v; want version 7 with its token", got, err)
	}
}

func TestReplyRoundTrip(t *testing.T) {
	for _, r := range []Reply{
		{Version: 3, Status: StatusUnauthorized, Software: "v2", Message: "no"},
		{Version: ProtocolVersion, Status: StatusAccepted, Software: "v2", Flags: ReplyAttach},
	} {
		got, err := ReadReply(iotest.OneByteReader(bytes.NewReader(AppendReply(nil, r))))
		if err != nil || got != r {
			t.Errorf("ReadReply = %+v, %v; want %+v", got, err, r)
		}
	}
}

func TestPreambleErrors(t *testing.T) {
	good := AppendHello(nil, Hello{Version: ProtocolVersion, Token: []byte("tok")})
	long := AppendHello(nil, Hello{Version: ProtocolVersion})
	long[len(Magic)+2], long[len(Magic)+3] = 0xff, 0xff
	trailing := append(AppendHello(nil, Hello{Version: ProtocolVersion}), 'x')
	trailing[len(Magic)+3]++
	for _, tc := range []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, io.EOF},
		{"debugger", []byte(jdwp.Handshake), ErrDebuggerHandshake},
		{"tls", []byte{0x16, 0x03, 0x01, 0x02, 0x00, 1, 2, 3, 4, 5, 6, 7}, ErrTLSRecord},
		{"garbage", []byte("GET / HTTP/1.1\r\n"), ErrNotSplit},
		{"cut in magic", []byte("JDWP-Sp"), io.ErrUnexpectedEOF},
		{"cut in body", good[:len(good)-1], io.ErrUnexpectedEOF},
		{"huge body", long, ErrBadPreamble},
		{"trailing", trailing, ErrBadPreamble},
	} {
		_, err := ReadHello(bytes.NewReader(tc.in))
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: ReadHello error %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := ReadHello(strings.NewReader("JDWP-Hands")); !errors.Is(err, ErrNotSplit) {
		t.Errorf("a debugger's handshake is not split: %v", err)
	}
}

// FuzzReadHello: any bytes give a hello or an error, never a panic, and a
// hello read back re-encodes to the bytes it was read from.
func FuzzReadHello(f *testing.F) {
	f.Add(AppendHello(nil, Hello{Version: ProtocolVersion, Software: "v1", Token: []byte("0123456789abcdef")}))
	f.Add(AppendHello(nil, Hello{Version: 2, Software: "v2"}))
	f.Add([]byte(jdwp.Handshake))
	f.Add([]byte("JDWP-Split\x00\x01\xff\xff"))
	f.Add(AppendHello(nil, Hello{Version: ProtocolVersion, Flags: FlagReconnect, Token: []byte("t"), Resume: Resume{Received: 9}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ReadHello(bytes.NewReader(b))
		if err != nil || h.Version != ProtocolVersion {
			return
		}
		again := AppendHello(nil, h)
		if !bytes.HasPrefix(b, again) {
			t.Fatalf("hello %+v re-encodes to %q, read from %q", h, again, b)
		}
	})
}

// FuzzReadReply: as FuzzReadHello for the far end's reply.
func FuzzReadReply(f *testing.F) {
	f.Add(AppendReply(nil, Reply{Version: ProtocolVersion, Status: StatusAccepted, Software: "v1"}))
	f.Add(AppendReply(nil, Reply{Version: 9, Status: StatusVersionSkew, Software: "v9", Message: "skew"}))
	f.Add([]byte{0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x46})
	f.Add(AppendReply(nil, Reply{Version: ProtocolVersion, Status: StatusAccepted, Flags: ReplyResume, Resume: Resume{Secret: [32]byte{1}}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ReadReply(bytes.NewReader(b))
		if err != nil {
			return
		}
		again := AppendReply(nil, r)
		limit := len(b)
		if r.Version != ProtocolVersion {
			limit += 2 // read without the flags this end's version writes
		}
		if len(again) > limit || !bytes.Equal(again[:replyHeader-2], b[:replyHeader-2]) {
			t.Fatalf("reply %+v re-encodes to %q, read from %q", r, again, b)
		}
	})
}

// TestResumeBlockRoundTrip: a reconnect's hello and a resuming reply carry
// the Resume block; other hellos and replies do not.
func TestResumeBlockRoundTrip(t *testing.T) {
	res := Resume{Session: SessionID{1, 2, 3}, Secret: [32]byte{4, 5, 6}, Received: 1<<40 + 7}
	h := Hello{Version: ProtocolVersion, Software: "v", Flags: FlagReconnect, Token: []byte("tok"), Resume: res}
	got, err := ReadHello(iotest.OneByteReader(bytes.NewReader(AppendHello(nil, h))))
	if err != nil || got.Resume != res || got.Flags != FlagReconnect {
		t.Errorf("ReadHello = %+v, %v; want %+v", got, err, h)
	}
	r := Reply{Version: ProtocolVersion, Status: StatusAccepted, Software: "v", Flags: ReplyResume | ReplyHeartbeat, Resume: res}
	if got, err := ReadReply(iotest.OneByteReader(bytes.NewReader(AppendReply(nil, r)))); err != nil || got != r {
		t.Errorf("ReadReply = %+v, %v; want %+v", got, err, r)
	}
	// A hello without FlagReconnect carries no block: bytes after its
	// token are still an error.
	b := AppendHello(nil, Hello{Version: ProtocolVersion, Flags: FlagResume})
	if got, err := ReadHello(bytes.NewReader(b)); err != nil || got.Resume != (Resume{}) {
		t.Errorf("ReadHello(resume offer) = %+v, %v", got, err)
	}
	cut := AppendHello(nil, h)
	cut[len(Magic)+3] -= 8 // body length: the block cut short
	if _, err := ReadHello(bytes.NewReader(cut[:len(cut)-8])); !errors.Is(err, ErrBadPreamble) {
		t.Errorf("a reconnect with a short block: %v, want ErrBadPreamble", err)
	}
}
