package speculator

import (
	"bytes"
	"cmp"
	"math/bits"
	"slices"
	"unicode"
	"unicode/utf8"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
)

// Object shapes: which fields of an object's type the debugger reads with
// ObjectReference.GetValues, by the type's signature and each field's name
// and declaring class (hops up the superclass chain from the type). Field
// IDs do not carry across sessions; names do. A later session of the same
// debugger reads the same fields of objects of that type at its first stop
// ahead of the debugger, with the field IDs this connection's own Fields
// replies handed out for the type and its superclasses (and safeToSend
// checks them against those replies again before sending).

// Bounds of the shapes a profile keeps.
const (
	maxShapes      = 256 // types
	maxShapeFields = 256 // fields per type
	maxHops        = 64  // superclass chain walked
)

// fieldRef names a field of a type: declared by the class hops
// superclasses up from it, with that name.
type fieldRef struct {
	Hops uint8  `json:"hops"`
	Name string `json:"name"`
}

// objShape is the fields (in the debugger's order) it read of objects of
// the type with signature Sig.
type objShape struct {
	Sig    string     `json:"sig"`
	Fields []fieldRef `json:"fields"`
}

// declaringClass walks hops superclasses up from t.
func (cf *classFacts) declaringClass(t jdwp.ClassID, hops uint8) (jdwp.ClassID, bool) {
	c := t
	for range hops {
		sup, ok := cf.super[c]
		if !ok || sup == 0 {
			return 0, false
		}
		c = sup
	}
	return c, true
}

// nameFields names the field IDs of an ObjectReference.GetValues tail (a
// count, then the IDs) asked of an object of type t; ok is false if any is
// not among the known fields of t and its superclasses.
func (cf *classFacts) nameFields(t jdwp.ClassID, tail []byte, sizes jdwp.IDSizes) ([]fieldRef, bool) {
	r := jdwp.NewBodyReader(tail, sizes)
	n := r.Count(sizes.FieldID)
	if r.Err() != nil || n == 0 || n > maxShapeFields {
		return nil, false
	}
	refs := make([]fieldRef, 0, n)
	for range n {
		id := r.Field()
		found := false
		c := t
		for hops := uint8(0); c != 0 && hops < maxHops && !found; hops++ {
			for _, f := range cf.fields[c] {
				if f.id == id {
					refs, found = append(refs, fieldRef{Hops: hops, Name: f.name}), true
					break
				}
			}
			c = cf.super[c] // 0 (stop) when unknown
		}
		if !found {
			return nil, false
		}
	}
	return refs, r.Err() == nil && r.Remaining() == 0
}

// instanceFields names the instance fields of t and its superclasses up
// the chain, t's own first, each class's in declaration order; visible
// leaves out those a field of the same name further down hides (JDI's
// ReferenceType.visibleFields: interfaces declare only static fields).
// ok is false while a class of the chain (its fields, its superclass) is
// not known, or no field is left.
func (cf *classFacts) instanceFields(t jdwp.ClassID, visible bool) (refs []fieldRef, ok bool) {
	hidden := map[string]bool{}
	c := t
	for hops := uint8(0); hops < maxHops; hops++ {
		fs, known := cf.fields[c]
		sup, supKnown := cf.super[c]
		if !known || !supKnown {
			return nil, false
		}
		for _, f := range fs {
			if !f.static && !(visible && hidden[f.name]) {
				refs = append(refs, fieldRef{Hops: hops, Name: f.name})
			}
		}
		for _, f := range fs {
			hidden[f.name] = visible
		}
		if sup == 0 {
			return refs, len(refs) > 0 && len(refs) <= maxShapeFields
		}
		c = sup
	}
	return nil, false
}

// fieldOrder is how a debugger lists the fields of an object whose type
// it never read: learned from the reads it makes (classFacts.ordersOf),
// kept in the profile, and carried by the prior's stop templates of each
// JDI (a fact of the debugger, not of a program).
type fieldOrder uint8

const (
	// orderVisible is JDI's ReferenceType.visibleFields, static ones left
	// out (instanceFields): OpenJDK's JDI workloads.
	orderVisible fieldOrder = iota
	// orderByName is every instance field of the type chain (a hidden
	// one too) sorted by name, case ignored, as String.compareToIgnoreCase
	// sorts: java-debug's Variables view.
	orderByName
	numOrders
)

