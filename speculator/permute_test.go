package speculator

import (
	"bytes"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
)

// fieldsVM answers ObjectReference.GetValues with each field's ID as an
// int (a long for field 0x7, so the values differ in size), in the order
// asked, as a VM does; the rest as the stop rig's VM.
func fieldsVM(fs *frameState) func(p jdwp.Packet) (jdwp.ErrorCode, []byte) {
	return func(p jdwp.Packet) (jdwp.ErrorCode, []byte) {
		if p.Cmd() != jdwp.CmdObjectReferenceGetValues {
			return fs.handler(p)
		}
		r := jdwp.NewBodyReader(p.Body(), sizes8)
		r.ObjectID()
		n := r.Count(sizes8.FieldID)
		return 0, body(func(w *jdwp.BodyWriter) {
			w.Int32(int32(n))
			for range n {
				if id := r.Field(); id == 0x7 {
					w.Value(jdwp.Value{Tag: jdwp.TagLong, Bits: uint64(id)})
				} else {
					w.Value(jdwp.Value{Tag: jdwp.TagInt, Bits: uint64(id)})
				}
			}
		})
	}
}

func fieldsRead(obj uint64, ids ...uint64) []byte {
	return body(func(w *jdwp.BodyWriter) {
		w.ObjectID(obj)
		w.Int32(int32(len(ids)))
		for _, id := range ids {
			w.FieldID(id)
		}
	})
}

// TestFieldsInAnotherOrderAnsweredFromTheCache: the same fields of an
// object asked in another order are answered from the reply cached for
// the first order, the values in the order asked (what the VM answers);
// another set of fields, or another object, still goes to the VM. Fails
// without the twin lookup (session.go) or with the values left in the
// cached order.
func TestFieldsInAnotherOrderAnsweredFromTheCache(t *testing.T) {
	fs := &frameState{count: 3, values: 10}
	r := newRigWith(t, Config{MinRTT: 1 << 40}, fieldsVM(fs)) // organic caching only
	r.event(jdwp.SuspendAll, bpEvent(thread1))
	r.expectEvent()
	first := r.dbg.call(40, jdwp.CmdObjectReferenceGetValues, fieldsRead(0x99, 0x5, 0x7, 0x3))
	again := r.dbg.call(41, jdwp.CmdObjectReferenceGetValues, fieldsRead(0x99, 0x3, 0x5, 0x7))
	if n := r.vm.count(jdwp.CmdObjectReferenceGetValues); n != 1 {
		t.Fatalf("the VM was asked %d reads, want 1: the second order answered from the cache", n)
	}
	want := jdwp.AppendReply(nil, 41, 0, body(func(w *jdwp.BodyWriter) {
		w.Int32(3)
		w.Value(jdwp.Value{Tag: jdwp.TagInt, Bits: 0x3})
		w.Value(jdwp.Value{Tag: jdwp.TagInt, Bits: 0x5})
		w.Value(jdwp.Value{Tag: jdwp.TagLong, Bits: 0x7})
	}))
	if !bytes.Equal(again, want) {
		t.Fatalf("the fields in another order: %x, want %x (the first answer was %x)", []byte(again), []byte(want), []byte(first))
	}
	r.dbg.call(42, jdwp.CmdObjectReferenceGetValues, fieldsRead(0x99, 0x3, 0x5))
	r.dbg.call(43, jdwp.CmdObjectReferenceGetValues, fieldsRead(0x98, 0x3, 0x7, 0x5))
	if n := r.vm.count(jdwp.CmdObjectReferenceGetValues); n != 3 {
		t.Fatalf("the VM was asked %d reads, want 3: fewer fields, or another object, is another read", n)
	}
}

