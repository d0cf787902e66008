package speculator

import (
	"fmt"
	"slices"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
)

// objWorld is a scripted VM's chain of objects for the value rules: each
// object has one type of its own, with one instance field holding the
// next object (the last one's holds an int), no superclass and no
// interfaces. It answers the commands an IDE shows an object with.
type objWorld struct {
	objs []uint64 // objs[i] has type 0xC0+i and field 0x10+i
}

func (ow *objWorld) index(obj uint64) int {
	for i, o := range ow.objs {
		if o == obj {
			return i
		}
	}
	return -1
}

func (ow *objWorld) handler(fs *frameState) func(p jdwp.Packet) (jdwp.ErrorCode, []byte) {
	return func(p jdwp.Packet) (jdwp.ErrorCode, []byte) {
		r := jdwp.NewBodyReader(p.Body(), sizes8)
		switch p.Cmd() {
		case jdwp.CmdObjectReferenceReferenceType:
			i := ow.index(r.ObjectID())
			if i < 0 {
				return jdwp.ErrorInvalidObject, nil
			}
			return 0, body(func(w *jdwp.BodyWriter) { w.Uint8(uint8(jdwp.TypeTagClass)); w.ReferenceTypeID(0xC0 + uint64(i)) })
		case jdwp.CmdReferenceTypeFieldsWithGeneric:
			t := r.ReferenceTypeID()
			return 0, body(func(w *jdwp.BodyWriter) {
				w.Int32(1)
				w.FieldID(0x10 + t - 0xC0)
				w.String("next")
				w.String("Ljava/lang/Object;")
				w.String("")
				w.Int32(0)
			})
		case jdwp.CmdClassTypeSuperclass:
			return 0, body(func(w *jdwp.BodyWriter) { w.ReferenceTypeID(0) })
		case jdwp.CmdReferenceTypeInterfaces:
			return 0, body(func(w *jdwp.BodyWriter) { w.Int32(0) })
		case jdwp.CmdObjectReferenceGetValues:
			i := ow.index(r.ObjectID())
			if i < 0 {
				return jdwp.ErrorInvalidObject, nil
			}
			return 0, body(func(w *jdwp.BodyWriter) {
				w.Int32(1)
				if i+1 < len(ow.objs) {
					w.Value(jdwp.Value{Tag: jdwp.TagObject, Bits: ow.objs[i+1]})
				} else {
					w.Value(jdwp.Value{Tag: jdwp.TagInt, Bits: 7})
				}
			})
		}
		return fs.handler(p)
	}
}

// showObject is the debugger showing object o, of objWorld's first type
// (0xC0), as JDI does: its type, then the type's fields, superclass and
// interfaces.
func showObject(r *rig, o uint64) {
	r.dbg.call(60, jdwp.CmdObjectReferenceReferenceType, threadBody(o))
	typ := body(func(w *jdwp.BodyWriter) { w.ReferenceTypeID(0xC0) })
	r.dbg.call(61, jdwp.CmdReferenceTypeFieldsWithGeneric, typ)
	r.dbg.call(62, jdwp.CmdClassTypeSuperclass, typ)
	r.dbg.call(63, jdwp.CmdReferenceTypeInterfaces, typ)
}

