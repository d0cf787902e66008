package speculator

import (
	"bytes"
	"encoding/binary"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
)

// An object's fields read in another order. ObjectReference.GetValues
// answers the fields in the order asked, and a client may ask the same
// fields of an object in several orders at one stop (java-debug asks them
// sorted by name for its Variables view, and in declaration order where it
// formats an object). A reply cached for the same object and the same set
// of fields answers every order of them, its values put in the order
// asked: what the VM would have answered, at the same moment, so the
// reply's validity and place are the cached one's (replyCache.lookup).
// The cache keeps, for each cached read of an object's fields, its
// canonical key (the field IDs in ascending order): twins.

// canonicalFields sets canon to key's ObjectReference.GetValues with its
// field IDs in ascending order. ok is false for another command, a field
// named twice, or parameters that do not parse.
func canonicalFields(canon, key *keyable.Key, sizes jdwp.IDSizes) bool {
	if key.Cmd() != jdwp.CmdObjectReferenceGetValues || sizes.ObjectID < 1 || sizes.FieldID < 1 || sizes.FieldID > 8 {
		return false
	}
	var buf [keyable.MaxParams]byte
	p := buf[:copy(buf[:], key.Params())]
	r := jdwp.NewBodyReader(p, sizes)
	r.ObjectID()
	n := r.Count(sizes.FieldID)
	if r.Err() != nil || r.Remaining() != n*sizes.FieldID {
		return false
	}
	ids := p[len(p)-r.Remaining():]
	f := sizes.FieldID
	// Insertion sort of n (at most a dozen or so: a key's bound) IDs.
	var tmp [8]byte
	for i := 1; i < n; i++ {
		for j := i; j > 0 && bytes.Compare(ids[(j-1)*f:j*f], ids[j*f:(j+1)*f]) > 0; j-- {
			copy(tmp[:f], ids[j*f:])
			copy(ids[j*f:(j+1)*f], ids[(j-1)*f:j*f])
			copy(ids[(j-1)*f:j*f], tmp[:f])
		}
	}
	for i := 1; i < n; i++ {
		if bytes.Equal(ids[(i-1)*f:i*f], ids[i*f:(i+1)*f]) {
			return false
		}
	}
	_, ok := keyable.Fill(canon, key.Cmd(), p, sizes)
	return ok
}

// twinKey is the key under which the cache holds key's fields in another
// order, if any.
func (c *replyCache) twinKey(key *keyable.Key, sizes jdwp.IDSizes) (keyable.Key, bool) {
	var canon keyable.Key
	if key.Cmd() != jdwp.CmdObjectReferenceGetValues || len(c.twins) == 0 || !canonicalFields(&canon, key, sizes) {
		return keyable.Key{}, false
	}
	t, ok := c.twins[canon]
	return t, ok && t != *key
}

// twin returns the cached entry that may answer key, a read of an
// object's fields, from the same fields asked in another order, and that
// order's key; nil if none (replyCache.find's rules). The key is
// returned by value: a pointer to it would move it to the heap.
func (c *replyCache) twin(key *keyable.Key, sizes jdwp.IDSizes) (*entry, keyable.Key) {
	t, ok := c.twinKey(key, sizes)
	if !ok {
		return nil, t
	}
	return c.find(&t), t
}

// hasTwin reports whether key's fields are cached, usable, in another
// order (replyCache.has).
func (c *replyCache) hasTwin(key *keyable.Key, sizes jdwp.IDSizes) bool {
	t, ok := c.twinKey(key, sizes)
	return ok && c.has(&t)
}

// indexTwin records the canonical key of key (stored now), or forgets
// it (gone), for twin.
func (c *replyCache) indexTwin(key *keyable.Key, stored bool) {
	if key.Cmd() != jdwp.CmdObjectReferenceGetValues {
		return
	}
	var canon keyable.Key
	if !canonicalFields(&canon, key, c.sizes) {
		return
	}
	switch t, ok := c.twins[canon]; {
	case stored:
		if c.twins == nil {
			c.twins = map[keyable.Key]keyable.Key{}
		}
		c.twins[canon] = *key
	case ok && t == *key:
		delete(c.twins, canon)
	}
}

// permuteValues appends to dst the reply, with packet ID id, to key (the
// debugger's read of an object's fields) made from reply, the VM's reply
// to twin (the same fields in another order): its values in key's order.
// scratch holds the values' offsets (reused). ok is false if either does
// not parse or they do not name the same fields.
func permuteValues(dst []byte, id uint32, key, twin *keyable.Key, reply jdwp.Packet, sizes jdwp.IDSizes, scratch *[]int) (jdwp.Packet, bool) {
	f := sizes.FieldID
	kp, tp := key.Params(), twin.Params()
	if len(kp) != len(tp) || len(kp) < sizes.ObjectID+4 || !bytes.Equal(kp[:sizes.ObjectID+4], tp[:sizes.ObjectID+4]) ||
		len(reply) < jdwp.HeaderSize || reply.ErrorCode() != jdwp.ErrorNone {
		return nil, false
	}
	kids, tids := kp[sizes.ObjectID+4:], tp[sizes.ObjectID+4:]
	if f < 1 || len(kids)%f != 0 {
		return nil, false
	}
	n := len(kids) / f
	if n > 64 {
		return nil, false
	}
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
	dst = jdwp.AppendReply(dst, id, jdwp.ErrorNone, body[:4])
	var taken uint64 // each of twin's values goes once
	for i := range n {
		j := 0
		for j < n && (taken&(1<<j) != 0 || !bytes.Equal(kids[i*f:(i+1)*f], tids[j*f:(j+1)*f])) {
			j++
		}
		if j == n {
			return nil, false
		}
		taken |= 1 << j
		dst = append(dst, body[offs[j]:offs[j+1]]...)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start))
	return jdwp.Packet(dst[start:]), true
}
