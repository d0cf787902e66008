package journal

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
)

// TestFilesArePrivate checks that journal files, which hold raw packets and
// so the app's memory, are readable by their owner only: the file and
// every rotated one.
func TestFilesArePrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	vm := startFakeVM(t)
	j, err := Open(Options{Path: path, MaxBytes: 2000, MaxFiles: 50})
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	addr, stop := startProxy(t, vm.addr(), func(*relay.Session) relay.Hooks {
		return relay.Hooks{Observers: []relay.Observer{j, endSignal(ended)}}
	})
	d := dialDebugger(t, addr)
	script(d)
	for range 20 {
		d.call(jdwp.CmdVirtualMachineAllThreads, nil)
	}
	d.close()
	<-ended
	stop()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(path + "*")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3 {
		t.Fatalf("files %v: want the journal and at least two rotated files", files)
	}
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := fi.Mode().Perm(); m&0o077 != 0 {
			t.Errorf("%s has mode %v: others may read the app's memory", filepath.Base(f), m)
		}
	}
}

// TestReplacedFileBecomesPrivate checks that a journal written over an
// existing, world-readable file does not keep that file's mode.
func TestReplacedFileBecomesPrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.pcapng")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	j, err := Open(Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if m := fi.Mode().Perm(); m&0o077 != 0 {
		t.Errorf("mode %v: others may read the app's memory", m)
	}
}
