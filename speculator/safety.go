package speculator

import (
	"bytes"
	"cmp"
	"slices"
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
)

// The rule for every command the speculator sends on its own: it must be
// a command a careful debugger could send in that state.
//
//   - Read-only: only commands keyable marks cacheable, which change no VM
//     state (no resume, invoke, set, event request or vendor command set).
//   - Only IDs the VM handed out in this session, and valid for that
//     command. HotSpot checks few of them: a field ID of another class
//     makes ObjectReference.GetValues read the wrong memory (or crash in
//     jni_GetLongField), so
//   - ObjectReference.GetValues asks only fields that the VM's own
//     ReferenceType.Fields replies list for the object's type (from its
//     ObjectReference.ReferenceType reply) or one of its superclasses (from
//     ClassType.Superclass replies); unknown facts mean no speculation;
//   - ClassType.Superclass never names a type an object's type reply
//     (ObjectReference.ReferenceType) tagged ARRAY: ClassType commands are
//     for classes (HotSpot answers java.lang.Object; JDI never asks);
//   - StackFrame.GetValues and ThisObject name only frames of the current
//     stop's Frames replies, on the thread they came from, and GetValues
//     asks only slots that the method's VariableTable reply shows live at
//     the frame's code index, with the variable's own tag;
//   - or, on HotSpot only (its VirtualMachine.Version reply, see
//     hotSpotVersion), a frame ID predicted for the stopped thread
//     (framepredict.go): the ID of the frame at that depth in the next
//     generation, which the VM has not handed out yet. This is safe
//     because HotSpot's libjdwp validates a frame ID before any use
//     (StackFrameImpl.c validateThreadFrame: the thread must be
//     suspended, and FrameID.c validateFrameID: its generation must be
//     the thread's current one, else INVALID_FRAMEID), and the depth in a
//     valid ID reaches JVMTI, which answers NO_MORE_FRAMES past the stack.
//     GetValues asks only the slots the debugger asked at a previous stop
//     for the method the frame was in (live with their tags there; at the
//     top frame, the stop event's exact location). The frame may have
//     moved since, but HotSpot's JVMTI GetLocal* checks each slot at the
//     frame's current bci (jvmtiImpl.cpp VM_GetOrSetLocal::doit: slot
//     index and type against max_locals and the frame's own stack values,
//     against the LocalVariableTable when the method has one, and the
//     oop map's liveness), answering INVALID_SLOT or TYPE_MISMATCH, never
//     reading a wrong slot. Older ART does not obviously validate frame
//     IDs, and OpenJ9 was not checked: no prediction there. A reply to a
//     predicted frame is held, and served only once a Frames reply of the
//     same stop lists that ID at that depth and, for GetValues, shows
//     every slot asked live with its tag at the frame's location there
//     (confirmFrame, predictedSlotsLive); otherwise it is dropped;
//   - thread- and VM-scoped commands only while that thread or the whole VM
//     is suspended, or, for reads of state the running threads may change
//     (the thread list, fields, elements), while a stop holds a thread
//     suspended: what a debugger that stops only the event thread reads
//     there, with the program's other threads running (scopeOK; what may
//     answer the debugger is moment.go's);
//   - the attach's own commands (attach.go) take no IDs (IDSizes, Version,
//     capabilities, thread lists: the ID-bearing replies are read only
//     after IDSizes, which is sent first and answered first), or only a
//     class ID this connection's events or replies handed out with its
//     signature, and a method ID of that class from its Methods reply
//     (handedOut): never an ID from an earlier connection, even to the
//     same VM process;
//   - the prepare rule's reads (predict_prepare.go, spec.prep) are held to
//     the same check: class-lifetime reads (methods, strata, line tables)
//     of the class ID this connection's CLASS_PREPARE event handed out,
//     and of method IDs of that class from this connection's Methods
//     reply — the very reads JDI makes there to resolve breakpoints.
//
// safeToSend enforces the ID rules just before a speculation is sent, so
// that no prediction path (replayed templates, learned field lists and
// slots, chained replies) can get around them.

// logOwnFor is how long after a session starts every speculative command
// is logged at debug level (what the proxy sends on its own).
const logOwnFor = 10 * time.Second

// classFacts are class-lifetime facts from the VM's replies, used only to
// check the IDs of speculative commands. Part of facts, guarded by
// session.mu; forgotten for a class when facts invalidates it.
type classFacts struct {
	fields map[jdwp.ClassID][]field      // class -> its declared fields
	super  map[jdwp.ClassID]jdwp.ClassID // class -> superclass (0: none)
	vars   map[methodKey][]variable      // (class, method) -> variable table
	arrays map[jdwp.ClassID]struct{}     // types an object's type reply (ObjectReference.ReferenceType) tagged ARRAY
	// noCode is the methods without code: native or abstract by a
	// Methods reply's modifiers, or native by a frame at code index -1.
	// They have no line or variable table, and JDI (OpenJDK's, Eclipse's)
	// answers for them without asking the VM (which refuses): neither is
	// read ahead for them (tableless).
	noCode map[methodKey]struct{}
	// declarer is the class that declares each method a Methods reply or
	// a frame's location named: a Method command pairs a method with it
	// (declaredBy).
	declarer map[jdwp.MethodID]jdwp.ClassID
}

