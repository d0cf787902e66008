package jdwp

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// needJava returns the path of the java launcher, skipping the test when
// there is none unless CI=true, where a missing JDK is a failure.
func needJava(t testing.TB) string {
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

// specConst is one integer constant of com.sun.tools.jdi.JDWP.
type specConst struct {
	path  string // nested class path, e.g. "JDWP$VirtualMachine$IDSizes"
	field string // e.g. "COMMAND"
	value int64
}

// loadSpec runs testdata/SpecDump.java, which reflects over the JDK's
// JDWP class (generated from the specification), and parses its output.
func loadSpec(t *testing.T) []specConst {
	t.Helper()
	java := needJava(t)
	src, err := filepath.Abs(filepath.Join("testdata", "SpecDump.java"))
	if err != nil {
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
	var consts []specConst
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
		consts = append(consts, specConst{f[0], f[1], v})
	}
	if len(consts) < 200 {
		t.Fatalf("SpecDump printed only %d constants:\n%s", len(consts), out)
	}
	return consts
}

// TestSpecTables checks the command, error and constant tables against the
// JDK's com.sun.tools.jdi.JDWP, both ways.
func TestSpecTables(t *testing.T) {
	spec := loadSpec(t)

	specSets := map[string]CommandSet{}
	for _, c := range spec {
		if c.field == "COMMAND_SET" {
			specSets[strings.TrimPrefix(c.path, "JDWP$")] = CommandSet(c.value)
		}
	}
	specCmds := map[Cmd]string{}
	for _, c := range spec {
		if c.field != "COMMAND" {
			continue
		}
		parts := strings.Split(c.path, "$")
		if len(parts) != 3 {
			t.Fatalf("unexpected command path %q", c.path)
		}
		set, ok := specSets[parts[1]]
		if !ok {
			t.Fatalf("command %q in a set without COMMAND_SET", c.path)
		}
		specCmds[Cmd{set, uint8(c.value)}] = parts[1] + "." + parts[2]
	}
	if len(specCmds) < 90 {
		t.Fatalf("spec has only %d commands", len(specCmds))
	}

	// Sets, both ways.
	for name, set := range specSets {
		if got := set.String(); got != name {
			t.Errorf("set %d: ours %q, spec %q", set, got, name)
		}
	}
	for set, name := range setNames {
		if set == SetDDM {
			continue
		}
		if specSets[name] != set {
			t.Errorf("our set %s=%d not in spec (spec has %d)", name, set, specSets[name])
		}
	}
	// Commands, both ways.
	for c, name := range specCmds {
		if got, ok := commandNames[c]; !ok || got != name {
			t.Errorf("spec command %d/%d %s: ours %q (known %v)", c.Set, c.Cmd, name, got, ok)
		}
	}
	for _, e := range commandTable {
		if e.cmd == CmdDDMChunk {
			continue
		}
		if specCmds[e.cmd] != e.name {
			t.Errorf("our command %d/%d %s: spec has %q", e.cmd.Set, e.cmd.Cmd, e.name, specCmds[e.cmd])
		}
	}

	// Constant groups, both ways. Each maps the spec's field name to value.
	ours := map[string]map[string]int64{
		"JDWP$Error":         tableOf(errorNames),
		"JDWP$EventKind":     tableOf(eventKindNames),
		"JDWP$SuspendPolicy": tableOf(suspendPolicyNames),
		"JDWP$Tag":           tableOf(tagNames),
		"JDWP$TypeTag":       tableOf(typeTagNames),
		"JDWP$ThreadStatus":  tableOf(threadStatusNames),
		"JDWP$StepSize":      tableOf(stepSizeNames),
		"JDWP$StepDepth":     tableOf(stepDepthNames),
		"JDWP$ClassStatus": {
			"VERIFIED": int64(ClassStatusVerified), "PREPARED": int64(ClassStatusPrepared),
			"INITIALIZED": int64(ClassStatusInitialized), "ERROR": int64(ClassStatusError),
		},
		"JDWP$SuspendStatus": {"SUSPEND_STATUS_SUSPENDED": int64(SuspendStatusSuspended)},
		"JDWP$InvokeOptions": {
			"INVOKE_SINGLE_THREADED": int64(InvokeSingleThreaded), "INVOKE_NONVIRTUAL": int64(InvokeNonvirtual),
		},
	}
	// Aliases the specification defines that we spell once.
	aliases := map[string]string{"JDWP$EventKind THREAD_END": "THREAD_DEATH", "JDWP$EventKind VM_INIT": "VM_START"}
	seen := map[string]bool{}
	for _, c := range spec {
		group, ok := ours[c.path]
		if !ok {
			continue
		}
		name := c.field
		if a, ok := aliases[c.path+" "+name]; ok {
			name = a
		}
		seen[c.path+" "+name] = true
		if v, ok := group[name]; !ok || v != c.value {
			t.Errorf("spec %s.%s=%d: ours %d (known %v)", c.path, c.field, c.value, v, ok)
		}
	}
	for path, group := range ours {
		for name, v := range group {
			if !seen[path+" "+name] {
				t.Errorf("our %s.%s=%d is not in the spec", path, name, v)
			}
		}
	}

	// Modifier kinds (Java 21's PlatformThreadsOnly is ours alone) and the
	// event kinds a composite may carry.
	specMods := map[string]int64{}
	specComposite := map[EventKind]bool{}
	for _, c := range spec {
		if c.field != "ALT_ID" {
			continue
		}
		switch {
		case strings.HasPrefix(c.path, "JDWP$EventRequest$Set$Modifier$"):
			specMods[strings.TrimPrefix(c.path, "JDWP$EventRequest$Set$Modifier$")] = c.value
		case strings.HasPrefix(c.path, "JDWP$Event$Composite$Events$"):
			specComposite[EventKind(c.value)] = true
		}
	}
	for name, v := range specMods {
		if got := ModKind(v).String(); got != name {
			t.Errorf("spec modifier %s=%d: ours %q", name, v, got)
		}
	}
	for k, name := range modKindNames {
		if k != ModPlatformThreadsOnly && specMods[name] != int64(k) {
			t.Errorf("our modifier %s=%d not in spec", name, k)
		}
	}
	for k := range specComposite {
		if !isCompositeKind(k) {
			t.Errorf("spec composite event kind %s: ours rejects it", k)
		}
	}
	for _, k := range compositeKinds {
		if !specComposite[k] {
			t.Errorf("our composite event kind %s not in spec", k)
		}
	}
	if len(specComposite) != len(compositeKinds) {
		t.Errorf("spec has %d composite kinds, ours %d", len(specComposite), len(compositeKinds))
	}
}

func tableOf[K ~uint8 | ~uint16 | ~int32](m map[K]string) map[string]int64 {
	r := make(map[string]int64, len(m))
	for k, v := range m {
		r[v] = int64(k)
	}
	return r
}
