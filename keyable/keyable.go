// Package keyable owns the identity of cacheable JDWP commands: which
// commands have replies that can be cached, how long such a reply stays
// true (its validity tier and scope), and the Key that names one command
// with its parameters in canonical form.
//
// A Key is a comparable value (no pointers), so it can be a map key and is
// built and looked up without allocating. The parameters are the command's
// body bytes, validated against the command's layout with the session's ID
// sizes: a body that does not parse exactly, or is longer than MaxParams,
// has no Key and is simply not cached.
package keyable

import (
	"encoding/binary"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// MaxParams is the longest command body a Key can hold. With 8-byte IDs it
// fits a StackFrame.GetValues of 21 slots or an ObjectReference.GetValues
// of 14 fields.
const MaxParams = 125

// Tier says how long a reply stays true.
type Tier uint8

const (
	// TierNone: not cacheable.
	TierNone Tier = iota
	// TierVM: true for the life of the VM connection (Version, IDSizes,
	// capabilities, class paths).
	TierVM
	// TierClass: true until the class (the first parameter) is unloaded or
	// redefined (signatures, members, tables, bytecodes, isObsolete, ...).
	TierClass
	// TierObject: true for the life of the object (the first parameter),
	// until the debugger disposes its ID (an object's type, a string's
	// value, an array's length).
	TierObject
	// TierStop: true only while the state cannot have changed: no resume,
	// invoke or mutation since, and the scope still suspended.
	TierStop

	numTiers
)

var tierNames = [numTiers]string{"none", "vm", "class", "object", "stop"}

func (t Tier) String() string {
	if t < numTiers {
		return tierNames[t]
	}
	return "unknown"
}

// Scope says what must stay suspended for a TierStop reply to stay true.
type Scope uint8

const (
	// ScopeNone: not a stop-state command.
	ScopeNone Scope = iota
	// ScopeThread: the thread named by the first parameter must be
	// suspended (its frames, frame values, status, monitors).
	ScopeThread
	// ScopeVM: the whole VM must be suspended (other threads, objects,
	// arrays, statics, names, thread lists).
	ScopeVM
)

// field is one element of a command's body layout.
type field uint8

const (
	fObject   field = iota + 1 // objectID (threadID, arrayID, ...)
	fRefType                   // referenceTypeID
	fMethod                    // methodID
	fFrame                     // frameID
	fInt                       // int32
	fFieldIDs                  // int count, then count fieldIDs (must be last)
	fSlots                     // int count, then count (int slot, byte tag) (must be last)
)

// Info describes a cacheable command.
type Info struct {
	Tier  Tier
	Scope Scope
	// AbsentOK says an ABSENT_INFORMATION error reply is as stable as a
	// success (class-lifetime tables and attributes).
	AbsentOK bool
	layout   []field
}

// Cacheable reports whether i describes a cacheable command.
func (i Info) Cacheable() bool { return i.Tier != TierNone }

var table = map[jdwp.Cmd]Info{}

func add(c jdwp.Cmd, t Tier, s Scope, absentOK bool, layout ...field) {
	table[c] = Info{Tier: t, Scope: s, AbsentOK: absentOK, layout: layout}
}

func init() {
	for _, c := range []jdwp.Cmd{jdwp.CmdVirtualMachineVersion, jdwp.CmdVirtualMachineIDSizes,
		jdwp.CmdVirtualMachineCapabilities, jdwp.CmdVirtualMachineClassPaths, jdwp.CmdVirtualMachineCapabilitiesNew} {
		add(c, TierVM, ScopeNone, false)
	}
	for _, c := range []jdwp.Cmd{jdwp.CmdReferenceTypeSignature, jdwp.CmdReferenceTypeClassLoader,
		jdwp.CmdReferenceTypeModifiers, jdwp.CmdReferenceTypeFields, jdwp.CmdReferenceTypeMethods,
		jdwp.CmdReferenceTypeInterfaces, jdwp.CmdReferenceTypeClassObject,
		jdwp.CmdReferenceTypeSignatureWithGeneric, jdwp.CmdReferenceTypeFieldsWithGeneric,
		jdwp.CmdReferenceTypeMethodsWithGeneric, jdwp.CmdReferenceTypeClassFileVersion,
		jdwp.CmdReferenceTypeConstantPool, jdwp.CmdReferenceTypeModule, jdwp.CmdClassTypeSuperclass} {
		add(c, TierClass, ScopeNone, false, fRefType)
	}
	add(jdwp.CmdReferenceTypeSourceFile, TierClass, ScopeNone, true, fRefType)
	add(jdwp.CmdReferenceTypeSourceDebugExtension, TierClass, ScopeNone, true, fRefType)
	add(jdwp.CmdMethodLineTable, TierClass, ScopeNone, true, fRefType, fMethod)
	add(jdwp.CmdMethodVariableTable, TierClass, ScopeNone, true, fRefType, fMethod)
	add(jdwp.CmdMethodBytecodes, TierClass, ScopeNone, false, fRefType, fMethod)
	add(jdwp.CmdMethodIsObsolete, TierClass, ScopeNone, false, fRefType, fMethod)
	add(jdwp.CmdMethodVariableTableWithGeneric, TierClass, ScopeNone, true, fRefType, fMethod)

	for _, c := range []jdwp.Cmd{jdwp.CmdObjectReferenceReferenceType, jdwp.CmdStringReferenceValue,
		jdwp.CmdArrayReferenceLength, jdwp.CmdClassObjectReferenceReflectedType,
		jdwp.CmdModuleReferenceName, jdwp.CmdModuleReferenceClassLoader} {
		add(c, TierObject, ScopeNone, false, fObject)
	}

	for _, c := range []jdwp.Cmd{jdwp.CmdThreadReferenceStatus, jdwp.CmdThreadReferenceFrameCount,
		jdwp.CmdThreadReferenceOwnedMonitors, jdwp.CmdThreadReferenceCurrentContendedMonitor,
		jdwp.CmdThreadReferenceSuspendCount, jdwp.CmdThreadReferenceOwnedMonitorsStackDepthInfo} {
		add(c, TierStop, ScopeThread, false, fObject)
	}
	add(jdwp.CmdThreadReferenceFrames, TierStop, ScopeThread, false, fObject, fInt, fInt)
	add(jdwp.CmdStackFrameGetValues, TierStop, ScopeThread, false, fObject, fFrame, fSlots)
	add(jdwp.CmdStackFrameThisObject, TierStop, ScopeThread, false, fObject, fFrame)

	add(jdwp.CmdVirtualMachineAllThreads, TierStop, ScopeVM, false)
	add(jdwp.CmdVirtualMachineTopLevelThreadGroups, TierStop, ScopeVM, false)
	for _, c := range []jdwp.Cmd{jdwp.CmdThreadReferenceName, jdwp.CmdThreadReferenceThreadGroup,
		jdwp.CmdThreadGroupReferenceName, jdwp.CmdThreadGroupReferenceParent,
		jdwp.CmdThreadGroupReferenceChildren, jdwp.CmdObjectReferenceMonitorInfo} {
		add(c, TierStop, ScopeVM, false, fObject)
	}
	add(jdwp.CmdObjectReferenceGetValues, TierStop, ScopeVM, false, fObject, fFieldIDs)
	add(jdwp.CmdArrayReferenceGetValues, TierStop, ScopeVM, false, fObject, fInt, fInt)
	add(jdwp.CmdReferenceTypeGetValues, TierStop, ScopeVM, false, fRefType, fFieldIDs)
}

// Lookup returns the Info of a command, and whether it is cacheable.
func Lookup(c jdwp.Cmd) (Info, bool) {
	i, ok := table[c]
	return i, ok
}

// Commands lists every cacheable command (for tests and documentation).
func Commands() []jdwp.Cmd {
	out := make([]jdwp.Cmd, 0, len(table))
	for c := range table {
		out = append(out, c)
	}
	return out
}

// TypeOf is the type (command set, command) of a command packet. Replies
// carry no type: it comes from the command they answer (see package
// trigger), so TypeOf reports false for them and for short packets.
func TypeOf(p jdwp.Packet) (jdwp.Cmd, bool) {
	if len(p) < jdwp.HeaderSize || p.IsReply() {
		return jdwp.Cmd{}, false
	}
	return p.Cmd(), true
}

// Key names one cacheable command with its parameters. It is comparable
// and holds no pointers. The zero Key is not a valid key.
type Key struct {
	c jdwp.Cmd
	n uint8
	b [MaxParams]byte
}

// Cmd is the command the key names.
func (k *Key) Cmd() jdwp.Cmd { return k.c }

// Params is the command's body (aliasing the key).
func (k *Key) Params() []byte { return k.b[:k.n] }

// AppendCommand appends the command packet the key names, with the given
// packet ID, to dst.
func (k *Key) AppendCommand(dst []byte, id uint32) jdwp.Packet {
	return jdwp.AppendCommand(dst, id, k.c, k.b[:k.n])
}

// Of returns the key and info of a command packet, or false when the
// command is not cacheable, its body does not match the command's layout
// under the given ID sizes, or it is longer than MaxParams.
func Of(p jdwp.Packet, sizes jdwp.IDSizes) (Key, Info, bool) {
	if len(p) < jdwp.HeaderSize || p.IsReply() {
		return Key{}, Info{}, false
	}
	return New(p.Cmd(), p.Body(), sizes)
}

// New returns the key and info of command c with body params, or false as
// for Of.
func New(c jdwp.Cmd, params []byte, sizes jdwp.IDSizes) (Key, Info, bool) {
	var k Key
	info, ok := Fill(&k, c, params, sizes)
	return k, info, ok
}

// Fill is New writing into *k, so callers on hot paths avoid copying the
// key. On false *k is unspecified.
func Fill(k *Key, c jdwp.Cmd, params []byte, sizes jdwp.IDSizes) (Info, bool) {
	info, ok := table[c]
	if !ok || len(params) > MaxParams || !matches(info.layout, params, sizes) {
		return Info{}, false
	}
	k.c = c
	k.n = uint8(len(params))
	copy(k.b[:], params)
	clear(k.b[len(params):])
	return info, true
}

// ScopeID is the ID a key's validity hangs on: the class (TierClass), the
// object (TierObject) or the thread (TierStop with ScopeThread). It is zero
// for keys whose validity hangs on no single ID.
func (k *Key) ScopeID(info Info, sizes jdwp.IDSizes) uint64 {
	var n int
	switch {
	case info.Tier == TierClass:
		n = sizes.ReferenceTypeID
	case info.Tier == TierObject, info.Tier == TierStop && info.Scope == ScopeThread:
		n = sizes.ObjectID
	default:
		return 0
	}
	return readID(k.b[:k.n], n)
}

// readID reads a big-endian ID of n bytes at the start of b, or 0.
func readID(b []byte, n int) uint64 {
	if n < 1 || n > 8 || len(b) < n {
		return 0
	}
	var v uint64
	for _, c := range b[:n] {
		v = v<<8 | uint64(c)
	}
	return v
}

// matches reports whether b is exactly a body of the layout.
func matches(layout []field, b []byte, s jdwp.IDSizes) bool {
	off := 0
	for _, f := range layout {
		var n int
		switch f {
		case fObject:
			n = s.ObjectID
		case fRefType:
			n = s.ReferenceTypeID
		case fMethod:
			n = s.MethodID
		case fFrame:
			n = s.FrameID
		case fInt:
			n = 4
		case fFieldIDs, fSlots:
			if len(b)-off < 4 {
				return false
			}
			cnt := int64(int32(binary.BigEndian.Uint32(b[off:])))
			item := int64(s.FieldID)
			if f == fSlots {
				item = 5
			}
			if cnt < 0 || item < 1 || item > 8 && f == fFieldIDs {
				return false
			}
			return int64(len(b)-off-4) == cnt*item
		}
		if n < 1 || n > 8 || len(b)-off < n {
			return false
		}
		off += n
	}
	return off == len(b)
}
