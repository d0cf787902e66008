package jdwp

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"testing"
)

// Sizes used by the tests: HotSpot's all-8, and a mixed set that catches a
// decoder using the wrong size for a field.
var (
	sizes8     = IDSizes{FieldID: 8, MethodID: 8, ObjectID: 8, ReferenceTypeID: 8, FrameID: 8}
	sizesMixed = IDSizes{FieldID: 2, MethodID: 3, ObjectID: 5, ReferenceTypeID: 7, FrameID: 4}
)

func allValues() []Value {
	return []Value{
		{TagByte, 0x80}, {TagBoolean, 1}, {TagChar, 0xffff}, {TagShort, 0x8001},
		{TagInt, 0xfffffffe}, {TagFloat, uint64(math.Float32bits(1.5))},
		{TagLong, 0x8000000000000001}, {TagDouble, 0x3ff8000000000000},
		{TagVoid, 0}, {TagObject, 0x1234}, {TagArray, 1}, {TagString, 0}, {TagThread, 2},
		{TagThreadGroup, 3}, {TagClassLoader, 4}, {TagClassObject, 5},
	}
}

func TestValueRoundTrip(t *testing.T) {
	for _, sz := range []IDSizes{sizes8, sizesMixed} {
		for _, v := range allValues() {
			if v.IsObject() {
				v.Bits &= 1<<(8*sz.ObjectID) - 1
			}
			w := BodyWriter{Sizes: sz}
			w.Value(v)
			if want := 1 + v.Tag.Size(sz); len(w.Buf) != want {
				t.Errorf("%v: %d bytes, want %d", v, len(w.Buf), want)
			}
			r := NewBodyReader(w.Buf, sz)
			if got := r.Value(); got != v || r.Err() != nil || r.Remaining() != 0 {
				t.Errorf("%v: got %v err %v remaining %d", v, got, r.Err(), r.Remaining())
			}
			// Untagged.
			w.Buf = w.Buf[:0]
			w.UntaggedValue(v)
			r = NewBodyReader(w.Buf, sz)
			if got := r.UntaggedValue(v.Tag); got != v || r.Err() != nil || r.Remaining() != 0 {
				t.Errorf("untagged %v: got %v err %v", v, got, r.Err())
			}
			// Skip.
			w.Buf = w.Buf[:0]
			w.Value(v)
			w.Uint8(0x42)
			r = NewBodyReader(w.Buf, sz)
			r.SkipValue()
			if r.Uint8() != 0x42 || r.Err() != nil {
				t.Errorf("SkipValue %v: %v", v, r.Err())
			}
		}
	}
}

func TestValueAccessors(t *testing.T) {
	for _, c := range []struct {
		v    Value
		want int64
	}{
		{Value{TagByte, 0xff}, -1}, {Value{TagShort, 0xfffe}, -2}, {Value{TagInt, 0xfffffffd}, -3},
		{Value{TagLong, math.MaxUint64}, -1}, {Value{TagChar, 0xffff}, 0xffff}, {Value{TagBoolean, 1}, 1},
	} {
		if got := c.v.Int(); got != c.want {
			t.Errorf("%v.Int() = %d, want %d", c.v, got, c.want)
		}
	}
	if f := (Value{TagFloat, uint64(math.Float32bits(-2.5))}).Float(); f != -2.5 {
		t.Errorf("float %v", f)
	}
	if f := (Value{TagDouble, math.Float64bits(1e300)}).Float(); f != 1e300 {
		t.Errorf("double %v", f)
	}
	if !math.IsNaN((Value{TagInt, 1}).Float()) {
		t.Error("Float of int is not NaN")
	}
	if !(Value{TagObject, 0}).IsNull() || (Value{TagInt, 0}).IsNull() || (Value{TagThread, 1}).IsNull() {
		t.Error("IsNull wrong")
	}
	for v, want := range map[Value]string{
		{TagVoid, 0}: "void", {TagInt, 0xffffffff}: "INT:-1", {TagThread, 0x10}: "THREAD@0x10",
		{TagDouble, math.Float64bits(0.5)}: "DOUBLE:0.5",
	} {
		if got := v.String(); got != want {
			t.Errorf("String = %q, want %q", got, want)
		}
	}
}

func TestValueErrors(t *testing.T) {
	// Undefined tag.
	r := NewBodyReader([]byte{'Q', 0, 0, 0, 0}, sizes8)
	if r.Value(); !errors.Is(r.Err(), ErrBadTag) {
		t.Errorf("tag Q: %v", r.Err())
	}
	// Primitive tag where an object is required.
	r = NewBodyReader([]byte{'I', 0, 0, 0, 0, 0, 0, 0, 0}, sizes8)
	if r.TaggedObjectID(); !errors.Is(r.Err(), ErrBadTag) {
		t.Errorf("tagged object I: %v", r.Err())
	}
	// Short.
	r = NewBodyReader([]byte{'J', 0, 0, 0}, sizes8)
	if v := r.Value(); !errors.Is(r.Err(), ErrShortBody) || v != (Value{}) {
		t.Errorf("short long: %v %v", v, r.Err())
	}
	// Unknown ID sizes.
	r = NewBodyReader([]byte{'L', 0, 0, 0, 0, 0, 0, 0, 0}, IDSizes{})
	if r.Value(); !errors.Is(r.Err(), ErrBadIDSize) {
		t.Errorf("no sizes: %v", r.Err())
	}
	// Sticky: later reads return zero.
	if r.Int32() != 0 || r.Location() != (Location{}) || r.Modifier().Kind != 0 {
		t.Error("reads after an error return data")
	}
}

