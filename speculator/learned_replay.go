package speculator

import (
	"bytes"
	"encoding/binary"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
)

// The learned rules' replay (learned.go): the roots at wave 0, then each
// reply fed to the templates that read from it.

// wave replays, at wave 0, the templates whose parameters the event and
// constants give: those that read only the stopped thread or constants
// (its suspend count, its frames) where the session's own templates
// (learner.templates, the stop rules') would not: at a first stop
// (core.guessesLearned), and at the first stop of a kind after stops of
// another (the first breakpoint after class prepare stops, whose reads
// the templates are).
func (lr *learnedRules) wave(w int, sizes jdwp.IDSizes) {
	if w != 0 {
		return
	}
	st := lr.begin()
	if st == nil {
		return
	}
	verbatim := lr.guessesLearned() || lr.learn.profiled && !lr.facts.farEnd && lr.askedKind != lr.kind
	for _, n := range st.replay.nodes {
		if n.from == nil && n.live() && (verbatim || !n.verbatim()) {
			if params, ok := lr.build(n, nil, sizes); ok {
				lr.emit(n, params, sizes, 0, false)
			}
		}
	}
	how := feedAll
	if !lr.facts.farEnd {
		how = feedHold
	}
	lr.feedKnownThreads(sizes, how)
}

// feedKnownThreads replays, on each thread the last AllThreads reply of
// the session listed (learner.threads), the templates that read every
// thread of the stop's AllThreads reply (the names and statuses a
// debugger shows in its thread list), as how says, once each at the
// stop: without waiting for the stop's own AllThreads reply, one round
// trip, which then adds the threads started since. A thread that ended
// since answers with the VM's error, what the debugger would get; the
// IDs are the VM's own, from this connection's replies.
func (lr *learnedRules) feedKnownThreads(sizes jdwp.IDSizes, how feedHow) {
	st := &lr.st
	if st.threadsFed&(1<<how) != 0 || len(lr.learn.threads) == 0 {
		return
	}
	var n *lnode
	for _, r := range st.replay.nodes {
		if r.from == nil && r.cmd == jdwp.CmdVirtualMachineAllThreads && r.live() {
			n = r
			break
		}
	}
	if n == nil {
		return
	}
	st.threadsFed |= 1 << how
	for i, t := range lr.learn.threads {
		if t == 0 {
			continue
		}
		el := [1]item{{sp: spObject, id: uint64(t), path: pThread, i: i, tag: jdwp.TagThread}}
		lr.feedElement(n, el[:], sizes, 0, how, true)
	}
}

// freshen asks again a read of running state (key) the stop's
// speculation made at an earlier moment and the debugger has not used,
// so that a list's reads replayed now share one instant: a debugger that
// reads a list's elements from two moments reads the earlier one's out
// of place (moment.go), one round trip lost.
func (lr *learnedRules) freshen(key *keyable.Key, sizes jdwp.IDSizes) {
	s := lr.disp.pending(key)
	if s == nil {
		if e := lr.cache.peek(key); e != nil {
			s = e.rec
		}
	}
	if s != nil && s.rereadable() && lr.facts.running(s.info, s.subj) {
		lr.askAgain(s, sizes)
	}
}

// verbatim says whether a root is the verbatim templates' (learner.go),
// replayed in their own waves: constant parameters, or a ThreadReference
// command about the stopped thread with constant parameters besides (rel).
// A template of the learned rules all the same: where the IDs of its
// reply are is learned from it.
func (n *lnode) verbatim() bool {
	for i, p := range n.params {
		rel := i == 0 && p.src == srcThread && n.cmd.Set == jdwp.SetThreadReference
		if p.src != srcConst && !rel {
			return false
		}
	}
	return true
}

// live says whether a template is replayed: asked at some stop (or in
// the session the profile came from), and its replay not left unused
// twice running since.
func (n *lnode) live() bool { return (n.seen != 0 || n.imported) && n.unused < 2 }

