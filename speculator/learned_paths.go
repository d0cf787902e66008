package speculator

import (
	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// Where an ID a debugger sends can come from: the paths inside the replies
// of a stop that hold IDs (walkReply), by reply. The learned rules
// (learned.go) name a parameter's origin by the path its ID was found at.

// space is the kind of ID a path holds (IDs of different kinds may have
// equal values).
type space uint8

const (
	spObject space = iota + 1 // objects, threads, arrays, strings
	spClass
	spMethod
	spFrame
)

// path is where in a reply an ID is.
type path uint8

const (
	pNone        path = iota
	pThread           // each thread of an AllThreads reply
	pFrame            // each frame ID of a Frames reply
	pFrameClass       // the class of each frame's location
	pFrameMethod      // the method of each frame's location
	pValue            // each non-null object value of a GetValues reply (frame, object or array)
	pThis             // the object of a ThisObject reply
	pType             // the type of a ReferenceType reply
	pSuper            // the superclass of a Superclass reply
	pIface            // each interface of an Interfaces reply
)

// listed says whether a path is one of a list's elements.
func (p path) listed() bool {
	return p == pThread || p == pFrame || p == pFrameClass || p == pFrameMethod || p == pValue || p == pIface
}

// item is one ID found in a reply.
type item struct {
	sp   space
	id   uint64
	path path
	i    int      // the element's index in its list (0 for a single one)
	tag  jdwp.Tag // an object's tag ('t' for AllThreads' threads)
	loc  jdwp.Location
}

// tagBit is a tag's bit in a tag set (idxSet.tags).
func tagBit(t jdwp.Tag) uint16 {
	switch t {
	case jdwp.TagObject:
		return 1 << 0
	case jdwp.TagString:
		return 1 << 1
	case jdwp.TagArray:
		return 1 << 2
	case jdwp.TagThread:
		return 1 << 3
	case jdwp.TagThreadGroup:
		return 1 << 4
	case jdwp.TagClassLoader:
		return 1 << 5
	case jdwp.TagClassObject:
		return 1 << 6
	}
	return 1 << 15
}

// frameItems are the IDs of frame i of a Frames reply: the frame, its
// location's class and method.
func frameItems(fr uint64, loc jdwp.Location, i int) [3]item {
	return [3]item{
		{sp: spFrame, id: fr, path: pFrame, i: i, loc: loc},
		{sp: spClass, id: loc.Class, path: pFrameClass, i: i, loc: loc},
		{sp: spMethod, id: loc.Method, path: pFrameMethod, i: i, loc: loc},
	}
}

// hasPaths says whether replies to c hold IDs at paths (walkReply).
func hasPaths(c jdwp.Cmd) bool {
	switch c {
	case jdwp.CmdVirtualMachineAllThreads, jdwp.CmdThreadReferenceFrames, jdwp.CmdStackFrameGetValues,
		jdwp.CmdObjectReferenceGetValues, jdwp.CmdArrayReferenceGetValues, jdwp.CmdStackFrameThisObject,
		jdwp.CmdObjectReferenceReferenceType, jdwp.CmdClassTypeSuperclass, jdwp.CmdReferenceTypeInterfaces:
		return true
	}
	return false
}

// walkReply calls fn with each ID the reply body (to command c) holds at a
// path, in order; it stops at the first malformed element.
func walkReply(c jdwp.Cmd, body []byte, sizes jdwp.IDSizes, fn func(it *item)) {
	r := jdwp.NewBodyReader(body, sizes)
	var it item
	switch c {
	case jdwp.CmdVirtualMachineAllThreads:
		n := r.Count(sizes.ObjectID)
		for i := 0; i < n; i++ {
			t := r.ObjectID()
			if r.Err() != nil {
				return
			}
			it = item{sp: spObject, id: t, path: pThread, i: i, tag: jdwp.TagThread}
			fn(&it)
		}
	case jdwp.CmdThreadReferenceFrames:
		n := r.Count(sizes.FrameID + 1 + sizes.ReferenceTypeID + sizes.MethodID + 8)
		for i := 0; i < n; i++ {
			fr, loc := r.FrameID(), r.Location()
			if r.Err() != nil {
				return
			}
			for _, it = range frameItems(fr, loc, i) {
				fn(&it)
			}
		}
	case jdwp.CmdStackFrameGetValues, jdwp.CmdObjectReferenceGetValues, jdwp.CmdArrayReferenceGetValues:
		// An array region starts with its element tag: tagged values
		// (objects) follow only for an object tag.
		if c == jdwp.CmdArrayReferenceGetValues && !jdwp.Tag(r.Uint8()).IsObject() {
			return
		}
		n := r.Count(1)
		for i := 0; i < n; i++ {
			v := r.Value()
			if r.Err() != nil {
				return
			}
			if v.IsObject() && !v.IsNull() {
				it = item{sp: spObject, id: uint64(v.ObjectID()), path: pValue, i: i, tag: v.Tag}
				fn(&it)
			}
		}
	case jdwp.CmdStackFrameThisObject:
		v := r.TaggedObjectID()
		if r.Err() == nil && !v.IsNull() {
			it = item{sp: spObject, id: uint64(v.ObjectID()), path: pThis, tag: v.Tag}
			fn(&it)
		}
	case jdwp.CmdObjectReferenceReferenceType:
		r.Uint8()
		if t := r.ReferenceTypeID(); r.Err() == nil && t != 0 {
			it = item{sp: spClass, id: t, path: pType}
			fn(&it)
		}
	case jdwp.CmdClassTypeSuperclass:
		if t := r.ReferenceTypeID(); r.Err() == nil && t != 0 {
			it = item{sp: spClass, id: t, path: pSuper}
			fn(&it)
		}
	case jdwp.CmdReferenceTypeInterfaces:
		n := r.Count(sizes.ReferenceTypeID)
		for i := 0; i < n; i++ {
			t := r.ReferenceTypeID()
			if r.Err() != nil {
				return
			}
			it = item{sp: spClass, id: t, path: pIface, i: i}
			fn(&it)
		}
	}
}