func TestLocationRoundTrip(t *testing.T) {
	for _, sz := range []IDSizes{sizes8, sizesMixed} {
		l := Location{TypeTag: TypeTagClass, Class: 0x0102030405060708 & (1<<(8*sz.ReferenceTypeID) - 1),
			Method: 0xa1a2a3a4a5a6a7a8 & (1<<(8*sz.MethodID) - 1), Index: 0xfffffffffffffff0}
		w := BodyWriter{Sizes: sz}
		w.Location(l)
		w.Location(l)
		if len(w.Buf) != 2*locationSize(sz) {
			t.Errorf("location is %d bytes", len(w.Buf)/2)
		}
		r := NewBodyReader(w.Buf, sz)
		r.SkipLocation()
		if got := r.Location(); got != l || r.Err() != nil || r.Remaining() != 0 {
			t.Errorf("got %+v want %+v err %v", got, l, r.Err())
		}
	}
	// Hand-built from the specification: tag, classID, methodID, 8-byte index.
	raw := []byte{1, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 42}
	r := NewBodyReader(raw, sizes8)
	if got := r.Location(); got != (Location{TypeTagClass, 9, 3, 42}) || r.Remaining() != 0 {
		t.Errorf("spec bytes: %+v", got)
	}
}

func allModifiers() []Modifier {
	return []Modifier{
		{Kind: ModCount, Count: 3},
		{Kind: ModConditional, ExprID: -7},
		{Kind: ModThreadOnly, Thread: 0x1111},
		{Kind: ModClassOnly, Class: 0x2222},
		{Kind: ModClassMatch, Pattern: []byte("java.lang.*")},
		{Kind: ModClassExclude, Pattern: []byte("sun.*")},
		{Kind: ModLocationOnly, Location: Location{TypeTagClass, 0x33, 0x44, 55}},
		{Kind: ModExceptionOnly, Class: 0, Caught: true, Uncaught: false},
		{Kind: ModExceptionOnly, Class: 0x66, Caught: false, Uncaught: true},
		{Kind: ModFieldOnly, Class: 0x77, Field: 0x88},
		{Kind: ModStep, Thread: 0x99, StepSize: StepLine, StepDepth: StepOver},
		{Kind: ModInstanceOnly, Object: 0xaa},
		{Kind: ModSourceNameMatch, Pattern: []byte("*.kt")},
		{Kind: ModPlatformThreadsOnly},
		{Kind: ModClassMatch, Pattern: []byte{}},
	}
}

func TestModifierRoundTrip(t *testing.T) {
	for _, sz := range []IDSizes{sizes8, sizesMixed} {
		req := EventRequestSet{EventKind: EventSingleStep, SuspendPolicy: SuspendAll, Modifiers: allModifiers()}
		body := AppendEventRequestSet(nil, sz, &req)
		var got EventRequestSet
		if err := got.Decode(body, sz); err != nil {
			t.Fatalf("decode: %v", err)
		}
		if !reflect.DeepEqual(got, req) {
			t.Errorf("round trip:\n got %+v\nwant %+v", got, req)
		}
		// Patterns alias the body.
		for _, m := range got.Modifiers {
			if len(m.Pattern) > 0 && !aliases(m.Pattern, body) {
				t.Errorf("%s pattern does not alias the body", m.Kind)
			}
		}
		// Every truncation fails with ErrShortBody, never panics.
		for n := 0; n < len(body); n++ {
			if err := got.Decode(body[:n], sz); !errors.Is(err, ErrShortBody) {
				t.Errorf("truncated at %d/%d: %v", n, len(body), err)
			}
		}
		if err := got.Decode(append(body[:len(body):len(body)], 0), sz); !errors.Is(err, ErrTrailingData) {
			t.Errorf("trailing: %v", err)
		}
	}
	// Hand-built from the specification: a breakpoint request with
	// Count(1) and LocationOnly, 8-byte IDs.
	raw := []byte{2, 2, 0, 0, 0, 2,
		1, 0, 0, 0, 1,
		7, 1, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0, 7}
	var s EventRequestSet
	if err := s.Decode(raw, sizes8); err != nil {
		t.Fatal(err)
	}
	want := EventRequestSet{EventBreakpoint, SuspendAll, []Modifier{
		{Kind: ModCount, Count: 1}, {Kind: ModLocationOnly, Location: Location{TypeTagClass, 5, 6, 7}}}}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("spec bytes: %+v", s)
	}
	raw[6] = 99
	if err := s.Decode(raw, sizes8); !errors.Is(err, ErrUnknownModifier) {
		t.Errorf("modifier 99: %v", err)
	}
	if err := s.Decode(raw, IDSizes{}); !errors.Is(err, ErrBadIDSize) {
		t.Errorf("no sizes: %v", err)
	}
}

func TestEventRequestSetNoAllocs(t *testing.T) {
	req := EventRequestSet{EventKind: EventSingleStep, SuspendPolicy: SuspendAll, Modifiers: allModifiers()}
	body := AppendEventRequestSet(nil, sizes8, &req)
	var s EventRequestSet
	if err := s.Decode(body, sizes8); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _ = s.Decode(body, sizes8) }); n != 0 {
		t.Errorf("EventRequestSet.Decode allocates %v", n)
	}
}

// aliases reports whether sub lies within b's memory.
func aliases(sub, b []byte) bool {
	if len(sub) == 0 || len(b) == 0 {
		return false
	}
	full := b[:cap(b)]
	for i := range full {
		if &full[i] == &sub[0] {
			return true
		}
	}
	return false
}

func TestStringBytesWriter(t *testing.T) {
	w := BodyWriter{}
	w.StringBytes([]byte("héllo"))
	w.String("héllo")
	if !bytes.Equal(w.Buf[:len(w.Buf)/2], w.Buf[len(w.Buf)/2:]) {
		t.Errorf("StringBytes and String differ: %x", w.Buf)
	}
}
