package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/push"
	"github.com/jdwpaccel/jdwpaccel/split"
	"github.com/rs/zerolog"
)

// keys are the keys every line must have, exactly.
var keys = []string{"cmd", "detail", "event", "from", "session", "suppressed", "time", "user"}

// readLines reads the audit log at path, checking that each line is a
// JSON object with exactly keys.
func readLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		var got []string
		for k := range m {
			got = append(got, k)
		}
		slices.Sort(got)
		if !reflect.DeepEqual(got, keys) {
			t.Errorf("line %q has keys %v, want %v", sc.Text(), got, keys)
		}
		out = append(out, m)
	}
	return out
}

func TestOpenAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	for i := range 2 {
		l, err := Open(path, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		l.Refused("192.0.2.7", "unauthorized", i)
		l.Write(Line{Event: EventCommand, Session: 3, User: "alice", From: "127.0.0.1:4711", Cmd: "VirtualMachine.RedefineClasses", Detail: `"quoted" \ text`})
		l.Close()
		l.Refused("192.0.2.7", "after close", 0) // dropped, with a log line
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("audit log mode %04o, want 0600", perm)
	}
	lines := readLines(t, path)
	if len(lines) != 4 {
		t.Fatalf("%d lines, want 4 (two opens, two lines each): %v", len(lines), lines)
	}
	if lines[0]["event"] != EventRefused || lines[2]["suppressed"] != 1.0 || lines[3]["detail"] != `"quoted" \ text` || lines[3]["user"] != "alice" {
		t.Errorf("lines %v", lines)
	}

	open := filepath.Join(t.TempDir(), "open.jsonl")
	os.WriteFile(open, nil, 0o644)
	if _, err := Open(open, zerolog.Nop()); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("Open of a 0644 file: %v, want a refusal", err)
	}
}

func TestStateChanging(t *testing.T) {
	set := func(kind jdwp.EventKind, p jdwp.SuspendPolicy) []byte { return []byte{byte(kind), byte(p), 0, 0, 0, 0} }
	for _, c := range []struct {
		cmd  jdwp.Cmd
		body []byte
		want bool
	}{
		{jdwp.CmdVirtualMachineRedefineClasses, nil, true},
		{jdwp.CmdClassTypeSetValues, nil, true},
		{jdwp.CmdObjectReferenceSetValues, nil, true},
		{jdwp.CmdStackFrameSetValues, nil, true},
		{jdwp.CmdArrayReferenceSetValues, nil, true},
		{jdwp.CmdClassTypeInvokeMethod, nil, true},
		{jdwp.CmdObjectReferenceInvokeMethod, nil, true},
		{jdwp.CmdStackFramePopFrames, nil, true},
		{jdwp.CmdThreadReferenceForceEarlyReturn, nil, true},
		{jdwp.CmdVirtualMachineExit, nil, true},
		{jdwp.Cmd{Set: 250, Cmd: 1}, nil, true}, // unknown: may change anything
		{jdwp.CmdEventRequestSet, set(jdwp.EventBreakpoint, jdwp.SuspendAll), true},
		{jdwp.CmdEventRequestSet, set(jdwp.EventSingleStep, jdwp.SuspendEventThread), true},
		{jdwp.CmdEventRequestSet, set(jdwp.EventClassPrepare, jdwp.SuspendNone), false},
		{jdwp.CmdEventRequestSet, []byte{2}, false}, // cut short: no policy
		{jdwp.CmdEventRequestClear, nil, true},
		{jdwp.CmdEventRequestClearAllBreakpoints, nil, true},
		{jdwp.CmdVirtualMachineResume, nil, false},
		{jdwp.CmdThreadReferenceSuspend, nil, false},
		{jdwp.CmdVirtualMachineDisposeObjects, nil, false},
		{jdwp.CmdVirtualMachineVersion, nil, false},
		{jdwp.CmdStackFrameGetValues, nil, false},
		{jdwp.CmdDDMChunk, nil, false},
		{push.CmdBundle, nil, false},
		{push.CmdUsage, nil, false},
		{split.CmdHeartbeat, nil, false},
	} {
		if got := StateChanging(c.cmd, c.body); got != c.want {
			t.Errorf("StateChanging(%v, % x) = %v, want %v", c.cmd, c.body, got, c.want)
		}
	}
}
