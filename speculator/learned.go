package speculator

import (
	"encoding/binary"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
)

// learnedRules learn, per kind of stop, what the debugger asks after it,
// with no knowledge of any client: each cacheable command it sends during
// a stop becomes a template (lnode) naming, for each parameter, where its
// value came from — the stopping event (its thread, its location's class
// or method), an ID found in a reply earlier in the same stop at a path
// (learned_paths.go: "each thread of the AllThreads reply", "the frame ID
// of frame i of the Frames reply", "each object value of the GetValues
// reply of frame i"), the slots the debugger reads at the frame's
// location (core.frameSlots), fields by their position in the object's
// own type chain, or a constant. Templates form a graph: a template whose
// parameter came from another's reply is its child. At the next stop of
// that kind the roots (event and constants only) are replayed at wave 0
// and each reply, speculative or not, fed to its template's children as
// soon as it is known (chain), so the whole graph unfolds reply by reply;
// a reply already cached feeds them at once.
//
// A list path replays the indices the debugger asked of it at the last
// stop, or every element with the tags it asked when it asked them all
// (each thread, each object local). Everything goes through the core's
// gates (submitSpec, safeToSend: IDs this connection's VM handed out and
// valid for the command, read-only commands, fields of the object's own
// class chain, frames of the current stop). A template whose speculation
// went unused at two stops running is not replayed until the debugger
// asks it again.
//
// It reacts to a stop's event (seen: its kind), the stop (stopped: the
// last stop's accounting), wave 0 (the roots), the debugger's cacheable
// commands (asked: learning; a split mode's far end is told them by the
// near end's usage reports, export.go Asked, so it learns the same
// templates from the same commands), the replies of the stop (replied:
// where IDs came from) and the chain (replay).
type learnedRules struct {
	*core
	graphs map[jdwp.EventKind]*lgraph // templates by kind of stop
	kind   jdwp.EventKind             // the kind of the stop being seen (seen)
	last   *lgraph                    // the graph of the last stop
	st     lstop                      // the current stop
	// sent and used count the replay's speculation over the session (as
	// each stop ends); asks counts the debugger's reads from its third
	// stop on but the verbatim templates', predicted those the replay had
	// named before it asked (sent, or found cached or in flight).
	sent, used, asks, predicted int
	params                      []keyable.Param // scratch
	buf                         []byte          // scratch: parameters being built
}

// lgraph is the templates learned after one kind of stop.
type lgraph struct {
	nodes   []*lnode
	byShape map[string]*lnode
}

// srcKind is where a template's parameter comes from.
type srcKind uint8

const (
	srcConst  srcKind = iota // the bytes the debugger sent
	srcThread                // the stopping event's thread
	srcClass                 // the class of the event's location
	srcMethod                // the method of the event's location
	srcReply                 // an ID of the reply to the template from, at path
	srcSlots                 // StackFrame.GetValues' slots: core.frameSlots at the frame's location
	srcFields                // ObjectReference.GetValues' fields: by position in the object's type chain
)

// lparam is where one parameter of a template comes from.
type lparam struct {
	src  srcKind
	raw  []byte // srcConst: its bytes; srcFields: the positions (hops, index: 2 bytes each)
	path path   // srcReply
	// idx is the list elements of a srcReply path the debugger asked at
	// the last stop it asked this template (bit i: element i), all that
	// it asked every element with a tag in tags.
	idx  uint64
	tags uint16
	all  bool
}

// lnode is one template: a command and where each parameter comes from.
type lnode struct {
	cmd    jdwp.Cmd
	params []lparam
	from   *lnode // the template whose reply its srcReply parameters come from
	shape  string
	// seen is the last stop the debugger asked it at; unused counts the
	// stops in a row at which its replay went unused.
	seen     uint64
	unused   int
	imported bool // from the profile, not asked in this session yet
	children []*lnode
	// asked is this stop's asks of a srcReply list: per source reply,
	// the indices asked (for idx and all at the stop's end).
	asked map[keyable.Key]uint64
	tags  uint16
	// keys are the commands the debugger asked by it at the last stop
	// it was seen (prev) and this one; same and moved count the stops at
	// which some of them were asked at the stop before too (its IDs stay:
	// a frame's this) or none (they change: each stop's objects).
	keys, prev  map[keyable.Key]bool
	same, moved int
}

