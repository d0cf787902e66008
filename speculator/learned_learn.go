package speculator

import (
	"encoding/binary"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
)

// The learned rules' learning (learned.go): where each ID of a stop's
// replies is, and each command the debugger asks as a template.

// asked learns a cacheable command the debugger asked during a stop.
func (lr *learnedRules) asked(key *keyable.Key, info keyable.Info, sizes jdwp.IDSizes) {
	st := lr.begin()
	if st == nil {
		return
	}
	if !st.asked[*key] && len(st.asked) < maxSpecPerStop {
		st.asked[*key] = true
		// A list fed before the debugger asked for it: what was held.
		if n := st.nodeOf[*key]; n != nil && st.fed[*key] && lr.holds(n) {
			if e := lr.cache.peek(key); e != nil && jdwp.Packet(e.reply).ErrorCode() == jdwp.ErrorNone {
				lr.feedList(n, key, jdwp.Packet(e.reply).Body(), sizes, 0, feedHeld)
			}
		} else if key.Cmd() == jdwp.CmdVirtualMachineAllThreads && !st.fed[*key] {
			lr.feedKnownThreads(sizes, feedHeld) // its reply is a round trip away
		}
	}
	predicted := st.emitted[*key]
	decide := lr.firstReadDecides()
	served := decide && (lr.cache.has(key) || lr.disp.pending(key) != nil) // before derive speculates it
	n := lr.derive(key, info, sizes, true)
	if decide {
		lr.confirm(key.Cmd(), served)
	}
	if !st.firstSeen {
		st.firstSeen = true
		if !lr.settled[lr.kind] { // a confirmed mark stays (settle)
			st.g.mark(n)
		}
	}
	if n == nil {
		return
	}
	if st.serial >= 3 && !n.verbatim() {
		lr.asks++
		if predicted {
			lr.predicted++
		}
	}
	n.seen = st.serial
	n.unused = 0
	if n.keys == nil {
		n.keys = map[keyable.Key]bool{}
	}
	if len(n.keys) < maxSpecPerStop {
		n.keys[*key] = true
	}
	if n.from != nil && n.moved > n.same {
		// Its IDs change from stop to stop: replayed verbatim, it would
		// ask the last stop's.
		lr.learn.explained(key, sizes)
	}
	if e := lr.cache.peek(key); e != nil && jdwp.Packet(e.reply).ErrorCode() == jdwp.ErrorNone {
		lr.index(key, n, jdwp.Packet(e.reply).Body(), sizes, true)
	}
}

// replied takes in where the IDs of a reply valid in the stop are.
func (lr *learnedRules) replied(r *reply) {
	if !r.ok || !r.valid {
		return
	}
	st := lr.begin()
	if st == nil || !hasPaths(r.c) {
		// A reply with no ID at a path has nothing to index (and derive
		// adds no template for a reply nobody asked).
		return
	}
	var key keyable.Key
	info, ok := keyable.Fill(&key, r.c, r.params, r.sizes)
	if !ok {
		return
	}
	if n := lr.derive(&key, info, r.sizes, false); n != nil {
		lr.index(&key, n, r.p.Body(), r.sizes, n.seen == st.serial)
	}
}

// index records where each ID of reply body (to key, template n) is.
func (lr *learnedRules) index(key *keyable.Key, n *lnode, body []byte, sizes jdwp.IDSizes, asked bool) {
	st := &lr.st
	lr.elig = lr.elig[:0]
	var named uint64
	var sk *keyable.Key // key's copy for the stop, once an origin names it
	walkReply(key.Cmd(), body, sizes, func(it *item) {
		if it.path.listed() && it.i < 64 && !(it.sp == spObject && jdwp.ThreadID(it.id) == lr.learn.ep.thread) {
			// (The stopped thread's reads are the event's templates.)
			if it.tag == jdwp.TagThread && lr.learn.namedBefore(jdwp.ThreadID(it.id)) {
				named |= 1 << it.i
			}
			lr.elig = addElig(lr.elig, it.path, tagBit(it.tag), it.i)
		}
		ik := idKey{sp: it.sp, id: it.id}
		os := st.origins[ik]
		for j := range os {
			if os[j].n == n && os[j].path == it.path && os[j].i == it.i {
				os[j].asked = os[j].asked || asked
				return
			}
		}
		if sk == nil {
			sk = lr.stopKey(key)
		}
		o := origin{n: n, key: sk, path: it.path, i: it.i, tag: it.tag, asked: asked}
		switch {
		case len(os) < maxOrigins:
			st.origins[ik] = lr.addOrigin(os, o)
		case asked:
			for j := range os {
				if !os[j].asked {
					os[j] = o
					return
				}
			}
		}
	})
	if named != 0 && len(st.named) < maxSpecPerStop {
		st.named[*key] |= named
	}
	for _, e := range lr.elig {
		st.eligible[eligKey{key: *key, path: e.path, tag: e.tag}] |= e.idx
	}
}

