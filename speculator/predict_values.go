package speculator

import (
	"slices"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
)

// valueRules are the rules of the values a stop shows: for each value a
// frame, object or array holds, a string's value, an array's length and
// first elements, an object's type (and its signature and the type facts
// the debugger lists fields with); an object's fields are the shape
// rules' (shapes, an input). They react to replies that hold values or
// types, valid in the current stop (chain), read the learner and the
// facts, and emit speculation through the core's gates; they hold no
// state of their own (what waits for a reply is the stop's, episode).
type valueRules struct {
	*core
	shapes *shapeRules
}

// chain speculates on the values of a ThisObject or GetValues reply, on
// an array's elements once its length is known, and on an object's type
// once known.
func (vr *valueRules) chain(x *chained) {
	ep := &vr.learn.ep
	sizes, level := x.sizes, x.level
	r := jdwp.NewBodyReader(x.p.Body(), sizes)
	params := jdwp.NewBodyReader(x.key.Params(), sizes)
	switch x.key.Cmd() {
	case jdwp.CmdStackFrameThisObject:
		v := r.TaggedObjectID()
		if r.Err() == nil {
			vr.values(sizes, 0, v)
		}
	case jdwp.CmdStackFrameGetValues, jdwp.CmdObjectReferenceGetValues:
		lvl := uint8(0)
		if x.key.Cmd() == jdwp.CmdObjectReferenceGetValues {
			lvl = level + 1
		}
		n := r.Count(1)
		for i := 0; i < n && r.Err() == nil; i++ {
			v := r.Value()
			if r.Err() == nil {
				vr.values(sizes, lvl, v)
			}
		}
	case jdwp.CmdArrayReferenceGetValues:
		tag := jdwp.Tag(r.Uint8())
		if !tag.IsObject() {
			return
		}
		n := r.Count(1)
		for i := 0; i < n && r.Err() == nil; i++ {
			v := r.Value()
			if r.Err() == nil {
				vr.values(sizes, level+1, v)
				vr.elementType(sizes, level+1, v)
			}
		}
	case jdwp.CmdObjectReferenceReferenceType:
		obj := params.Object()
		tag := jdwp.TypeTag(r.Uint8())
		t := r.Class()
		if r.Err() != nil {
			return
		}
		vr.facts.setObjType(obj, t)
		vr.specTypeSig(sizes, t)
		if tag != jdwp.TypeTagArray && vr.listsFacts(obj) {
			// An array type declares no fields and implements what every
			// array does: JDI lists them without asking the VM.
			vr.specTypeInfo(sizes, t)
		}
	case jdwp.CmdClassTypeSuperclass:
		sup := r.Class()
		if r.Err() == nil {
			vr.specTypeInfo(sizes, sup)
		}
	case jdwp.CmdReferenceTypeInterfaces:
		// JDI lists a class's visible fields with those of its
		// interfaces and theirs.
		n := r.Count(sizes.ReferenceTypeID)
		for i := 0; i < n && r.Err() == nil; i++ {
			if t := r.Class(); r.Err() == nil {
				vr.specInterfaceInfo(sizes, t)
			}
		}
	case jdwp.CmdArrayReferenceLength:
		arr := params.Object()
		n := r.Int32()
		if r.Err() == nil && ep.wantArray[arr] {
			delete(ep.wantArray, arr)
			vr.specArrayValues(sizes, arr, n, level)
		}
	}
}

