package speculator

import (
	"github.com/jdwpaccel/jdwpaccel/jdwp"
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

// shapesExport is what the session learned of the fields the debugger
// reads, by signature, followed by old's shapes of types it did not meet.
func (ss *session) shapesExport(old *profile, sizes jdwp.IDSizes) []objShape {
	var out []objShape
	seen := map[string]bool{}
	for t, tail := range ss.learn.fields {
		sig, ok := ss.facts.idSig[t]
		if !ok || seen[sig] || len(out) >= maxShapes {
			continue
		}
		if refs, ok := ss.facts.classes.nameFields(t, tail, sizes); ok {
			seen[sig] = true
			out = append(out, objShape{Sig: sig, Fields: refs})
		}
	}
	if old != nil {
		for _, sh := range old.Shapes {
			if !seen[sh.Sig] && len(out) < maxShapes {
				seen[sh.Sig] = true
				out = append(out, sh)
			}
		}
	}
	return out
}

// shapesImport gives the learner a profile's shapes by signature.
func (l *learner) shapesImport(p *profile) {
	l.shapes = make(map[string][]fieldRef, len(p.Shapes))
	for _, sh := range p.Shapes {
		l.shapes[sh.Sig] = sh.Fields
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
func (ss *session) specFields(sizes jdwp.IDSizes, obj jdwp.ObjectID, t jdwp.ClassID, level uint8) {
	w := ss.writer(sizes)
	w.Object(obj)
	if tail, ok := ss.learn.fields[t]; ok {
		w.Buf = append(w.Buf, tail...)
	} else {
		refs, ok := ss.learn.shapes[ss.facts.idSig[t]]
		if !ok {
			return
		}
		if !ss.facts.classes.fieldTail(&w, t, refs) {
			ss.learn.ep.wantFields[obj] = level
			ss.pbuf = w.Buf
			return
		}
	}
	ss.pbuf = w.Buf
	ss.specParams(sizes, jdwp.CmdObjectReferenceGetValues, ss.pbuf, kFields, nil, level)
}

// retryFields speculates the fields of the objects waiting for their
// type's field IDs, after a Fields or Superclass reply.
func (ss *session) retryFields(sizes jdwp.IDSizes) {
	ep := &ss.learn.ep
	var ready []jdwp.ObjectID
	for obj := range ep.wantFields {
		if _, ok := ss.facts.objType[obj]; ok {
			ready = append(ready, obj)
		}
	}
	for _, obj := range ready {
		lvl := ep.wantFields[obj]
		delete(ep.wantFields, obj)
		ss.specFields(sizes, obj, ss.facts.objType[obj], lvl) // may wait again
	}
}