// eligAt is the elements of one reply at one path with one tag (its
// bit), which index gathers before it records them (lstop.eligible).
type eligAt struct {
	path path
	tag  uint16
	idx  uint64
}

// addElig adds element i at path with tag bit to els.
func addElig(els []eligAt, p path, tag uint16, i int) []eligAt {
	for j := range els {
		if els[j].path == p && els[j].tag == tag {
			els[j].idx |= 1 << i
			return els
		}
	}
	return append(els, eligAt{path: p, tag: tag, idx: 1 << i})
}

// stopKey is a copy of key that lives as long as the stop (lstop.keys).
func (lr *learnedRules) stopKey(key *keyable.Key) *keyable.Key {
	st := &lr.st
	if len(st.keys) == cap(st.keys) {
		st.keys = make([]keyable.Key, 0, 16)
	}
	st.keys = append(st.keys, *key)
	return &st.keys[len(st.keys)-1]
}

// addOrigin is os with o appended, grown in the stop's slab (lstop.slab)
// rather than on its own: a stop indexes hundreds of IDs (the class and
// method of each frame of a deep stack, at every frame), and the slab is
// kept from stop to stop.
func (lr *learnedRules) addOrigin(os []origin, o origin) []origin {
	if len(os) < cap(os) {
		return append(os, o)
	}
	st := &lr.st
	n := max(1, 2*cap(os))
	if len(st.slab)+n > cap(st.slab) {
		st.slab = make([]origin, 0, max(256, 2*cap(st.slab), n))
	}
	at := len(st.slab)
	st.slab = st.slab[:at+n]
	grown := st.slab[at : at+len(os)+1 : at+n]
	copy(grown, os)
	grown[len(os)] = o
	return grown
}

// derive returns the template of command key: found by its shape, or
// added (asked: the debugger sent it). Nil if a parameter does not fit or
// names a frame no reply of the stop listed.
func (lr *learnedRules) derive(key *keyable.Key, info keyable.Info, sizes jdwp.IDSizes, asked bool) *lnode {
	ep := &lr.learn.ep
	lr.params = info.Params(lr.params[:0])
	r := jdwp.NewBodyReader(key.Params(), sizes)
	var ps []lparam
	var from *lnode
	var fromKey keyable.Key
	elem := -1
	var obj jdwp.ObjectID
	var listTag jdwp.Tag
	var listID idKey
	frameKnown := false
	if o, ok := lr.choose(key, sizes); ok {
		from, fromKey, elem = o.n, *o.key, o.i
	}
	for _, pk := range lr.params {
		var p lparam
		start := r.Offset()
		var sp space
		var id uint64
		switch pk {
		case keyable.ParamObject:
			id = r.ObjectID()
			sp = spObject
			if len(ps) == 0 {
				obj = jdwp.ObjectID(id)
			}
			if jdwp.ThreadID(id) == ep.thread {
				p.src = srcThread
			}
		case keyable.ParamRefType:
			id = r.ReferenceTypeID()
			sp = spClass
			if id == ep.loc.Class {
				p.src = srcClass
			}
		case keyable.ParamMethod:
			id = r.MethodID()
			sp = spMethod
			if id == ep.loc.Method && len(ps) > 0 && ps[len(ps)-1].src == srcClass {
				p.src = srcMethod
			}
		case keyable.ParamFrame:
			id = r.FrameID()
			sp = spFrame
		case keyable.ParamInt:
			r.Int32()
		case keyable.ParamFieldIDs:
			rest := r.Bytes(r.Remaining())
			if o, ok := lr.allFields(obj, rest, sizes); ok {
				p.src, p.raw = srcAllFields, []byte{byte(o)}
			} else if pos, ok := lr.fieldPositions(obj, rest, sizes); ok {
				p.src, p.raw = srcFields, pos
			} else {
				p.raw = append([]byte(nil), rest...)
			}
		case keyable.ParamSlots:
			rest := r.Bytes(r.Remaining())
			if frameKnown {
				p.src = srcSlots
			} else {
				p.raw = append([]byte(nil), rest...)
			}
		}
		if r.Err() != nil {
			return nil
		}
		if sp != 0 && p.src == srcConst {
			if o, ok := lr.pick(idKey{sp: sp, id: id}, from, fromKey, elem); ok {
				if from == nil {
					from, fromKey, elem = o.n, *o.key, o.i
				}
				p.src, p.path = srcReply, o.path
				if o.path.listed() && listID.sp == 0 {
					listTag, listID = o.tag, idKey{sp: sp, id: id}
				}
				frameKnown = frameKnown || o.path == pFrame
			}
		}
		if sp == spFrame && p.src == srcConst {
			return nil // a frame of another stop: never valid again
		}
		if p.src == srcConst && p.raw == nil {
			p.raw = append([]byte(nil), key.Params()[start:r.Offset()]...)
		}
		ps = append(ps, p)
	}
	if !asked && !hasPaths(key.Cmd()) {
		// A reply nobody asked for yet and with no ID to trace: no
		// template until the debugger asks it.
		lr.shapeBuf = appendShape(lr.shapeBuf[:0], key.Cmd(), ps, from)
		return lr.st.g.byShape[string(lr.shapeBuf)]
	}
	n := lr.node(key.Cmd(), ps, from)
	if n == nil || !asked {
		return n
	}
	if from != nil && elem >= 0 {
		if lp := n.listParam(); lp != nil && elem < 64 {
			if n.asked == nil {
				n.asked = map[keyable.Key]uint64{}
			}
			n.asked[fromKey] |= 1 << elem
			n.tags |= tagBit(listTag)
			// An ID at several elements (the class of several frames)
			// is asked once for all of them.
			for _, o := range lr.st.origins[listID] {
				if o.n == from && *o.key == fromKey && o.path == lp.path && o.i < 64 {
					n.asked[fromKey] |= 1 << o.i
				}
			}
		}
	}
	return n
}

