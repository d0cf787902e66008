package jdwp

import "fmt"

// CommandSet is a JDWP command set number.
type CommandSet uint8

// Cmd names one command: a command set and a command within it.
type Cmd struct {
	Set CommandSet
	Cmd uint8
}

// Command sets of the Java 17 specification, and the DDM carrier.
const (
	SetVirtualMachine       CommandSet = 1
	SetReferenceType        CommandSet = 2
	SetClassType            CommandSet = 3
	SetArrayType            CommandSet = 4
	SetInterfaceType        CommandSet = 5
	SetMethod               CommandSet = 6
	SetField                CommandSet = 8
	SetObjectReference      CommandSet = 9
	SetStringReference      CommandSet = 10
	SetThreadReference      CommandSet = 11
	SetThreadGroupReference CommandSet = 12
	SetArrayReference       CommandSet = 13
	SetClassLoaderReference CommandSet = 14
	SetEventRequest         CommandSet = 15
	SetStackFrame           CommandSet = 16
	SetClassObjectReference CommandSet = 17
	SetModuleReference      CommandSet = 18
	SetEvent                CommandSet = 64
	SetDDM                  CommandSet = 199
)

// Commands the proxy itself needs by name. The full table is in cmdtable.go.
var (
	CmdIDSizes   = Cmd{SetVirtualMachine, 7}
	CmdComposite = Cmd{SetEvent, 100}
	CmdDDMChunk  = Cmd{SetDDM, 1}
)

// String renders "Set.Command", or numbers where the table has no name.
func (c Cmd) String() string {
	if n, ok := commandNames[c]; ok {
		return n
	}
	return fmt.Sprintf("%s.%d", c.Set, c.Cmd)
}

// Known reports whether c is in the command table.
func (c Cmd) Known() bool {
	_, ok := commandNames[c]
	return ok
}

// String is the specification's name of the command set.
func (s CommandSet) String() string {
	if n, ok := setNames[s]; ok {
		return n
	}
	return fmt.Sprintf("CommandSet(%d)", uint8(s))
}

// Known reports whether s is a command set of the specification or DDM.
func (s CommandSet) Known() bool {
	_, ok := setNames[s]
	return ok
}

// ErrorCode is a JDWP reply error code. It implements error; 0 is NONE.
type ErrorCode uint16

func (e ErrorCode) Error() string { return "jdwp: " + e.String() }

// String is the specification's name of the error code.
func (e ErrorCode) String() string {
	if n, ok := errorNames[e]; ok {
		return n
	}
	return fmt.Sprintf("ERROR_%d", uint16(e))
}