// TestCanonicalFields: the canonical key sorts the field IDs and refuses
// a field named twice and other commands.
func TestCanonicalFields(t *testing.T) {
	key := func(c jdwp.Cmd, params []byte) *keyable.Key {
		var k keyable.Key
		if _, ok := keyable.Fill(&k, c, params, sizes8); !ok {
			t.Fatalf("%v %x: not a key", c, params)
		}
		return &k
	}
	var canon keyable.Key
	if !canonicalFields(&canon, key(jdwp.CmdObjectReferenceGetValues, fieldsRead(0x99, 0x9, 0x1, 0x5)), sizes8) ||
		!bytes.Equal(canon.Params(), fieldsRead(0x99, 0x1, 0x5, 0x9)) {
		t.Errorf("canonical %x, want the IDs ascending", canon.Params())
	}
	for _, k := range []*keyable.Key{
		key(jdwp.CmdObjectReferenceGetValues, fieldsRead(0x99, 0x5, 0x1, 0x5)),
		key(jdwp.CmdArrayReferenceGetValues, body(func(w *jdwp.BodyWriter) { w.ObjectID(0x99); w.Int32(0); w.Int32(2) })),
	} {
		if canonicalFields(&canon, k, sizes8) {
			t.Errorf("%v %x has a canonical key %x", k.Cmd(), k.Params(), canon.Params())
		}
	}
}

// FuzzPermuteValues: a VM's reply of any bytes, for any two keys, never
// panics, and a reply made has the packet's length and the values' bytes.
func FuzzPermuteValues(f *testing.F) {
	reply := jdwp.AppendReply(nil, 1, 0, body(func(w *jdwp.BodyWriter) {
		w.Int32(2)
		w.Value(jdwp.Value{Tag: jdwp.TagInt, Bits: 0x3})
		w.Value(jdwp.Value{Tag: jdwp.TagLong, Bits: 0x7})
	}))
	f.Add([]byte(reply), fieldsRead(0x99, 0x7, 0x3), fieldsRead(0x99, 0x3, 0x7))
	f.Add([]byte(reply), fieldsRead(0x99, 0x7, 0x3), fieldsRead(0x98, 0x3, 0x7))
	f.Add([]byte{}, []byte{}, []byte{})
	f.Fuzz(func(t *testing.T, reply, kp, tp []byte) {
		var key, twin keyable.Key
		if _, ok := keyable.Fill(&key, jdwp.CmdObjectReferenceGetValues, kp, sizes8); !ok {
			return
		}
		if _, ok := keyable.Fill(&twin, jdwp.CmdObjectReferenceGetValues, tp, sizes8); !ok {
			return
		}
		var offs []int
		p, ok := permuteValues(nil, 9, &key, &twin, reply, sizes8, &offs)
		if !ok {
			return
		}
		if !p.Valid() || p.ID() != 9 || len(p) != len(reply) {
			t.Fatalf("reply %x for %x from %x: made %x", reply, kp, tp, []byte(p))
		}
	})
}

// TestPermuteValuesAllocatesNothing: answering another order of the same
// fields allocates nothing once the answer and offset buffers have grown.
func TestPermuteValuesAllocatesNothing(t *testing.T) {
	var key, twin keyable.Key
	keyable.Fill(&key, jdwp.CmdObjectReferenceGetValues, fieldsRead(0x99, 0x3, 0x7), sizes8)
	keyable.Fill(&twin, jdwp.CmdObjectReferenceGetValues, fieldsRead(0x99, 0x7, 0x3), sizes8)
	reply := jdwp.AppendReply(nil, 1, 0, body(func(w *jdwp.BodyWriter) {
		w.Int32(2)
		w.Value(jdwp.Value{Tag: jdwp.TagLong, Bits: 0x7})
		w.Value(jdwp.Value{Tag: jdwp.TagInt, Bits: 0x3})
	}))
	buf, offs := make([]byte, 0, 64), make([]int, 0, 4)
	if n := testing.AllocsPerRun(100, func() {
		if _, ok := permuteValues(buf[:0], 9, &key, &twin, reply, sizes8, &offs); !ok {
			t.Fatal("not permuted")
		}
	}); n != 0 {
		t.Errorf("%v allocations a call, want 0", n)
	}
}