// TestValuesThreeLevelsDeep: at a first stop the value rules read ahead
// the fields of the objects a frame shows, and only the type of the ones
// those hold (firstLevels: every debugger measured reads that much); once
// the debugger reads deeper (its user opened a field), the rest of the
// stop reads ahead every level: the fields of the object found in the
// field it opened (level 2), and of the next one only its type (level 3).
// Fails with the first levels not kept (learner.follows) or the stop not
// deepened at once (valueRules.deepen).
func TestValuesThreeLevelsDeep(t *testing.T) {
	r, fs := newStopRig(t)
	const a, b, c, d, e = 0xA1, 0xA2, 0xA3, 0xA4, 0xA5
	ow := &objWorld{objs: []uint64{a, b, c, d, e}}
	r.vm.setHandler(ow.handler(fs))
	r.event(jdwp.SuspendAll, bpEvent(thread1))
	r.expectEvent()
	// The debugger shows a: its type, the type's facts, its field.
	showObject(r, a)
	r.dbg.call(64, jdwp.CmdObjectReferenceGetValues, body(func(w *jdwp.BodyWriter) { w.ObjectID(a); w.Int32(1); w.FieldID(0x10) }))
	// b, the value of a's field (level 1): its type read ahead, not its
	// fields.
	waitTypeOf := func(o uint64) {
		for {
			p := r.vm.waitFor(jdwp.CmdObjectReferenceReferenceType)
			if jdwp.NewBodyReader(p.Body(), sizes8).ObjectID() == o {
				return
			}
		}
	}
	// After b's type facts, two round trips through the VM: whatever
	// they led to was sent before the second.
	settled := func(o uint64) {
		waitTypeOf(o)
		r.vm.waitFor(jdwp.CmdClassTypeSuperclass)
		r.dbg.call(nextID(), jdwp.CmdVirtualMachineAllClasses, nil)
		r.dbg.call(nextID(), jdwp.CmdVirtualMachineAllClasses, nil)
	}
	settled(b)
	if n := r.vm.askedOf(jdwp.CmdObjectReferenceGetValues, b); n != 0 {
		t.Fatalf("the VM got %d GetValues of the level-1 object before the debugger read deeper, want none", n)
	}
	// The debugger opens b: c (level 2) and its fields are read ahead, and
	// d's type (level 3), not its fields.
	got := r.dbg.call(67, jdwp.CmdObjectReferenceGetValues, body(func(w *jdwp.BodyWriter) { w.ObjectID(b); w.Int32(1); w.FieldID(0x11) }))
	if v := jdwp.NewBodyReader(got.Body()[4:], sizes8).Value(); v.ObjectID() != c {
		t.Errorf("b's field = %v, want object %#x", v, c)
	}
	for {
		p := r.vm.waitFor(jdwp.CmdObjectReferenceGetValues)
		if jdwp.NewBodyReader(p.Body(), sizes8).ObjectID() == c {
			break
		}
	}
	settled(d)
	if n := r.vm.askedOf(jdwp.CmdObjectReferenceGetValues, d); n != 0 {
		t.Errorf("the VM got %d GetValues of the level-3 object, want none (its fields are not shown)", n)
	}
	// The debugger's own read of c's field is answered without the VM.
	got = r.dbg.call(70, jdwp.CmdObjectReferenceGetValues, body(func(w *jdwp.BodyWriter) { w.ObjectID(c); w.Int32(1); w.FieldID(0x12) }))
	if v := jdwp.NewBodyReader(got.Body()[4:], sizes8).Value(); v.ObjectID() != d {
		t.Errorf("c's field = %v, want object %#x", v, d)
	}
	if n := r.vm.askedOf(jdwp.CmdObjectReferenceGetValues, c); n != 1 {
		t.Errorf("the VM got %d GetValues of c, want the one read ahead", n)
	}
	if n := r.vm.askedOf(jdwp.CmdObjectReferenceGetValues, b); n != 1 {
		t.Errorf("the VM got %d GetValues of b, want the debugger's own", n)
	}
	r.dbg.quiet()
}

// TestOwnNamedSignatures: a class only the proxy's own lookups named
// stays one the debugger may ask the signature of, until a reply or
// event the debugger sees names it (its own AllClasses, too).
func TestOwnNamedSignatures(t *testing.T) {
	f := newFacts(newTestSpeculator(Config{}))
	f.addOwnSignature([]byte("LA;"), 0x10)
	f.addOwnSignature([]byte("LB;"), 0x11)
	if _, own := f.ownNamed[0x10]; !own || f.idSig[0x10] != "LA;" {
		t.Fatalf("after the snapshot: own %v, signature %q", f.ownNamed, f.idSig[0x10])
	}
	f.addSignature([]byte("LA;"), 0x10) // the debugger's own Signature reply
	if _, own := f.ownNamed[0x10]; own {
		t.Error("a class the debugger saw named is still the proxy's own")
	}
	f.addOwnSignature([]byte("LA;"), 0x10) // a later snapshot lists it again
	if _, own := f.ownNamed[0x10]; own {
		t.Error("a class the debugger saw named became the proxy's own again")
	}
	f.addNamed([]byte("LB;"), 0x11, false) // the debugger's own AllClasses reply lists it
	if _, own := f.ownNamed[0x11]; own {
		t.Error("a class the debugger's AllClasses answer listed is still the proxy's own")
	}
}

