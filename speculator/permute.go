package speculator

import (
	"bytes"
	"encoding/binary"
	"slices"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
)

// Values read in another order, or fewer of them. ObjectReference.
// GetValues answers an object's fields, and StackFrame.GetValues a
// frame's variables (slots), in the order asked, and a client may ask
// them in several orders at one stop (java-debug asks an object's fields
// sorted by name for its Variables view, and in declaration order where it
// formats an object; Eclipse's JDI lists a frame's variables in its own
// order, not by slot), or some of the ones it read before: java-debug's
// asynchronous field listing waits for a type's own fields and its
// interfaces' but not its superclass's, so as its threads race it reads
// an object with or without the superclass's fields, from one stop to the
// next. A reply cached for the same object (frame) and values that include
// every one asked answers the read, its values picked in the order asked:
// what the VM would have answered at the same moment, so the reply's
// validity and place are the cached one's (replyCache.lookup). The cache
// keeps, per object and per frame, the keys of its cached reads
// (valueReads): their covers.

// maxValueReads bounds the reads of one object's fields (one frame's
// variables) the cover index keeps (replyCache.valueReads): the newest.
const maxValueReads = 4

// valuesOwner is what a read of values reads: an object's fields or a
// frame's variables (the command tells which ID space id is of).
type valuesOwner struct {
	cmd jdwp.Cmd
	id  uint64
}

// valuesOf is what key (an ObjectReference.GetValues or a StackFrame.
// GetValues) reads values of, and the values it names, unit bytes each: a
// field ID, or a variable's slot and its signature tag; ok is false for
// another command or parameters that do not parse.
func valuesOf(key *keyable.Key, sizes jdwp.IDSizes) (owner valuesOwner, ids []byte, unit int, ok bool) {
	p := key.Params()
	r := jdwp.NewBodyReader(p, sizes)
	switch key.Cmd() {
	case jdwp.CmdObjectReferenceGetValues:
		if sizes.ObjectID < 1 || sizes.FieldID < 1 || sizes.FieldID > 8 {
			return owner, nil, 0, false
		}
		owner.id, unit = r.ObjectID(), sizes.FieldID
	case jdwp.CmdStackFrameGetValues:
		if sizes.ObjectID < 1 || sizes.FrameID < 1 {
			return owner, nil, 0, false
		}
		r.ObjectID()
		owner.id, unit = r.FrameID(), 5 // a slot (int) and a tag (byte)
	default:
		return owner, nil, 0, false
	}
	owner.cmd = key.Cmd()
	n := r.Count(unit)
	if r.Err() != nil || r.Remaining() != n*unit {
		return owner, nil, 0, false
	}
	return owner, p[len(p)-r.Remaining():], unit, true
}

// covers reports whether every value of want (unit bytes each) is among
// have's.
func covers(have, want []byte, unit int) bool {
	for i := 0; i+unit <= len(want); i += unit {
		if valueAt(have, want[i:i+unit], unit) < 0 {
			return false
		}
	}
	return true
}

// valueAt is the index of value id among ids (unit bytes each), or -1.
func valueAt(ids, id []byte, unit int) int {
	for j := 0; j+unit <= len(ids); j += unit {
		if bytes.Equal(ids[j:j+unit], id) {
			return j / unit
		}
	}
	return -1
}

// coverKey is the key of a cached read of the same object's fields (the
// same frame's variables) as key whose values include all of key's, other
// than key itself, if the index names one.
func (c *replyCache) coverKey(key *keyable.Key, sizes jdwp.IDSizes) (keyable.Key, bool) {
	owner, want, unit, ok := valuesOf(key, sizes)
	if !ok {
		return keyable.Key{}, false
	}
	for i := range c.valueReads[owner] {
		k := &c.valueReads[owner][i]
		if *k == *key {
			continue
		}
		if _, have, _, ok := valuesOf(k, sizes); ok && covers(have, want, unit) {
			if _, cached := c.lru.Peek(*k); cached {
				return *k, true
			}
		}
	}
	return keyable.Key{}, false
}

// cover returns the cached entry that may answer key, a read of an
// object's fields (a frame's variables), from a read of the same ones that
// include all of key's, and that read's key; nil if none
// (replyCache.find's rules). The key is returned by value: a pointer to it would move it to
// the heap.
func (c *replyCache) cover(key *keyable.Key, sizes jdwp.IDSizes) (*entry, keyable.Key) {
	k, ok := c.coverKey(key, sizes)
	if !ok {
		return nil, k
	}
	return c.find(&k), k
}

// covered reports whether key's values are cached, usable, in a read
// that covers them (replyCache.has).
func (c *replyCache) covered(key *keyable.Key, sizes jdwp.IDSizes) bool {
	k, ok := c.coverKey(key, sizes)
	return ok && c.has(&k)
}

// indexValues records key (stored now) as a read of its object's fields
// (its frame's variables), or forgets it (gone), for cover.
func (c *replyCache) indexValues(key *keyable.Key, stored bool) {
	owner, _, _, ok := valuesOf(key, c.sizes)
	if !ok {
		return
	}
	reads := c.valueReads[owner]
	i := slices.Index(reads, *key)
	switch {
	case stored && i < 0:
		if c.valueReads == nil {
			c.valueReads = map[valuesOwner][]keyable.Key{}
		}
		if len(reads) >= maxValueReads {
			reads = slices.Delete(reads, 0, 1)
		}
		c.valueReads[owner] = append(reads, *key)
	case !stored && i >= 0:
		if reads = slices.Delete(reads, i, i+1); len(reads) == 0 {
			delete(c.valueReads, owner)
		} else {
			c.valueReads[owner] = reads
		}
	}
}

// pickValues appends to dst the reply, with packet ID id, to key (the
// debugger's read of an object's fields or a frame's variables) made from
// reply, the VM's reply to from (a read of the same object's fields or
// frame's variables that include key's): for each value key names, its
// value in from's reply. scratch holds the values' offsets (reused). ok
// is false if either does not parse or from does not name a value key
// does.
func pickValues(dst []byte, id uint32, key, from *keyable.Key, reply jdwp.Packet, sizes jdwp.IDSizes, scratch *[]int) (jdwp.Packet, bool) {
	owner, kids, unit, ok := valuesOf(key, sizes)
	fowner, fids, _, fok := valuesOf(from, sizes)
	if !ok || !fok || owner != fowner || len(reply) < jdwp.HeaderSize || reply.ErrorCode() != jdwp.ErrorNone {
		return nil, false
	}
	n := len(fids) / unit
	body := reply.Body()
	r := jdwp.NewBodyReader(body, sizes)
	if r.Count(1) != n {
		return nil, false
	}
	offs := append((*scratch)[:0], len(body)-r.Remaining())
	for range n {
		r.Value()
		offs = append(offs, len(body)-r.Remaining())
	}
	*scratch = offs
	if r.Err() != nil || r.Remaining() != 0 {
		return nil, false
	}
	start := len(dst)
	dst = jdwp.AppendReply(dst, id, jdwp.ErrorNone, nil)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(kids)/unit))
	for i := 0; i+unit <= len(kids); i += unit {
		j := valueAt(fids, kids[i:i+unit], unit)
		if j < 0 {
			return nil, false
		}
		dst = append(dst, body[offs[j]:offs[j+1]]...)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start))
	return jdwp.Packet(dst[start:]), true
}
