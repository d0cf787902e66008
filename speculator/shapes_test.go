package speculator

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// shapeClasses is a class 10 extending 20 (extending 30, whose superclass
// is unknown), each declaring fields, as Fields and Superclass replies of
// one connection told.
func shapeClasses() classFacts {
	cf := newClassFacts()
	cf.fields[10] = []field{{id: 0x70, name: "title"}, {id: 0x74, name: "count"}}
	cf.fields[20] = []field{{id: 0x30, name: "count"}, {id: 0x34, name: "parent"}}
	cf.fields[30] = []field{{id: 0x10, name: "id"}}
	cf.super[10], cf.super[20] = 20, 30
	return cf
}

func getValuesTail(ids ...jdwp.FieldID) []byte {
	w := jdwp.BodyWriter{Sizes: sizes8}
	w.Int32(int32(len(ids)))
	for _, id := range ids {
		w.Field(id)
	}
	return w.Buf
}

// TestShapeRoundTrip names the fields a debugger read of an object of
// class 10 (its own, a hidden superclass field of the same name, one two
// classes up), and resolves the names back to the same IDs, as a later
// session with its own IDs does.
func TestShapeRoundTrip(t *testing.T) {
	cf := shapeClasses()
	tail := getValuesTail(0x74, 0x30, 0x10, 0x70)
	refs, ok := cf.nameFields(10, tail, sizes8)
	want := []fieldRef{{0, "count"}, {1, "count"}, {2, "id"}, {0, "title"}}
	if !ok || !slices.Equal(refs, want) {
		t.Fatalf("nameFields = %v, %v; want %v", refs, ok, want)
	}
	w := jdwp.BodyWriter{Sizes: sizes8}
	if !cf.fieldTail(&w, 10, refs) || !slices.Equal(w.Buf, tail) {
		t.Fatalf("fieldTail = % x, want % x", w.Buf, tail)
	}
	// In a session where the classes' IDs differ, the same names resolve
	// to that session's field IDs.
	other := newClassFacts()
	other.fields[11] = []field{{id: 0x170, name: "title"}, {id: 0x174, name: "count"}}
	other.fields[21] = []field{{id: 0x130, name: "count"}}
	other.fields[31] = []field{{id: 0x110, name: "id"}}
	other.super[11], other.super[21] = 21, 31
	w = jdwp.BodyWriter{Sizes: sizes8}
	if !other.fieldTail(&w, 11, refs) || !slices.Equal(w.Buf, getValuesTail(0x174, 0x130, 0x110, 0x170)) {
		t.Fatalf("fieldTail in another session = % x", w.Buf)
	}
}

// TestShapeUnresolved: a field of no known class of the object's chain is
// not named, and a shape naming a field the class no longer has, or a
// superclass not known yet, does not resolve (the speculation waits or is
// not sent; nothing is guessed).
func TestShapeUnresolved(t *testing.T) {
	cf := shapeClasses()
	if refs, ok := cf.nameFields(10, getValuesTail(0x70, 0x99), sizes8); ok {
		t.Fatalf("named a field no class declares: %v", refs)
	}
	if _, ok := cf.nameFields(10, getValuesTail(0x70)[:6], sizes8); ok {
		t.Fatal("named a truncated tail")
	}
	for _, refs := range [][]fieldRef{{{0, "gone"}}, {{3, "x"}}, {{1, "title"}}} {
		w := jdwp.BodyWriter{Sizes: sizes8}
		if cf.fieldTail(&w, 10, refs) {
			t.Errorf("%v resolved to % x", refs, w.Buf)
		}
	}
}

// TestShapesInProfile: shapes survive the learn file and out-of-bounds
// ones are refused with the profile.
func TestShapesInProfile(t *testing.T) {
	p := &profile{Shapes: []objShape{{Sig: "LNode;", Fields: []fieldRef{{0, "next"}, {1, "id"}}}}}
	b, err := json.Marshal(map[string]*profile{"k": p})
	if err != nil {
		t.Fatal(err)
	}
	m, err := parseProfiles(b)
	if err != nil || m["k"] == nil || len(m["k"].Shapes) != 1 || !slices.Equal(m["k"].Shapes[0].Fields, p.Shapes[0].Fields) {
		t.Fatalf("read back %v, %v", m, err)
	}
	sh := shapeRules{core: &core{}}
	sh.importFrom(m["k"], sizes8)
	if !slices.Equal(sh.learn.shapes["LNode;"], p.Shapes[0].Fields) {
		t.Fatalf("imported %v", sh.learn.shapes)
	}
	for _, bad := range []objShape{{Sig: "LA;"}, {Sig: "LA;", Fields: []fieldRef{{maxHops, "x"}}}} {
		b, _ := json.Marshal(map[string]*profile{"k": {Shapes: []objShape{bad}}})
		if m, _ := parseProfiles(b); m["k"] != nil {
			t.Errorf("accepted a profile with shape %v", bad)
		}
	}
}