// Method modifiers (JVMS 4.6) of a method without code, and the code
// index of a frame in a native method (-1).
const (
	accNative   = 0x0100
	accAbstract = 0x0400
	nativeIndex = ^uint64(0)
)

// eachMethod calls fn with the ID and modifiers of each method of body, a
// reply to c (ReferenceType.Methods or MethodsWithGeneric), in order,
// until fn returns false or the body ends or does not parse.
func eachMethod(c jdwp.Cmd, body []byte, sizes jdwp.IDSizes, fn func(id jdwp.MethodID, mods int32) bool) {
	r := jdwp.NewBodyReader(body, sizes)
	n := r.Count(sizes.MethodID + 4 + 4 + 4)
	for i := 0; i < n && r.Err() == nil; i++ {
		id := r.Method()
		r.StringBytes()
		r.StringBytes()
		if c == jdwp.CmdReferenceTypeMethodsWithGeneric {
			r.StringBytes()
		}
		if mods := r.Int32(); r.Err() == nil && !fn(id, mods) {
			return
		}
	}
}

// tableless says whether command c with params reads the line or
// variable table of a method known to have no code.
func (cf *classFacts) tableless(c jdwp.Cmd, params []byte, sizes jdwp.IDSizes) bool {
	switch c {
	case jdwp.CmdMethodLineTable, jdwp.CmdMethodVariableTable, jdwp.CmdMethodVariableTableWithGeneric:
	default:
		return false
	}
	r := jdwp.NewBodyReader(params, sizes)
	mk := methodKey{class: r.Class(), method: r.Method()}
	_, none := cf.noCode[mk]
	return none && r.Err() == nil
}

// field is one declared field of a Fields reply: its ID, and its name
// (which carries across sessions, where the ID does not: shapes.go).
type field struct {
	id     jdwp.FieldID
	name   string
	static bool
}

// variable is one VariableTable entry.
type variable struct {
	start  uint64
	length uint32
	slot   int32
	tag    jdwp.Tag
	this   bool // named this or this$…: not a variable to JDI (visibleSlots)
}

func newClassFacts() classFacts {
	return classFacts{fields: map[jdwp.ClassID][]field{}, super: map[jdwp.ClassID]jdwp.ClassID{},
		vars: map[methodKey][]variable{}, arrays: map[jdwp.ClassID]struct{}{}, noCode: map[methodKey]struct{}{},
		declarer: map[jdwp.MethodID]jdwp.ClassID{}}
}

// declaredBy says whether method m may be named with class c in a
// Method command: c declares it, or no reply named its class. A
// template that takes the class from one place and the method from
// another (the event's class, a deeper frame's method) could pair them
// otherwise; JDI never does.
func (cf *classFacts) declaredBy(m jdwp.MethodID, c jdwp.ClassID) bool {
	d, ok := cf.declarer[m]
	return !ok || d == c
}

// forget drops what is known of class c (unloaded or redefined).
func (cf *classFacts) forget(c jdwp.ClassID) {
	delete(cf.fields, c)
	delete(cf.super, c)
	delete(cf.arrays, c)
	for k := range cf.vars {
		if k.class == c {
			delete(cf.vars, k)
		}
	}
	for k := range cf.noCode {
		if k.class == c {
			delete(cf.noCode, k)
		}
	}
	for m, d := range cf.declarer {
		if d == c {
			delete(cf.declarer, m)
		}
	}
}

// accStatic is the static bit of a field's modifiers.
const accStatic = 0x0008

// reset drops everything (every class may be gone).
func (cf *classFacts) reset() {
	clear(cf.fields)
	clear(cf.super)
	clear(cf.vars)
	clear(cf.arrays)
	clear(cf.noCode)
	clear(cf.declarer)
}