// TestInterfacesFieldsReadAhead: once the debugger has listed a type's
// interfaces, the value rules read each interface's fields and its own
// interfaces, as JDI does to list visible fields, and never ask an
// interface's superclass (a command for classes).
func TestInterfacesFieldsReadAhead(t *testing.T) {
	r, fs := newStopRig(t)
	const a = 0xA1
	ow := &objWorld{objs: []uint64{a}}
	h := ow.handler(fs)
	r.vm.setHandler(func(p jdwp.Packet) (jdwp.ErrorCode, []byte) {
		if p.Cmd() == jdwp.CmdReferenceTypeInterfaces && jdwp.NewBodyReader(p.Body(), sizes8).ReferenceTypeID() == 0xC0 {
			return 0, body(func(w *jdwp.BodyWriter) { w.Int32(1); w.ReferenceTypeID(0xE0) })
		}
		return h(p)
	})
	r.event(jdwp.SuspendAll, bpEvent(thread1))
	r.expectEvent()
	showObject(r, a)
	iface := body(func(w *jdwp.BodyWriter) { w.ReferenceTypeID(0xE0) })
	for _, c := range []jdwp.Cmd{jdwp.CmdReferenceTypeFieldsWithGeneric, jdwp.CmdReferenceTypeInterfaces} {
		r.vm.waitAsked("the VM to be asked "+c.String()+" of the interface", c, iface)
	}
	r.dbg.call(64, jdwp.CmdVirtualMachineAllClasses, nil)
	r.dbg.call(65, jdwp.CmdVirtualMachineAllClasses, nil)
	for _, p := range r.vm.commands() {
		if p.Cmd() == jdwp.CmdClassTypeSuperclass && string(p.Body()) == string(iface) {
			t.Error("the VM was asked an interface's superclass")
		}
	}
	// The debugger's own reads of the interface are answered without the VM.
	before := len(r.vm.commands())
	r.dbg.call(66, jdwp.CmdReferenceTypeFieldsWithGeneric, iface)
	r.dbg.call(67, jdwp.CmdReferenceTypeInterfaces, iface)
	if n := len(r.vm.commands()); n != before {
		t.Errorf("the VM got %d more commands, want the interface's reads from the cache", n-before)
	}
	r.dbg.quiet()
}

// TestPeerLookupNamesNothingForTheDebugger: a lookup by name that a proxy
// in front sent on its own (split mode's near end: its ID in the proxies'
// range) names classes the debugger has not seen, so the signature of an
// object's type among them is still read ahead.
func TestPeerLookupNamesNothingForTheDebugger(t *testing.T) {
	r, fs := newStopRig(t)
	const a, b = 0xA1, 0xA2
	ow := &objWorld{objs: []uint64{a, b}}
	h := ow.handler(fs)
	r.vm.setHandler(func(p jdwp.Packet) (jdwp.ErrorCode, []byte) {
		switch p.Cmd() {
		case jdwp.CmdVirtualMachineClassesBySignature:
			return 0, body(func(w *jdwp.BodyWriter) {
				w.Int32(1)
				w.Uint8(uint8(jdwp.TypeTagClass))
				w.ReferenceTypeID(0xC1)
				w.Int32(7)
			})
		case jdwp.CmdReferenceTypeSignatureWithGeneric:
			return 0, body(func(w *jdwp.BodyWriter) { w.String("LT;"); w.String("") })
		}
		return h(p)
	})
	r.dbg.call(0xA0000005, jdwp.CmdVirtualMachineClassesBySignature, body(func(w *jdwp.BodyWriter) { w.String("LT1;") }))
	r.event(jdwp.SuspendAll, bpEvent(thread1))
	r.expectEvent()
	r.dbg.call(60, jdwp.CmdReferenceTypeSignatureWithGeneric, body(func(w *jdwp.BodyWriter) { w.ReferenceTypeID(0xC0) }))
	r.dbg.call(61, jdwp.CmdObjectReferenceReferenceType, threadBody(b))
	want := body(func(w *jdwp.BodyWriter) { w.ReferenceTypeID(0xC1) })
	r.vm.waitAsked("the VM to be asked the signature of b's type", jdwp.CmdReferenceTypeSignatureWithGeneric, want)
	r.dbg.quiet()
}

