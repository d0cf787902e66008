package jdwp

import (
	"strings"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwpspec"
)

func needJava(t testing.TB) string { return jdwpspec.Java(t) }

func loadSpec(t *testing.T) []jdwpspec.Const { return jdwpspec.Load(t) }

// TestSpecTables checks the command, error and constant tables against the
// JDK's com.sun.tools.jdi.JDWP, both ways.
func TestSpecTables(t *testing.T) {
	spec := loadSpec(t)

	specSets := map[string]CommandSet{}
	for _, c := range spec {
		if c.Field == "COMMAND_SET" {
			specSets[strings.TrimPrefix(c.Path, "JDWP$")] = CommandSet(c.Value)
		}
	}
	specCmds := map[Cmd]string{}
	for _, c := range spec {
		if c.Field != "COMMAND" {
			continue
		}
		parts := strings.Split(c.Path, "$")
		if len(parts) != 3 {
			t.Fatalf("unexpected command path %q", c.Path)
		}
		set, ok := specSets[parts[1]]
		if !ok {
			t.Fatalf("command %q in a set without COMMAND_SET", c.Path)
		}
		specCmds[Cmd{set, uint8(c.Value)}] = parts[1] + "." + parts[2]
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
		group, ok := ours[c.Path]
		if !ok {
			continue
		}
		name := c.Field
		if a, ok := aliases[c.Path+" "+name]; ok {
			name = a
		}
		seen[c.Path+" "+name] = true
		if v, ok := group[name]; !ok || v != c.Value {
			t.Errorf("spec %s.%s=%d: ours %d (known %v)", c.Path, c.Field, c.Value, v, ok)
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
		if c.Field != "ALT_ID" {
			continue
		}
		switch {
		case strings.HasPrefix(c.Path, "JDWP$EventRequest$Set$Modifier$"):
			specMods[strings.TrimPrefix(c.Path, "JDWP$EventRequest$Set$Modifier$")] = c.Value
		case strings.HasPrefix(c.Path, "JDWP$Event$Composite$Events$"):
			specComposite[EventKind(c.Value)] = true
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
