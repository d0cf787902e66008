package speculator

import (
	"slices"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
)

// expandSiblings widens a miss: the debugger asked a thread's name or
// status, or a frame method's IsObsolete, that no rule predicted (the
// first time it asks it, typically at the first stop); it will ask the
// same of every thread listed, or every frame, so those are speculated now
// (sent ahead of the debugger's own command).
func (ss *session) expandSiblings(sizes jdwp.IDSizes, key *keyable.Key) {
	ep := &ss.learn.ep
	if !ep.active || !ss.speculating() {
		return
	}
	c := key.Cmd()
	params := jdwp.NewBodyReader(key.Params(), sizes)
	switch c {
	case jdwp.CmdThreadReferenceName, jdwp.CmdThreadReferenceStatus:
		k := kThreadName
		if c == jdwp.CmdThreadReferenceStatus {
			k = kThreadStatus
		}
		own := params.Thread()
		if ep.expanded[k] || !slices.Contains(ep.threads, own) {
			return
		}
		ep.expanded[k] = true
		for _, t := range ep.threads {
			if t != own {
				ss.specThread(sizes, c, t, k)
			}
		}
	case jdwp.CmdMethodIsObsolete:
		m := methodKey{class: params.Class(), method: params.Method()}
		if ep.expanded[kObsolete] {
			return
		}
		found := false
		for _, fi := range ep.frames {
			if methodOf(fi.loc) == m {
				found = true
				break
			}
		}
		if !found {
			return
		}
		ep.expanded[kObsolete] = true
		for _, fi := range ep.frames {
			if methodOf(fi.loc) == m {
				continue
			}
			w := ss.writer(sizes)
			w.Class(fi.loc.ClassID())
			w.Method(fi.loc.MethodID())
			ss.pbuf = w.Buf
			ss.specParams(sizes, c, ss.pbuf, kObsolete, nil, 0)
		}
	}
}

// values speculates on one value found in a frame, object or array: a
// string's value, an array's length and first elements, an object's type
// and (at the first level) its fields.
func (ss *session) values(sizes jdwp.IDSizes, level uint8, v jdwp.Value) {
	if v.IsNull() || !v.IsObject() || level > 1 {
		return
	}
	o := v.ObjectID()
	w := ss.writer(sizes)
	w.Object(o)
	ss.pbuf = w.Buf
	switch v.Tag {
	case jdwp.TagString:
		ss.specParams(sizes, jdwp.CmdStringReferenceValue, ss.pbuf, kString, nil, level)
	case jdwp.TagArray:
		if _, known := ss.facts.objType[o]; !known {
			ss.specParams(sizes, jdwp.CmdObjectReferenceReferenceType, ss.pbuf, kRefType, nil, level)
		}
		if !ss.learn.arrKnown {
			return
		}
		var lk keyable.Key
		if _, ok := keyable.Fill(&lk, jdwp.CmdArrayReferenceLength, ss.pbuf, sizes); !ok {
			return
		}
		if e := ss.cache.lookup(&lk); e != nil && len(e.reply) >= jdwp.HeaderSize+4 && jdwp.Packet(e.reply).ErrorCode() == 0 {
			length := jdwp.NewBodyReader(jdwp.Packet(e.reply).Body(), sizes).Int32()
			ss.specArrayValues(sizes, o, length, level)
			return
		}
		ss.learn.ep.wantArray[o] = true
		ss.specParams(sizes, jdwp.CmdArrayReferenceLength, ss.pbuf, kArrayLength, nil, level)
	case jdwp.TagObject:
		if t, ok := ss.facts.objType[o]; ok {
			if level == 0 {
				ss.specFields(sizes, o, t, level)
			}
			return
		}
		if level == 0 {
			ss.learn.ep.wantFields[o] = level
		}
		ss.specParams(sizes, jdwp.CmdObjectReferenceReferenceType, ss.pbuf, kRefType, nil, level)
	}
}

