package speculator

import (
	"bytes"
	"encoding/binary"
	"slices"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
)

// An object's fields read in another order, or fewer of them.
// ObjectReference.GetValues answers the fields in the order asked, and a
// client may ask fields of an object in several orders at one stop
// (java-debug asks them sorted by name for its Variables view, and in
// declaration order where it formats an object), or some of the fields it
// read before: java-debug's asynchronous field listing waits for a type's
// own fields and its interfaces' but not its superclass's, so as its
// threads race it reads an object with or without the superclass's
// fields, from one stop to the next. A reply cached for the same object
// and fields that include every field asked answers the read, its values
// picked in the order asked: what the VM would have answered at the same
// moment, so the reply's validity and place are the cached one's
// (replyCache.lookup). The cache keeps, per object, the keys of its
// cached reads of the object's fields (fieldReads): their covers.

// maxFieldReads bounds the reads of one object's fields the cover index
// keeps (replyCache.fieldReads): the newest.
const maxFieldReads = 4

// fieldsObject is the object key (an ObjectReference.GetValues) reads,
// and its field IDs; ok is false for another command or parameters that
// do not parse.
func fieldsObject(key *keyable.Key, sizes jdwp.IDSizes) (obj jdwp.ObjectID, ids []byte, ok bool) {
	if key.Cmd() != jdwp.CmdObjectReferenceGetValues || sizes.ObjectID < 1 || sizes.FieldID < 1 || sizes.FieldID > 8 {
		return 0, nil, false
	}
	p := key.Params()
	r := jdwp.NewBodyReader(p, sizes)
	obj = r.Object()
	n := r.Count(sizes.FieldID)
	if r.Err() != nil || r.Remaining() != n*sizes.FieldID {
		return 0, nil, false
	}
	return obj, p[len(p)-r.Remaining():], true
}

// covers reports whether every field ID of want (f bytes each) is among
// have's.
func covers(have, want []byte, f int) bool {
	for i := 0; i+f <= len(want); i += f {
		if fieldAt(have, want[i:i+f], f) < 0 {
			return false
		}
	}
	return true
}

// fieldAt is the index of field ID id among ids (f bytes each), or -1.
func fieldAt(ids, id []byte, f int) int {
	for j := 0; j+f <= len(ids); j += f {
		if bytes.Equal(ids[j:j+f], id) {
			return j / f
		}
	}
	return -1
}

// coverKey is the key of a cached read of the same object as key (a read
// of an object's fields) whose fields include all of key's, other than
// key itself, if the index names one.
func (c *replyCache) coverKey(key *keyable.Key, sizes jdwp.IDSizes) (keyable.Key, bool) {
	obj, want, ok := fieldsObject(key, sizes)
	if !ok {
		return keyable.Key{}, false
	}
	for i := range c.fieldReads[obj] {
		k := &c.fieldReads[obj][i]
		if *k == *key {
			continue
		}
		if _, have, ok := fieldsObject(k, sizes); ok && covers(have, want, sizes.FieldID) {
			if _, cached := c.lru.Peek(*k); cached {
				return *k, true
			}
		}
	}
	return keyable.Key{}, false
}

// cover returns the cached entry that may answer key, a read of an
// object's fields, from a read of the same object's fields that include
// all of key's, and that read's key; nil if none (replyCache.find's
// rules). The key is returned by value: a pointer to it would move it to
// the heap.
func (c *replyCache) cover(key *keyable.Key, sizes jdwp.IDSizes) (*entry, keyable.Key) {
	k, ok := c.coverKey(key, sizes)
	if !ok {
		return nil, k
	}
	return c.find(&k), k
}

// covered reports whether key's fields are cached, usable, in a read
// that covers them (replyCache.has).
func (c *replyCache) covered(key *keyable.Key, sizes jdwp.IDSizes) bool {
	k, ok := c.coverKey(key, sizes)
	return ok && c.has(&k)
}

// indexFields records key (stored now) as a read of its object's fields,
// or forgets it (gone), for cover.
func (c *replyCache) indexFields(key *keyable.Key, stored bool) {
	obj, _, ok := fieldsObject(key, c.sizes)
	if !ok {
		return
	}
	reads := c.fieldReads[obj]
	i := slices.Index(reads, *key)
	switch {
	case stored && i < 0:
		if c.fieldReads == nil {
			c.fieldReads = map[jdwp.ObjectID][]keyable.Key{}
		}
		if len(reads) >= maxFieldReads {
			reads = slices.Delete(reads, 0, 1)
		}
		c.fieldReads[obj] = append(reads, *key)
	case !stored && i >= 0:
		if reads = slices.Delete(reads, i, i+1); len(reads) == 0 {
			delete(c.fieldReads, obj)
		} else {
			c.fieldReads[obj] = reads
		}
	}
}

// pickValues appends to dst the reply, with packet ID id, to key (the
// debugger's read of an object's fields) made from reply, the VM's reply
// to from (a read of the same object's fields that include key's): for
// each field key names, its value in from's reply. scratch holds the
// values' offsets (reused). ok is false if either does not parse or from
// does not name a field key does.
func pickValues(dst []byte, id uint32, key, from *keyable.Key, reply jdwp.Packet, sizes jdwp.IDSizes, scratch *[]int) (jdwp.Packet, bool) {
	f := sizes.FieldID
	obj, kids, ok := fieldsObject(key, sizes)
	fobj, fids, fok := fieldsObject(from, sizes)
	if !ok || !fok || obj != fobj || len(reply) < jdwp.HeaderSize || reply.ErrorCode() != jdwp.ErrorNone {
		return nil, false
	}
	n := len(fids) / f
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
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(kids)/f))
	for i := 0; i+f <= len(kids); i += f {
		j := fieldAt(fids, kids[i:i+f], f)
		if j < 0 {
			return nil, false
		}
		dst = append(dst, body[offs[j]:offs[j+1]]...)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start))
	return jdwp.Packet(dst[start:]), true
}