// values speculates on one value found in a frame, object or array: a
// string's value, an array's length and first elements, an object's type
// and (at the first level) its fields, as deep as the debugger reads
// (learner.follows).
func (vr *valueRules) values(sizes jdwp.IDSizes, level uint8, v jdwp.Value) {
	if v.IsNull() || !v.IsObject() || level > maxValueLevel {
		return
	}
	o := v.ObjectID()
	ep := &vr.learn.ep
	if old, seen := ep.objLevel[o]; seen && level < old || !seen && len(ep.objLevel) < maxObjLevels {
		ep.objLevel[o] = level
		if rk, ok := expandedBy(v.Tag); ok && !seen {
			ep.found[rk][level]++
			if rk == readFields {
				ep.objects = append(ep.objects, o)
			}
		}
	}
	if !vr.learn.follows(readNames, level) {
		vr.deferValue(level, v, false)
		return
	}
	w := vr.writer(sizes)
	w.Object(o)
	vr.pbuf = w.Buf
	switch v.Tag {
	case jdwp.TagString:
		vr.specParams(sizes, jdwp.CmdStringReferenceValue, vr.pbuf, kString, nil, level)
	case jdwp.TagArray:
		if _, known := vr.facts.objType[o]; !known {
			vr.specParams(sizes, jdwp.CmdObjectReferenceReferenceType, vr.pbuf, kRefType, nil, level)
		}
		if !vr.learn.arrKnown {
			return
		}
		elements := vr.learn.follows(readElements, level)
		if !elements {
			vr.deferValue(level, v, false)
		}
		if length, ok := vr.arrayLength(o, sizes); ok {
			if elements {
				vr.specArrayValues(sizes, o, length, level)
			}
			return
		}
		if elements {
			vr.learn.ep.wantArray[o] = true
		}
		vr.specParams(sizes, jdwp.CmdArrayReferenceLength, vr.pbuf, kArrayLength, nil, level)
	case jdwp.TagObject:
		fields := level < maxValueLevel && vr.learn.follows(readFields, level)
		if !fields && level < maxValueLevel {
			vr.deferValue(level, v, false)
		}
		if t, ok := vr.facts.objType[o]; ok {
			if fields {
				vr.specTypeInfo(sizes, t)
				vr.shapes.specFields(sizes, o, t, level)
			}
			return
		}
		if fields {
			vr.learn.ep.wantFields[o] = level
		}
		vr.specParams(sizes, jdwp.CmdObjectReferenceReferenceType, vr.pbuf, kRefType, nil, level)
	}
}

// expandedBy is the kind of read that expands a value of tag t: an
// object's fields, an array's elements; false for a string.
func expandedBy(t jdwp.Tag) (readKind, bool) {
	switch t {
	case jdwp.TagObject:
		return readFields, true
	case jdwp.TagArray:
		return readElements, true
	}
	return 0, false
}

// readKind is what the debugger reads of a value a stop shows: an
// object's fields, an array's elements, or what shows it (its type, a
// string's value, an array's length).
type readKind uint8

const (
	readFields   readKind = iota // ObjectReference.GetValues
	readElements                 // ArrayReference.GetValues
	readNames                    // ObjectReference.ReferenceType, StringReference.Value, ArrayReference.Length
	numReads
)

// maxObjLevels bounds the objects a stop keeps the level of.
const maxObjLevels = 4 * maxSpecPerStop

// readOf is the kind of read command c is, if it reads a value a stop
// shows.
func readOf(c jdwp.Cmd) (readKind, bool) {
	switch c {
	case jdwp.CmdObjectReferenceGetValues:
		return readFields, true
	case jdwp.CmdArrayReferenceGetValues:
		return readElements, true
	case jdwp.CmdObjectReferenceReferenceType, jdwp.CmdStringReferenceValue, jdwp.CmdArrayReferenceLength:
		return readNames, true
	}
	return 0, false
}

// asked learns how deep the debugger reads the values a stop shows: by
// kind of read, the deepest level at which the stop's speculation found
// an object the debugger read.
func (vr *valueRules) asked(key *keyable.Key, _ keyable.Info, sizes jdwp.IDSizes) {
	ep := &vr.learn.ep
	if key.Cmd() == jdwp.CmdArrayReferenceGetValues {
		r := jdwp.NewBodyReader(key.Params(), sizes)
		arr, first, n := r.Object(), r.Int32(), r.Int32()
		if r.Err() == nil {
			length, known := vr.arrayLength(arr, sizes)
			vr.learn.arrayRead(first, n, length, known)
		}
	}
	if c := key.Cmd(); (c == jdwp.CmdReferenceTypeFields || c == jdwp.CmdReferenceTypeFieldsWithGeneric) && ep.active {
		if t := jdwp.NewBodyReader(key.Params(), sizes).Class(); len(ep.listed) < maxObjLevels {
			ep.listed = append(ep.listed, t)
		}
	}
	rk, ok := readOf(key.Cmd())
	if !ok || !ep.active {
		return
	}
	obj := jdwp.NewBodyReader(key.Params(), sizes).Object()
	lvl, found := ep.objLevel[obj]
	if !found {
		return
	}
	ep.readLevel[rk] = max(ep.readLevel[rk], lvl+1)
	if ep.readObj[obj]&(1<<rk) == 0 {
		if ep.readObj == nil {
			ep.readObj = map[jdwp.ObjectID]uint8{}
		}
		ep.readObj[obj] |= 1 << rk
		if rk != readNames {
			ep.read[rk][lvl]++
		}
	}
	if !vr.learn.follows(rk, lvl) {
		vr.deepen(sizes)
	}
}