// learn records the facts in a successful reply to command c with
// parameters params.
func (cf *classFacts) learn(c jdwp.Cmd, params []byte, p jdwp.Packet, sizes jdwp.IDSizes) {
	if len(cf.fields)+len(cf.super)+len(cf.vars)+len(cf.arrays)+len(cf.noCode)+len(cf.declarer) >= maxInvalMap {
		cf.reset()
	}
	r := jdwp.NewBodyReader(p.Body(), sizes)
	pr := jdwp.NewBodyReader(params, sizes)
	switch c {
	case jdwp.CmdObjectReferenceReferenceType:
		tag := jdwp.TypeTag(r.Uint8())
		if t := r.Class(); r.Err() == nil && tag == jdwp.TypeTagArray {
			cf.arrays[t] = struct{}{}
		}
	case jdwp.CmdReferenceTypeFields, jdwp.CmdReferenceTypeFieldsWithGeneric:
		class := pr.Class()
		n := r.Count(sizes.FieldID + 4 + 4 + 4)
		ids := make([]field, 0, n)
		for i := 0; i < n && r.Err() == nil; i++ {
			f := field{id: r.Field(), name: r.String()}
			r.StringBytes()
			if c == jdwp.CmdReferenceTypeFieldsWithGeneric {
				r.StringBytes()
			}
			f.static = r.Int32()&accStatic != 0
			ids = append(ids, f)
		}
		if r.Err() == nil && r.Remaining() == 0 {
			cf.fields[class] = ids
		}
	case jdwp.CmdReferenceTypeMethods, jdwp.CmdReferenceTypeMethodsWithGeneric:
		class := pr.Class()
		eachMethod(c, p.Body(), sizes, func(id jdwp.MethodID, mods int32) bool {
			cf.declarer[id] = class
			if mods&(accNative|accAbstract) != 0 {
				cf.noCode[methodKey{class: class, method: id}] = struct{}{}
			}
			return true
		})
	case jdwp.CmdThreadReferenceFrames:
		n := r.Count(sizes.FrameID + 1 + sizes.ReferenceTypeID + sizes.MethodID + 8)
		for i := 0; i < n && r.Err() == nil; i++ {
			r.Frame()
			loc := r.Location()
			if r.Err() != nil {
				break
			}
			cf.declarer[loc.MethodID()] = loc.ClassID()
			if loc.Index == nativeIndex {
				cf.noCode[methodKey{class: loc.ClassID(), method: loc.MethodID()}] = struct{}{}
			}
		}
	case jdwp.CmdClassTypeSuperclass:
		class := pr.Class()
		sup := r.Class()
		if r.Err() == nil {
			cf.super[class] = sup
		}
	case jdwp.CmdMethodVariableTable, jdwp.CmdMethodVariableTableWithGeneric:
		mk := methodKey{class: pr.Class(), method: pr.Method()}
		r.Int32() // argCnt
		n := r.Count(8 + 4 + 4 + 4 + 4)
		vars := make([]variable, 0, n)
		for i := 0; i < n && r.Err() == nil; i++ {
			v := variable{start: uint64(r.Int64())}
			name := r.StringBytes()
			v.this = string(name) == "this" || bytes.HasPrefix(name, []byte("this$"))
			sig := r.StringBytes()
			if c == jdwp.CmdMethodVariableTableWithGeneric {
				r.StringBytes()
			}
			v.length = uint32(r.Int32())
			v.slot = r.Int32()
			if len(sig) > 0 {
				v.tag = jdwp.Tag(sig[0])
			}
			vars = append(vars, v)
		}
		if r.Err() == nil && r.Remaining() == 0 {
			cf.vars[mk] = vars
		}
	}
}

// fieldsOfType says whether every field ID in ids is declared by class t
// or one of its known superclasses.
func (cf *classFacts) fieldsOfType(t jdwp.ClassID, ids []jdwp.FieldID) bool {
	for _, f := range ids {
		found := false
		for c, hops := t, 0; c != 0 && hops < 64 && !found; hops++ {
			declared, ok := cf.fields[c]
			if ok {
				for _, d := range declared {
					if d.id == f {
						found = true
						break
					}
				}
			}
			if found {
				break
			}
			sup, known := cf.super[c]
			if !known {
				break
			}
			c = sup
		}
		if !found {
			return false
		}
	}
	return true
}

// slotsLive says whether every (slot, tag) pair is a variable of the
// method live at code index idx, with a matching tag.
func (cf *classFacts) slotsLive(loc jdwp.Location, slots []slotTag) bool {
	vars, ok := cf.vars[methodOf(loc)]
	if !ok {
		return false
	}
	for _, s := range slots {
		live := false
		for _, v := range vars {
			if v.slot == s.slot && loc.Index >= v.start && loc.Index < v.start+uint64(v.length) && sameKind(v.tag, s.tag) {
				live = true
				break
			}
		}
		if !live {
			return false
		}
	}
	return true
}

type slotTag struct {
	slot int32
	tag  jdwp.Tag
}

// sameKind says whether a slot request's tag fits a variable whose
// signature starts with sig: equal, or both references.
func sameKind(sig, tag jdwp.Tag) bool {
	return sig == tag || sig.IsObject() && tag.IsObject()
}

