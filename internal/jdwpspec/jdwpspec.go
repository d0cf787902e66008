// Package jdwpspec is test support: it reads the JDWP specification as the
// JDK compiled it (com.sun.tools.jdi.JDWP, whose nested classes carry
// every command set, command, error and constant) so that jdwp's and
// keyable's tables can be checked against it. Only tests import it.
package jdwpspec

import (
	"bufio"
	"bytes"
	_ "embed"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

//go:embed SpecDump.java
var specDump []byte

// Const is one integer constant of com.sun.tools.jdi.JDWP.
type Const struct {
	Path  string // nested class path, e.g. "JDWP$VirtualMachine$IDSizes"
	Field string // e.g. "COMMAND"
	Value int64
}

// Java returns the path of the java launcher, skipping the test when there
// is none unless CI=true, where a missing JDK is a failure.
func Java(t testing.TB) string {
	t.Helper()
	java, err := exec.LookPath("java")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("java not found and CI=true: %v", err)
		}
		t.Skipf("java not found: %v", err)
	}
	return java
}

// Load runs SpecDump.java, which reflects over the JDK's JDWP class, and
// returns its integer constants.
func Load(t testing.TB) []Const {
	t.Helper()
	java := Java(t)
	src := filepath.Join(t.TempDir(), "SpecDump.java")
	if err := os.WriteFile(src, specDump, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(java,
		"--add-exports", "jdk.jdi/com.sun.tools.jdi=ALL-UNNAMED",
		"--add-opens", "jdk.jdi/com.sun.tools.jdi=ALL-UNNAMED",
		src)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %v\n%s", cmd, err, stderr.Bytes())
	}
	var consts []Const
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 {
			t.Fatalf("bad SpecDump line %q", sc.Text())
		}
		v, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			t.Fatalf("bad SpecDump line %q: %v", sc.Text(), err)
		}
		consts = append(consts, Const{f[0], f[1], v})
	}
	return consts
}