// choose picks the reply the parameters of key come from, and the
// element: an origin of its first ID not the event's at which its other
// IDs not the event's are found too (the class and method of one frame),
// preferring one the debugger asked; false if none fits all.
func (lr *learnedRules) choose(key *keyable.Key, sizes jdwp.IDSizes) (origin, bool) {
	ep := &lr.learn.ep
	var ids [4]idKey
	n := 0
	r := jdwp.NewBodyReader(key.Params(), sizes)
	for _, pk := range lr.params {
		var k idKey
		switch pk {
		case keyable.ParamObject:
			if k = (idKey{sp: spObject, id: r.ObjectID()}); jdwp.ThreadID(k.id) == ep.thread {
				continue
			}
		case keyable.ParamRefType:
			if k = (idKey{sp: spClass, id: r.ReferenceTypeID()}); k.id == ep.loc.Class {
				continue
			}
		case keyable.ParamMethod:
			k = idKey{sp: spMethod, id: r.MethodID()}
		case keyable.ParamFrame:
			k = idKey{sp: spFrame, id: r.FrameID()}
		default:
			continue
		}
		if n < len(ids) {
			ids[n] = k
			n++
		}
	}
	if n == 0 || r.Err() != nil {
		return origin{}, false
	}
	var best origin
	found := false
	for _, o := range lr.st.origins[ids[0]] {
		fits := true
		for _, k := range ids[1:n] {
			if _, ok := lr.pickIn(k, o.n, *o.key, o.i); !ok {
				fits = false
				break
			}
		}
		if fits && (!found || o.asked && !best.asked) {
			best, found = o, true
		}
	}
	return best, found
}

// pickIn is the origin of an ID in reply key (of template n) at element
// i, or not at a list.
func (lr *learnedRules) pickIn(k idKey, n *lnode, key keyable.Key, i int) (origin, bool) {
	for _, o := range lr.st.origins[k] {
		if o.n == n && *o.key == key && (o.i == i || !o.path.listed()) {
			return o, true
		}
	}
	return origin{}, false
}

// pick chooses the origin of an ID: in reply fromKey (of template from)
// at element elem when from is set (the parameters before it came from
// there), else the first, preferring one the debugger asked.
func (lr *learnedRules) pick(k idKey, from *lnode, fromKey keyable.Key, elem int) (origin, bool) {
	if from != nil {
		return lr.pickIn(k, from, fromKey, elem)
	}
	os := lr.st.origins[k]
	for _, o := range os {
		if o.asked {
			return o, true
		}
	}
	if len(os) > 0 {
		return os[0], true
	}
	return origin{}, false
}

