package journal

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

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
	addr, stop := startProxy(t, vm.Addr(), func(*relay.Session) relay.Hooks {
		return relay.Hooks{Observers: []relay.Observer{j, endSignal(ended)}}
	})
	d := dialDebugger(t, addr)
	script(d)
	for range 20 {
		d.call(jdwp.CmdVirtualMachineAllThreads, nil)
	}
	d.Close()
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

// TestOpenFilesWritesEveryFormat runs one session into a journal of three
// files, one per format, and checks that each is complete on its own.
func TestOpenFilesWritesEveryFormat(t *testing.T) {
	dir := t.TempDir()
	jsonl, trace, pcap := filepath.Join(dir, "j.jsonl"), filepath.Join(dir, "j.perfetto.json"), filepath.Join(dir, "j.pcapng")
	reg := prometheus.NewRegistry()
	j, err := OpenFiles(Options{Registerer: reg}, File{Path: jsonl}, File{Path: trace}, File{Path: pcap})
	if err != nil {
		t.Fatal(err)
	}
	vm := startFakeVM(t)
	ended := make(chan struct{})
	addr, stop := startProxy(t, vm.Addr(), func(*relay.Session) relay.Hooks {
		return relay.Hooks{Observers: []relay.Observer{j, endSignal(ended)}, Interceptors: []relay.Interceptor{newToySpeculator()}}
	})
	d := dialDebugger(t, addr)
	script(d)
	d.Close()
	<-ended
	stop()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}

	recs, err := ReadFiles(jsonl)
	if err != nil {
		t.Fatal(err)
	}
	rep := Check(recs)
	if err := rep.Err(); err != nil || rep.Commands != 8 {
		t.Errorf("%s: %v, %d commands; want a coherent journal of 8", jsonl, err, rep.Commands)
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	var events []map[string]any
	if err := json.Unmarshal(b, &events); err != nil || len(events) < 10 {
		t.Errorf("%s: %d events, %v; want a complete trace", trace, len(events), err)
	}
	b, err = os.ReadFile(pcap)
	if err != nil {
		t.Fatal(err)
	}
	if blocks := pcapBlocks(t, b); len(blocks) < 10 || blocks[0] != 0x0A0D0D0A {
		t.Errorf("%s: blocks %x; want a section header and the packets", pcap, blocks)
	}
	// Each record counts once, however many files it went to.
	want := count(recs, func(r *Record) bool { return r.Type != TypeHeader && r.Type != TypeIDSizes })
	if n := testutil.ToFloat64(j.metrics.records); int(n) != want {
		t.Errorf("records_total %v, want %d (the packets and sessions of one file)", n, want)
	}
}

// TestOpenFilesChecksBeforeCreating checks that a bad second file (an
// unknown extension, the same file twice) is refused before any file is
// created or replaced.
func TestOpenFilesChecksBeforeCreating(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "keep.jsonl")
	if err := os.WriteFile(good, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, second := range []File{{Path: filepath.Join(dir, "x.txt")}, {Path: good}, {Path: filepath.Join(dir, "y.jsonl"), Format: "xml"}} {
		if j, err := OpenFiles(Options{}, File{Path: good}, second); err == nil {
			j.Close()
			t.Errorf("OpenFiles(%s, %+v) succeeded", good, second)
		}
		if b, err := os.ReadFile(good); err != nil || string(b) != "precious\n" {
			t.Errorf("after refusing %+v, %s holds %q (%v): it was replaced", second, good, b, err)
		}
	}
	if _, err := OpenFiles(Options{}, File{Path: filepath.Join(dir, "x.txt")}); !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("unknown extension: %v, want ErrUnknownFormat", err)
	}
}