// follows reports whether the rules speculate a read of kind rk of a value
// at level: as deep as the debugger read at the last stop it showed (not
// at all, if it read no value there: jdb), but not at a level where it read
// fewer than half of those found (learner.sparse), or, until it showed one in
// this session (or the one whose profile it began from), as deep as every
// debugger reads at a first stop (firstLevels); and every level for the
// rest of a stop at which it read deeper than that (episode.deeper).
func (l *learner) follows(rk readKind, level uint8) bool {
	switch {
	case l.ep.deeper:
		return true
	case l.levelsKnown:
		return level < l.readLevel[rk] && (int(level) >= len(l.sparse[rk]) || !l.sparse[rk][level])
	}
	return level < firstLevels[rk]
}

// firstLevels are the levels a stop follows before the debugger showed
// one (learner.follows): the fields of each local object and of this,
// the elements of each array a local or one of those fields holds, and
// what shows each value they hold (its type, a string's value, an
// array's length). The debuggers measured read that much at a stop
// (java-debug as VS Code's UI drives it, Eclipse's and OpenJDK's JDI
// workloads; java-debug no array a field holds, OpenJDK's JDI workload
// those, a miss each at a first stop in split mode otherwise); no deeper
// unless its user opens a field, which it reads and misses: then the
// stop follows every level (the user opened one, and IDEs show a
// field's fields).
var firstLevels = [numReads]uint8{readFields: 1, readElements: 2, readNames: 2}

// listsFacts says whether the stop speculates the type facts (fields,
// interfaces, superclass) of obj's type: for an object whose fields it
// follows (learner.follows: the debugger opens it, and lists its fields
// first), or one it found nowhere; for any other shown object only if the
// debugger lists the type facts of objects it shows and does not open
// (OpenJDK's JDI, a level ahead: learner.shownFacts), or nothing said so
// far that it does not (Eclipse's JDI under java-debug).
func (vr *valueRules) listsFacts(obj jdwp.ObjectID) bool {
	if vr.learn.shownFacts != factsNotListed {
		return true
	}
	lvl, found := vr.learn.ep.objLevel[obj]
	return !found || lvl < maxValueLevel && vr.learn.follows(readFields, lvl)
}

// deferredValue is a value a stop's value rules found and did not
// follow to the end (a read of it or of what it holds deeper than
// learner.follows said), kept to follow once the stop follows deeper.
type deferredValue struct {
	v       jdwp.Value
	level   uint8
	element bool // an array's element (elementType too)
}

// maxDeferred bounds the values a stop keeps to follow deeper.
const maxDeferred = maxSpecPerStop

func (vr *valueRules) deferValue(level uint8, v jdwp.Value, element bool) {
	ep := &vr.learn.ep
	if ep.active && !ep.deeper && len(ep.deferred) < maxDeferred {
		ep.deferred = append(ep.deferred, deferredValue{v: v, level: level, element: element})
	}
}

// deepen follows every level for the rest of the stop, beginning with
// the values found and not followed so far.
func (vr *valueRules) deepen(sizes jdwp.IDSizes) {
	ep := &vr.learn.ep
	if ep.deeper {
		return
	}
	ep.deeper = true
	deferred := ep.deferred
	ep.deferred = nil
	for _, d := range deferred {
		vr.values(sizes, d.level, d.v)
		if d.element {
			vr.elementType(sizes, d.level, d.v)
		}
	}
}