// allFields is the order in which the field IDs of an
// ObjectReference.GetValues tail asked of obj are all its type's fields
// (classFacts.ordersOf; the debugger's own where several are), if they
// are: a template that holds for an object of any type (and a prior may
// carry), where positions hold for one.
func (lr *learnedRules) allFields(obj jdwp.ObjectID, tail []byte, sizes jdwp.IDSizes) (fieldOrder, bool) {
	t, ok := lr.facts.objType[obj]
	if !ok {
		return 0, false
	}
	return orderIn(lr.facts.classes.ordersOf(t, tail, sizes), lr.learn.fieldOrder)
}

// fieldPositions names the field IDs of an ObjectReference.GetValues
// tail asked of obj by their position in its type chain: 2 bytes each,
// the hops up from the type and the index among that class's declared
// fields. False while obj's type chain is not known.
func (lr *learnedRules) fieldPositions(obj jdwp.ObjectID, tail []byte, sizes jdwp.IDSizes) ([]byte, bool) {
	t, ok := lr.facts.objType[obj]
	if !ok {
		return nil, false
	}
	cf := &lr.facts.classes
	r := jdwp.NewBodyReader(tail, sizes)
	n := r.Count(sizes.FieldID)
	if r.Err() != nil || n == 0 || n > maxShapeFields {
		return nil, false
	}
	out := make([]byte, 0, 2*n)
	for range n {
		id := r.Field()
		found := false
		c := t
		for hops := 0; c != 0 && hops < maxHops && !found; hops++ {
			for i, f := range cf.fields[c] {
				if f.id == id && i < 256 {
					out, found = append(out, byte(hops), byte(i)), true
					break
				}
			}
			c = cf.super[c]
		}
		if !found {
			return nil, false
		}
	}
	return out, r.Err() == nil && r.Remaining() == 0
}

// node finds or adds the template of command c with parameters ps.
func (lr *learnedRules) node(c jdwp.Cmd, ps []lparam, from *lnode) *lnode {
	g := lr.st.g
	from = readFrom(ps, from)
	lr.shapeBuf = appendShape(lr.shapeBuf[:0], c, ps, from)
	if n := g.byShape[string(lr.shapeBuf)]; n != nil {
		return n
	}
	if len(g.nodes) >= maxLNodes {
		return nil
	}
	shape := string(lr.shapeBuf)
	n := &lnode{cmd: c, params: ps, from: from, shape: shape}
	g.byShape[shape] = n
	g.nodes = append(g.nodes, n)
	if from != nil {
		from.children = append(from.children, n)
	}
	return n
}

// readFrom is the template a template of parameters ps reads from: from,
// if a parameter comes from its reply; none (a root, replayed at the
// event) if every one comes from the event or is constant (the variable
// table of the event's method, which a debugger asks once it has the
// frames, needs nothing of them).
func readFrom(ps []lparam, from *lnode) *lnode {
	for _, p := range ps {
		if p.src == srcReply {
			return from
		}
	}
	return nil
}

// lshape is a template's identity: its command and its parameters'
// origins (not the list indices, which are learned).
func lshape(c jdwp.Cmd, ps []lparam, from *lnode) string {
	return string(appendShape(nil, c, ps, from))
}

// appendShape appends the template's identity (lshape) to b: a lookup
// keyed by it (string(b) in the index) need not allocate a string.
func appendShape(b []byte, c jdwp.Cmd, ps []lparam, from *lnode) []byte {
	b = append(b, byte(c.Set), byte(c.Cmd))
	for _, p := range ps {
		b = append(b, byte(p.src), byte(p.path))
		b = binary.BigEndian.AppendUint16(b, uint16(len(p.raw)))
		b = append(b, p.raw...)
	}
	if from != nil {
		b = append(b, from.shape...)
	}
	return b
}

