package adbwire

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestAppendMessage(t *testing.T) {
	for msg, want := range map[string]string{
		"":                         "0000",
		"host:version":             "000chost:version",
		strings.Repeat("x", 0x1ab): "01ab" + strings.Repeat("x", 0x1ab),
	} {
		if got := string(AppendMessage(nil, msg)); got != want {
			t.Errorf("AppendMessage(%d bytes) = %.8q, want %.8q", len(msg), got, want)
		}
	}
	long := strings.Repeat("y", MaxMessage+3)
	if got := AppendMessage(nil, long); string(got[:4]) != "ffff" || len(got) != 4+MaxMessage {
		t.Errorf("too long a message framed as %q and %d bytes", got[:4], len(got))
	}
	if CheckLength(long) == nil || CheckLength(long[:MaxMessage]) != nil {
		t.Error("CheckLength misjudges the limit")
	}
	if got := string(AppendFail([]byte("x"), "no")); got != "xFAIL0002no" {
		t.Errorf("AppendFail = %q", got)
	}
}

func TestReadRequest(t *testing.T) {
	for _, c := range []struct {
		in, want string
		err      error
	}{
		{"000Chost:version", "host:version", nil},
		{"000chost:versionMORE", "host:version", nil},
		{"0000", "", ErrProtocol},
		{"0x0Chost:version", "", ErrProtocol},
		{"+00Chost:version", "", ErrProtocol},
		{"0010short", "", io.ErrUnexpectedEOF},
		{"0010", "", io.ErrUnexpectedEOF},
		{"00", "", io.ErrUnexpectedEOF},
		{"", "", io.EOF},
	} {
		got, err := ReadRequest(strings.NewReader(c.in))
		if got != c.want || !errors.Is(err, c.err) || (c.err == nil) != (err == nil) {
			t.Errorf("ReadRequest(%q) = %q, %v; want %q, %v", c.in, got, err, c.want, c.err)
		}
	}
}

func TestReadStatus(t *testing.T) {
	var fe *FailError
	if err := ReadStatus(strings.NewReader("OKAYrest")); err != nil {
		t.Errorf("OKAY: %v", err)
	}
	if err := ReadStatus(strings.NewReader("FAIL0020device not found")); !errors.Is(err, ErrProtocol) {
		t.Errorf("FAIL message shorter than its length: %v", err)
	}
	if err := ReadStatus(strings.NewReader("FAIL000edevice missing")); !errors.As(err, &fe) || fe.Message != "device missing" {
		t.Errorf("FAIL: %v", err)
	}
	if err := ReadStatus(strings.NewReader("FAILzzzz")); !errors.Is(err, ErrProtocol) {
		t.Errorf("FAIL with a bad length: %v", err)
	}
	if err := ReadStatus(strings.NewReader("WHAT")); !errors.Is(err, ErrProtocol) {
		t.Errorf("neither OKAY nor FAIL: %v", err)
	}
	if err := ReadStatus(strings.NewReader("OK")); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("cut status: %v", err)
	}
	if err := ReadStatus(strings.NewReader("")); !errors.Is(err, io.EOF) {
		t.Errorf("no answer: %v", err)
	}
}

// FuzzReadRequest: a request either fails to frame or yields a payload
// that frames back to the bytes read (length digits compared without
// case).
func FuzzReadRequest(f *testing.F) {
	for _, s := range []string{"000chost:version", "000Chost:version", "0000", "zzzz", "0010short", "ffff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := ReadRequest(bytes.NewReader(b))
		if err != nil {
			if !errors.Is(err, ErrProtocol) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("unexpected error kind %v from %q", err, b)
			}
			return
		}
		got := AppendMessage(nil, req)
		if !bytes.EqualFold(got[:4], b[:4]) || !bytes.Equal(got[4:], b[4:4+len(req)]) || len(req) == 0 {
			t.Fatalf("re-framed %q from %q", got, b)
		}
	})
}

// FuzzReadStatus: an answer is OKAY, FAIL with the message framed after
// it, or an error; a FAIL message frames back to the bytes read.
func FuzzReadStatus(f *testing.F) {
	for _, s := range []string{"OKAY", "FAIL0011device not found", "FAILzzzz", "OKAY000a1234\n5678\n", "FAIL", "NOPE"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := ReadStatus(bytes.NewReader(b))
		var fe *FailError
		switch {
		case err == nil:
			if !bytes.HasPrefix(b, []byte(Okay)) {
				t.Fatalf("OKAY accepted from %q", b)
			}
		case errors.As(err, &fe):
			framed := AppendFail(nil, fe.Message)
			if !bytes.EqualFold(framed[:8], b[:8]) || !bytes.HasPrefix(b[8:], framed[8:]) {
				t.Fatalf("FAIL %q read from %q", fe.Message, b)
			}
		}
	})
}