// compareIgnoreCase compares a and b as Java's String.compareToIgnoreCase:
// character by character, each pair compared upper-cased, then
// lower-cased, then by length.
func compareIgnoreCase(a, b string) int {
	for a != "" && b != "" {
		x, n := utf8.DecodeRuneInString(a)
		y, m := utf8.DecodeRuneInString(b)
		a, b = a[n:], b[m:]
		if x == y {
			continue
		}
		x, y = unicode.ToUpper(x), unicode.ToUpper(y)
		if x == y {
			continue
		}
		if x, y = unicode.ToLower(x), unicode.ToLower(y); x != y {
			return int(x) - int(y)
		}
	}
	return utf8.RuneCountInString(a) - utf8.RuneCountInString(b)
}

// firstFields names the fields a debugger listing them in order o reads of
// an object of type t: what a debugger that never read an object of that
// type shows of it (instanceFields).
func (cf *classFacts) firstFields(t jdwp.ClassID, o fieldOrder) ([]fieldRef, bool) {
	refs, ok := cf.instanceFields(t, o == orderVisible)
	if ok && o == orderByName {
		slices.SortStableFunc(refs, func(a, b fieldRef) int { return compareIgnoreCase(a.Name, b.Name) })
	}
	return refs, ok
}

// ordersOf is the set (bit o: order o) of the orders o in which the
// fields of a GetValues tail (count, field IDs) asked of an object of type
// t are all of firstFields(t, o): none while the chain is not known, more
// than one where they agree (a type of one field).
func (cf *classFacts) ordersOf(t jdwp.ClassID, tail []byte, sizes jdwp.IDSizes) (set uint8) {
	for o := range numOrders {
		refs, ok := cf.firstFields(t, o)
		if !ok {
			return 0 // the chain is not known: no order is
		}
		w := jdwp.BodyWriter{Sizes: sizes}
		if cf.fieldTail(&w, t, refs) && bytes.Equal(w.Buf, tail) {
			set |= 1 << o
		}
	}
	return set
}

// orderIn picks from the orders set (ordersOf) the one prefer, if in it,
// else the only one; false if none.
func orderIn(set uint8, prefer fieldOrder) (fieldOrder, bool) {
	switch {
	case set&(1<<prefer) != 0:
		return prefer, true
	case set != 0 && set&(set-1) == 0:
		return fieldOrder(bits.TrailingZeros8(set)), true
	}
	return 0, false
}

