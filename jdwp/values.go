package jdwp

import (
	"errors"
	"fmt"
	"math"
)

// Errors of the value, location and modifier decoders. Each failure wraps
// one of these (or ErrShortBody), so callers can test with errors.Is.
var (
	// ErrBadTag is a value tag the specification does not define, or a
	// primitive tag where a tagged objectID is required.
	ErrBadTag = errors.New("jdwp: bad value tag")
	// ErrUnknownModifier is an EventRequest.Set modifier kind the
	// specification does not define; the rest of the request cannot be
	// decoded because the modifier's length is unknown.
	ErrUnknownModifier = errors.New("jdwp: unknown event request modifier")
	// ErrBadIDSize is an ID size outside 1..8 (typically: IDSizes not yet
	// learned).
	ErrBadIDSize = errors.New("jdwp: ID size out of range 1..8")
	// ErrTrailingData is a body with bytes left after its last field.
	ErrTrailingData = errors.New("jdwp: trailing bytes after body")
)

// Value is a JDWP value: a tag and the value's raw bits. Primitives hold
// their big-endian bits zero-extended (a float holds its IEEE-754 bits, a
// boolean 0 or 1), objects their objectID. Void has no bits. Value holds
// no pointers, so decoding one never allocates.
type Value struct {
	Tag  Tag
	Bits uint64
}

// Int returns an integral value sign-extended (byte, short, int, long),
// char and boolean zero-extended, and for other tags the raw bits.
func (v Value) Int() int64 {
	switch v.Tag {
	case TagByte:
		return int64(int8(v.Bits))
	case TagShort:
		return int64(int16(v.Bits))
	case TagInt:
		return int64(int32(v.Bits))
	}
	return int64(v.Bits)
}

// Float returns a float or double value as float64, or NaN for other tags.
func (v Value) Float() float64 {
	switch v.Tag {
	case TagFloat:
		return float64(math.Float32frombits(uint32(v.Bits)))
	case TagDouble:
		return math.Float64frombits(v.Bits)
	}
	return math.NaN()
}

// Bool reports whether a value's bits are non-zero.
func (v Value) Bool() bool { return v.Bits != 0 }

// IsObject reports whether v holds an objectID.
func (v Value) IsObject() bool { return v.Tag.IsObject() }

// IsNull reports whether v is an object value with the null objectID.
func (v Value) IsNull() bool { return v.Tag.IsObject() && v.Bits == 0 }

// String renders the value for logs and test failures.
func (v Value) String() string {
	switch {
	case v.Tag == TagVoid:
		return "void"
	case v.Tag == TagFloat || v.Tag == TagDouble:
		return fmt.Sprintf("%s:%g", v.Tag, v.Float())
	case v.Tag.IsObject():
		return fmt.Sprintf("%s@%#x", v.Tag, v.Bits)
	}
	return fmt.Sprintf("%s:%d", v.Tag, v.Int())
}

// Location is an executable location: a class, a method and a code index.
type Location struct {
	TypeTag TypeTag
	Class   uint64 // classID (a referenceTypeID)
	Method  uint64 // methodID
	Index   uint64 // code index; its meaning is the VM's
}

// locationSize is the wire size of a Location given the ID sizes.
func locationSize(s IDSizes) int { return 1 + s.ReferenceTypeID + s.MethodID + 8 }

// Modifier is one EventRequest.Set modifier. Kind says which fields are
// meaningful:
//
//	Count               Count
//	Conditional         ExprID
//	ThreadOnly          Thread
//	ClassOnly           Class
//	ClassMatch          Pattern
//	ClassExclude        Pattern
//	LocationOnly        Location
//	ExceptionOnly       Class (0: all exceptions), Caught, Uncaught
//	FieldOnly           Class (declaring type), Field
//	Step                Thread, StepSize, StepDepth
//	InstanceOnly        Object
//	SourceNameMatch     Pattern
//	PlatformThreadsOnly (no fields)
//
// Pattern aliases the decoded body: it is valid only as long as the body's
// bytes are. A Modifier holds no other pointers.
type Modifier struct {
	Kind      ModKind
	Count     int32
	ExprID    int32
	Thread    uint64
	Class     uint64
	Field     uint64
	Object    uint64
	Location  Location
	Pattern   []byte
	Caught    bool
	Uncaught  bool
	StepSize  StepSize
	StepDepth StepDepth
}

// checkSizes fails r unless every ID size is 1..8.
func (r *BodyReader) checkSizes() bool {
	if r.err != nil {
		return false
	}
	s := r.sizes
	for _, n := range [...]int{s.FieldID, s.MethodID, s.ObjectID, s.ReferenceTypeID, s.FrameID} {
		if n < 1 || n > 8 {
			r.Fail(fmt.Errorf("%w: sizes %+v", ErrBadIDSize, s))
			return false
		}
	}
	return true
}

// Value reads a tagged value.
func (r *BodyReader) Value() Value {
	return r.UntaggedValue(Tag(r.Uint8()))
}

// UntaggedValue reads a value whose tag the context gives (for example
// from ArrayReference.GetValues' primitive arrays).
func (r *BodyReader) UntaggedValue(t Tag) Value {
	if r.err != nil {
		return Value{}
	}
	var bits uint64
	switch n := t.Size(r.sizes); {
	case t.IsObject():
		bits = r.ObjectID() // fails on an unlearned ObjectID size
	case n < 0:
		r.Fail(fmt.Errorf("%w: %#x at offset %d", ErrBadTag, uint8(t), r.off))
	case n > 0:
		bits = r.ID(n)
	}
	if r.err != nil {
		return Value{}
	}
	return Value{Tag: t, Bits: bits}
}