// TestArrayStringTypesReadAhead: the strings an array holds get their
// types read ahead with their values, as an IDE names each element's type.
func TestArrayStringTypesReadAhead(t *testing.T) {
	r, fs := newStopRig(t)
	const arr, s1, s2 = 0xB1, 0x51, 0x52
	r.vm.setHandler(func(p jdwp.Packet) (jdwp.ErrorCode, []byte) {
		switch p.Cmd() {
		case jdwp.CmdArrayReferenceGetValues:
			return 0, body(func(w *jdwp.BodyWriter) {
				w.Uint8(uint8(jdwp.TagString))
				w.Int32(2)
				w.Value(jdwp.Value{Tag: jdwp.TagString, Bits: s1})
				w.Value(jdwp.Value{Tag: jdwp.TagString, Bits: s2})
			})
		case jdwp.CmdObjectReferenceReferenceType:
			return 0, body(func(w *jdwp.BodyWriter) { w.Uint8(uint8(jdwp.TypeTagClass)); w.ReferenceTypeID(0xC9) })
		case jdwp.CmdStringReferenceValue:
			return 0, body(func(w *jdwp.BodyWriter) { w.String("s") })
		}
		return fs.handler(p)
	})
	r.event(jdwp.SuspendAll, bpEvent(thread1))
	r.expectEvent()
	// What the debugger asked before (the rules speculate only commands
	// it uses): a string's value, an object's type.
	r.dbg.call(58, jdwp.CmdStringReferenceValue, threadBody(0x60))
	r.dbg.call(59, jdwp.CmdObjectReferenceReferenceType, threadBody(0x61))
	r.dbg.call(60, jdwp.CmdArrayReferenceGetValues, body(func(w *jdwp.BodyWriter) { w.ObjectID(arr); w.Int32(0); w.Int32(2) }))
	for _, s := range []uint64{s1, s2} {
		want := threadBody(s)
		r.vm.waitAsked("the VM to be asked an element's type", jdwp.CmdObjectReferenceReferenceType, want)
	}
	before := r.vm.count(jdwp.CmdObjectReferenceReferenceType)
	r.dbg.call(61, jdwp.CmdObjectReferenceReferenceType, threadBody(s2))
	if n := r.vm.count(jdwp.CmdObjectReferenceReferenceType); n != before {
		t.Errorf("the VM got %d more ReferenceType, want the element's type from the cache", n-before)
	}
	r.dbg.quiet()
}