// fieldTail writes the GetValues tail (count, field IDs) for refs of type
// t into w from the known fields of t and its superclasses; ok is false
// while any is not known yet (or no longer exists: a changed class).
func (cf *classFacts) fieldTail(w *jdwp.BodyWriter, t jdwp.ClassID, refs []fieldRef) bool {
	w.Int32(int32(len(refs)))
	for _, ref := range refs {
		c, ok := cf.declaringClass(t, ref.Hops)
		if !ok {
			return false
		}
		found := false
		for _, f := range cf.fields[c] {
			if f.name == ref.Name {
				w.Field(f.id)
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// shapeRules are the rules of the fields the debugger reads of objects:
// learned in the session by class ID (learner.fields) or carried across
// sessions by type signature and field name (learner.shapes, from the
// profile). They react to the values rules finding an object (specFields,
// called by valueRules, whose input they are), to an object's type
// (ReferenceType), and to the Fields and Superclass replies an object
// waiting for its fields needs (chain); they take and leave their share
// of the profile (importFrom, exportTo). What waits is the stop's
// (episode.wantFields).
type shapeRules struct{ *core }

// chain speculates the fields of an object waiting for its type, and of
// the objects waiting for their type's field IDs.
func (sh *shapeRules) chain(x *chained) {
	ep := &sh.learn.ep
	switch x.key.Cmd() {
	case jdwp.CmdObjectReferenceReferenceType:
		obj := jdwp.NewBodyReader(x.key.Params(), x.sizes).Object()
		r := jdwp.NewBodyReader(x.p.Body(), x.sizes)
		r.Uint8()
		t := r.Class()
		if r.Err() != nil {
			return
		}
		if lvl, ok := ep.wantFields[obj]; ok {
			delete(ep.wantFields, obj)
			sh.specFields(x.sizes, obj, t, lvl)
		}
	case jdwp.CmdClassTypeSuperclass:
		r := jdwp.NewBodyReader(x.p.Body(), x.sizes)
		if r.Class(); r.Err() == nil {
			sh.retryFields(x.sizes)
		}
	case jdwp.CmdReferenceTypeFields, jdwp.CmdReferenceTypeFieldsWithGeneric:
		sh.retryFields(x.sizes)
	}
}

// asked learns the order in which the debugger lists an object's fields
// from its first read of all of them that only one order explains
// (classFacts.ordersOf), once a session: a session has one debugger, and
// the cache hits of its reads need not list a type's fields again.
func (sh *shapeRules) asked(key *keyable.Key, _ keyable.Info, sizes jdwp.IDSizes) {
	if key.Cmd() != jdwp.CmdObjectReferenceGetValues || sizes.ObjectID == 0 || sh.learn.orderSeen {
		return
	}
	params := key.Params()
	t, ok := sh.facts.objType[jdwp.NewBodyReader(params, sizes).Object()]
	if !ok {
		return
	}
	if set := sh.facts.classes.ordersOf(t, params[sizes.ObjectID:], sizes); set != 0 && set&(set-1) == 0 {
		sh.learn.fieldOrder, sh.learn.orderSeen = fieldOrder(bits.TrailingZeros8(set)), true
	}
}

// exportTo leaves in p what the session learned of the fields the
// debugger reads, by signature, followed by old's shapes of types it did
// not meet.
func (sh *shapeRules) exportTo(p, old *profile, sizes jdwp.IDSizes) {
	var out []objShape
	seen := map[string]bool{}
	for t, tail := range sh.learn.fields {
		sig, ok := sh.facts.idSig[t]
		if !ok || seen[sig] || len(out) >= maxShapes {
			continue
		}
		if refs, ok := sh.facts.classes.nameFields(t, tail, sizes); ok {
			seen[sig] = true
			out = append(out, objShape{Sig: sig, Fields: refs})
		}
	}
	slices.SortFunc(out, func(a, b objShape) int { return cmp.Compare(a.Sig, b.Sig) }) // one order: a profile file does not churn
	if old != nil {
		for _, s := range old.Shapes {
			if !seen[s.Sig] && len(out) < maxShapes {
				seen[s.Sig] = true
				out = append(out, s)
			}
		}
	}
	p.Shapes = out
}

// importFrom gives the learner a profile's shapes by signature.
func (sh *shapeRules) importFrom(p *profile, _ jdwp.IDSizes) {
	l := &sh.learn
	l.shapes = make(map[string][]fieldRef, len(p.Shapes))
	for _, s := range p.Shapes {
		l.shapes[s.Sig] = s.Fields
	}
}

// shapesValid says whether shapes read back from a file are within bounds.
func shapesValid(shapes []objShape) bool {
	if len(shapes) > maxShapes {
		return false
	}
	for _, sh := range shapes {
		if len(sh.Fields) == 0 || len(sh.Fields) > maxShapeFields {
			return false
		}
		for _, f := range sh.Fields {
			if f.Hops >= maxHops {
				return false
			}
		}
	}
	return true
}

// specFields speculates the fields the debugger reads of objects of type t
// (learned in this session, or by the type's shape) for obj. An object
// whose shape cannot be resolved yet (its type's or a superclass's fields
// not known) waits in the stop's wantFields for the Fields and Superclass
// replies (retryFields).
func (sh *shapeRules) specFields(sizes jdwp.IDSizes, obj jdwp.ObjectID, t jdwp.ClassID, level uint8) {
	w := sh.writer(sizes)
	w.Object(obj)
	if tail, ok := sh.learn.fields[t]; ok {
		w.Buf = append(w.Buf, tail...)
	} else {
		refs, ok := sh.learn.shapes[sh.facts.idSig[t]]
		if !ok {
			// A type the debugger never read: all it lists of one.
			refs, ok = sh.facts.classes.firstFields(t, sh.learn.fieldOrder)
		}
		if !ok || !sh.facts.classes.fieldTail(&w, t, refs) {
			sh.learn.ep.wantFields[obj] = level
			sh.pbuf = w.Buf
			return
		}
	}
	sh.pbuf = w.Buf
	sh.specParams(sizes, jdwp.CmdObjectReferenceGetValues, sh.pbuf, kFields, nil, level)
}

// retryFields speculates the fields of the objects waiting for their
// type's field IDs, after a Fields or Superclass reply.
func (sh *shapeRules) retryFields(sizes jdwp.IDSizes) {
	ep := &sh.learn.ep
	var ready []jdwp.ObjectID
	for obj := range ep.wantFields {
		if _, ok := sh.facts.objType[obj]; ok {
			ready = append(ready, obj)
		}
	}
	for _, obj := range ready {
		lvl := ep.wantFields[obj]
		delete(ep.wantFields, obj)
		sh.specFields(sizes, obj, sh.facts.objType[obj], lvl) // may wait again
	}
}
