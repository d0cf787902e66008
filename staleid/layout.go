package staleid

import (
	"encoding/binary"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// A layout describes where the object and reference type IDs sit in a
// reply body, one letter per field, in the order of the JDWP
// specification:
//
//	o objectID (any kind: thread, thread group, string, class loader,
//	  class object, array, module)   r referenceTypeID
//	T tagged objectID                v tagged value
//	l location (its class)           A arrayregion (ArrayReference.GetValues)
//	m methodID   f fieldID   F frameID   b byte   i int   L long
//	s string (an int length and bytes; also a byte array)
//	*(...) an int count and that many of the group
//
// The IDs recorded are all the same kind of number on HotSpot, where a
// reference type's ID is its class object's ID: one set holds them all.
type layout string

// replyLayouts are the reply layouts of every command of the Java 17
// specification (plus ThreadReference.IsVirtual), indexed by set and
// command. A command not listed has an unknown reply: a session that sees
// one stops checking (see Guard).
var replyLayouts = map[jdwp.Cmd]layout{
	// VirtualMachine
	{Set: 1, Cmd: 1}: "siiss", {Set: 1, Cmd: 2}: "*(bri)", {Set: 1, Cmd: 3}: "*(brsi)",
	{Set: 1, Cmd: 4}: "*(o)", {Set: 1, Cmd: 5}: "*(o)", {Set: 1, Cmd: 6}: "",
	{Set: 1, Cmd: 7}: "iiiii", {Set: 1, Cmd: 8}: "", {Set: 1, Cmd: 9}: "",
	{Set: 1, Cmd: 10}: "", {Set: 1, Cmd: 11}: "o", {Set: 1, Cmd: 12}: "",
	{Set: 1, Cmd: 13}: "s*(s)*(s)", {Set: 1, Cmd: 14}: "", {Set: 1, Cmd: 15}: "",
	{Set: 1, Cmd: 16}: "", {Set: 1, Cmd: 17}: "", {Set: 1, Cmd: 18}: "",
	{Set: 1, Cmd: 19}: "", {Set: 1, Cmd: 20}: "*(brssi)", {Set: 1, Cmd: 21}: "",
	{Set: 1, Cmd: 22}: "*(o)",
	// ReferenceType
	{Set: 2, Cmd: 1}: "", {Set: 2, Cmd: 2}: "o", {Set: 2, Cmd: 3}: "",
	{Set: 2, Cmd: 4}: "", {Set: 2, Cmd: 5}: "", {Set: 2, Cmd: 6}: "*(v)",
	{Set: 2, Cmd: 7}: "", {Set: 2, Cmd: 8}: "*(br)", {Set: 2, Cmd: 9}: "",
	{Set: 2, Cmd: 10}: "*(r)", {Set: 2, Cmd: 11}: "o", {Set: 2, Cmd: 12}: "",
	{Set: 2, Cmd: 13}: "", {Set: 2, Cmd: 14}: "", {Set: 2, Cmd: 15}: "",
	{Set: 2, Cmd: 16}: "*(T)", {Set: 2, Cmd: 17}: "", {Set: 2, Cmd: 18}: "",
	{Set: 2, Cmd: 19}: "o",
	// ClassType, ArrayType, InterfaceType
	{Set: 3, Cmd: 1}: "r", {Set: 3, Cmd: 2}: "", {Set: 3, Cmd: 3}: "vT", {Set: 3, Cmd: 4}: "TT",
	{Set: 4, Cmd: 1}: "T",
	{Set: 5, Cmd: 1}: "vT",
	// Method
	{Set: 6, Cmd: 1}: "", {Set: 6, Cmd: 2}: "", {Set: 6, Cmd: 3}: "",
	{Set: 6, Cmd: 4}: "", {Set: 6, Cmd: 5}: "",
	// ObjectReference
	{Set: 9, Cmd: 1}: "br", {Set: 9, Cmd: 2}: "*(v)", {Set: 9, Cmd: 3}: "",
	{Set: 9, Cmd: 5}: "oi*(o)", {Set: 9, Cmd: 6}: "vT", {Set: 9, Cmd: 7}: "",
	{Set: 9, Cmd: 8}: "", {Set: 9, Cmd: 9}: "", {Set: 9, Cmd: 10}: "*(T)",
	// StringReference
	{Set: 10, Cmd: 1}: "",
	// ThreadReference
	{Set: 11, Cmd: 1}: "", {Set: 11, Cmd: 2}: "", {Set: 11, Cmd: 3}: "",
	{Set: 11, Cmd: 4}: "", {Set: 11, Cmd: 5}: "o", {Set: 11, Cmd: 6}: "*(Fl)",
	{Set: 11, Cmd: 7}: "", {Set: 11, Cmd: 8}: "*(T)", {Set: 11, Cmd: 9}: "T",
	{Set: 11, Cmd: 10}: "", {Set: 11, Cmd: 11}: "", {Set: 11, Cmd: 12}: "",
	{Set: 11, Cmd: 13}: "*(Ti)", {Set: 11, Cmd: 14}: "", {Set: 11, Cmd: 15}: "",
	// ThreadGroupReference
	{Set: 12, Cmd: 1}: "", {Set: 12, Cmd: 2}: "o", {Set: 12, Cmd: 3}: "*(o)*(o)",
	// ArrayReference
	{Set: 13, Cmd: 1}: "", {Set: 13, Cmd: 2}: "A", {Set: 13, Cmd: 3}: "",
	// ClassLoaderReference
	{Set: 14, Cmd: 1}: "*(br)",
	// EventRequest
	{Set: 15, Cmd: 1}: "", {Set: 15, Cmd: 2}: "", {Set: 15, Cmd: 3}: "",
	// StackFrame
	{Set: 16, Cmd: 1}: "*(v)", {Set: 16, Cmd: 2}: "", {Set: 16, Cmd: 3}: "T", {Set: 16, Cmd: 4}: "",
	// ClassObjectReference
	{Set: 17, Cmd: 1}: "br",
	// ModuleReference
	{Set: 18, Cmd: 1}: "", {Set: 18, Cmd: 2}: "o",
	// DDM.Chunk: chunk data, no JDWP IDs.
	jdwp.CmdDDMChunk: "",
}

// walker reads a body along a layout and adds each ID to ids.
type walker struct {
	b     []byte
	off   int
	sizes jdwp.IDSizes
	bad   bool
	ids   *idSet
}

func (w *walker) add(id uint64) {
	if !w.bad {
		w.ids.add(id)
	}
}

func (w *walker) byte1() byte {
	if b := w.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (w *walker) take(n int) []byte {
	if w.bad || n < 0 || n > len(w.b)-w.off {
		w.bad = true
		return nil
	}
	s := w.b[w.off : w.off+n]
	w.off += n
	return s
}

func (w *walker) id(n int) uint64 {
	if n < 1 || n > 8 {
		w.bad = true
		return 0
	}
	var v uint64
	for _, c := range w.take(n) {
		v = v<<8 | uint64(c)
	}
	return v
}

func (w *walker) int32() int {
	if b := w.take(4); b != nil {
		return int(int32(binary.BigEndian.Uint32(b)))
	}
	return 0
}

// value reads a value of tag t (an object's ID is recorded).
func (w *walker) value(t jdwp.Tag) {
	if t.IsObject() {
		w.add(w.id(w.sizes.ObjectID))
		return
	}
	n := t.Size(w.sizes)
	if n < 0 {
		w.bad = true
		return
	}
	w.take(n)
}

// walk reads l from the body, returning false when the body does not fit
// it (short, trailing bytes, a bad tag).
func (w *walker) walk(l layout) bool {
	w.seq(string(l))
	return !w.bad && w.off == len(w.b)
}

// seq reads the fields of l once.
func (w *walker) seq(l string) {
	for i := 0; i < len(l) && !w.bad; i++ {
		switch l[i] {
		case 'o':
			w.add(w.id(w.sizes.ObjectID))
		case 'r':
			w.add(w.id(w.sizes.ReferenceTypeID))
		case 'T', 'v':
			w.value(jdwp.Tag(w.byte1()))
		case 'l':
			w.take(1)
			w.add(w.id(w.sizes.ReferenceTypeID))
			w.take(w.sizes.MethodID + 8)
		case 'A':
			tag := jdwp.Tag(w.byte1())
			n := w.int32()
			if w.bad || n < 0 || n > len(w.b)-w.off {
				w.bad = true
				return
			}
			for range n {
				if tag.IsObject() {
					w.value(jdwp.Tag(w.byte1()))
				} else {
					w.value(tag)
				}
				if w.bad {
					return
				}
			}
		case 'm':
			w.take(w.sizes.MethodID)
		case 'f':
			w.take(w.sizes.FieldID)
		case 'F':
			w.take(w.sizes.FrameID)
		case 'b':
			w.take(1)
		case 'i':
			w.take(4)
		case 'L':
			w.take(8)
		case 's':
			w.take(w.int32())
		case '*':
			end := i + 2
			for depth := 1; depth > 0; end++ {
				switch l[end] {
				case '(':
					depth++
				case ')':
					depth--
				}
			}
			group := l[i+2 : end-1]
			n := w.int32()
			if n < 0 || n > len(w.b)-w.off { // every group is at least a byte
				w.bad = true
				return
			}
			for range n {
				if w.seq(group); w.bad {
					return
				}
			}
			i = end - 1
		}
	}
}
