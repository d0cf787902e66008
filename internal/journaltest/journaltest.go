// Package journaltest gives other packages' tests a journal whose records
// end up in an io.Writer. Only tests import it.
package journaltest

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/journal"
)

// Journal is a journal.Journal writing to a temporary file; Close copies
// the file to the writer given to New.
type Journal struct {
	*journal.Journal
	path string
	w    io.Writer
}

// New opens a journal (journal.Open, JSON Lines unless opts.Format says
// otherwise) on a file in t's temporary directory; opts.Path is ignored.
func New(t testing.TB, w io.Writer, opts journal.Options) (*Journal, error) {
	opts.Path = filepath.Join(t.TempDir(), "journal")
	if opts.Format == "" {
		opts.Format = journal.FormatJSONLines
	}
	j, err := journal.Open(opts)
	if err != nil {
		return nil, err
	}
	return &Journal{Journal: j, path: opts.Path, w: w}, nil
}

// Close closes the journal and copies its file to the writer.
func (j *Journal) Close() error {
	err := j.Journal.Close()
	b, rerr := os.ReadFile(j.path)
	if rerr != nil {
		return errors.Join(err, rerr)
	}
	_, werr := j.w.Write(b)
	return errors.Join(err, werr)
}