// origin is where an ID was found in the current stop.
type origin struct {
	n     *lnode
	key   keyable.Key
	path  path
	i     int
	tag   jdwp.Tag
	asked bool // in a reply to a command the debugger asked
}

type idKey struct {
	sp space
	id uint64
}

// lstop is the current stop's state.
type lstop struct {
	serial uint64
	// g is the graph of the stop's kind, which learns; replay is the one
	// replayed: g, or while g has nothing to replay (the first stop of
	// its kind) the last stop's.
	g, replay *lgraph
	origins   map[idKey][]origin
	// nodeOf is the template each key was replayed by (or, for a reply
	// no replay asked, its own in g), whose children its reply feeds;
	// fed the keys whose reply was fed to their children.
	nodeOf map[keyable.Key]*lnode
	fed    map[keyable.Key]bool
	// emitted are the keys the replay named (emit).
	emitted map[keyable.Key]bool
	// eligible is, per source reply and path, the indices of its
	// elements by tag bit (what "every element" means at the stop's end).
	eligible map[eligKey]uint64
	specs    []*spec
	// waitType are ObjectReference.GetValues waiting for their object's
	// type chain to be known, by object.
	waitType map[jdwp.ObjectID][]*lnode
}

type eligKey struct {
	key  keyable.Key
	path path
	tags uint16
}

// Bounds of the learned graph and of a stop's bookkeeping.
const (
	maxLNodes  = 512
	maxOrigins = 32 // origins kept per ID
	maxFeed    = 16
)

func newLearnedRules(c *core) learnedRules {
	return learnedRules{core: c, graphs: map[jdwp.EventKind]*lgraph{}}
}

// seen notes the kind of the stop a composite event brings: its first
// locatable event's.
func (lr *learnedRules) seen(c *jdwp.Composite, err error) {
	if err != nil || c == nil {
		return
	}
	for i := range c.Events {
		if k := c.Events[i].Kind; k.Locatable() {
			lr.kind = k
			return
		}
	}
}

func (lr *learnedRules) taken(*jdwp.Composite) {}

// stopped accounts the last stop's replay (the core's endEpisode has
// marked what served the debugger) and starts a new one.
func (lr *learnedRules) stopped(jdwp.IDSizes) {
	lr.endStop()
}

// endStop ends the stop recorded: each template's list indices as the
// debugger asked them, its replay's use, and the graph pruned of what
// nobody asked for long.
func (lr *learnedRules) endStop() {
	st := &lr.st
	if st.g == nil {
		return
	}
	used := map[*lnode]bool{}
	sent := map[*lnode]bool{}
	for _, s := range st.specs {
		if s.lnode == nil || !s.sent || s.cancelled {
			continue
		}
		sent[s.lnode] = true
		lr.sent++
		if s.used {
			used[s.lnode] = true
			lr.used++
		}
	}
	for _, n := range st.g.nodes {
		switch {
		case n.seen == st.serial || used[n]:
			n.unused = 0
		case sent[n]:
			n.unused++
		}
		if n.seen == st.serial && len(n.asked) > 0 {
			lr.settleIndices(n)
		}
		n.asked = nil
		if n.seen == st.serial {
			if n.prev != nil {
				stayed := false
				for k := range n.keys {
					if n.prev[k] {
						stayed = true
						break
					}
				}
				if stayed {
					n.same++
				} else {
					n.moved++
				}
			}
			n.prev, n.keys = n.keys, nil
		}
	}
	lr.prune(st.g)
	*st = lstop{}
}