// TestArrayHeadsReadAhead: an IDE that reads two heads of the arrays it
// shows (four elements to name them, sixteen to list them) gets both read
// ahead, each cut to the array's length, once each.
func TestArrayHeadsReadAhead(t *testing.T) {
	var l learner
	for _, a := range []arrRead{{0, 4}, {0, 16}, {0, 4}, {2, 1}, {0, 8}, {0, 9}} {
		l.arrRead(a)
	}
	if want := []arrRead{{0, 9}, {0, 8}, {2, 1}, {0, 4}}; !slices.Equal(l.arrReads, want) {
		t.Fatalf("reads kept %v, want %v (latest first, distinct, at most %d)", l.arrReads, want, maxArrReads)
	}
	var p profile
	l.arrKnown = true
	l.exportState(&p, sizes8)
	var back learner
	back.importFrom(&p, sizes8)
	if !slices.Equal(back.arrReads, l.arrReads) || p.ArrLen != 9 {
		t.Errorf("through a profile: %v (arr_len %d), want %v", back.arrReads, p.ArrLen, l.arrReads)
	}
	old := profile{ArrKnown: true, ArrFirst: 0, ArrLen: 4} // before the reads were kept
	back.importFrom(&old, sizes8)
	if want := []arrRead{{0, 4}}; !slices.Equal(back.arrReads, want) {
		t.Errorf("from an older profile: %v, want %v", back.arrReads, want)
	}

	r, fs := newStopRig(t)
	const arr = 0xB1
	r.vm.setHandler(func(p jdwp.Packet) (jdwp.ErrorCode, []byte) {
		switch p.Cmd() {
		case jdwp.CmdArrayReferenceLength:
			return 0, body(func(w *jdwp.BodyWriter) { w.Int32(10) })
		case jdwp.CmdObjectReferenceGetValues:
			return 0, body(func(w *jdwp.BodyWriter) { w.Int32(1); w.Value(jdwp.Value{Tag: jdwp.TagArray, Bits: 0xB2}) })
		case jdwp.CmdObjectReferenceReferenceType:
			return 0, body(func(w *jdwp.BodyWriter) { w.Uint8(uint8(jdwp.TypeTagArray)); w.ReferenceTypeID(0xD1) })
		case jdwp.CmdArrayReferenceGetValues:
			n := jdwp.NewBodyReader(p.Body()[8+4:], sizes8).Int32()
			return 0, body(func(w *jdwp.BodyWriter) {
				w.Uint8(uint8(jdwp.TagInt))
				w.Int32(n)
				for range n {
					w.Int32(1)
				}
			})
		}
		return fs.handler(p)
	})
	r.event(jdwp.SuspendAll, bpEvent(thread1))
	r.expectEvent()
	// The debugger shows an array twice at this stop (4, then all 10 of
	// its elements), then an object's field holding another array.
	r.dbg.call(60, jdwp.CmdArrayReferenceLength, threadBody(arr))
	r.dbg.call(61, jdwp.CmdArrayReferenceGetValues, body(func(w *jdwp.BodyWriter) { w.ObjectID(arr); w.Int32(0); w.Int32(4) }))
	r.dbg.call(62, jdwp.CmdArrayReferenceGetValues, body(func(w *jdwp.BodyWriter) { w.ObjectID(arr); w.Int32(0); w.Int32(10) }))
	r.dbg.call(63, jdwp.CmdObjectReferenceGetValues, body(func(w *jdwp.BodyWriter) { w.ObjectID(0xA1); w.Int32(1); w.FieldID(0x10) }))
	for _, n := range []int32{4, 10} {
		want := body(func(w *jdwp.BodyWriter) { w.ObjectID(0xB2); w.Int32(0); w.Int32(n) })
		r.vm.waitAsked(fmt.Sprintf("the VM to be asked %d elements of the field's array", n), jdwp.CmdArrayReferenceGetValues, want)
	}
	r.dbg.quiet()
}

// TestImportedRatiosShadowNothing: an earlier session's usage ratios do
// not shadow a rule at a new session's first stop (those ratios come from
// its steps); they are kept where they are above the floor.
func TestImportedRatiosShadowNothing(t *testing.T) {
	p := profile{Ratio: make([]float64, numKinds)}
	p.Ratio[kFields], p.Ratio[kString] = 0.05, 0.9
	var l learner
	l.importFrom(&p, jdwp.IDSizes{})
	if l.ratio[kFields] < minRatio || l.ratio[kString] != 0.9 {
		t.Errorf("imported ratios: fields %v (want at least %v), strings %v (want 0.9)", l.ratio[kFields], minRatio, l.ratio[kString])
	}
	var key keyable.Key
	if l.shadowed(kFields, &key) {
		t.Error("a rule is shadowed at the first stop by an earlier session's ratio")
	}
}

// TestSignatureCmdIsTheLastAsked: the type signature read ahead is asked
// with the command the debugger used last (Eclipse's JDI: the generic one
// at attach, the plain one at stops).
func TestSignatureCmdIsTheLastAsked(t *testing.T) {
	l := newLearner()
	if _, ok := l.signatureCmd(); ok {
		t.Fatal("a signature command before the debugger asked any")
	}
	ask := func(c jdwp.Cmd) {
		var k keyable.Key
		info, _ := keyable.Fill(&k, c, body(func(w *jdwp.BodyWriter) { w.ReferenceTypeID(0x70) }), sizes8)
		l.learnCommand(&k, info, k.Subject(info, sizes8), sizes8, nil, nil, false)
	}
	ask(jdwp.CmdReferenceTypeSignatureWithGeneric) // at attach
	if c, _ := l.signatureCmd(); c != jdwp.CmdReferenceTypeSignatureWithGeneric {
		t.Fatalf("after the attach's generic signature: %v", c)
	}
	l.beginEpisode(thread1, jdwp.Location{})
	ask(jdwp.CmdReferenceTypeSignature) // at the first stop
	if c, _ := l.signatureCmd(); c != jdwp.CmdReferenceTypeSignature {
		t.Fatalf("after a plain signature at the first stop: %v, want the plain one", c)
	}
}

