package demo

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestSelfCommand: the by-hand instructions name a command that works as
// printed: go run under go run, the bare name when PATH finds this very
// executable, else its path.
func TestSelfCommand(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "jdwpaccel")
	other := filepath.Join(dir, "other")
	for _, p := range []string{exe, other} {
		if err := os.WriteFile(p, []byte("x"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	found := func(p string) func(string) (string, error) {
		return func(string) (string, error) { return p, nil }
	}
	notFound := func(string) (string, error) { return "", errors.New("not found") }
	for _, tc := range []struct {
		name, exe string
		look      func(string) (string, error)
		want      string
	}{
		{"go run", "/tmp/go-build123/b001/exe/jdwpaccel", found(exe), "go run ./cmd/jdwpaccel"},
		{"installed", exe, found(exe), "jdwpaccel"},
		{"another on PATH", other, found(exe), other},
		{"not on PATH", exe, notFound, exe},
	} {
		if got := selfCommandFor(tc.exe, tc.look); got != tc.want {
			t.Errorf("%s: selfCommandFor(%q) = %q, want %q", tc.name, tc.exe, got, tc.want)
		}
	}
}
