package speculator

import (
	"slices"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
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
	const one = jdwp.ClassID(3) // a type of one field: both orders list it
	cf.fields[one] = []field{{id: 31, name: "only"}}
	cf.super[one] = 0
	both := uint8(1<<orderVisible | 1<<orderByName)
	for _, c := range []struct {
		t    jdwp.ClassID
		tail []byte
		set  uint8
	}{
		{sub, tail(11, 13, 14, 22), 1 << orderVisible},
		{sub, tail(14, 22, 11, 13, 21), 1 << orderByName},
		{sub, tail(14, 22, 11, 21, 13), 0}, // equal names the other way round
		{sub, tail(22, 11), 0},             // some of them
		{one, tail(31), both},
	} {
		if set := cf.ordersOf(c.t, c.tail, sizes); set != c.set {
			t.Errorf("ordersOf(%x) = %b, want %b", c.tail, set, c.set)
		}
	}
	for _, c := range []struct {
		set    uint8
		prefer fieldOrder
		o      fieldOrder
		ok     bool
	}{
		{both, orderByName, orderByName, true},
		{1 << orderVisible, orderByName, orderVisible, true},
		{0, orderByName, 0, false},
	} {
		if o, ok := orderIn(c.set, c.prefer); o != c.o || ok != c.ok {
			t.Errorf("orderIn(%b, %v) = %v, %v; want %v, %v", c.set, c.prefer, o, ok, c.o, c.ok)
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

// TestFieldOrderLearnedOnce: a session learns its debugger's field order
// from its first read that one order alone explains (not from a type of
// one field, which both list alike), and then lists no type's fields again
// for the reads that follow. Fails with the order taken from an ambiguous
// read (orderVisible, the first), or learned on at every read.
func TestFieldOrderLearnedOnce(t *testing.T) {
	c := &core{learn: newLearner(), facts: newFacts(nil)}
	c.learn.fieldOrder = orderVisible // a profile's
	cf := &c.facts.classes
	const one, two = jdwp.ClassID(1), jdwp.ClassID(2)
	cf.fields[one], cf.super[one] = []field{{id: 11, name: "only"}}, 0
	cf.fields[two], cf.super[two] = []field{{id: 21, name: "z"}, {id: 22, name: "a"}}, 0
	c.facts.objType[0x51], c.facts.objType[0x52] = one, two
	sh := &shapeRules{core: c}
	read := func(obj uint64, ids ...jdwp.FieldID) {
		w := jdwp.BodyWriter{Sizes: sizes8}
		w.ObjectID(obj)
		w.Int32(int32(len(ids)))
		for _, id := range ids {
			w.Field(id)
		}
		var k keyable.Key
		info, _ := keyable.Fill(&k, jdwp.CmdObjectReferenceGetValues, w.Buf, sizes8)
		sh.asked(&k, info, sizes8)
	}
	read(0x51, 11)
	if c.learn.orderSeen || c.learn.fieldOrder != orderVisible {
		t.Fatalf("a read of a one-field type set the order (%v, seen %v)", c.learn.fieldOrder, c.learn.orderSeen)
	}
	read(0x52, 22, 21) // by name
	if !c.learn.orderSeen || c.learn.fieldOrder != orderByName {
		t.Fatalf("order %v (seen %v) after a read by name, want %v", c.learn.fieldOrder, c.learn.orderSeen, orderByName)
	}
	read(0x52, 21, 22) // declaration order: the session's debugger is known
	if c.learn.fieldOrder != orderByName {
		t.Errorf("the order changed to %v after it was learned", c.learn.fieldOrder)
	}
}