// TestWholeArraysReadAPage: a debugger's read of a whole array shorter
// than a page is kept as the page (arrPage), which the next array's
// length clips to the whole of it; a read of part of an array, or of an
// array whose length is not known here, stays as it was. Fails with a
// whole read kept as long as the array it read: the next array of
// another length was read ahead once for each length read before
// (BigApp's three arrays at each stop, one of them used).
func TestWholeArraysReadAPage(t *testing.T) {
	var l learner
	l.arrayRead(0, 10, 10, true)
	l.arrayRead(0, 4, 4, true)
	if want := []arrRead{{0, arrPage}}; !slices.Equal(l.arrReads, want) {
		t.Fatalf("after whole reads of 10 and 4: %v, want %v", l.arrReads, want)
	}
	l.arrayRead(0, 16, 50, true) // the first 16 of 50
	l.arrayRead(2, 3, 10, true)  // a part
	l.arrayRead(0, 3, 0, false)  // length unknown
	if want := []arrRead{{0, 3}, {2, 3}, {0, 16}, {0, arrPage}}; !slices.Equal(l.arrReads, want) {
		t.Fatalf("%v, want %v", l.arrReads, want)
	}
	l.arrayRead(0, arrPage, 500, true) // a page of a longer array: the page
	if want := []arrRead{{0, arrPage}, {0, 3}, {2, 3}, {0, 16}}; !slices.Equal(l.arrReads, want) {
		t.Fatalf("%v, want %v", l.arrReads, want)
	}
}

// TestArrayTypesGetNoClassFacts: an array found in an object's field has
// its type read ahead (an IDE names it), but not the class facts the
// debugger asked of class types: an array type declares no fields, JDI
// lists none, and ClassType.Superclass is for classes. Fails without the
// tag check in valueRules.chain.
func TestArrayTypesGetNoClassFacts(t *testing.T) {
	r, fs := newStopRig(t)
	const a, arr = 0xA1, 0xB1
	const arrType = 0xD0
	ow := &objWorld{objs: []uint64{a}}
	h := ow.handler(fs)
	r.vm.setHandler(func(p jdwp.Packet) (jdwp.ErrorCode, []byte) {
		br := jdwp.NewBodyReader(p.Body(), sizes8)
		switch p.Cmd() {
		case jdwp.CmdObjectReferenceReferenceType:
			if br.ObjectID() == arr {
				return 0, body(func(w *jdwp.BodyWriter) { w.Uint8(uint8(jdwp.TypeTagArray)); w.ReferenceTypeID(arrType) })
			}
		case jdwp.CmdObjectReferenceGetValues:
			if br.ObjectID() == a {
				return 0, body(func(w *jdwp.BodyWriter) { w.Int32(1); w.Value(jdwp.Value{Tag: jdwp.TagArray, Bits: arr}) })
			}
		case jdwp.CmdArrayReferenceLength:
			return 0, body(func(w *jdwp.BodyWriter) { w.Int32(0) })
		}
		return h(p)
	})
	r.event(jdwp.SuspendAll, bpEvent(thread1))
	r.expectEvent()
	// The debugger shows a (a class type): its type, the type's facts, its
	// field, which holds the array.
	showObject(r, a)
	r.dbg.call(64, jdwp.CmdObjectReferenceGetValues, body(func(w *jdwp.BodyWriter) { w.ObjectID(a); w.Int32(1); w.FieldID(0x10) }))
	r.vm.waitAsked("the VM to be asked the array's type", jdwp.CmdObjectReferenceReferenceType, threadBody(arr))
	// Two round trips through the VM: whatever the array's type led to
	// was sent before the second.
	r.dbg.call(nextID(), jdwp.CmdVirtualMachineAllClasses, nil)
	r.dbg.call(nextID(), jdwp.CmdVirtualMachineAllClasses, nil)
	at := body(func(w *jdwp.BodyWriter) { w.ReferenceTypeID(arrType) })
	for _, p := range r.vm.commands() {
		if p.Cmd().Set != jdwp.SetObjectReference && string(p.Body()) == string(at) && p.Cmd() != jdwp.CmdReferenceTypeSignatureWithGeneric && p.Cmd() != jdwp.CmdReferenceTypeSignature {
			t.Errorf("the VM was asked %v of the array type", p.Cmd())
		}
	}
	r.dbg.quiet()
}

