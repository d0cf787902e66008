package speculator

import (
	"cmp"
	"maps"
	"slices"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
)

// The learned rules' share of the profile (persist.go): the templates
// whose parameters hold no ID — each comes from the event, a reply of the
// stop, the slots or field positions, or is a constant int or slot list —
// by kind of stop, each naming the template it reads from by its index
// (parents first).

// learnedTmpl is a template of the learned rules in a profile.
type learnedTmpl struct {
	Kind   jdwp.EventKind  `json:"kind"`
	Set    jdwp.CommandSet `json:"set"`
	Cmd    uint8           `json:"cmd"`
	From   int             `json:"from"` // index of the template its reply parameters come from, -1: none
	Params []learnedParam  `json:"params"`
	First  bool            `json:"first,omitempty"` // the debugger's first read at its last stop of the kind (confirm)
}

// learnedParam is an lparam in a profile.
type learnedParam struct {
	Src  srcKind `json:"src"`
	Path path    `json:"path,omitempty"`
	Idx  uint64  `json:"idx,omitempty"`
	Tags uint16  `json:"tags,omitempty"`
	All  bool    `json:"all,omitempty"`
	Raw  []byte  `json:"raw,omitempty"`
}

// exportTo leaves the templates asked in this session (and those they
// read from) that hold no ID in p, and those of the profile it took
// (take) of kinds of stop this session did not see.
func (lr *learnedRules) exportTo(p, _ *profile, _ jdwp.IDSizes) {
	lr.take()
	old := lr.took
	p.Learned = p.Learned[:0]
	for _, k := range slices.Sorted(maps.Keys(lr.graphs)) { // one order: a profile file does not churn
		g := lr.graphs[k]
		at := map[*lnode]int{}
		for _, n := range g.canonical() {
			from := -1
			if n.from != nil {
				i, ok := at[n.from]
				if !ok {
					continue
				}
				from = i
			}
			if n.seen == 0 && !n.imported && len(n.children) == 0 || !idFree(n) || len(p.Learned) >= maxProfileLearned ||
				!n.kept() {
				continue
			}
			t := learnedTmpl{Kind: k, Set: n.cmd.Set, Cmd: n.cmd.Cmd, From: from, First: n.first}
			for _, q := range n.params {
				t.Params = append(t.Params, learnedParam{Src: q.src, Path: q.path, Idx: q.idx, Tags: q.tags, All: q.all,
					Raw: q.raw})
			}
			at[n] = len(p.Learned)
			p.Learned = append(p.Learned, t)
		}
	}
	if old == nil {
		return
	}
	moved := map[int]int{} // old's index -> p's
	for i, t := range old.Learned {
		if _, seen := lr.graphs[t.Kind]; seen || len(p.Learned) >= maxProfileLearned {
			continue
		}
		if t.From >= 0 {
			j, ok := moved[t.From]
			if !ok {
				continue
			}
			t.From = j
		}
		moved[i] = len(p.Learned)
		p.Learned = append(p.Learned, t)
	}
}

// canonical is the graph's templates in one order whatever the order
// the debugger's concurrent reads taught them in (a profile file does not
// churn): by depth (parents first), then by shape.
func (g *lgraph) canonical() []*lnode {
	depth := func(n *lnode) int {
		d := 0
		for ; n.from != nil; n = n.from {
			d++
		}
		return d
	}
	ns := slices.Clone(g.nodes)
	slices.SortStableFunc(ns, func(a, b *lnode) int { return cmp.Or(cmp.Compare(depth(a), depth(b)), cmp.Compare(a.shape, b.shape)) })
	return ns
}

// kept says whether template n goes on to the next session's profile:
// not one of the profile's that this session's debugger never asked and
// whose replay went unused here (restImported), unless a template below
// it is kept. Otherwise a debugger that attaches as another did (jdb
// after an IDE: one JDI) would hand the other's stop on, to be replayed
// and wasted at each session's first stop.
func (n *lnode) kept() bool {
	if !n.imported || n.seen != 0 || n.unused < 2 {
		return true
	}
	for _, c := range n.children {
		if c.kept() {
			return true
		}
	}
	return false
}

// maxProfileLearned bounds the learned templates a profile keeps.
const maxProfileLearned = 1024

// idFree says whether a template's parameters hold no ID: constants only
// where the layout has an int or slots.
func idFree(n *lnode) bool {
	kinds := keyableParams(n.cmd)
	for i, q := range n.params {
		if q.src == srcConst && kinds[i] != keyable.ParamInt && kinds[i] != keyable.ParamSlots {
			return false
		}
	}
	return true
}

// importFrom offers the profile's templates to this session's stops
// (take).
func (lr *learnedRules) importFrom(p *profile, _ jdwp.IDSizes) { lr.offer(p) }

// offer adds p to the profiles whose templates the session may take.
func (lr *learnedRules) offer(p *profile) {
	if !lr.decided && len(lr.cands) < cap(lr.cands) {
		lr.cands = append(lr.cands, p)
	}
}

// take takes, once (at the session's first stop, or its end), the
// templates of the first profile offered whose debugger attached as this
// session's did (firstSets.fits): what one debugger reads at a stop is
// no guess for another's (an IDE's thread names and frame checks for VS
// Code's engine).
func (lr *learnedRules) take() {
	if lr.decided {
		return
	}
	lr.decided = true
	for _, p := range lr.cands {
		if lr.sets.fits(p.Sets) {
			lr.took = p
			lr.importLearned(p)
			lr.learn.stopSig = stopSignature(p.Learned)
			lr.learn.takeReads(p)
			break
		}
	}
	lr.cands = nil
}