// build writes the parameters of template n, its srcReply ones from the
// element els (nil for a root).
//
// A srcConst ID is one this session's debugger sent at an earlier stop of
// this connection (a profile keeps none: learnedValid), so the VM handed
// it out here: the stale-ID guard in front of the speculator (package
// staleid) answers, and so keeps from the learner, every command whose
// first ID this debugger was never sent. It may have gone since: an
// object collected or a class unloaded gets the VM's INVALID_OBJECT or
// INVALID_CLASS (HotSpot checks object and class IDs against its table,
// and never reuses one within a connection); a method ID stays paired
// with the class the debugger sent it with (HotSpot clears an unloaded
// class's method IDs, INVALID_METHODID). A frame ID is never constant
// (learnedRules.derive: a frame of another stop). Field IDs go through
// safeToSend's check against the object's own type chain.
func (lr *learnedRules) build(n *lnode, els []*item, sizes jdwp.IDSizes) ([]byte, bool) {
	ep := &lr.learn.ep
	w := jdwp.BodyWriter{Buf: lr.buf[:0], Sizes: sizes}
	kinds := keyableParams(n.cmd)
	if len(kinds) != len(n.params) {
		return nil, false
	}
	var obj jdwp.ObjectID
	var loc jdwp.Location
	locKnown := false
	for i, p := range n.params {
		var id uint64
		switch p.src {
		case srcConst:
			w.Buf = append(w.Buf, p.raw...)
			if i == 0 && kinds[i] == keyable.ParamObject && len(p.raw) == sizes.ObjectID {
				obj = jdwp.ObjectID(readBE(p.raw))
			}
			continue
		case srcThread:
			id = uint64(ep.thread)
		case srcClass:
			id = ep.loc.Class
		case srcMethod:
			id = ep.loc.Method
		case srcReply:
			found := false
			for _, it := range els {
				if it.path == p.path {
					id, found = it.id, true
					if it.path == pFrame {
						loc, locKnown = it.loc, true
					}
					break
				}
			}
			if !found {
				return nil, false
			}
		case srcSlots:
			if !locKnown {
				return nil, false
			}
			lists, ok := lr.frameSlots(loc)
			if !ok {
				return nil, false
			}
			w.Buf = append(w.Buf, lists[0]...) // the likeliest (the others: kFrameValues)
			continue
		case srcFields:
			t, ok := lr.facts.objType[obj]
			if !ok || !lr.fieldTail(&w, t, p.raw) {
				lr.buf = w.Buf
				return nil, false
			}
			continue
		case srcAllFields:
			t, ok := lr.facts.objType[obj]
			cf := &lr.facts.classes
			var refs []fieldRef
			if ok {
				refs, ok = cf.firstFields(t, fieldOrder(p.raw[0]))
			}
			if !ok || !cf.fieldTail(&w, t, refs) {
				lr.buf = w.Buf
				return nil, false
			}
			continue
		}
		switch kinds[i] {
		case keyable.ParamObject:
			w.ObjectID(id)
			if i == 0 {
				obj = jdwp.ObjectID(id)
			}
		case keyable.ParamRefType:
			w.ReferenceTypeID(id)
		case keyable.ParamMethod:
			w.MethodID(id)
		case keyable.ParamFrame:
			w.FrameID(id)
		default:
			return nil, false
		}
	}
	lr.buf = w.Buf
	switch n.cmd {
	case jdwp.CmdArrayReferenceGetValues:
		return lr.cutToLength(w.Buf, sizes)
	case jdwp.CmdThreadReferenceFrames:
		allFrames(w.Buf, &lr.facts, sizes)
	}
	return w.Buf, true
}

// allFrames makes a Frames (params) of the stopped thread, on the
// reference agent of HotSpot, ask every frame: its reply answers any
// range (frames_slice.go).
func allFrames(params []byte, f *facts, sizes jdwp.IDSizes) {
	if !f.frames.hotspot || len(params) != sizes.ObjectID+8 || !f.suspendedNow(jdwp.NewBodyReader(params, sizes).Thread()) {
		return
	}
	binary.BigEndian.PutUint32(params[sizes.ObjectID:], 0)
	binary.BigEndian.PutUint32(params[sizes.ObjectID+4:], 0xFFFFFFFF)
}