// confirm holds the debugger's reads at the session's first stop of a
// kind against the profile's first read there: the command its debugger
// read first at its last stop of that kind (lnode.first). Debuggers on one
// JDI attach alike, command for command (jdb and an IDE on OpenJDK's), so
// the profile taken (take) may be another debugger's; what each reads
// first at a stop tells them apart (an IDE its thread list, jdb the
// stopped thread's frames). The profile's read confirms it if it comes
// before a read c that refutes it: one nothing here serves (served:
// neither cached nor in flight) that reads the stopped thread's stack or
// that the profile's debugger never read at such a stop. An asynchronous
// debugger (java-debug) sends reads it began while the VM ran (names of
// threads) as the event comes, before the stop's own; a read the stop's
// guesses serve costs nothing to look past. Near the debugger, such a
// stop's speculation waits for the decision (session.awaitFirst), so the
// other debugger's stop costs nothing (settle). Not at a far end, which is
// told its near end's reads in reports, in no order a debugger read them
// in (confirmAtEnd).
func (lr *learnedRules) confirm(c jdwp.Cmd, served bool) {
	first := lr.profileFirst(lr.kind)
	if first == nil {
		if lr.learn.firstRead == firstUnknown {
			lr.learn.firstRead = firstConfirmed // nothing to hold it against
		}
		return
	}
	switch {
	case first.cmd == c:
		lr.settle(lr.kind, true)
	case !served && (stackRead(c) || !lr.profileAsks(lr.kind, c)):
		lr.settle(lr.kind, false)
	}
}

// stackRead says whether c reads a thread's stack (its frames, their
// values): only a suspended thread answers those, so a debugger sends
// them only once it has the stop's event.
func stackRead(c jdwp.Cmd) bool {
	return c == jdwp.CmdThreadReferenceFrames || c == jdwp.CmdThreadReferenceFrameCount || c.Set == jdwp.SetStackFrame
}

// profileAsks says whether the profile's debugger read c at its stops of
// kind k (an imported template of it).
func (lr *learnedRules) profileAsks(k jdwp.EventKind, c jdwp.Cmd) bool {
	if g := lr.graphs[k]; g != nil {
		for _, n := range g.nodes {
			if n.imported && n.cmd == c {
				return true
			}
		}
	}
	return false
}

// confirmAtEnd, at a far end, holds the session's first stop of a kind,
// as it ends, against the profile: confirmed if its debugger asked the
// profile's first read at all (a far end that trusted the profile
// gathered the stop at once; one that did not, and was told no read that
// decided, gathered nothing of it); what a refuted profile would have the
// next stops and the next session's profile replay goes (settle).
func (lr *learnedRules) confirmAtEnd(st *lstop) {
	if first := lr.profileFirst(st.kind); first != nil {
		lr.settle(st.kind, first.seen == st.serial)
	}
}

// settle records what the session's first stop of kind k said of the
// profile. If it refuted it, the profile's templates this session's
// debugger has not asked rest (as restImported), what the learner took
// of it is forgotten (forgetProfile), and their speculation not sent yet
// is dropped.
func (lr *learnedRules) settle(k jdwp.EventKind, ok bool) {
	if lr.settled == nil {
		lr.settled = map[jdwp.EventKind]bool{}
	}
	lr.settled[k] = ok
	if ok {
		if lr.learn.firstRead == firstUnknown {
			lr.learn.firstRead = firstConfirmed
		}
		// The profile's first read stays the kind's mark, whatever came
		// before it here (a straggler of the debugger's).
		if g, first := lr.graphs[k], lr.firsts[k]; g != nil && first != nil {
			g.mark(first)
		}
		return
	}
	lr.learn.firstRead = firstRefuted
	for _, g := range lr.graphs {
		for _, n := range g.nodes {
			if n.imported && n.seen == 0 {
				n.unused = max(n.unused, 2)
			}
		}
	}
	lr.learn.forgetProfile()
	for _, s := range lr.learn.ep.specs {
		if !s.sent && !s.cancelled && (s.lnode != nil && s.lnode.imported && s.lnode.seen == 0 ||
			!lr.learn.kindAllowed(s.kind, s.key.Cmd())) {
			lr.disp.cancel(s)
			s.cancelled = true
		}
	}
}

// profileFirst is the profile's first read at a stop of kind k
// (lnode.first), while this session's first stop of the kind has not
// confirmed it.
func (lr *learnedRules) profileFirst(k jdwp.EventKind) *lnode {
	if _, ok := lr.settled[k]; ok {
		return nil
	}
	return lr.firsts[k]
}

// unconfirmed says whether the profile waits for this stop's first read
// to be confirmed (confirm).
func (lr *learnedRules) unconfirmed() bool { return lr.profileFirst(lr.kind) != nil }
