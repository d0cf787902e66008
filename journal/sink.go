package journal

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
)

// sink is where encoded bytes go. Only the writer goroutine uses it.
type sink interface {
	io.Writer
	Flush() error
	// Size is the number of bytes written to the current file.
	Size() int64
	// ShouldRotate reports whether the current file reached its limit.
	ShouldRotate() bool
	// Rotate flushes and closes the current file, shifts the rotated ones
	// and opens a fresh file.
	Rotate() error
	Close() error
}

// fileSink writes to Path and rotates to Path.1 … Path.maxFiles.
type fileSink struct {
	path     string
	maxBytes int64
	maxFiles int
	f        *os.File
	bw       *bufio.Writer
	n        int64
}

func openFileSink(path string, maxBytes int64, maxFiles int) (*fileSink, error) {
	s := &fileSink{path: path, maxBytes: maxBytes, maxFiles: maxFiles}
	if maxBytes > 0 {
		if _, err := os.Stat(path); err == nil {
			if err := s.shift(); err != nil {
				return nil, err
			}
		}
	}
	if err := s.open(); err != nil {
		return nil, err
	}
	return s, nil
}

// fileMode is the journal files' permission: they hold raw packets, which
// carry the debugged app's memory (strings, field values), so only the
// owner may read them.
const fileMode os.FileMode = 0o600

func (s *fileSink) open() error {
	f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, fileMode)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	// A file that existed keeps its mode through O_TRUNC: tighten it.
	if err := f.Chmod(fileMode); err != nil {
		f.Close()
		return fmt.Errorf("journal: %w", err)
	}
	s.f = f
	if s.bw == nil {
		s.bw = bufio.NewWriterSize(f, 256<<10)
	} else {
		s.bw.Reset(f)
	}
	s.n = 0
	return nil
}

// shift renames Path.k to Path.k+1 (dropping the oldest) and Path to
// Path.1.
func (s *fileSink) shift() error {
	oldest := fmt.Sprintf("%s.%d", s.path, s.maxFiles)
	if err := os.Remove(oldest); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("journal: rotate: %w", err)
	}
	for k := s.maxFiles - 1; k >= 1; k-- {
		from := fmt.Sprintf("%s.%d", s.path, k)
		if err := os.Rename(from, fmt.Sprintf("%s.%d", s.path, k+1)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("journal: rotate: %w", err)
		}
	}
	if err := os.Rename(s.path, s.path+".1"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("journal: rotate: %w", err)
	}
	return nil
}

func (s *fileSink) Write(p []byte) (int, error) {
	n, err := s.bw.Write(p)
	s.n += int64(n)
	return n, err
}

func (s *fileSink) Flush() error { return s.bw.Flush() }
func (s *fileSink) Size() int64  { return s.n }

func (s *fileSink) ShouldRotate() bool { return s.maxBytes > 0 && s.n >= s.maxBytes }

func (s *fileSink) Rotate() error {
	if err := s.closeFile(); err != nil {
		return err
	}
	if err := s.shift(); err != nil {
		return err
	}
	return s.open()
}

func (s *fileSink) closeFile() error {
	err := s.bw.Flush()
	if e := s.f.Sync(); err == nil {
		err = e
	}
	if e := s.f.Close(); err == nil {
		err = e
	}
	return err
}

func (s *fileSink) Close() error { return s.closeFile() }
