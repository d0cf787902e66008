package keyable

import (
	"strings"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwpspec"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// specCommands reads the JDK's com.sun.tools.jdi.JDWP (generated from the
// specification; see jdwpspec) and returns every command of the specification by its "Set.Command" name.
// It skips without a JDK unless CI=true.
func specCommands(t *testing.T) map[jdwp.Cmd]string {
	t.Helper()
	sets := map[string]jdwp.CommandSet{}
	type command struct {
		set, name string
		value     int64
	}
	var cmds []command
	for _, k := range jdwpspec.Load(t) {
		path := strings.Split(k.Path, "$")
		switch {
		case k.Field == "COMMAND_SET" && len(path) == 2:
			sets[path[1]] = jdwp.CommandSet(k.Value)
		case k.Field == "COMMAND" && len(path) == 3:
			cmds = append(cmds, command{path[1], path[2], k.Value})
		}
	}
	spec := map[jdwp.Cmd]string{}
	for _, c := range cmds {
		set, ok := sets[c.set]
		if !ok {
			t.Fatalf("command %s.%s in a set without COMMAND_SET", c.set, c.name)
		}
		spec[jdwp.Cmd{Set: set, Cmd: uint8(c.value)}] = c.set + "." + c.name
	}
	if len(spec) < 90 {
		t.Fatalf("spec has only %d commands", len(spec))
	}
	return spec
}

// TestTableCoversSpec checks that every command of the JDWP specification
// has exactly one row in the table, and every row (but DDM.Chunk, which is
// Android's) is a command of the specification.
func TestTableCoversSpec(t *testing.T) {
	spec := specCommands(t)
	rows := map[jdwp.Cmd]int{}
	for _, r := range table {
		rows[r.Cmd]++
	}
	for c, name := range spec {
		if n := rows[c]; n != 1 {
			t.Errorf("spec command %s (%d/%d) has %d rows", name, c.Set, c.Cmd, n)
		}
	}
	for c, n := range rows {
		if n != 1 {
			t.Errorf("%v has %d rows", c, n)
		}
		if _, ok := spec[c]; !ok && c != jdwp.CmdDDMChunk {
			t.Errorf("row %v is not a command of the specification", c)
		}
	}
}

// TestTableRows checks each row against itself and jdwp's command table:
// the effect is known, only read-only commands are cacheable, and a
// cacheable command's scope fits its tier.
func TestTableRows(t *testing.T) {
	seen := map[jdwp.Cmd]bool{}
	for _, r := range table {
		if seen[r.Cmd] {
			t.Errorf("%v listed twice", r.Cmd)
		}
		seen[r.Cmd] = true
		if !r.Cmd.Known() {
			t.Errorf("%v is not in jdwp's command table", r.Cmd)
		}
		if r.Effect == EffectUnknown || r.Effect >= numEffects {
			t.Errorf("%v: effect %v", r.Cmd, r.Effect)
		}
		if r.Cacheable() && r.Effect != EffectReadOnly {
			t.Errorf("%v: cacheable but %v", r.Cmd, r.Effect)
		}
		if (r.Tier == TierStop) != (r.Scope != ScopeNone) {
			t.Errorf("%v: tier %v with scope %d", r.Cmd, r.Tier, r.Scope)
		}
		if !r.Cacheable() && (r.layout != none || r.AbsentOK) {
			t.Errorf("%v: not cacheable but has a layout", r.Cmd)
		}
		if info, ok := Describe(r.Cmd); !ok || info != r.Info {
			t.Errorf("Describe(%v) = %+v, %v", r.Cmd, info, ok)
		}
	}
	for set := range 256 {
		for cmd := range 256 {
			c := jdwp.Cmd{Set: jdwp.CommandSet(set), Cmd: uint8(cmd)}
			if c.Known() && !seen[c] {
				t.Errorf("jdwp command %v has no row", c)
			}
		}
	}
	if info, ok := Describe(jdwp.Cmd{Set: 99, Cmd: 1}); ok || info.Effect != EffectUnknown {
		t.Errorf("unknown command described as %+v", info)
	}
}
