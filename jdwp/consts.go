package jdwp

import "fmt"

// This file holds the constant sets of the Java 17 JDWP specification
// ("Constants" section), checked against com.sun.tools.jdi.JDWP by
// TestSpecTables. Each type's String gives the specification's name.

// EventKind is an event kind (JDWP.EventKind).
type EventKind uint8

// Event kinds.
const (
	EventSingleStep                EventKind = 1
	EventBreakpoint                EventKind = 2
	EventFramePop                  EventKind = 3
	EventException                 EventKind = 4
	EventUserDefined               EventKind = 5
	EventThreadStart               EventKind = 6
	EventThreadDeath               EventKind = 7 // THREAD_END in the specification is an alias
	EventClassPrepare              EventKind = 8
	EventClassUnload               EventKind = 9
	EventClassLoad                 EventKind = 10
	EventFieldAccess               EventKind = 20
	EventFieldModification         EventKind = 21
	EventExceptionCatch            EventKind = 30
	EventMethodEntry               EventKind = 40
	EventMethodExit                EventKind = 41
	EventMethodExitWithReturnValue EventKind = 42
	EventMonitorContendedEnter     EventKind = 43
	EventMonitorContendedEntered   EventKind = 44
	EventMonitorWait               EventKind = 45
	EventMonitorWaited             EventKind = 46
	EventVMStart                   EventKind = 90 // VM_INIT in the specification is an alias
	EventVMDeath                   EventKind = 99
	EventVMDisconnected            EventKind = 100
)

var eventKindNames = map[EventKind]string{
	EventSingleStep:                "SINGLE_STEP",
	EventBreakpoint:                "BREAKPOINT",
	EventFramePop:                  "FRAME_POP",
	EventException:                 "EXCEPTION",
	EventUserDefined:               "USER_DEFINED",
	EventThreadStart:               "THREAD_START",
	EventThreadDeath:               "THREAD_DEATH",
	EventClassPrepare:              "CLASS_PREPARE",
	EventClassUnload:               "CLASS_UNLOAD",
	EventClassLoad:                 "CLASS_LOAD",
	EventFieldAccess:               "FIELD_ACCESS",
	EventFieldModification:         "FIELD_MODIFICATION",
	EventExceptionCatch:            "EXCEPTION_CATCH",
	EventMethodEntry:               "METHOD_ENTRY",
	EventMethodExit:                "METHOD_EXIT",
	EventMethodExitWithReturnValue: "METHOD_EXIT_WITH_RETURN_VALUE",
	EventMonitorContendedEnter:     "MONITOR_CONTENDED_ENTER",
	EventMonitorContendedEntered:   "MONITOR_CONTENDED_ENTERED",
	EventMonitorWait:               "MONITOR_WAIT",
	EventMonitorWaited:             "MONITOR_WAITED",
	EventVMStart:                   "VM_START",
	EventVMDeath:                   "VM_DEATH",
	EventVMDisconnected:            "VM_DISCONNECTED",
}

func (k EventKind) String() string { return name(eventKindNames, k, "EventKind") }

// Known reports whether k is an event kind of the specification.
func (k EventKind) Known() bool { _, ok := eventKindNames[k]; return ok }

// SuspendPolicy is a suspend policy (JDWP.SuspendPolicy).
type SuspendPolicy uint8

// Suspend policies.
const (
	SuspendNone        SuspendPolicy = 0
	SuspendEventThread SuspendPolicy = 1
	SuspendAll         SuspendPolicy = 2
)

var suspendPolicyNames = map[SuspendPolicy]string{
	SuspendNone:        "NONE",
	SuspendEventThread: "EVENT_THREAD",
	SuspendAll:         "ALL",
}

func (p SuspendPolicy) String() string { return name(suspendPolicyNames, p, "SuspendPolicy") }

// Tag is a value tag (JDWP.Tag): the first byte of a tagged value or a
// tagged objectID.
type Tag uint8

// Value tags.
const (
	TagArray       Tag = '['
	TagByte        Tag = 'B'
	TagChar        Tag = 'C'
	TagObject      Tag = 'L'
	TagFloat       Tag = 'F'
	TagDouble      Tag = 'D'
	TagInt         Tag = 'I'
	TagLong        Tag = 'J'
	TagShort       Tag = 'S'
	TagVoid        Tag = 'V'
	TagBoolean     Tag = 'Z'
	TagString      Tag = 's'
	TagThread      Tag = 't'
	TagThreadGroup Tag = 'g'
	TagClassLoader Tag = 'l'
	TagClassObject Tag = 'c'
)

var tagNames = map[Tag]string{
	TagArray:       "ARRAY",
	TagByte:        "BYTE",
	TagChar:        "CHAR",
	TagObject:      "OBJECT",
	TagFloat:       "FLOAT",
	TagDouble:      "DOUBLE",
	TagInt:         "INT",
	TagLong:        "LONG",
	TagShort:       "SHORT",
	TagVoid:        "VOID",
	TagBoolean:     "BOOLEAN",
	TagString:      "STRING",
	TagThread:      "THREAD",
	TagThreadGroup: "THREAD_GROUP",
	TagClassLoader: "CLASS_LOADER",
	TagClassObject: "CLASS_OBJECT",
}

func (t Tag) String() string { return name(tagNames, t, "Tag") }

