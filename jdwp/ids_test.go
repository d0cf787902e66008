package jdwp

import "testing"

func TestTypedIDsRoundTrip(t *testing.T) {
	s := IDSizes{FieldID: 4, MethodID: 6, ObjectID: 8, ReferenceTypeID: 5, FrameID: 3}
	w := BodyWriter{Sizes: s}
	w.Thread(0x0102030405060708)
	w.Object(0x11)
	w.Class(0x0102030405)
	w.Method(0x060708090a0b)
	w.Field(0x0c0d0e0f)
	w.Frame(0x101112)
	if want := 8 + 8 + 5 + 6 + 4 + 3; len(w.Buf) != want {
		t.Fatalf("wrote %d bytes, want %d", len(w.Buf), want)
	}
	// The typed writers write what the untyped ones do.
	u := BodyWriter{Sizes: s}
	u.ObjectID(0x0102030405060708)
	u.ObjectID(0x11)
	u.ReferenceTypeID(0x0102030405)
	u.MethodID(0x060708090a0b)
	u.FieldID(0x0c0d0e0f)
	u.FrameID(0x101112)
	if string(u.Buf) != string(w.Buf) {
		t.Fatalf("typed %x, untyped %x", w.Buf, u.Buf)
	}
	r := NewBodyReader(w.Buf, s)
	if th, o, c, m, f, fr := r.Thread(), r.Object(), r.Class(), r.Method(), r.Field(), r.Frame(); r.Err() != nil ||
		th != 0x0102030405060708 || o != 0x11 || c != 0x0102030405 || m != 0x060708090a0b || f != 0x0c0d0e0f || fr != 0x101112 {
		t.Fatalf("read %v %v %v %v %v %v (err %v)", th, o, c, m, f, fr, r.Err())
	}
	if ThreadID(5).Object() != ObjectID(5) {
		t.Error("ThreadID.Object")
	}
	if got := ClassID(0x70).String(); got != "ClassID<0x70>" {
		t.Errorf("String = %q", got)
	}
	loc := Location{Class: 7, Method: 9}
	if loc.ClassID() != 7 || loc.MethodID() != 9 {
		t.Error("Location accessors")
	}
	if (Value{Tag: TagInt, Bits: 3}).ObjectID() != 0 || (Value{Tag: TagString, Bits: 3}).ObjectID() != 3 {
		t.Error("Value.ObjectID")
	}
	e := Event{Thread: 4, TypeID: 6}
	if e.ThreadID() != 4 || e.ClassID() != 6 {
		t.Error("Event accessors")
	}
}
