package speculator

import (
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
// gates (admit, safeToSend: IDs this connection's VM handed out and
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
// where IDs came from) and the chain (replay). Guarded by session.mu.
type learnedRules struct {
	*core
	graphs  map[jdwp.EventKind]*lgraph // templates by kind of stop
	kind    jdwp.EventKind             // the kind of the stop being seen (seen)
	located bool                       // the event being seen is at a location (seen)
	// askedKind is the kind of the last stop at which the debugger asked
	// anything: the one the learner's templates are of (unreadKind).
	askedKind jdwp.EventKind
	last      *lgraph // the graph of the last stop
	st        lstop   // the current stop
	// sent and used count the replay's speculation over the session (as
	// each stop ends); asks counts the debugger's reads from its third
	// stop on but the verbatim templates', predicted those the replay had
	// named before it asked (sent, or found cached or in flight).
	sent, used, asks, predicted int
	// cands are the profiles offered (the learned one, then the prior),
	// of which take took the templates of took, once (decided).
	cands   []*profile
	took    *profile
	decided bool
	// firsts are the profile's first reads by kind of stop (its templates
	// marked first: importLearned); settled the kinds at whose first stop
	// in this session the debugger's reads were held against them
	// (confirm, confirmAtEnd) -> whether they confirmed it (then the
	// profile's mark stays the kind's: settle).
	firsts  map[jdwp.EventKind]*lnode
	settled map[jdwp.EventKind]bool

	params   []keyable.Param // scratch
	buf      []byte          // scratch: parameters being built
	shapeBuf []byte          // scratch: a template's shape being looked up (appendShape)
	items    []item          // scratch: a stack of the items of the replies being fed (feed)
	elig     []eligAt        // scratch: a reply's elements being indexed (index)
}

// lgraph is the templates learned after one kind of stop.
type lgraph struct {
	nodes   []*lnode
	byShape map[string]*lnode
}

// mark makes n (nil: none) the graph's one first read (lnode.first).
func (g *lgraph) mark(n *lnode) {
	for _, o := range g.nodes {
		o.first = false
	}
	if n != nil {
		n.first = true
	}
}

// srcKind is where a template's parameter comes from.
type srcKind uint8

const (
	srcConst     srcKind = iota // the bytes the debugger sent
	srcThread                   // the stopping event's thread
	srcClass                    // the class of the event's location
	srcMethod                   // the method of the event's location
	srcReply                    // an ID of the reply to the template from, at path
	srcSlots                    // StackFrame.GetValues' slots: core.frameSlots at the frame's location
	srcFields                   // ObjectReference.GetValues' fields: by position in the object's type chain
	srcAllFields                // ObjectReference.GetValues' fields: all its type's in an order (classFacts.firstFields)
)

// lparam is where one parameter of a template comes from.
type lparam struct {
	src  srcKind
	raw  []byte // srcConst: its bytes; srcFields: the positions (hops, index: 2 bytes each); srcAllFields: the order
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
	// first says the debugger asked it first at the last stop of its
	// kind (or, imported, at the profile's: confirm).
	first    bool
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
	key   *keyable.Key // the stop's copy (learnedRules.stopKey)
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
	kind   jdwp.EventKind
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
	// eligible is, per source reply, path and tag, the indices of its
	// elements (what "every element" of a template's tags means at the
	// stop's end: settleIndices).
	eligible map[eligKey]uint64
	// slab holds the stop's origin lists (addOrigin); keys the
	// copies of the keys its origins name (stopKey). Both are appended
	// to in chunks, so what points into them stays valid for the stop.
	slab  []origin
	keys  []keyable.Key
	specs []*spec
	// waitType are ObjectReference.GetValues waiting for their object's
	// type chain to be known, by object.
	waitType map[jdwp.ObjectID][]*lnode
	// asked are the keys the debugger asked at this stop (a list fed
	// before it asked was held: learnedRules.feed).
	asked map[keyable.Key]bool
	// named are, per list reply, the elements that are threads the
	// debugger named before this stop (learner.namedBefore): a debugger
	// that names a thread once skips them, and still names every thread
	// (settleIndices).
	named map[keyable.Key]uint64
	// firstSeen says the debugger's first read of the stop came (its mark:
	// lnode.first).
	firstSeen bool
	// threadsFed are the feedHow bits feedKnownThreads replayed the
	// session's known threads with at this stop.
	threadsFed uint8
}

type eligKey struct {
	key  keyable.Key
	path path
	tag  uint16 // one tag's bit (tagBit)
}

// Bounds of the learned graph and of a stop's bookkeeping.
const (
	maxLNodes  = 512
	maxOrigins = 32 // origins kept per ID
	maxFeed    = 16
)

func newLearnedRules(c *core) learnedRules {
	return learnedRules{core: c, graphs: map[jdwp.EventKind]*lgraph{}, cands: make([]*profile, 0, 4)}
}

// seen notes the kind of the stop a composite event brings: its first
// locatable event's.
func (lr *learnedRules) seen(c *jdwp.Composite, err error) {
	lr.located = false
	if err != nil || c == nil {
		return
	}
	for i := range c.Events {
		if k := c.Events[i].Kind; k.Locatable() {
			lr.kind, lr.located = k, true
			return
		}
	}
}

func (lr *learnedRules) taken(*jdwp.Composite) {}

// stopped accounts the last stop's replay (the core's endEpisode has
// marked what served the debugger) and starts a new one.
func (lr *learnedRules) stopped(jdwp.IDSizes) {
	if lr.located || lr.sets.known() {
		// At a stop at a location, or once JDI's first Sets tell which
		// profile fits: never at a VM_START, which comes before them.
		lr.take()
	}
	lr.endStop()
	// Before the stop's waves (core.guessesLearned): the profile taken
	// has templates of this kind of stop.
	g := lr.graphs[lr.kind]
	lr.learn.profiled = lr.took != nil && g != nil && len(g.nodes) > 0
}

// endStop ends the stop recorded: each template's list indices as the
// debugger asked them, its replay's use, and the graph pruned of what
// nobody asked for long.
func (lr *learnedRules) endStop() {
	st := &lr.st
	if st.g == nil {
		return
	}
	if len(st.asked) > 0 {
		lr.askedKind = st.kind
	}
	if lr.facts.farEnd {
		lr.confirmAtEnd(st)
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
			if n.imported && n.seen == 0 {
				lr.restImported(n.shape)
			}
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
	*st = st.cleared()
}

// restImported rests the templates of the profile with the given shape
// in every kind's graph: one went unused, so the debugger of this session
// asks otherwise than the one the profile came from.
func (lr *learnedRules) restImported(shape string) {
	for _, g := range lr.graphs {
		if n := g.byShape[shape]; n != nil && n.imported && n.seen == 0 {
			n.unused = max(n.unused, 2)
		}
	}
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
		var e uint64
		for t := n.tags; t != 0; t &= t - 1 {
			e |= lr.st.eligible[eligKey{key: k, path: p.path, tag: t & -t}]
		}
		if n.cmd == jdwp.CmdThreadReferenceName {
			e &^= lr.st.named[k]
		}
		if asked&e != e {
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
	lr.take()
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
	if st.origins == nil {
		*st = lstop{origins: map[idKey][]origin{}, nodeOf: map[keyable.Key]*lnode{},
			fed: map[keyable.Key]bool{}, emitted: map[keyable.Key]bool{}, eligible: map[eligKey]uint64{},
			waitType: map[jdwp.ObjectID][]*lnode{}, asked: map[keyable.Key]bool{}, named: map[keyable.Key]uint64{}}
	}
	st.serial, st.kind, st.g, st.replay = ep.serial, lr.kind, g, replay
	return st
}

// keepStopEntries bounds the entries any of a stop's maps may have held
// for its containers to be kept for the next stop (lstop.cleared): a
// cleared map keeps its size, and clearing costs it at every stop.
const keepStopEntries = 4096

// cleared is an empty stop, none being seen (no graph), that keeps st's
// containers, cleared, for the next stop to fill rather than grow anew
// (begin makes them when there are none). A stop that filled any of its
// maps past keepStopEntries leaves nothing to keep: its maps would stay
// that large.
func (st *lstop) cleared() lstop {
	if st.origins == nil || max(len(st.origins), len(st.nodeOf), len(st.fed), len(st.emitted), len(st.eligible),
		len(st.waitType), len(st.asked), len(st.named)) > keepStopEntries {
		return lstop{}
	}
	clear(st.origins)
	clear(st.nodeOf)
	clear(st.fed)
	clear(st.emitted)
	clear(st.eligible)
	clear(st.waitType)
	clear(st.asked)
	clear(st.named)
	clear(st.slab) // drops the templates they point to
	slab := st.slab[:0]
	if cap(slab) > 4*keepStopEntries {
		slab = nil
	}
	return lstop{origins: st.origins, nodeOf: st.nodeOf, fed: st.fed, emitted: st.emitted, eligible: st.eligible,
		waitType: st.waitType, asked: st.asked, named: st.named, slab: slab, keys: st.keys[:0]}
}
