package speculator

import (
	"testing"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// TestVisibleSlots: the slots of the variables live at the code index, by
// slot, with their tags; this and this$… never; none without the table or
// with nothing live.
func TestVisibleSlots(t *testing.T) {
	cf := newClassFacts()
	loc := jdwp.Location{TypeTag: jdwp.TypeTagClass, Class: 0x10, Method: 0x20, Index: 5}
	if _, ok := cf.visibleSlots(nil, loc); ok {
		t.Fatal("slots without a variable table")
	}
	cf.vars[methodOf(loc)] = []variable{
		{start: 0, length: 20, slot: 0, tag: 'L', this: true}, // this
		{start: 0, length: 20, slot: 3, tag: 'I'},
		{start: 0, length: 20, slot: 1, tag: '['},
		{start: 6, length: 10, slot: 2, tag: 'J'}, // not yet live
		{start: 0, length: 5, slot: 4, tag: 'Z'},  // no longer live
	}
	got, ok := cf.visibleSlots(nil, loc)
	want := body(func(w *jdwp.BodyWriter) {
		w.Int32(2)
		w.Int32(1)
		w.Uint8('[')
		w.Int32(3)
		w.Uint8('I')
	})
	if !ok || string(got) != string(want) {
		t.Fatalf("visibleSlots = %x, %v; want %x", got, ok, want)
	}
	loc.Index = 100
	if _, ok := cf.visibleSlots(nil, loc); ok {
		t.Fatal("slots where no variable is live")
	}
}

// TestVisibleInstanceFields: the type's own instance fields, then its
// superclasses' up to the root, those a field of the same name further
// down hides left out; unknown while any class of the chain is.
func TestVisibleInstanceFields(t *testing.T) {
	cf := newClassFacts()
	const sub, base, root = jdwp.ClassID(1), jdwp.ClassID(2), jdwp.ClassID(3)
	cf.fields[sub] = []field{{id: 11, name: "a"}, {id: 12, name: "K", static: true}, {id: 13, name: "hidden"}}
	cf.super[sub] = base
	if _, ok := cf.visibleInstanceFields(sub); ok {
		t.Fatal("fields while the superclass's are unknown")
	}
	cf.fields[base] = []field{{id: 21, name: "hidden"}, {id: 22, name: "b"}, {id: 23, name: "a2"}}
	cf.super[base] = root
	cf.fields[root] = nil
	cf.super[root] = 0
	got, ok := cf.visibleInstanceFields(sub)
	want := []fieldRef{{0, "a"}, {0, "hidden"}, {1, "b"}, {1, "a2"}}
	if !ok || len(got) != len(want) {
		t.Fatalf("visibleInstanceFields = %v, %v; want %v", got, ok, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("visibleInstanceFields = %v; want %v", got, want)
		}
	}
	if _, ok := cf.visibleInstanceFields(root); ok {
		t.Fatal("fields of a type that has none")
	}
}
