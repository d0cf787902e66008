package speculator

import (
	"slices"
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
	if _, ok := cf.firstFields(sub, orderVisible); ok {
		t.Fatal("fields while the superclass's are unknown")
	}
	cf.fields[base] = []field{{id: 21, name: "hidden"}, {id: 22, name: "b"}, {id: 23, name: "a2"}}
	cf.super[base] = root
	cf.fields[root] = nil
	cf.super[root] = 0
	got, ok := cf.firstFields(sub, orderVisible)
	want := []fieldRef{{0, "a"}, {0, "hidden"}, {1, "b"}, {1, "a2"}}
	if !ok || len(got) != len(want) {
		t.Fatalf("firstFields(orderVisible) = %v, %v; want %v", got, ok, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("firstFields(orderVisible) = %v; want %v", got, want)
		}
	}
	if _, ok := cf.firstFields(root, orderVisible); ok {
		t.Fatal("fields of a type that has none")
	}
}

// TestFieldOrders: the orders a debugger lists a new type's fields in,
// and the order learned from a read of all of them: JDI's visible fields,
// or every instance field (a hidden one too) by name, case ignored as
// Java's compareToIgnoreCase ('_' before letters, the type's own first
// among equal names); none from a read of some of them.
func TestFieldOrders(t *testing.T) {
	cf := newClassFacts()
	const sub, base = jdwp.ClassID(1), jdwp.ClassID(2)
	cf.fields[sub] = []field{{id: 11, name: "b"}, {id: 12, name: "K", static: true}, {id: 13, name: "hidden"}, {id: 14, name: "_x"}}
	cf.super[sub] = base
	cf.fields[base] = []field{{id: 21, name: "hidden"}, {id: 22, name: "A"}}
	cf.super[base] = 0
	sizes := jdwp.IDSizes{FieldID: 8, MethodID: 8, ObjectID: 8, ReferenceTypeID: 8, FrameID: 8}
	tail := func(ids ...jdwp.FieldID) []byte {
		w := jdwp.BodyWriter{Sizes: sizes}
		w.Int32(int32(len(ids)))
		for _, id := range ids {
			w.Field(id)
		}
		return w.Buf
	}
	got, ok := cf.firstFields(sub, orderByName)
	want := []fieldRef{{0, "_x"}, {1, "A"}, {0, "b"}, {0, "hidden"}, {1, "hidden"}}
	if !ok || !slices.Equal(got, want) {
		t.Fatalf("by name = %v, %v; want %v", got, ok, want)
	}
	for _, c := range []struct {
		tail []byte
		o    fieldOrder
		ok   bool
	}{
		{tail(11, 13, 14, 22), orderVisible, true},
		{tail(14, 22, 11, 13, 21), orderByName, true},
		{tail(14, 22, 11, 21, 13), 0, false}, // equal names the other way round
		{tail(22, 11), 0, false},             // some of them
	} {
		if o, ok := cf.orderOf(sub, c.tail, sizes); o != c.o || ok != c.ok {
			t.Errorf("orderOf(%x) = %v, %v; want %v, %v", c.tail, o, ok, c.o, c.ok)
		}
	}
	for _, c := range []struct {
		a, b string
		sign int
	}{{"a", "B", -1}, {"B", "a", 1}, {"_a", "a", -1}, {"ab", "AB", 0}, {"a", "ab", -1}} {
		if got := compareIgnoreCase(c.a, c.b); got < 0 && c.sign >= 0 || got > 0 && c.sign <= 0 || got == 0 && c.sign != 0 {
			t.Errorf("compareIgnoreCase(%q, %q) = %d, want sign %d", c.a, c.b, got, c.sign)
		}
	}
}