// TestArrayTypeSuperclassWithheld: a speculation of ClassType.Superclass
// with a type an object's type reply tagged ARRAY, as a replayed template
// could make, is withheld; with a class type it goes. Fails without the
// check in safeToSend.
func TestArrayTypeSuperclassWithheld(t *testing.T) {
	f := newFacts(newTestSpeculator(Config{}))
	typeReply := func(tag jdwp.TypeTag, typ uint64) jdwp.Packet {
		return jdwp.AppendReply(nil, 1, 0, body(func(w *jdwp.BodyWriter) { w.Uint8(uint8(tag)); w.ReferenceTypeID(typ) }))
	}
	f.learnFromVM(jdwp.CmdObjectReferenceReferenceType, threadBody(0xB1), typeReply(jdwp.TypeTagArray, 0xD0), sizes8)
	f.learnFromVM(jdwp.CmdObjectReferenceReferenceType, threadBody(0xA1), typeReply(jdwp.TypeTagClass, 0xC0), sizes8)
	for _, c := range []struct {
		typ  uint64
		want bool
	}{{0xD0, false}, {0xC0, true}} {
		s := &spec{kind: kLearned}
		if _, ok := keyable.Fill(&s.key, jdwp.CmdClassTypeSuperclass, body(func(w *jdwp.BodyWriter) { w.ReferenceTypeID(c.typ) }), sizes8); !ok {
			t.Fatal("ClassType.Superclass does not key")
		}
		if got := f.safeToSend(s, nil, sizes8); got != c.want {
			t.Errorf("safeToSend(ClassType.Superclass of %#x) = %v, want %v", c.typ, got, c.want)
		}
	}
}

// TestMethodOfAnotherClassWithheld: a Method command that pairs a method
// a frame's location named with another class (a template taking the
// class from the event and the method from a deeper frame could) is
// withheld; with its declaring class, or a method no reply placed, it
// goes. Fails without the check in safeToSend.
func TestMethodOfAnotherClassWithheld(t *testing.T) {
	f := newFacts(newTestSpeculator(Config{}))
	frames := jdwp.AppendReply(nil, 1, 0, body(func(w *jdwp.BodyWriter) {
		w.Int32(1)
		w.FrameID(0xF1)
		w.Location(jdwp.Location{TypeTag: 1, Class: 0xC1, Method: 0x31, Index: 4})
	}))
	f.learnFromVM(jdwp.CmdThreadReferenceFrames, body(func(w *jdwp.BodyWriter) { w.ObjectID(0xA1); w.Int32(0); w.Int32(1) }), frames, sizes8)
	for _, c := range []struct {
		class, method uint64
		want          bool
	}{{0xC2, 0x31, false}, {0xC1, 0x31, true}, {0xC2, 0x99, true}} {
		for _, cmd := range []jdwp.Cmd{jdwp.CmdMethodIsObsolete, jdwp.CmdMethodLineTable} {
			s := &spec{kind: kLearned}
			if _, ok := keyable.Fill(&s.key, cmd, body(func(w *jdwp.BodyWriter) { w.ReferenceTypeID(c.class); w.MethodID(c.method) }), sizes8); !ok {
				t.Fatalf("%v does not key", cmd)
			}
			if got := f.safeToSend(s, nil, sizes8); got != c.want {
				t.Errorf("safeToSend(%v of class %#x, method %#x) = %v, want %v", cmd, c.class, c.method, got, c.want)
			}
		}
	}
}
