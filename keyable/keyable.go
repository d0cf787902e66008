// Package keyable owns the identity of JDWP commands as the speculative
// cache sees them, in one table (table.go) with one row per command of the
// specification: the command's effect on VM state (read-only, resume,
// invoke, suspend, redefine, dispose, mutate) and, for a cacheable command,
// how long its reply stays true (validity tier and scope) and the layout of
// its parameters. Describe returns any command's row, Lookup a cacheable
// one's.
//
// A Key names one cacheable command with its parameters in canonical form.
// It is a comparable value (no pointers), so it can be a map key and is
// built and looked up without allocating. The parameters are the command's
// body bytes, validated against the command's layout with the session's ID
// sizes: a body that does not parse exactly, or is longer than MaxParams,
// has no Key and is simply not cached. Key.Subject reads the typed ID a
// reply's validity hangs on (a class, an object or a thread).
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

// layout is a cacheable command's parameters, in order, one field per
// byte from the lowest; the first zero byte ends it. (A packed integer, not
// an array, so that Info stays small and is passed in registers.)
type layout uint32

// Info is a command's row of the table: its effect on VM state and, for a
// cacheable command, how long its reply stays true and how its parameters
// are laid out. Info holds no pointers.
type Info struct {
	Effect Effect
	Tier   Tier
	Scope  Scope
	// AbsentOK says an ABSENT_INFORMATION error reply is as stable as a
	// success (class-lifetime tables and attributes).
	AbsentOK bool
	layout   layout
}

// Cacheable reports whether i describes a cacheable command.
func (i Info) Cacheable() bool { return i.Tier != TierNone }

// Command is one row of the table.
type Command struct {
	Cmd jdwp.Cmd
	Info
}

// Lookup returns the Info of a command, and whether it is cacheable.
func Lookup(c jdwp.Cmd) (Info, bool) {
	if i := index[c]; i.Cacheable() {
		return i, true
	}
	return Info{}, false
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

// Fill writes the key of command c with body params into *k and returns its
// info, or false when the command is not cacheable, params do not match the
// command's layout under the given ID sizes, or they are longer than
// MaxParams. On false *k is unspecified.
func Fill(k *Key, c jdwp.Cmd, params []byte, sizes jdwp.IDSizes) (Info, bool) {
	info := index[c]
	if !info.Cacheable() || len(params) > MaxParams || !matches(info.layout, params, sizes) {
		return Info{}, false
	}
	k.c = c
	k.n = uint8(len(params))
	copy(k.b[:], params)
	clear(k.b[len(params):])
	return info, true
}

// Subject is what a key's validity hangs on. At most one field is set,
// chosen by the command's tier and scope; the zero Subject hangs on no
// single ID (VM-lifetime facts, VM-scoped stop state).
type Subject struct {
	Class  jdwp.ClassID  // TierClass: the class whose unload or redefinition ends it
	Object jdwp.ObjectID // TierObject: the object whose disposal ends it
	Thread jdwp.ThreadID // TierStop, ScopeThread: the thread that must stay suspended
}

// Subject reads the key's subject from its first parameter.
func (k *Key) Subject(info Info, sizes jdwp.IDSizes) Subject {
	b := k.b[:k.n]
	switch {
	case info.Tier == TierClass:
		return Subject{Class: jdwp.ClassID(readID(b, sizes.ReferenceTypeID))}
	case info.Tier == TierObject:
		return Subject{Object: jdwp.ObjectID(readID(b, sizes.ObjectID))}
	case info.Tier == TierStop && info.Scope == ScopeThread:
		return Subject{Thread: jdwp.ThreadID(readID(b, sizes.ObjectID))}
	}
	return Subject{}
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
func matches(l layout, b []byte, s jdwp.IDSizes) bool {
	off := 0
	for ; l != 0; l >>= 8 {
		var n int
		switch f := field(l & 0xff); f {
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

// Param is one element of a cacheable command's parameters, in the order
// of its layout (Info.Params).
type Param uint8

// The parameter elements.
const (
	ParamObject   = Param(fObject)   // objectID (threadID, arrayID, ...)
	ParamRefType  = Param(fRefType)  // referenceTypeID
	ParamMethod   = Param(fMethod)   // methodID
	ParamFrame    = Param(fFrame)    // frameID
	ParamInt      = Param(fInt)      // int32
	ParamFieldIDs = Param(fFieldIDs) // int count, then count fieldIDs (last)
	ParamSlots    = Param(fSlots)    // int count, then count (int slot, byte tag) (last)
)

// Params appends the elements of a cacheable command's parameters, in
// order, to dst.
func (i Info) Params(dst []Param) []Param {
	for l := i.layout; l != 0; l >>= 8 {
		dst = append(dst, Param(l&0xff))
	}
	return dst
}