// TaggedObjectID reads a tagged objectID: an object tag and an objectID.
// A primitive or undefined tag fails with ErrBadTag.
func (r *BodyReader) TaggedObjectID() Value {
	t := Tag(r.Uint8())
	if r.err != nil {
		return Value{}
	}
	if !t.IsObject() {
		r.Fail(fmt.Errorf("%w: %#x is not an object tag, at offset %d", ErrBadTag, uint8(t), r.off-1))
		return Value{}
	}
	return Value{Tag: t, Bits: r.ObjectID()}
}

// Location reads a location.
func (r *BodyReader) Location() Location {
	return Location{
		TypeTag: TypeTag(r.Uint8()),
		Class:   r.ReferenceTypeID(),
		Method:  r.MethodID(),
		Index:   uint64(r.Int64()),
	}
}

// SkipValue consumes a tagged value without decoding it.
func (r *BodyReader) SkipValue() { r.Value() }

// SkipLocation consumes a location without decoding it.
func (r *BodyReader) SkipLocation() { r.Bytes(locationSize(r.sizes)) }

// Modifier reads one EventRequest.Set modifier. The modifier's Pattern
// aliases the body. An undefined kind fails with ErrUnknownModifier.
func (r *BodyReader) Modifier() Modifier {
	m := Modifier{Kind: ModKind(r.Uint8())}
	if r.err != nil {
		return Modifier{}
	}
	switch m.Kind {
	case ModCount:
		m.Count = r.Int32()
	case ModConditional:
		m.ExprID = r.Int32()
	case ModThreadOnly:
		m.Thread = r.ObjectID()
	case ModClassOnly:
		m.Class = r.ReferenceTypeID()
	case ModClassMatch, ModClassExclude, ModSourceNameMatch:
		m.Pattern = r.StringBytes()
	case ModLocationOnly:
		m.Location = r.Location()
	case ModExceptionOnly:
		m.Class = r.ReferenceTypeID()
		m.Caught = r.Bool()
		m.Uncaught = r.Bool()
	case ModFieldOnly:
		m.Class = r.ReferenceTypeID()
		m.Field = r.FieldID()
	case ModStep:
		m.Thread = r.ObjectID()
		m.StepSize = StepSize(r.Int32())
		m.StepDepth = StepDepth(r.Int32())
	case ModInstanceOnly:
		m.Object = r.ObjectID()
	case ModPlatformThreadsOnly:
	default:
		r.Fail(fmt.Errorf("%w: %d at offset %d", ErrUnknownModifier, uint8(m.Kind), r.off-1))
		return Modifier{}
	}
	if r.err != nil {
		return Modifier{}
	}
	return m
}

// Value appends a tagged value. A value with an undefined tag is written
// as its tag alone, which a decoder rejects.
func (w *BodyWriter) Value(v Value) {
	w.Uint8(uint8(v.Tag))
	w.UntaggedValue(v)
}

// UntaggedValue appends v's bits in the size its tag gives, without the
// tag. It writes nothing for void or an undefined tag.
func (w *BodyWriter) UntaggedValue(v Value) {
	if n := v.Tag.Size(w.Sizes); n > 0 {
		w.ID(v.Bits, n)
	}
}

// TaggedObjectID appends a tagged objectID.
func (w *BodyWriter) TaggedObjectID(v Value) {
	w.Uint8(uint8(v.Tag))
	w.ObjectID(v.Bits)
}

// Location appends a location.
func (w *BodyWriter) Location(l Location) {
	w.Uint8(uint8(l.TypeTag))
	w.ReferenceTypeID(l.Class)
	w.MethodID(l.Method)
	w.Int64(int64(l.Index))
}

// StringBytes appends a JDWP string given as bytes.
func (w *BodyWriter) StringBytes(b []byte) {
	w.Int32(int32(len(b)))
	w.Buf = append(w.Buf, b...)
}

// Modifier appends one EventRequest.Set modifier (the fields its Kind
// uses; see Modifier). An undefined kind is written as the kind byte alone.
func (w *BodyWriter) Modifier(m Modifier) {
	w.Uint8(uint8(m.Kind))
	switch m.Kind {
	case ModCount:
		w.Int32(m.Count)
	case ModConditional:
		w.Int32(m.ExprID)
	case ModThreadOnly:
		w.ObjectID(m.Thread)
	case ModClassOnly:
		w.ReferenceTypeID(m.Class)
	case ModClassMatch, ModClassExclude, ModSourceNameMatch:
		w.StringBytes(m.Pattern)
	case ModLocationOnly:
		w.Location(m.Location)
	case ModExceptionOnly:
		w.ReferenceTypeID(m.Class)
		w.Bool(m.Caught)
		w.Bool(m.Uncaught)
	case ModFieldOnly:
		w.ReferenceTypeID(m.Class)
		w.FieldID(m.Field)
	case ModStep:
		w.ObjectID(m.Thread)
		w.Int32(int32(m.StepSize))
		w.Int32(int32(m.StepDepth))
	case ModInstanceOnly:
		w.ObjectID(m.Object)
	}
}
