package journal

// Test support: helpers that only the tests of this package use, kept out of
// the binary. Other packages' tests use internal/journaltest.

import (
	"bufio"
	"io"
)

// New starts a journal that writes to w, without rotation. Close does not
// close w.
func New(w io.Writer, opts Options) (*Journal, error) {
	if opts.Format == "" {
		opts.Format = FormatJSONLines
	}
	if _, err := ParseFormat(string(opts.Format)); err != nil {
		return nil, err
	}
	return start(opts, []sink{newWriterSink(w)}, []Format{opts.Format}), nil
}

// writerSink writes to a caller's io.Writer and never rotates.
type writerSink struct {
	bw *bufio.Writer
	n  int64
}

func newWriterSink(w io.Writer) *writerSink {
	return &writerSink{bw: bufio.NewWriterSize(w, 256<<10)}
}

func (s *writerSink) Write(p []byte) (int, error) {
	n, err := s.bw.Write(p)
	s.n += int64(n)
	return n, err
}
func (s *writerSink) Flush() error       { return s.bw.Flush() }
func (s *writerSink) Size() int64        { return s.n }
func (s *writerSink) ShouldRotate() bool { return false }
func (s *writerSink) Rotate() error      { return nil }
func (s *writerSink) Close() error       { return s.bw.Flush() }