// safeToSend checks the IDs of speculation s against the rule above;
// frames are the current stop's.
func (f *facts) safeToSend(s *spec, frames map[jdwp.FrameID]frameInfo, sizes jdwp.IDSizes) bool {
	if (s.kind == kAttach || s.prep) && !f.seen.attachOK(s, sizes) {
		return false
	}
	r := jdwp.NewBodyReader(s.key.Params(), sizes)
	switch s.key.Cmd() {
	case jdwp.CmdObjectReferenceGetValues:
		t, ok := f.objType[r.Object()]
		if !ok {
			return false
		}
		n := r.Count(sizes.FieldID)
		ids := f.fieldBuf[:0]
		for i := 0; i < n && r.Err() == nil; i++ {
			ids = append(ids, r.Field())
		}
		f.fieldBuf = ids
		return r.Err() == nil && f.classes.fieldsOfType(t, ids)
	case jdwp.CmdClassTypeSuperclass:
		// A command for classes: an array type's ID is not valid for it
		// (JDI never asks it; HotSpot answers, other VMs may not).
		if _, arr := f.classes.arrays[r.Class()]; arr || r.Err() != nil {
			return false
		}
	case jdwp.CmdMethodLineTable, jdwp.CmdMethodVariableTable, jdwp.CmdMethodVariableTableWithGeneric,
		jdwp.CmdMethodBytecodes, jdwp.CmdMethodIsObsolete:
		c := r.Class()
		if m := r.Method(); r.Err() != nil || !f.classes.declaredBy(m, c) {
			return false
		}
	case jdwp.CmdStackFrameGetValues, jdwp.CmdStackFrameThisObject:
		thread, fr := r.Thread(), r.Frame()
		var loc jdwp.Location
		if p := s.pred; p != nil {
			if !f.frames.hotspot || p.thread != thread || p.frame != fr || !f.suspendedNow(thread) {
				return false
			}
			loc = p.loc
		} else {
			fi, ok := frames[fr]
			if !ok || fi.thread != thread {
				return false
			}
			loc = fi.loc
		}
		if s.key.Cmd() == jdwp.CmdStackFrameThisObject {
			return r.Err() == nil
		}
		return f.slotsAskedLive(r, loc)
	}
	info, ok := keyable.Lookup(s.key.Cmd())
	return ok && info.Cacheable()
}

// slotsAskedLive reads the (slot, tag) pairs of a StackFrame.GetValues
// from r and says whether they are all live with their tags at loc.
func (f *facts) slotsAskedLive(r *jdwp.BodyReader, loc jdwp.Location) bool {
	n := r.Count(5)
	slots := f.slotBuf[:0]
	for i := 0; i < n && r.Err() == nil; i++ {
		slots = append(slots, slotTag{slot: r.Int32(), tag: jdwp.Tag(r.Uint8())})
	}
	f.slotBuf = slots
	return r.Err() == nil && r.Remaining() == 0 && f.classes.slotsLive(loc, slots)
}

// predictedSlotsLive says whether speculation s on a predicted frame may
// be served for a frame found at loc: a ThisObject always, a GetValues
// if every slot it asks is live with its tag at loc.
func (f *facts) predictedSlotsLive(s *spec, loc jdwp.Location, sizes jdwp.IDSizes) bool {
	if s.key.Cmd() != jdwp.CmdStackFrameGetValues {
		return true
	}
	r := jdwp.NewBodyReader(s.key.Params(), sizes)
	r.Thread()
	r.Frame()
	return f.slotsAskedLive(r, loc)
}

// visibleSlots appends to dst the slots JDI's StackFrame.visibleVariables
// lists at loc, as StackFrame.getValues of them asks (GetValues'
// parameters after the frame: the count, then each slot with its
// signature's tag, by slot): the variables of the method's table live at
// the code index, but for this and this$… (JDI does not list them). False
// if the table is not known or no variable is live there.
func (cf *classFacts) visibleSlots(dst []byte, loc jdwp.Location) ([]byte, bool) {
	vars, ok := cf.vars[methodOf(loc)]
	if !ok {
		return dst, false
	}
	live := make([]variable, 0, len(vars))
	for _, v := range vars {
		if !v.this && loc.Index >= v.start && loc.Index < v.start+uint64(v.length) {
			live = append(live, v)
		}
	}
	if len(live) == 0 {
		return dst, false
	}
	slices.SortStableFunc(live, func(a, b variable) int { return cmp.Compare(a.slot, b.slot) })
	w := jdwp.BodyWriter{Buf: dst}
	w.Int32(int32(len(live)))
	for _, v := range live {
		w.Int32(v.slot)
		w.Uint8(uint8(v.tag))
	}
	return w.Buf, true
}
