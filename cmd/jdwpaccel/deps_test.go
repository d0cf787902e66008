package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestBinaryDoesNotLinkTesting: test support (RequireJDK and the like)
// lives in _test.go files and internal/jdktest, never in a package the
// binary imports, so the testing package is not linked into jdwpaccel.
func TestBinaryDoesNotLinkTesting(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	for _, banned := range []string{"testing", "github.com/jdwpaccel/jdwpaccel/internal/jdktest"} {
		if slices.Contains(deps, banned) {
			t.Errorf("the jdwpaccel binary imports %s (go list -deps)", banned)
		}
	}
}
