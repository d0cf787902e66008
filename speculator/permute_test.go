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
// object asked in another order, or some of them, are answered from the
// reply cached for the first read, the values in the order asked (what
// the VM answers); a field the first read did not name, or another
// object, still goes to the VM. Fails without the cover lookup
// (session.go) or with the values left in the cached order.
func TestFieldsInAnotherOrderAnsweredFromTheCache(t *testing.T) {
	fs := &frameState{count: 3, values: 10}
	r := newRigWith(t, Config{MinRTT: 1 << 40}, fieldsVM(fs)) // organic caching only
	r.event(jdwp.SuspendAll, bpEvent(thread1))
	r.expectEvent()
	first := r.dbg.call(40, jdwp.CmdObjectReferenceGetValues, fieldsRead(0x99, 0x5, 0x7, 0x3))
	value := func(id uint64) jdwp.Value {
		if id == 0x7 {
			return jdwp.Value{Tag: jdwp.TagLong, Bits: id}
		}
		return jdwp.Value{Tag: jdwp.TagInt, Bits: id}
	}
	for i, ids := range [][]uint64{{0x3, 0x5, 0x7}, {0x7, 0x3}, {0x5}} {
		id := uint32(41 + i)
		got := r.dbg.call(id, jdwp.CmdObjectReferenceGetValues, fieldsRead(0x99, ids...))
		want := jdwp.AppendReply(nil, id, 0, body(func(w *jdwp.BodyWriter) {
			w.Int32(int32(len(ids)))
			for _, f := range ids {
				w.Value(value(f))
			}
		}))
		if !bytes.Equal(got, want) {
			t.Fatalf("fields %x of the first read's: %x, want %x (the first answer was %x)", ids, []byte(got), []byte(want), []byte(first))
		}
	}
	if n := r.vm.count(jdwp.CmdObjectReferenceGetValues); n != 1 {
		t.Fatalf("the VM was asked %d reads, want 1: the other orders and subsets answered from the cache", n)
	}
	r.dbg.call(45, jdwp.CmdObjectReferenceGetValues, fieldsRead(0x99, 0x3, 0x9))
	r.dbg.call(46, jdwp.CmdObjectReferenceGetValues, fieldsRead(0x98, 0x3, 0x7, 0x5))
	if n := r.vm.count(jdwp.CmdObjectReferenceGetValues); n != 3 {
		t.Fatalf("the VM was asked %d reads, want 3: a field not read before, or another object, is another read", n)
	}
}

// TestCovers: a read's fields cover another's when they include each of
// its field IDs, in any order; valuesOf refuses other commands.
func TestCovers(t *testing.T) {
	key := func(c jdwp.Cmd, params []byte) *keyable.Key {
		var k keyable.Key
		if _, ok := keyable.Fill(&k, c, params, sizes8); !ok {
			t.Fatalf("%v %x: not a key", c, params)
		}
		return &k
	}
	ids := func(fields ...uint64) []byte {
		_, b, _, ok := valuesOf(key(jdwp.CmdObjectReferenceGetValues, fieldsRead(0x99, fields...)), sizes8)
		if !ok {
			t.Fatalf("fields %x: no object read", fields)
		}
		return b
	}
	for _, c := range []struct {
		have, want []uint64
		covers     bool
	}{
		{[]uint64{0x9, 0x1, 0x5}, []uint64{0x5, 0x9, 0x1}, true},
		{[]uint64{0x9, 0x1, 0x5}, []uint64{0x1}, true},
		{[]uint64{0x9, 0x1, 0x5}, []uint64{0x1, 0x2}, false},
		{[]uint64{0x9}, []uint64{0x9, 0x9}, true},
	} {
		if got := covers(ids(c.have...), ids(c.want...), sizes8.FieldID); got != c.covers {
			t.Errorf("fields %x cover %x: %v, want %v", c.have, c.want, got, c.covers)
		}
	}
	if _, _, _, ok := valuesOf(key(jdwp.CmdArrayReferenceGetValues, body(func(w *jdwp.BodyWriter) { w.ObjectID(0x99); w.Int32(0); w.Int32(2) })), sizes8); ok {
		t.Error("an array read is an object's fields read")
	}
}

// FuzzPickValues: a VM's reply of any bytes, for any two keys, never
// panics, and a reply made is a valid packet with the ID given and as
// many values as the read names fields.
func FuzzPickValues(f *testing.F) {
	reply := jdwp.AppendReply(nil, 1, 0, body(func(w *jdwp.BodyWriter) {
		w.Int32(2)
		w.Value(jdwp.Value{Tag: jdwp.TagInt, Bits: 0x3})
		w.Value(jdwp.Value{Tag: jdwp.TagLong, Bits: 0x7})
	}))
	f.Add([]byte(reply), fieldsRead(0x99, 0x7, 0x3), fieldsRead(0x99, 0x3, 0x7))
	f.Add([]byte(reply), fieldsRead(0x99, 0x7), fieldsRead(0x99, 0x3, 0x7))
	f.Add([]byte(reply), fieldsRead(0x99, 0x7, 0x3), fieldsRead(0x98, 0x3, 0x7))
	f.Add([]byte{}, []byte{}, []byte{})
	f.Fuzz(func(t *testing.T, reply, kp, tp []byte) {
		var key, from keyable.Key
		if _, ok := keyable.Fill(&key, jdwp.CmdObjectReferenceGetValues, kp, sizes8); !ok {
			return
		}
		if _, ok := keyable.Fill(&from, jdwp.CmdObjectReferenceGetValues, tp, sizes8); !ok {
			return
		}
		var offs []int
		p, ok := pickValues(nil, 9, &key, &from, reply, sizes8, &offs)
		if !ok {
			return
		}
		_, want, unit, _ := valuesOf(&key, sizes8)
		r := jdwp.NewBodyReader(p.Body(), sizes8)
		n := r.Count(1)
		for range n {
			r.Value()
		}
		if !p.Valid() || p.ID() != 9 || n != len(want)/unit || r.Err() != nil || r.Remaining() != 0 {
			t.Fatalf("reply %x for %x from %x: made %x", reply, kp, tp, []byte(p))
		}
	})
}

