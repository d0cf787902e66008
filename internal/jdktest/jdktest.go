// Package jdktest holds test support for tests that need a JDK. It is
// imported by _test.go files only, so that the testing package is never
// linked into the jdwpaccel binary.
package jdktest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Tools are the JDK programs RequireJDK looks for.
var Tools = []string{"java", "javac", "jdb"}

// Missing returns the Tools not found on PATH.
func Missing() []string {
	var missing []string
	for _, tool := range Tools {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	return missing
}

// RequireJDK skips the test when java, javac or jdb is missing from PATH,
// except when CI=true, where a missing JDK fails the test.
func RequireJDK(t testing.TB) {
	t.Helper()
	missing := Missing()
	if len(missing) == 0 {
		return
	}
	msg := "JDK tools not on PATH: " + strings.Join(missing, ", ")
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
		return
	}
	t.Skip(msg)
}
