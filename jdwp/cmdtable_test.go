package jdwp

import (
	"slices"
	"strings"
	"testing"
)

func TestCommandTableConsistent(t *testing.T) {
	names := map[string]bool{}
	cmds := map[Cmd]bool{}
	for _, e := range commandTable {
		if cmds[e.cmd] {
			t.Errorf("command %d/%d listed twice", e.cmd.Set, e.cmd.Cmd)
		}
		cmds[e.cmd] = true
		if names[e.name] {
			t.Errorf("name %q listed twice", e.name)
		}
		names[e.name] = true
		set, _, ok := strings.Cut(e.name, ".")
		if !ok || set != e.cmd.Set.String() {
			t.Errorf("%q is in set %d named %q", e.name, e.cmd.Set, e.cmd.Set.String())
		}
		if !e.cmd.Known() || e.cmd.String() != e.name {
			t.Errorf("%v: String %q Known %v, want %q", e.cmd, e.cmd.String(), e.cmd.Known(), e.name)
		}
	}
	// Spot checks against the specification's text.
	for c, want := range map[Cmd]string{
		{1, 7}:    "VirtualMachine.IDSizes",
		{11, 6}:   "ThreadReference.Frames",
		{64, 100}: "Event.Composite",
		{199, 1}:  "DDM.Chunk",
		{15, 1}:   "EventRequest.Set",
		{18, 2}:   "ModuleReference.ClassLoader",
	} {
		if got := c.String(); got != want {
			t.Errorf("%d/%d = %q, want %q", c.Set, c.Cmd, got, want)
		}
	}
	if CmdVirtualMachineIDSizes != CmdIDSizes || CmdEventComposite != CmdComposite || CmdDDMChunk != (Cmd{199, 1}) {
		t.Error("aliases of the relay's commands differ")
	}
	if CmdThreadReferenceFrames != (Cmd{SetThreadReference, 6}) {
		t.Errorf("CmdThreadReferenceFrames = %v", CmdThreadReferenceFrames)
	}
	if got := (Cmd{9, 4}).String(); got != "ObjectReference.4" || (Cmd{9, 4}).Known() {
		t.Errorf("unknown command renders %q", got)
	}
	if got := CommandSet(7).String(); got != "CommandSet(7)" || CommandSet(7).Known() {
		t.Errorf("unknown set renders %q", got)
	}
}

func TestAllCommands(t *testing.T) {
	all := AllCommands()
	if len(all) != len(commandTable) {
		t.Fatalf("AllCommands has %d, table %d", len(all), len(commandTable))
	}
	if !slices.IsSortedFunc(all, compareCmd) {
		t.Error("AllCommands not sorted")
	}
	if all[0] != CmdVirtualMachineVersion || all[len(all)-1] != CmdDDMChunk {
		t.Errorf("first %v last %v", all[0], all[len(all)-1])
	}
	all[0] = Cmd{}
	if AllCommands()[0] != CmdVirtualMachineVersion {
		t.Error("AllCommands shares its slice")
	}
}

func TestErrorCodes(t *testing.T) {
	for code, want := range map[ErrorCode]string{
		0: "NONE", 10: "INVALID_THREAD", 99: "NOT_IMPLEMENTED", 101: "ABSENT_INFORMATION",
		102: "INVALID_EVENT_TYPE", 112: "VM_DEAD", 512: "INVALID_COUNT",
	} {
		if got := code.String(); got != want || !code.Known() {
			t.Errorf("%d = %q (known %v), want %q", code, got, code.Known(), want)
		}
	}
	if got := ErrorCode(7).String(); got != "ERROR_7" || ErrorCode(7).Known() {
		t.Errorf("unknown code renders %q", got)
	}
	if ErrorAbsentInformation.Error() != "jdwp: ABSENT_INFORMATION" {
		t.Errorf("Error() = %q", ErrorAbsentInformation.Error())
	}
	codes := AllErrorCodes()
	if len(codes) != len(errorTable) || !slices.IsSorted(codes) {
		t.Errorf("AllErrorCodes: %v", codes)
	}
}

func TestConstNames(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{EventVMStart.String(), "VM_START"},
		{EventKind(77).String(), "EventKind(77)"},
		{SuspendAll.String(), "ALL"},
		{TagThreadGroup.String(), "THREAD_GROUP"},
		{TypeTagInterface.String(), "INTERFACE"},
		{ThreadStatusWait.String(), "WAIT"},
		{StepLine.String(), "LINE"},
		{StepOut.String(), "OUT"},
		{ModPlatformThreadsOnly.String(), "PlatformThreadsOnly"},
		{ModKind(0).String(), "ModKind(0)"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	if !EventFramePop.Known() || EventKind(11).Known() {
		t.Error("EventKind.Known wrong")
	}
}

func TestTagSize(t *testing.T) {
	s := IDSizes{FieldID: 8, MethodID: 8, ObjectID: 6, ReferenceTypeID: 8, FrameID: 8}
	want := map[Tag]int{
		TagVoid: 0, TagByte: 1, TagBoolean: 1, TagChar: 2, TagShort: 2, TagInt: 4, TagFloat: 4,
		TagLong: 8, TagDouble: 8, TagObject: 6, TagArray: 6, TagString: 6, TagThread: 6,
		TagThreadGroup: 6, TagClassLoader: 6, TagClassObject: 6,
	}
	for tag := range tagNames {
		if _, ok := want[tag]; !ok {
			t.Errorf("tag %s missing from test", tag)
		}
	}
	for tag, n := range want {
		if got := tag.Size(s); got != n {
			t.Errorf("%s.Size = %d, want %d", tag, got, n)
		}
	}
	for b := 0; b < 256; b++ {
		if _, ok := tagNames[Tag(b)]; !ok && Tag(b).Size(s) != -1 {
			t.Errorf("undefined tag %#x has size %d", b, Tag(b).Size(s))
		}
	}
}
