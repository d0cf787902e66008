package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/bench"
	"github.com/jdwpaccel/jdwpaccel/bench/javadebug"
)

// Without a java-debug build, the java-debug workloads are skipped with a
// note and the others run; with one, Deep/java-debug joins the default
// list but not a list given explicitly.
func TestJavaDebugWorkloads(t *testing.T) {
	wls, err := parseWorkloads("Deep/idea-like,Deep/java-debug")
	if err != nil {
		t.Fatal(err)
	}
	var note strings.Builder
	peer, got, err := javaDebugWorkloads("", wls, true, &note)
	if err != nil || peer != nil {
		t.Fatalf("no build: peer %v, err %v", peer, err)
	}
	if len(got) != 1 || got[0].Profile != "idea-like" {
		t.Fatalf("no build: workloads %v, want Deep/idea-like alone", got)
	}
	if !strings.Contains(note.String(), "skipping Deep/java-debug") {
		t.Fatalf("no note of the skip: %q", note.String())
	}
	if _, _, err := javaDebugWorkloads("", wls[1:], true, &note); err == nil {
		t.Fatal("only java-debug workloads and no build: want an error")
	}

	dir := t.TempDir()
	if _, _, err := javaDebugWorkloads(dir, wls, true, &note); !errors.Is(err, javadebug.ErrNoPeer) {
		t.Fatalf("an empty directory: err %v, want ErrNoPeer", err)
	}
	props := "version=0.53.1\nmain=JavaDebugHeadless\nclasspath=/x:/y\n"
	if err := os.WriteFile(filepath.Join(dir, "peer.properties"), []byte(props), 0o644); err != nil {
		t.Fatal(err)
	}
	peer, got, err = javaDebugWorkloads(dir, wls[:1], false, &note)
	if err != nil || peer == nil || peer.Version != "0.53.1" {
		t.Fatalf("a build: peer %+v, err %v", peer, err)
	}
	want := []bench.Workload{{Debuggee: "Deep", Profile: "idea-like"}, {Debuggee: "Deep", Profile: javadebug.Profile}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("default list with a build: %v, want %v", got, want)
	}
	if _, got, _ = javaDebugWorkloads(dir, wls[:1], true, &note); len(got) != 1 {
		t.Fatalf("explicit list with a build: %v, want it kept as given", got)
	}
}
