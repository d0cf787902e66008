package jdktest

import (
	"testing"
)

// recorder is a testing.TB that records Fatal and Skip instead of ending
// the goroutine, so RequireJDK's decision can be observed.
type recorder struct {
	testing.TB
	fatal, skip []any
}

func (r *recorder) Helper()               {}
func (r *recorder) Fatal(a ...any)        { r.fatal = append(r.fatal, a...) }
func (r *recorder) Skip(a ...any)         { r.skip = append(r.skip, a...) }
func (r *recorder) Skipf(string, ...any)  { panic("unexpected Skipf") }
func (r *recorder) Fatalf(string, ...any) { panic("unexpected Fatalf") }

// TestRequireJDKMissing: with no JDK on PATH, RequireJDK skips, except
// under CI=true, where it fails.
func TestRequireJDKMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // an empty directory: no java, javac, jdb
	for _, tc := range []struct {
		ci        string
		wantFatal bool
	}{{"", false}, {"false", false}, {"true", true}} {
		t.Run("CI="+tc.ci, func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			r := &recorder{TB: t}
			RequireJDK(r)
			if got := len(r.fatal) > 0; got != tc.wantFatal {
				t.Errorf("fatal %v (%v), want %v", got, r.fatal, tc.wantFatal)
			}
			if got := len(r.skip) > 0; got == tc.wantFatal {
				t.Errorf("skip %v (%v), want %v", got, r.skip, !tc.wantFatal)
			}
			if len(Missing()) != len(Tools) {
				t.Errorf("missing %v, want all of %v", Missing(), Tools)
			}
		})
	}
}

// TestRequireJDKPresent: with every tool on PATH, RequireJDK neither skips
// nor fails, under CI or not.
func TestRequireJDKPresent(t *testing.T) {
	if len(Missing()) > 0 {
		RequireJDK(t) // skips, or fails under CI
	}
	t.Setenv("CI", "true")
	r := &recorder{TB: t}
	RequireJDK(r)
	if len(r.fatal)+len(r.skip) > 0 {
		t.Errorf("RequireJDK with a JDK: fatal %v, skip %v", r.fatal, r.skip)
	}
}
