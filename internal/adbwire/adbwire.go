// Package adbwire owns the framing of the adb host protocol (AOSP adb's
// OVERVIEW.TXT and SERVICES.TXT), spoken between adb clients and the adb
// server: a request is 4 ASCII hex digits of length, then that many bytes;
// an answer is OKAY, or FAIL and a message framed the same way, and some
// answers carry such a framed message after OKAY. The adb client
// (discover), the adb front (adbfront) and the test adb server
// (internal/adbtest) all read and write it here; what a request means is
// theirs.
package adbwire

import (
	"errors"
	"fmt"
	"io"
)

// MaxMessage bounds a request or message: 4 hex digits cannot say more.
const MaxMessage = 0xFFFF

// Status words of an answer.
const (
	Okay = "OKAY"
	Fail = "FAIL"
)

// ErrProtocol is wrapped by errors for bytes that break the framing.
var ErrProtocol = errors.New("adb: protocol error")

// FailError is a FAIL answer and its message.
type FailError struct{ Message string }

func (e *FailError) Error() string { return "adb server: " + e.Message }

// ParseLength parses the 4 hex digits (either case) that frame every
// request and message.
func ParseLength(h [4]byte) (int, error) {
	n := 0
	for _, c := range h {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, fmt.Errorf("length %q is not 4 hex digits: %w", h[:], ErrProtocol)
		}
		n = n<<4 | int(d)
	}
	return n, nil
}

// AppendMessage appends msg framed as a request or message: its length in
// 4 lower-case hex digits (as adb writes them), then its bytes. A msg
// longer than MaxMessage is cut to MaxMessage bytes, so the frame stays
// valid; callers that must not cut check CheckLength first.
func AppendMessage(dst []byte, msg string) []byte {
	const hex = "0123456789abcdef"
	msg = msg[:min(len(msg), MaxMessage)]
	n := len(msg)
	dst = append(dst, hex[n>>12&0xf], hex[n>>8&0xf], hex[n>>4&0xf], hex[n&0xf])
	return append(dst, msg...)
}

// AppendFail appends a FAIL answer with msg.
func AppendFail(dst []byte, msg string) []byte {
	return AppendMessage(append(dst, Fail...), msg)
}

// CheckLength says whether msg can be framed.
func CheckLength(msg string) error {
	if len(msg) > MaxMessage {
		return fmt.Errorf("adb: message of %d bytes is too long", len(msg))
	}
	return nil
}

// ReadLength reads 4 hex digits of length.
func ReadLength(r io.Reader) (int, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, err
	}
	return ParseLength(h)
}

// ReadMessage reads a length and that many bytes.
func ReadMessage(r io.Reader) ([]byte, error) {
	n, err := ReadLength(r)
	if err != nil {
		return nil, err
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	return b, nil
}

// ReadRequest reads one request. A zero length is an error, as for adb
// servers; a request cut short is io.ErrUnexpectedEOF.
func ReadRequest(r io.Reader) (string, error) {
	n, err := ReadLength(r)
	if err != nil {
		return "", err
	}
	if n == 0 {
		return "", fmt.Errorf("empty request: %w", ErrProtocol)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return "", fmt.Errorf("request of %d bytes: %w", n, err)
	}
	return string(b), nil
}

// ReadStatus reads an answer's status: nil for OKAY, a *FailError for
// FAIL and its message, an error wrapping ErrProtocol for anything else
// (a FAIL whose message cannot be read included). An error reading the
// status word itself is returned as the reader gave it (io.EOF: the peer
// closed without answering).
func ReadStatus(r io.Reader) error {
	var st [4]byte
	if _, err := io.ReadFull(r, st[:]); err != nil {
		return err
	}
	switch string(st[:]) {
	case Okay:
		return nil
	case Fail:
		msg, err := ReadMessage(r)
		if err != nil {
			return fmt.Errorf("FAIL with an unreadable message (%v): %w", err, ErrProtocol)
		}
		return &FailError{Message: string(msg)}
	}
	return fmt.Errorf("answer %q is neither OKAY nor FAIL: %w", st[:], ErrProtocol)
}