// settleIndices sets the list indices a template replays from what the
// debugger asked of each source reply this stop: every element (all) if
// it asked every element with the tags it asked, of every reply it asked
// of; else the indices asked.
func (lr *learnedRules) settleIndices(n *lnode) {
	var idx uint64
	all := true
	p := n.listParam()
	if p == nil {
		return
	}
	for k, asked := range n.asked {
		idx |= asked
		if e := lr.st.eligible[eligKey{key: k, path: p.path, tags: n.tags}]; asked&e != e {
			all = false
		}
	}
	p.idx, p.tags, p.all = idx, n.tags, all
}

// listParam is the template's srcReply parameter at a list path (one per
// template: its srcReply parameters share an element).
func (n *lnode) listParam() *lparam {
	for i := range n.params {
		if p := &n.params[i]; p.src == srcReply && p.path.listed() {
			return p
		}
	}
	return nil
}

// prune drops the templates the debugger has not asked for 8 stops and
// that feed none it asked since.
func (lr *learnedRules) prune(g *lgraph) {
	if len(g.nodes) < maxLNodes/2 {
		return
	}
	keep := map[*lnode]bool{}
	for _, n := range g.nodes {
		if n.seen+8 > lr.st.serial {
			for x := n; x != nil && !keep[x]; x = x.from {
				keep[x] = true
			}
		}
	}
	live := g.nodes[:0]
	for _, n := range g.nodes {
		if keep[n] {
			kids := n.children[:0]
			for _, c := range n.children {
				if keep[c] {
					kids = append(kids, c)
				}
			}
			n.children = kids
			live = append(live, n)
		} else {
			delete(g.byShape, n.shape)
		}
	}
	clear(g.nodes[len(live):])
	g.nodes = live
}

// replays says whether the graph has a template to replay.
func (g *lgraph) replays() bool {
	for _, n := range g.nodes {
		if n.live() && n.from != nil {
			return true
		}
	}
	return false
}

// begin starts the stop's bookkeeping once its episode began.
func (lr *learnedRules) begin() *lstop {
	st := &lr.st
	ep := &lr.learn.ep
	if !ep.active {
		return nil
	}
	if st.g != nil && st.serial == ep.serial {
		return st
	}
	if st.g != nil {
		lr.endStop()
	}
	g := lr.graphs[lr.kind]
	if g == nil {
		if len(lr.graphs) >= 16 {
			return nil
		}
		g = &lgraph{byShape: map[string]*lnode{}}
		lr.graphs[lr.kind] = g
	}
	replay := g
	if !g.replays() && lr.last != nil {
		replay = lr.last
	}
	lr.last = g
	*st = lstop{serial: ep.serial, g: g, replay: replay, origins: map[idKey][]origin{}, nodeOf: map[keyable.Key]*lnode{},
		fed: map[keyable.Key]bool{}, emitted: map[keyable.Key]bool{}, eligible: map[eligKey]uint64{}, waitType: map[jdwp.ObjectID][]*lnode{}}
	return st
}

// ---- learning ---------------------------------------------------------------

// asked learns a cacheable command the debugger asked during a stop.
func (lr *learnedRules) asked(key *keyable.Key, info keyable.Info, sizes jdwp.IDSizes) {
	st := lr.begin()
	if st == nil {
		return
	}
	predicted := st.emitted[*key]
	n := lr.derive(key, info, sizes, true)
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
	if e := lr.cache.lookup(key); e != nil && jdwp.Packet(e.reply).ErrorCode() == jdwp.ErrorNone {
		lr.index(key, n, jdwp.Packet(e.reply).Body(), sizes, true)
	}
}