// IsObject reports whether values of tag t are objectIDs.
func (t Tag) IsObject() bool {
	switch t {
	case TagArray, TagObject, TagString, TagThread, TagThreadGroup, TagClassLoader, TagClassObject:
		return true
	}
	return false
}

// Size is the number of bytes of an untagged value of tag t given the ID
// sizes, or -1 for a tag the specification does not define.
func (t Tag) Size(s IDSizes) int {
	switch t {
	case TagVoid:
		return 0
	case TagByte, TagBoolean:
		return 1
	case TagChar, TagShort:
		return 2
	case TagInt, TagFloat:
		return 4
	case TagLong, TagDouble:
		return 8
	}
	if t.IsObject() {
		return s.ObjectID
	}
	return -1
}

// TypeTag is a reference type kind (JDWP.TypeTag).
type TypeTag uint8

// Type tags.
const (
	TypeTagClass     TypeTag = 1
	TypeTagInterface TypeTag = 2
	TypeTagArray     TypeTag = 3
)

var typeTagNames = map[TypeTag]string{
	TypeTagClass:     "CLASS",
	TypeTagInterface: "INTERFACE",
	TypeTagArray:     "ARRAY",
}

func (t TypeTag) String() string { return name(typeTagNames, t, "TypeTag") }

// ThreadStatus is a thread status (JDWP.ThreadStatus).
type ThreadStatus int32

// Thread statuses.
const (
	ThreadStatusZombie   ThreadStatus = 0
	ThreadStatusRunning  ThreadStatus = 1
	ThreadStatusSleeping ThreadStatus = 2
	ThreadStatusMonitor  ThreadStatus = 3
	ThreadStatusWait     ThreadStatus = 4
)

var threadStatusNames = map[ThreadStatus]string{
	ThreadStatusZombie:   "ZOMBIE",
	ThreadStatusRunning:  "RUNNING",
	ThreadStatusSleeping: "SLEEPING",
	ThreadStatusMonitor:  "MONITOR",
	ThreadStatusWait:     "WAIT",
}

// SuspendStatusSuspended is the only flag of JDWP.SuspendStatus.
const SuspendStatusSuspended int32 = 1

// ClassStatus is a bit set of class states (JDWP.ClassStatus).
type ClassStatus int32

// Class status bits.
const (
	ClassStatusVerified    ClassStatus = 1
	ClassStatusPrepared    ClassStatus = 2
	ClassStatusInitialized ClassStatus = 4
	ClassStatusError       ClassStatus = 8
)

// StepSize is the granularity of a step request (JDWP.StepSize).
type StepSize int32

// Step sizes.
const (
	StepMin  StepSize = 0
	StepLine StepSize = 1
)

var stepSizeNames = map[StepSize]string{StepMin: "MIN", StepLine: "LINE"}

func (s StepSize) String() string { return name(stepSizeNames, s, "StepSize") }

// StepDepth is the depth of a step request (JDWP.StepDepth).
type StepDepth int32

// Step depths.
const (
	StepInto StepDepth = 0
	StepOver StepDepth = 1
	StepOut  StepDepth = 2
)

var stepDepthNames = map[StepDepth]string{StepInto: "INTO", StepOver: "OVER", StepOut: "OUT"}

func (d StepDepth) String() string { return name(stepDepthNames, d, "StepDepth") }

// Invoke options (JDWP.InvokeOptions), a bit set.
const (
	InvokeSingleThreaded int32 = 1
	InvokeNonvirtual     int32 = 2
)

// ModKind is an EventRequest.Set modifier kind.
type ModKind uint8

// Modifier kinds. PlatformThreadsOnly (13) is from Java 21; Java 17 VMs
// do not accept it, but a decoder must know its (empty) layout.
const (
	ModCount               ModKind = 1
	ModConditional         ModKind = 2
	ModThreadOnly          ModKind = 3
	ModClassOnly           ModKind = 4
	ModClassMatch          ModKind = 5
	ModClassExclude        ModKind = 6
	ModLocationOnly        ModKind = 7
	ModExceptionOnly       ModKind = 8
	ModFieldOnly           ModKind = 9
	ModStep                ModKind = 10
	ModInstanceOnly        ModKind = 11
	ModSourceNameMatch     ModKind = 12
	ModPlatformThreadsOnly ModKind = 13
)

var modKindNames = map[ModKind]string{
	ModCount:               "Count",
	ModConditional:         "Conditional",
	ModThreadOnly:          "ThreadOnly",
	ModClassOnly:           "ClassOnly",
	ModClassMatch:          "ClassMatch",
	ModClassExclude:        "ClassExclude",
	ModLocationOnly:        "LocationOnly",
	ModExceptionOnly:       "ExceptionOnly",
	ModFieldOnly:           "FieldOnly",
	ModStep:                "Step",
	ModInstanceOnly:        "InstanceOnly",
	ModSourceNameMatch:     "SourceNameMatch",
	ModPlatformThreadsOnly: "PlatformThreadsOnly",
}

func (k ModKind) String() string { return name(modKindNames, k, "ModKind") }

// name looks v up in a name table; unknown values render as "Type(n)".
// Only the unknown case allocates.
func name[K ~uint8 | ~int32](m map[K]string, v K, typ string) string {
	if n, ok := m[v]; ok {
		return n
	}
	return fmt.Sprintf("%s(%d)", typ, int64(v))
}
