package keyable

import (
	"bytes"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

var sizes8 = jdwp.IDSizes{FieldID: 8, MethodID: 8, ObjectID: 8, ReferenceTypeID: 8, FrameID: 8}
var sizes4 = jdwp.IDSizes{FieldID: 4, MethodID: 4, ObjectID: 4, ReferenceTypeID: 4, FrameID: 4}

func body(sz jdwp.IDSizes, f func(w *jdwp.BodyWriter)) []byte {
	w := jdwp.BodyWriter{Sizes: sz}
	f(&w)
	return w.Buf
}

func TestKeysDistinguishParameters(t *testing.T) {
	a := body(sizes8, func(w *jdwp.BodyWriter) { w.ReferenceTypeID(7); w.MethodID(9) })
	b := body(sizes8, func(w *jdwp.BodyWriter) { w.ReferenceTypeID(7); w.MethodID(10) })
	ka, ia, ok := New(jdwp.CmdMethodIsObsolete, a, sizes8)
	if !ok || ia.Tier != TierClass {
		t.Fatalf("IsObsolete not keyable: %v %v", ok, ia)
	}
	kb, _, _ := New(jdwp.CmdMethodIsObsolete, b, sizes8)
	ka2, _, _ := New(jdwp.CmdMethodIsObsolete, a, sizes8)
	if ka == kb || ka != ka2 {
		t.Fatal("keys must be equal exactly when command and parameters are")
	}
	kl, _, _ := New(jdwp.CmdMethodLineTable, a, sizes8)
	if kl == ka {
		t.Fatal("different commands with equal parameters must differ")
	}
	if got := ka.Subject(ia, sizes8); got != (Subject{Class: 7}) {
		t.Fatalf("Subject = %+v, want the class 7", got)
	}
	if !bytes.Equal(ka.Params(), a) || ka.Cmd() != jdwp.CmdMethodIsObsolete {
		t.Fatal("Params/Cmd do not round-trip")
	}
	p := ka.AppendCommand(nil, 42)
	k2, _, ok := Of(p, sizes8)
	if !ok || k2 != ka || p.ID() != 42 {
		t.Fatal("AppendCommand/Of do not round-trip")
	}
}

func TestLayoutsAreIDSizeAware(t *testing.T) {
	thread8 := body(sizes8, func(w *jdwp.BodyWriter) { w.ObjectID(5); w.Int32(0); w.Int32(-1) })
	if _, _, ok := New(jdwp.CmdThreadReferenceFrames, thread8, sizes8); !ok {
		t.Fatal("Frames with 8-byte IDs rejected")
	}
	if _, _, ok := New(jdwp.CmdThreadReferenceFrames, thread8, sizes4); ok {
		t.Fatal("an 8-byte-ID body must not parse with 4-byte sizes")
	}
	if _, _, ok := New(jdwp.CmdThreadReferenceFrames, thread8, jdwp.IDSizes{}); ok {
		t.Fatal("unknown sizes must not parse ID parameters")
	}
	if _, _, ok := New(jdwp.CmdVirtualMachineVersion, nil, jdwp.IDSizes{}); !ok {
		t.Fatal("parameterless commands are keyable before ID sizes are known")
	}
	slots := body(sizes4, func(w *jdwp.BodyWriter) {
		w.ObjectID(1)
		w.FrameID(2)
		w.Int32(2)
		w.Int32(1)
		w.Uint8('I')
		w.Int32(2)
		w.Uint8('L')
	})
	k, info, ok := New(jdwp.CmdStackFrameGetValues, slots, sizes4)
	if !ok || info.Scope != ScopeThread || k.Subject(info, sizes4) != (Subject{Thread: 1}) {
		t.Fatalf("GetValues: ok=%v info=%+v", ok, info)
	}
	if _, _, ok := New(jdwp.CmdStackFrameGetValues, slots[:len(slots)-1], sizes4); ok {
		t.Fatal("truncated slot list accepted")
	}
	if _, _, ok := New(jdwp.CmdStackFrameGetValues, append(slots, 0), sizes4); ok {
		t.Fatal("trailing byte accepted")
	}
	long := body(sizes8, func(w *jdwp.BodyWriter) {
		w.ObjectID(1)
		w.Int32(20)
		for i := 0; i < 20; i++ {
			w.FieldID(uint64(i))
		}
	})
	if _, _, ok := New(jdwp.CmdObjectReferenceGetValues, long, sizes8); ok {
		t.Fatal("a body longer than MaxParams must not be keyable")
	}
}

func TestNotCacheable(t *testing.T) {
	for _, c := range []jdwp.Cmd{jdwp.CmdVirtualMachineResume, jdwp.CmdObjectReferenceInvokeMethod,
		jdwp.CmdEventRequestSet, jdwp.CmdStackFrameSetValues, jdwp.CmdVirtualMachineAllClasses,
		jdwp.CmdObjectReferenceIsCollected, jdwp.CmdReferenceTypeStatus, jdwp.CmdDDMChunk} {
		if _, ok := Lookup(c); ok {
			t.Errorf("%v must not be cacheable", c)
		}
	}
	for _, c := range Commands() {
		if !c.Known() {
			t.Errorf("cacheable command %v is not in the JDWP table", c)
		}
	}
}

func TestTypeOf(t *testing.T) {
	p := jdwp.AppendCommand(nil, 1, jdwp.CmdThreadReferenceName, []byte{1, 2, 3, 4})
	if c, ok := TypeOf(p); !ok || c != jdwp.CmdThreadReferenceName {
		t.Fatal("TypeOf(command)")
	}
	if _, ok := TypeOf(jdwp.AppendReply(nil, 1, 0, nil)); ok {
		t.Fatal("a reply has no type of its own")
	}
	if _, ok := TypeOf(jdwp.Packet{1, 2}); ok {
		t.Fatal("short packet")
	}
}

func TestFillDoesNotAllocate(t *testing.T) {
	p := jdwp.AppendCommand(nil, 1, jdwp.CmdThreadReferenceFrames,
		body(sizes8, func(w *jdwp.BodyWriter) { w.ObjectID(5); w.Int32(0); w.Int32(20) }))
	m := map[Key]int{}
	var k Key
	Fill(&k, p.Cmd(), p.Body(), sizes8)
	m[k] = 1
	allocs := testing.AllocsPerRun(100, func() {
		if _, ok := Fill(&k, p.Cmd(), p.Body(), sizes8); !ok {
			t.Fatal("not keyable")
		}
		if m[k] != 1 {
			t.Fatal("lookup failed")
		}
	})
	if allocs != 0 {
		t.Fatalf("key build + lookup allocates %.1f times", allocs)
	}
}

func BenchmarkKeyAndLookup(b *testing.B) {
	p := jdwp.AppendCommand(nil, 1, jdwp.CmdStackFrameGetValues, body(sizes8, func(w *jdwp.BodyWriter) {
		w.ObjectID(1)
		w.FrameID(2)
		w.Int32(7)
		for i := 0; i < 7; i++ {
			w.Int32(int32(i))
			w.Uint8('I')
		}
	}))
	m := map[Key]int{}
	var k Key
	Fill(&k, p.Cmd(), p.Body(), sizes8)
	m[k] = 1
	b.ReportAllocs()
	for b.Loop() {
		Fill(&k, p.Cmd(), p.Body(), sizes8)
		_ = m[k]
	}
}

func FuzzOf(f *testing.F) {
	f.Add([]byte(jdwp.AppendCommand(nil, 1, jdwp.CmdMethodIsObsolete, make([]byte, 16))), uint8(8))
	f.Add([]byte(jdwp.AppendCommand(nil, 1, jdwp.CmdStackFrameGetValues, []byte{0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 3, 'I'})), uint8(4))
	f.Add([]byte(jdwp.AppendCommand(nil, 1, jdwp.CmdObjectReferenceGetValues, []byte{0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff})), uint8(4))
	f.Add([]byte(jdwp.AppendReply(nil, 1, 0, nil)), uint8(8))
	f.Fuzz(func(t *testing.T, pkt []byte, size uint8) {
		n := int(size % 10)
		sz := jdwp.IDSizes{FieldID: n, MethodID: n, ObjectID: n, ReferenceTypeID: n, FrameID: n}
		k, info, ok := Of(jdwp.Packet(pkt), sz)
		if !ok {
			return
		}
		p := jdwp.Packet(pkt)
		if !bytes.Equal(k.Params(), p.Body()) || k.Cmd() != p.Cmd() || !info.Cacheable() {
			t.Fatal("key does not hold the command")
		}
		k2, _, ok := New(k.Cmd(), k.Params(), sz)
		if !ok || k2 != k {
			t.Fatal("New(Params) does not round-trip")
		}
		_ = k.Subject(info, sz)
	})
}

func TestSubjectFollowsTierAndScope(t *testing.T) {
	obj := body(sizes4, func(w *jdwp.BodyWriter) { w.ObjectID(9) })
	for _, c := range []struct {
		cmd  jdwp.Cmd
		want Subject
	}{
		{jdwp.CmdStringReferenceValue, Subject{Object: 9}},      // object lifetime
		{jdwp.CmdThreadReferenceFrameCount, Subject{Thread: 9}}, // stop state of one thread
		{jdwp.CmdReferenceTypeSignature, Subject{Class: 9}},     // class lifetime
		{jdwp.CmdThreadReferenceName, Subject{}},                // stop state of the whole VM
		{jdwp.CmdObjectReferenceMonitorInfo, Subject{}},         // stop state of the whole VM
	} {
		k, info, ok := New(c.cmd, obj, sizes4)
		if !ok {
			t.Fatalf("%v not keyable", c.cmd)
		}
		if got := k.Subject(info, sizes4); got != c.want {
			t.Errorf("%v: Subject %+v, want %+v", c.cmd, got, c.want)
		}
	}
}