// replied takes in where the IDs of a reply valid in the stop are.
func (lr *learnedRules) replied(r *reply) {
	if !r.ok || !r.valid {
		return
	}
	st := lr.begin()
	if st == nil {
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
	walkReply(key.Cmd(), body, sizes, func(it *item) {
		if it.path.listed() && !(it.sp == spObject && jdwp.ThreadID(it.id) == lr.learn.ep.thread) {
			// (The stopped thread's reads are the event's templates.)
			// eligible is kept by tag set; settleIndices asks with the
			// template's, so every set of one or two bits that holds
			// this element's is recorded.
			ek := eligKey{key: *key, path: it.path}
			for _, set := range tagSets(tagBit(it.tag)) {
				ek.tags = set
				if it.i < 64 {
					st.eligible[ek] |= 1 << it.i
				}
			}
		}
		ik := idKey{sp: it.sp, id: it.id}
		os := st.origins[ik]
		o := origin{n: n, key: *key, path: it.path, i: it.i, tag: it.tag, asked: asked}
		for j := range os {
			if os[j].n == n && os[j].path == it.path && os[j].i == it.i {
				os[j].asked = os[j].asked || asked
				return
			}
		}
		switch {
		case len(os) < maxOrigins:
			st.origins[ik] = append(os, o)
		case asked:
			for j := range os {
				if !os[j].asked {
					os[j] = o
					return
				}
			}
		}
	})
}

// tagSets are the tag sets a template may ask with that hold bit b: b
// alone, or b with one other of the object tags.
func tagSets(b uint16) []uint16 {
	sets := []uint16{b}
	for o := uint16(1); o < 1<<7; o <<= 1 {
		if o != b {
			sets = append(sets, b|o)
		}
	}
	return sets
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
		from, fromKey, elem = o.n, o.key, o.i
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
			if pos, ok := lr.fieldPositions(obj, rest, sizes); ok {
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
					from, fromKey, elem = o.n, o.key, o.i
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
		return lr.st.g.byShape[lshape(key.Cmd(), ps, from)]
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
				if o.n == from && o.key == fromKey && o.path == lp.path && o.i < 64 {
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
			if _, ok := lr.pickIn(k, o.n, o.key, o.i); !ok {
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
		if o.n == n && o.key == key && (o.i == i || !o.path.listed()) {
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
	shape := lshape(c, ps, from)
	if n := g.byShape[shape]; n != nil {
		return n
	}
	if len(g.nodes) >= maxLNodes {
		return nil
	}
	n := &lnode{cmd: c, params: ps, from: from, shape: shape}
	g.byShape[shape] = n
	g.nodes = append(g.nodes, n)
	if from != nil {
		from.children = append(from.children, n)
	}
	return n
}

// lshape is a template's identity: its command and its parameters'
// origins (not the list indices, which are learned).
func lshape(c jdwp.Cmd, ps []lparam, from *lnode) string {
	b := []byte{byte(c.Set), byte(c.Cmd)}
	for _, p := range ps {
		b = append(b, byte(p.src), byte(p.path))
		b = binary.BigEndian.AppendUint16(b, uint16(len(p.raw)))
		b = append(b, p.raw...)
	}
	if from != nil {
		b = append(b, from.shape...)
	}
	return string(b)
}

// ---- replay -------------------------------------------------------------------

// wave replays, at wave 0, the templates whose parameters the event and
// constants give.
func (lr *learnedRules) wave(w int, sizes jdwp.IDSizes) {
	if w != 0 {
		return
	}
	st := lr.begin()
	if st == nil {
		return
	}
	for _, n := range st.replay.nodes {
		if n.from == nil && n.live() && !n.verbatim() {
			if params, ok := lr.build(n, nil, sizes); ok {
				lr.emit(n, params, sizes, 0)
			}
		}
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
			tail, ok := lr.frameSlots(loc)
			if !ok {
				return nil, false
			}
			w.Buf = append(w.Buf, tail...)
			continue
		case srcFields:
			t, ok := lr.facts.objType[obj]
			if !ok || !lr.fieldTail(&w, t, p.raw) {
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
	return w.Buf, true
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
// in the chain.
func (lr *learnedRules) emit(n *lnode, params []byte, sizes jdwp.IDSizes, depth int) {
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
	if e := lr.cache.lookup(&key); e != nil {
		if p := jdwp.Packet(e.reply); p.ErrorCode() == jdwp.ErrorNone {
			lr.feed(n, &key, p.Body(), sizes, depth+1)
		}
		return
	}
	s := &spec{kind: kLearned, lnode: n}
	before := len(lr.learn.ep.specs)
	lr.submitSpec(sizes, s, n.cmd, params)
	if len(lr.learn.ep.specs) > before {
		st.specs = append(st.specs, s)
	}
}

// chain feeds a reply valid in the stop to the children of its template.
func (lr *learnedRules) chain(x *chained) {
	st := lr.begin()
	if st == nil {
		return
	}
	n := st.nodeOf[*x.key]
	if n == nil {
		info, _ := keyable.Lookup(x.key.Cmd())
		if n = lr.derive(x.key, info, x.sizes, false); n == nil {
			return
		}
		st.nodeOf[*x.key] = n
	}
	lr.feed(n, x.key, x.p.Body(), x.sizes, 0)
	switch x.key.Cmd() {
	case jdwp.CmdObjectReferenceReferenceType, jdwp.CmdReferenceTypeFields, jdwp.CmdReferenceTypeFieldsWithGeneric,
		jdwp.CmdClassTypeSuperclass:
		lr.retryFields(x.sizes)
	}
}

// feed replays the live children of template n on the reply body to key.
func (lr *learnedRules) feed(n *lnode, key *keyable.Key, body []byte, sizes jdwp.IDSizes, depth int) {
	st := &lr.st
	if st.fed[*key] || depth > maxFeed || len(n.children) == 0 {
		return
	}
	st.fed[*key] = true
	// The reply's items, grouped by element.
	var items []item
	walkReply(key.Cmd(), body, sizes, func(it *item) {
		if len(items) < 4*maxSpecPerStop {
			items = append(items, *it)
		}
	})
	for i := 0; i < len(items); {
		j := i
		for j < len(items) && items[j].i == items[i].i {
			j++
		}
		lr.feedElement(n, items[i:j], sizes, depth)
		i = j
	}
}

// feedElement replays the live children of template n on one element of
// its reply (its items, all of one index), or its only one.
func (lr *learnedRules) feedElement(n *lnode, el []item, sizes jdwp.IDSizes, depth int) {
	var els [4]*item
	for _, c := range n.children {
		if !c.live() {
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
		lr.emit(c, params, sizes, depth)
	}
}

// frame feeds one frame of a Frames reply valid in the stop to the
// children of the Frames template (a Frames reply goes to the framers,
// not the chain).
func (lr *learnedRules) frame(x *frameSeen) {
	if !x.speculating || x.key == nil {
		return
	}
	st := lr.begin()
	if st == nil {
		return
	}
	n := st.nodeOf[*x.key]
	if n == nil {
		info, _ := keyable.Lookup(x.key.Cmd())
		if n = lr.derive(x.key, info, x.sizes, false); n == nil {
			return
		}
		st.nodeOf[*x.key] = n
	}
	el := [3]item{
		{sp: spFrame, id: uint64(x.frame), path: pFrame, i: x.index, loc: x.loc},
		{sp: spClass, id: x.loc.Class, path: pFrameClass, i: x.index, loc: x.loc},
		{sp: spMethod, id: x.loc.Method, path: pFrameMethod, i: x.index, loc: x.loc},
	}
	lr.feedElement(n, el[:], x.sizes, 0)
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
			lr.emit(n, params, sizes, 0)
		}
		if len(kept) == 0 {
			delete(st.waitType, o)
		} else {
			st.waitType[o] = kept
		}
	}
}
