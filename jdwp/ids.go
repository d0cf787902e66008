package jdwp

import "fmt"

// Typed IDs. The wire carries every ID as an unsigned big-endian integer
// of the width IDSizes gives its kind; the types below keep the kinds
// apart in Go so that a thread cannot be used where a class is meant. All
// are uint64 underneath and zero means "none" (the null object, no class).
//
// A thread, a string, an array or a class object is also an object: the
// specification's threadID, stringID, arrayID, ... are objectIDs, written
// at the ObjectID width. ThreadID has a type of its own because the proxy
// keeps suspension per thread; Object converts it. The interfaceID and
// classID of the specification are referenceTypeIDs: ClassID covers them.
//
// The untyped readers and writers (BodyReader.ObjectID, Event.Thread,
// Location.Class, ...) stay for packages that predate these types; the
// typed ones (Thread, Object, Class, Method, Field, Frame) read and write
// the same bytes.
type (
	// ObjectID names an object (objectID, tagged or not).
	ObjectID uint64
	// ThreadID names a thread (threadID, an objectID).
	ThreadID uint64
	// ClassID names a reference type (referenceTypeID, classID,
	// interfaceID, arrayTypeID).
	ClassID uint64
	// MethodID names a method within its reference type.
	MethodID uint64
	// FieldID names a field within its reference type.
	FieldID uint64
	// FrameID names a frame of a suspended thread, valid for that stop.
	FrameID uint64
)

func (id ObjectID) String() string { return fmt.Sprintf("ObjectID<%#x>", uint64(id)) }
func (id ThreadID) String() string { return fmt.Sprintf("ThreadID<%#x>", uint64(id)) }
func (id ClassID) String() string  { return fmt.Sprintf("ClassID<%#x>", uint64(id)) }
func (id MethodID) String() string { return fmt.Sprintf("MethodID<%#x>", uint64(id)) }
func (id FieldID) String() string  { return fmt.Sprintf("FieldID<%#x>", uint64(id)) }
func (id FrameID) String() string  { return fmt.Sprintf("FrameID<%#x>", uint64(id)) }

// Object is the thread as the object it also is.
func (id ThreadID) Object() ObjectID { return ObjectID(id) }

// Thread reads a threadID.
func (r *BodyReader) Thread() ThreadID { return ThreadID(r.ObjectID()) }

// Object reads an objectID.
func (r *BodyReader) Object() ObjectID { return ObjectID(r.ObjectID()) }

// Class reads a referenceTypeID.
func (r *BodyReader) Class() ClassID { return ClassID(r.ReferenceTypeID()) }

// Method reads a methodID.
func (r *BodyReader) Method() MethodID { return MethodID(r.MethodID()) }

// Field reads a fieldID.
func (r *BodyReader) Field() FieldID { return FieldID(r.FieldID()) }

// Frame reads a frameID.
func (r *BodyReader) Frame() FrameID { return FrameID(r.FrameID()) }

// Thread appends a threadID.
func (w *BodyWriter) Thread(id ThreadID) { w.ObjectID(uint64(id)) }

// Object appends an objectID.
func (w *BodyWriter) Object(id ObjectID) { w.ObjectID(uint64(id)) }

// Class appends a referenceTypeID.
func (w *BodyWriter) Class(id ClassID) { w.ReferenceTypeID(uint64(id)) }

// Method appends a methodID.
func (w *BodyWriter) Method(id MethodID) { w.MethodID(uint64(id)) }

// Field appends a fieldID.
func (w *BodyWriter) Field(id FieldID) { w.FieldID(uint64(id)) }

// Frame appends a frameID.
func (w *BodyWriter) Frame(id FrameID) { w.FrameID(uint64(id)) }

// ClassID is the location's class.
func (l Location) ClassID() ClassID { return ClassID(l.Class) }

// MethodID is the location's method.
func (l Location) MethodID() MethodID { return MethodID(l.Method) }

// ObjectID is the object an object-tagged value refers to (zero for null
// and for primitive values).
func (v Value) ObjectID() ObjectID {
	if !v.IsObject() {
		return 0
	}
	return ObjectID(v.Bits)
}

// ThreadID is the event's thread (zero for kinds without one).
func (e *Event) ThreadID() ThreadID { return ThreadID(e.Thread) }

// ClassID is the event's reference type (CLASS_PREPARE, FIELD_ACCESS,
// FIELD_MODIFICATION; zero otherwise).
func (e *Event) ClassID() ClassID { return ClassID(e.TypeID) }
