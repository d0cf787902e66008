package journal

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrSchemaVersion is returned for a journal written with a newer schema
// than this reader knows.
var ErrSchemaVersion = errors.New("journal: unsupported schema version")

// ErrNotJSONLines is returned when a file does not start with a JSON Lines
// journal header (for instance a pcapng or Perfetto journal).
var ErrNotJSONLines = errors.New("journal: not a JSON Lines journal (only .jsonl journals can be read back)")

// LineError is a line of a journal that does not decode.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("journal: line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// Decoder reads records from a JSON Lines journal.
type Decoder struct {
	br     *bufio.Reader
	line   int
	header bool
}

// NewDecoder returns a Decoder reading r.
func NewDecoder(r io.Reader) *Decoder {
	return &Decoder{br: bufio.NewReaderSize(r, 64<<10)}
}

// Next decodes the next record into rec (which it overwrites). It returns
// io.EOF at the end. A last line cut short (a journal of a process that was
// killed) is reported as a *LineError wrapping io.ErrUnexpectedEOF.
func (d *Decoder) Next(rec *Record) error {
	for {
		line, err := d.br.ReadBytes('\n')
		if len(line) == 0 && err != nil {
			return err
		}
		d.line++
		cut := err != nil
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			if cut {
				return io.EOF
			}
			continue
		}
		if !d.header && line[0] != '{' {
			return ErrNotJSONLines
		}
		*rec = Record{}
		if jerr := json.Unmarshal(line, rec); jerr != nil {
			if cut {
				return &LineError{Line: d.line, Err: fmt.Errorf("%w: last line cut short", io.ErrUnexpectedEOF)}
			}
			if !d.header {
				return ErrNotJSONLines
			}
			return &LineError{Line: d.line, Err: jerr}
		}
		if !d.header {
			if rec.Type != TypeHeader {
				return ErrNotJSONLines
			}
			d.header = true
		}
		if rec.Type == TypeHeader && rec.Schema > SchemaVersion {
			return fmt.Errorf("%w: %d (this reader knows up to %d)", ErrSchemaVersion, rec.Schema, SchemaVersion)
		}
		return nil
	}
}

// Read decodes a whole journal.
func Read(r io.Reader) ([]Record, error) {
	d := NewDecoder(r)
	var out []Record
	for {
		var rec Record
		err := d.Next(&rec)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, rec)
	}
}

// ReadFiles decodes journals in the order given (for rotated journals:
// oldest first, PATH.N … PATH.1, PATH). Re-announced sessions at the top of
// rotated files (Continued) are kept; ComputeStats (and the tests' Check) skip them.
func ReadFiles(paths ...string) ([]Record, error) {
	var out []Record
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return out, err
		}
		recs, err := Read(f)
		f.Close()
		out = append(out, recs...)
		if err != nil {
			return out, fmt.Errorf("%s: %w", p, err)
		}
	}
	return out, nil
}