// classMetaCmds are the class-lifetime facts the debugger may ask about a
// frame's class when it first meets it, with the rule that predicts each.
var classMetaCmds = [...]struct {
	c jdwp.Cmd
	k kind
}{
	{jdwp.CmdReferenceTypeSourceFile, kClassSource},
	{jdwp.CmdReferenceTypeSourceDebugExtension, kClassSource},
	{jdwp.CmdReferenceTypeMethodsWithGeneric, kClassMembers},
	{jdwp.CmdReferenceTypeMethods, kClassMembers},
}

// typeInfoCmds are the class-lifetime facts the debugger asks about an
// object's type to list its fields (visible fields need the superclasses
// and interfaces too).
var typeInfoCmds = [...]jdwp.Cmd{
	jdwp.CmdReferenceTypeFieldsWithGeneric, jdwp.CmdReferenceTypeFields,
	jdwp.CmdReferenceTypeInterfaces, jdwp.CmdClassTypeSuperclass,
}

// specTypeSig speculates the signature of an object's type t that no
// reply or event this proxy saw named: neither did the debugger, which
// asks it to show the object (an array's type, typically).
func (ss *session) specTypeSig(sizes jdwp.IDSizes, t jdwp.ClassID) {
	if _, named := ss.facts.idSig[t]; named || t == 0 {
		return
	}
	for _, c := range [...]jdwp.Cmd{jdwp.CmdReferenceTypeSignatureWithGeneric, jdwp.CmdReferenceTypeSignature} {
		if ss.learn.asked[c] != 0 {
			w := ss.writer(sizes)
			w.Class(t)
			ss.pbuf = w.Buf
			ss.specParams(sizes, c, ss.pbuf, kTypeSig, nil, 0)
			return
		}
	}
}

// specTypeInfo speculates the type facts the debugger asked for types
// before (cached, so nothing is sent, for a type seen before).
func (ss *session) specTypeInfo(sizes jdwp.IDSizes, t jdwp.ClassID) {
	if t == 0 {
		return
	}
	for _, c := range typeInfoCmds {
		if ss.learn.asked[c] == 0 {
			continue
		}
		w := ss.writer(sizes)
		w.Class(t)
		ss.pbuf = w.Buf
		ss.specParams(sizes, c, ss.pbuf, kClassInfo, nil, 0)
	}
}

// specClassMeta speculates the class metadata of a frame's class and
// method that the debugger asked for classes before (already cached for a
// class seen before, so this sends nothing for it): class-lifetime facts,
// valid until the class is unloaded or redefined.
func (ss *session) specClassMeta(sizes jdwp.IDSizes, loc jdwp.Location, depth int) {
	for _, m := range classMetaCmds {
		if ss.learn.asked[m.c] == 0 {
			continue
		}
		w := ss.writer(sizes)
		w.Class(loc.ClassID())
		ss.pbuf = w.Buf
		ss.specParams(sizes, m.c, ss.pbuf, m.k, nil, 0)
	}
	w := ss.writer(sizes)
	w.Class(loc.ClassID())
	w.Method(loc.MethodID())
	ss.pbuf = w.Buf
	if ss.learn.asked[jdwp.CmdMethodLineTable] != 0 {
		ss.specParams(sizes, jdwp.CmdMethodLineTable, ss.pbuf, kLineTable, nil, 0)
	}
	if depth < maxDepth && ss.learn.valueDepth&(1<<depth) != 0 {
		for _, c := range [...]jdwp.Cmd{jdwp.CmdMethodVariableTableWithGeneric, jdwp.CmdMethodVariableTable} {
			if ss.learn.asked[c] != 0 {
				ss.specParams(sizes, c, ss.pbuf, kVarTable, nil, 0)
			}
		}
	}
}

func (ss *session) specArrayValues(sizes jdwp.IDSizes, arr jdwp.ObjectID, length int32, level uint8) {
	first, n := ss.learn.arrFirst, ss.learn.arrLen
	if n < 0 || first < 0 || first >= length {
		return
	}
	n = min(n, length-first)
	if n <= 0 {
		return
	}
	w := ss.writer(sizes)
	w.Object(arr)
	w.Int32(first)
	w.Int32(n)
	ss.pbuf = w.Buf
	ss.specParams(sizes, jdwp.CmdArrayReferenceGetValues, ss.pbuf, kArrayValues, nil, level)
}