// cutToLength fits the elements an ArrayReference.GetValues (params)
// reads to the array's length, if the cache says it; false if it reads
// none. A template read from the first element fewer than a page
// (arrPage) read a whole array, as the debugger reads one (learner.arrayRead):
// it reads the whole of this one, up to a page, and none while its length
// is not known (a guess at it is wasted unless the lengths agree; the
// value rules read such an array once its length came: kArrayValues).
func (lr *learnedRules) cutToLength(params []byte, sizes jdwp.IDSizes) ([]byte, bool) {
	r := jdwp.NewBodyReader(params, sizes)
	arr, first, n := r.Object(), r.Int32(), r.Int32()
	length, known := lr.arrayLength(arr, sizes)
	whole := first == 0 && n < arrPage
	switch {
	case r.Err() != nil:
		return nil, false
	case whole && !known:
		return nil, false
	case whole:
		n = min(length, arrPage)
	case !known || first+n <= length:
		return params, true
	case first >= length:
		return nil, false
	default:
		n = length - first
	}
	if n <= 0 {
		return nil, false
	}
	binary.BigEndian.PutUint32(params[len(params)-4:], uint32(n))
	return params, true
}

// keyableParams is command c's parameter layout.
func keyableParams(c jdwp.Cmd) []keyable.Param {
	info, ok := keyable.Lookup(c)
	if !ok {
		return nil
	}
	var a [4]keyable.Param
	return info.Params(a[:0])
}

func readBE(b []byte) uint64 {
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return v
}

// fieldTail writes the GetValues tail for the field positions pos of type
// t from its chain's known fields; false while one is not known.
func (lr *learnedRules) fieldTail(w *jdwp.BodyWriter, t jdwp.ClassID, pos []byte) bool {
	cf := &lr.facts.classes
	w.Int32(int32(len(pos) / 2))
	for i := 0; i+1 < len(pos); i += 2 {
		c, ok := cf.declaringClass(t, pos[i])
		if !ok {
			return false
		}
		fs, known := cf.fields[c]
		if !known || int(pos[i+1]) >= len(fs) {
			return false
		}
		w.Field(fs[pos[i+1]].id)
	}
	return true
}

// emit replays template n with params: its cached reply feeds its
// children at once; otherwise it is speculated, and its reply feeds them
// in the chain. fresh asks again what the stop read ahead at an earlier
// moment (freshen).
func (lr *learnedRules) emit(n *lnode, params []byte, sizes jdwp.IDSizes, depth int, fresh bool) {
	st := &lr.st
	var key keyable.Key
	if _, ok := keyable.Fill(&key, n.cmd, params, sizes); !ok {
		return
	}
	if _, dup := st.nodeOf[key]; !dup {
		st.nodeOf[key] = n
	}
	if len(st.emitted) < maxSpecPerStop {
		st.emitted[key] = true
	}
	if fresh {
		lr.freshen(&key, sizes)
	}
	if e := lr.cache.peek(&key); e != nil {
		if p := jdwp.Packet(e.reply); p.ErrorCode() == jdwp.ErrorNone {
			lr.feed(n, &key, p.Body(), sizes, depth+1)
		}
		return
	}
	if s := lr.submitNew(sizes, spec{kind: kLearned, lnode: n}, n.cmd, params); s != nil {
		st.specs = append(st.specs, s)
	}
}

// chain feeds a reply valid in the stop to the children of its template.
func (lr *learnedRules) chain(x *chained) {
	n := lr.nodeOf(x.key, x.sizes)
	if n == nil {
		return
	}
	lr.feed(n, x.key, x.p.Body(), x.sizes, 0)
	switch x.key.Cmd() {
	case jdwp.CmdObjectReferenceReferenceType, jdwp.CmdReferenceTypeFields, jdwp.CmdReferenceTypeFieldsWithGeneric,
		jdwp.CmdClassTypeSuperclass:
		lr.retryFields(x.sizes)
	}
}