// profileTaken is the profile whose stop templates the session took,
// taking it now if JDI's first Sets tell which fits (as stopped would at
// this stop), nil before that or if none fits.
func (lr *learnedRules) profileTaken() *profile {
	if lr.sets.known() {
		lr.take()
	}
	return lr.took
}

// trusted says whether the profile taken is replayed at a stop before
// the debugger's first read there can confirm it, where that read is a
// round trip away (a far end: its near end serves the debugger): only if
// its debugger set itself up as this session's did (firstSets.setUpAs).
// One JDI's profile is any of its debuggers' guess (the prior's is an
// IDE's); jdb sets itself up otherwise, and reads a tenth of what an IDE
// does at a stop.
func (lr *learnedRules) trusted() bool { return lr.took == nil || lr.sets.setUpAs(lr.took.Setup) }

// firstReadDecides says whether this stop's first read decides the
// profile's fate as it comes (confirm), and its speculation waits for it
// (session.awaitFirst): where the debugger is near, or where the profile
// is not trusted; a far end that trusts it gathers at once, and holds it
// against the stop as it ends (confirmAtEnd).
func (lr *learnedRules) firstReadDecides() bool {
	return lr.unconfirmed() && (!lr.facts.farEnd || !lr.trusted())
}

// stopSignature is the signature command templates ts ask, zero if none
// or both.
func stopSignature(ts []learnedTmpl) jdwp.Cmd {
	var c jdwp.Cmd
	for _, t := range ts {
		switch tc := (jdwp.Cmd{Set: t.Set, Cmd: t.Cmd}); tc {
		case jdwp.CmdReferenceTypeSignature, jdwp.CmdReferenceTypeSignatureWithGeneric:
			if c != (jdwp.Cmd{}) && c != tc {
				return jdwp.Cmd{}
			}
			c = tc
		}
	}
	return c
}

// importLearned rebuilds the profile's templates, for this session's
// stops.
func (lr *learnedRules) importLearned(p *profile) {
	if len(lr.graphs) > 0 {
		return
	}
	nodes := make([]*lnode, len(p.Learned))
	for i, t := range p.Learned {
		g := lr.graphs[t.Kind]
		if g == nil {
			g = &lgraph{byShape: map[string]*lnode{}}
			lr.graphs[t.Kind] = g
		}
		var from *lnode
		if t.From >= 0 {
			if from = nodes[t.From]; from == nil {
				continue
			}
		}
		ps := make([]lparam, len(t.Params))
		for j, q := range t.Params {
			ps[j] = lparam{src: q.Src, path: q.Path, idx: q.Idx, tags: q.Tags, all: q.All, raw: q.Raw}
		}
		c := jdwp.Cmd{Set: t.Set, Cmd: t.Cmd}
		from = readFrom(ps, from)
		shape := lshape(c, ps, from)
		if g.byShape[shape] != nil || len(g.nodes) >= maxLNodes {
			continue
		}
		// A template from an earlier session rests after one stop whose
		// replay went unused (the same debugger may ask otherwise now).
		n := &lnode{cmd: c, params: ps, from: from, shape: shape, imported: true, unused: 1, first: t.First}
		if t.First {
			if lr.firsts == nil {
				lr.firsts = map[jdwp.EventKind]*lnode{}
			}
			lr.firsts[t.Kind] = n
		}
		g.byShape[shape] = n
		g.nodes = append(g.nodes, n)
		if from != nil {
			from.children = append(from.children, n)
		}
		nodes[i] = n
	}
}

// learnedValid says whether templates read back from a file are within
// bounds and fit their commands: cacheable, one parameter per element of
// the layout, each from a source that fits the element (no ID constant),
// reading only from an earlier template.
func learnedValid(ts []learnedTmpl) bool {
	if len(ts) > maxProfileLearned {
		return false
	}
	for i, t := range ts {
		kinds := keyableParams(jdwp.Cmd{Set: t.Set, Cmd: t.Cmd})
		if kinds == nil || len(kinds) != len(t.Params) || t.From >= i || t.From < -1 {
			return false
		}
		for j, q := range t.Params {
			if !paramFits(kinds[j], q) || q.Src == srcReply && t.From < 0 {
				return false
			}
		}
	}
	return true
}

// paramFits says whether a parameter's source fits the layout's element.
func paramFits(k keyable.Param, q learnedParam) bool {
	if len(q.Raw) > keyable.MaxParams || q.Path > pIface {
		return false
	}
	switch q.Src {
	case srcConst:
		return k == keyable.ParamInt && len(q.Raw) == 4 || k == keyable.ParamSlots
	case srcThread:
		return k == keyable.ParamObject
	case srcClass:
		return k == keyable.ParamRefType
	case srcMethod:
		return k == keyable.ParamMethod
	case srcReply:
		return k != keyable.ParamInt && k != keyable.ParamFieldIDs && k != keyable.ParamSlots && q.Path != pNone
	case srcSlots:
		return k == keyable.ParamSlots
	case srcFields:
		return k == keyable.ParamFieldIDs && len(q.Raw)%2 == 0 && len(q.Raw) > 0
	case srcAllFields:
		return k == keyable.ParamFieldIDs && len(q.Raw) == 1 && fieldOrder(q.Raw[0]) < numOrders
	}
	return false
}