// TestPickValuesAllocatesNothing: answering another order of the same
// fields allocates nothing once the answer and offset buffers have grown.
func TestPickValuesAllocatesNothing(t *testing.T) {
	var key, from keyable.Key
	keyable.Fill(&key, jdwp.CmdObjectReferenceGetValues, fieldsRead(0x99, 0x3, 0x7), sizes8)
	keyable.Fill(&from, jdwp.CmdObjectReferenceGetValues, fieldsRead(0x99, 0x7, 0x3), sizes8)
	reply := jdwp.AppendReply(nil, 1, 0, body(func(w *jdwp.BodyWriter) {
		w.Int32(2)
		w.Value(jdwp.Value{Tag: jdwp.TagLong, Bits: 0x7})
		w.Value(jdwp.Value{Tag: jdwp.TagInt, Bits: 0x3})
	}))
	buf, offs := make([]byte, 0, 64), make([]int, 0, 4)
	if n := testing.AllocsPerRun(100, func() {
		if _, ok := pickValues(buf[:0], 9, &key, &from, reply, sizes8, &offs); !ok {
			t.Fatal("not picked")
		}
	}); n != 0 {
		t.Errorf("%v allocations a call, want 0", n)
	}
}

// slotsRead is a StackFrame.GetValues of frame 0xF3 of thread1: each slot
// read as an int.
func slotsRead(slots ...int32) []byte {
	return body(func(w *jdwp.BodyWriter) {
		w.ObjectID(thread1)
		w.FrameID(0xF3)
		w.Int32(int32(len(slots)))
		for _, s := range slots {
			w.Int32(s)
			w.Uint8(uint8(jdwp.TagInt))
		}
	})
}

// TestFrameVariablesInAnotherOrderAnsweredFromTheCache: a frame's
// variables asked in another order (Eclipse's JDI lists them in its own,
// not by slot), or some of them, are answered from the reply cached for
// the first read, the values in the order asked; a slot the first read did
// not name goes to the VM. Fails without the cover of frame reads
// (valuesOf) or with the values left in the cached order.
func TestFrameVariablesInAnotherOrderAnsweredFromTheCache(t *testing.T) {
	fs := &frameState{count: 3, values: 10}
	r := newRigWith(t, Config{MinRTT: 1 << 40}, func(p jdwp.Packet) (jdwp.ErrorCode, []byte) {
		if p.Cmd() != jdwp.CmdStackFrameGetValues {
			return fs.handler(p)
		}
		r := jdwp.NewBodyReader(p.Body(), sizes8)
		r.ObjectID()
		r.FrameID()
		n := r.Int32()
		return 0, body(func(w *jdwp.BodyWriter) {
			w.Int32(n)
			for range n {
				slot := r.Int32()
				r.Uint8()
				w.Value(jdwp.Value{Tag: jdwp.TagInt, Bits: uint64(100 + slot)})
			}
		})
	})
	r.event(jdwp.SuspendAll, bpEvent(thread1))
	r.expectEvent()
	r.dbg.call(50, jdwp.CmdStackFrameGetValues, slotsRead(1, 2, 6))
	for i, slots := range [][]int32{{6, 1, 2}, {2}} {
		id := uint32(51 + i)
		got := r.dbg.call(id, jdwp.CmdStackFrameGetValues, slotsRead(slots...))
		want := jdwp.AppendReply(nil, id, 0, body(func(w *jdwp.BodyWriter) {
			w.Int32(int32(len(slots)))
			for _, s := range slots {
				w.Value(jdwp.Value{Tag: jdwp.TagInt, Bits: uint64(100 + s)})
			}
		}))
		if !bytes.Equal(got, want) {
			t.Fatalf("slots %v of the first read's: %x, want %x", slots, []byte(got), []byte(want))
		}
	}
	if n := r.vm.count(jdwp.CmdStackFrameGetValues); n != 1 {
		t.Fatalf("the VM was asked %d reads of the frame, want 1", n)
	}
	r.dbg.call(53, jdwp.CmdStackFrameGetValues, slotsRead(1, 7))
	if n := r.vm.count(jdwp.CmdStackFrameGetValues); n != 2 {
		t.Fatalf("the VM was asked %d reads of the frame, want 2: a slot not read before is another read", n)
	}
}