// nodeOf is the template whose children the reply to key feeds: the one
// that replayed it, else its own in the stop's graph (nil if none fits, or
// if no stop can begin).
func (lr *learnedRules) nodeOf(key *keyable.Key, sizes jdwp.IDSizes) *lnode {
	st := lr.begin()
	if st == nil {
		return nil
	}
	if n := st.nodeOf[*key]; n != nil {
		return n
	}
	info, _ := keyable.Lookup(key.Cmd())
	n := lr.derive(key, info, sizes, false)
	if n != nil {
		st.nodeOf[*key] = n
	}
	return n
}

// feed replays the live children of template n on the reply body to key.
//
// A list of the whole VM (the reply of a root template, whose parameters
// the stop does not give: the thread list) that the debugger has not
// asked for at this stop is not replayed on by the templates of the
// profile this session began from until it asks: a debugger new to this
// session may show no such list (jdb after IntelliJ: their JDI's attach
// is the same, so is their profile), and replayed, each is a command per
// element (the name and status of every thread). It costs no round trip
// where the debugger is near and shows the list first, as IDEs do (it
// asks before the reply is back); a far end, whose near end serves the
// debugger, replays at once. The lists of the stop's own state (frames,
// values) are replayed at once: every debugger reads them.
func (lr *learnedRules) feed(n *lnode, key *keyable.Key, body []byte, sizes jdwp.IDSizes, depth int) {
	st := &lr.st
	if st.fed[*key] || depth > maxFeed || len(n.children) == 0 {
		return
	}
	st.fed[*key] = true
	how := feedAll
	if lr.holds(n) && !st.asked[*key] {
		how = feedHold
	}
	lr.feedList(n, key, body, sizes, depth, how)
}

// holds says whether template n's reply is a list whose profile
// templates wait for the debugger to ask for it (feed).
func (lr *learnedRules) holds(n *lnode) bool { return n.from == nil && !lr.facts.farEnd }

// feedHow is which of a template's children feedList replays.
type feedHow uint8

const (
	feedAll  feedHow = iota // every live child
	feedHold                // all but the profile's list templates, held until the debugger asks (feed)
	feedHeld                // only those, once it asked
)

// heldUntilAsked says whether template c replays on each element of a
// list and came from the profile, not asked in this session yet (feed).
func (c *lnode) heldUntilAsked() bool {
	return c.imported && c.seen == 0 && c.listParam() != nil
}

// feedList replays the children of template n (as how says) on the
// elements of the reply body to key.
func (lr *learnedRules) feedList(n *lnode, key *keyable.Key, body []byte, sizes jdwp.IDSizes, depth int, how feedHow) {
	// The reply's items, grouped by element, on top of the items stack
	// (lr.items): feeding them may feed a cached reply in turn, whose
	// items go above these and are popped before these are.
	start := len(lr.items)
	walkReply(key.Cmd(), body, sizes, func(it *item) {
		if len(lr.items)-start < 4*maxSpecPerStop {
			lr.items = append(lr.items, *it)
		}
	})
	items := lr.items[start:]
	defer func() { lr.items = lr.items[:start] }()
	for i := 0; i < len(items); {
		j := i
		for j < len(items) && items[j].i == items[i].i {
			j++
		}
		lr.feedElement(n, items[i:j], sizes, depth, how, false)
		i = j
	}
}