// maxValueLevel is the deepest level of the values a stop shows that the
// rules follow: the frame's values and this (level 0), their fields and
// elements (1), theirs (2) and theirs (3), whose fields are not read. An
// IDE shows a variable's fields, and the user opens a field to show its
// own: a map's table, its entries, their keys and values, three levels
// of fields in all.
const maxValueLevel = 3

// elementType speculates the type of a string an array holds: an IDE
// names the type of each element it shows (an object's or an array's is
// read by values already).
func (vr *valueRules) elementType(sizes jdwp.IDSizes, level uint8, v jdwp.Value) {
	if v.Tag != jdwp.TagString || v.IsNull() || level > maxValueLevel {
		return
	}
	if !vr.learn.follows(readNames, level) {
		vr.deferValue(level, v, true)
		return
	}
	if _, known := vr.facts.objType[v.ObjectID()]; known {
		return
	}
	w := vr.writer(sizes)
	w.Object(v.ObjectID())
	vr.pbuf = w.Buf
	vr.specParams(sizes, jdwp.CmdObjectReferenceReferenceType, vr.pbuf, kRefType, nil, level)
}

// typeInfoCmds are the class-lifetime facts the debugger asks about an
// object's type to list its fields (visible fields need the superclasses
// and interfaces too).
var typeInfoCmds = [...]jdwp.Cmd{
	jdwp.CmdReferenceTypeFieldsWithGeneric, jdwp.CmdReferenceTypeFields,
	jdwp.CmdReferenceTypeInterfaces, jdwp.CmdClassTypeSuperclass,
}

// specTypeSig speculates the signature of an object's type t that no
// reply or event the debugger saw named (only the proxy's own lookups at
// attach, if any): the debugger asks it to show the object (an array's
// type, a class loaded before the attach, typically).
func (vr *valueRules) specTypeSig(sizes jdwp.IDSizes, t jdwp.ClassID) {
	_, named := vr.facts.idSig[t]
	if _, own := vr.facts.ownNamed[t]; named && !own || t == 0 {
		return
	}
	c, ok := vr.learn.signatureCmd()
	if !ok {
		return
	}
	w := vr.writer(sizes)
	w.Class(t)
	vr.pbuf = w.Buf
	vr.specParams(sizes, c, vr.pbuf, kTypeSig, nil, 0)
}

// specTypeInfo speculates the type facts the debugger asked for types
// before (cached, so nothing is sent, for a type seen before).
func (vr *valueRules) specTypeInfo(sizes jdwp.IDSizes, t jdwp.ClassID) {
	if t == 0 {
		return
	}
	for _, c := range typeInfoCmds {
		if vr.learn.asked[c] == 0 {
			continue
		}
		w := vr.writer(sizes)
		w.Class(t)
		vr.pbuf = w.Buf
		vr.specParams(sizes, c, vr.pbuf, kClassInfo, nil, 0)
	}
}

// specInterfaceInfo speculates the type facts of interface t the debugger
// asked for types before, but a class's superclass (ClassType.Superclass
// takes a class).
func (vr *valueRules) specInterfaceInfo(sizes jdwp.IDSizes, t jdwp.ClassID) {
	if t == 0 {
		return
	}
	for _, c := range typeInfoCmds {
		if vr.learn.asked[c] == 0 || c == jdwp.CmdClassTypeSuperclass {
			continue
		}
		w := vr.writer(sizes)
		w.Class(t)
		vr.pbuf = w.Buf
		vr.specParams(sizes, c, vr.pbuf, kClassInfo, nil, 0)
	}
}

func (vr *valueRules) specArrayValues(sizes jdwp.IDSizes, arr jdwp.ObjectID, length int32, level uint8) {
	var sent [maxArrReads]arrRead
	for i, a := range vr.learn.arrReads {
		first, n := a.First, min(a.Len, length-a.First)
		if a.Len < 0 || first < 0 || first >= length || n <= 0 || slices.Contains(sent[:i], arrRead{first, n}) {
			continue
		}
		sent[i] = arrRead{first, n}
		w := vr.writer(sizes)
		w.Object(arr)
		w.Int32(first)
		w.Int32(n)
		vr.pbuf = w.Buf
		vr.specParams(sizes, jdwp.CmdArrayReferenceGetValues, vr.pbuf, kArrayValues, nil, level)
	}
}