// feedElement replays the live children of template n (as how says) on
// one element of its reply (its items, all of one index), or its only
// one.
func (lr *learnedRules) feedElement(n *lnode, el []item, sizes jdwp.IDSizes, depth int, how feedHow, everyOnly bool) {
	var els [4]*item
	for _, c := range n.children {
		if !c.live() {
			continue
		}
		if lp := c.listParam(); everyOnly && (lp == nil || !lp.all) {
			continue // an element by its index: the known list's indices are not the new reply's
		}
		if h := c.heldUntilAsked(); how == feedHeld && !h || how == feedHold && h {
			continue
		}
		if lp := c.listParam(); lp != nil && !lr.wanted(lp, el) || lp == nil && el[0].i != 0 {
			continue
		}
		ps := els[:0]
		for k := range el {
			ps = append(ps, &el[k])
		}
		params, ok := lr.build(c, ps, sizes)
		if !ok {
			if c.cmd == jdwp.CmdObjectReferenceGetValues {
				lr.waitFor(c, ps)
			}
			continue
		}
		// The known threads fed as the debugger asks (a later turn than
		// the event's): the stopped thread's own name and status, read at
		// the event, are read again with the others, in one instant.
		lr.emit(c, params, sizes, depth, everyOnly && how == feedHeld)
	}
}

// frame feeds one frame of a Frames reply valid in the stop to the
// children of the Frames template (a Frames reply goes to the framers,
// not the chain).
func (lr *learnedRules) frame(x *frameSeen) {
	if !x.speculating || x.key == nil {
		return
	}
	n := lr.nodeOf(x.key, x.sizes)
	if n == nil {
		return
	}
	el := frameItems(uint64(x.frame), x.loc, x.index)
	lr.feedElement(n, el[:], x.sizes, 0, feedAll, false)
	// What a debugger reads of each of the stopped thread's frames does
	// not depend on how many it listed at once: a profile's templates of
	// a frame may hang off a Frames template of another length (a prior
	// learned from a debugger that lists them all, for one that lists 20).
	for _, o := range lr.st.replay.nodes {
		if o != n && sameFramesFrom(o, n) && o.live() {
			lr.feedElement(o, el[:], x.sizes, 0, feedAll, false)
		}
	}
}

// sameFramesFrom says whether o and n are both root Frames templates of
// the stopped thread from the same first frame (of any length).
func sameFramesFrom(o, n *lnode) bool {
	return o.cmd == jdwp.CmdThreadReferenceFrames && n.cmd == jdwp.CmdThreadReferenceFrames && o.from == nil && n.from == nil &&
		len(o.params) == 3 && len(n.params) == 3 && o.params[0].src == srcThread && n.params[0].src == srcThread &&
		o.params[1].src == srcConst && n.params[1].src == srcConst && bytes.Equal(o.params[1].raw, n.params[1].raw)
}

// wanted says whether element el of a list is one the template replays.
func (lr *learnedRules) wanted(lp *lparam, el []item) bool {
	for _, it := range el {
		if it.path != lp.path {
			continue
		}
		if lp.tags != 0 && tagBit(it.tag)&lp.tags == 0 {
			return false
		}
		return lp.all || it.i < 64 && lp.idx&(1<<it.i) != 0
	}
	return false
}

// waitFor keeps an ObjectReference.GetValues template whose object's type
// chain is not known yet, for the object found in el.
func (lr *learnedRules) waitFor(n *lnode, el []*item) {
	for _, it := range el {
		if it.sp == spObject {
			o := jdwp.ObjectID(it.id)
			if len(lr.st.waitType[o]) < 8 && len(lr.st.waitType) < maxSpecPerStop {
				lr.st.waitType[o] = append(lr.st.waitType[o], n)
			}
			return
		}
	}
}

// retryFields replays the ObjectReference.GetValues waiting for a type
// chain, after a reply that may complete it.
func (lr *learnedRules) retryFields(sizes jdwp.IDSizes) {
	st := &lr.st
	for o, ns := range st.waitType {
		if _, ok := lr.facts.objType[o]; !ok {
			continue
		}
		kept := ns[:0]
		for _, n := range ns {
			it := item{sp: spObject, id: uint64(o), path: n.params[0].path}
			params, ok := lr.build(n, []*item{&it}, sizes)
			if !ok {
				kept = append(kept, n)
				continue
			}
			lr.emit(n, params, sizes, 0, false)
		}
		if len(kept) == 0 {
			delete(st.waitType, o)
		} else {
			st.waitType[o] = kept
		}
	}
}
