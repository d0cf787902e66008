package speculator

import (
	"bytes"
	"cmp"
	"slices"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
)

// The learner's share of the profile (persist.go): what it learned that
// holds no ID, and the slots asked of methods by name.

// exportTo leaves in p the learner's ID-free state, and the slots of
// methods whose class and name this connection handed out (h).
func (l *learner) exportTo(p *profile, h *handedOut, sizes jdwp.IDSizes) {
	l.exportState(p, sizes)
	l.exportSlots(p, h)
}

// exportSlots records the learner's slots of methods whose class and name
// this connection handed out.
func (l *learner) exportSlots(p *profile, h *handedOut) {
	for mk, s := range l.slots {
		sig, ok := h.sigOf[mk.class]
		m, known := h.methods[mk.class][mk.method]
		if !ok || !known {
			continue
		}
		for _, tail := range s.all() {
			if len(p.Slots) < maxLearned {
				p.Slots = append(p.Slots, slotsOf{Sig: sig, Name: m.name, MSig: m.sig, Index: mk.index, Exact: mk.exact,
					Tail: append([]byte(nil), tail...)})
			}
		}
	}
	slices.SortFunc(p.Slots, func(a, b slotsOf) int {
		return cmp.Or(cmp.Compare(a.Sig, b.Sig), cmp.Compare(a.Name, b.Name), cmp.Compare(a.MSig, b.MSig),
			cmp.Compare(a.Index, b.Index), bytes.Compare(a.Tail, b.Tail))
	})
}

// importSlots takes the profile's slots of the methods ms of class
// (signature sig), with this connection's IDs.
func (l *learner) importSlots(p *profile, class jdwp.ClassID, sig string, ms map[jdwp.MethodID]methodName) {
	for _, e := range p.Slots {
		if e.Sig != sig {
			continue
		}
		for id, m := range ms {
			if m.name == e.Name && m.sig == e.MSig {
				l.slotsOf(methodKey{class: class, method: id, index: e.Index, exact: e.Exact}).add(0, e.Tail)
			}
		}
	}
}

// exportState copies the learner's ID-free state into p.
func (l *learner) exportState(p *profile, sizes jdwp.IDSizes) {
	p.Asked = append(p.Asked, sortedCmds(l.asked)...)
	p.Ratio = append(p.Ratio[:0], l.ratio[:]...)
	p.Waste, p.FramesRule, p.ValueDepth, p.ThisDepth = l.waste, l.framesRule, l.valueDepth, l.thisDepth
	p.ArrKnown, p.FieldOrder, p.ShownFacts = l.arrKnown, l.fieldOrder, l.shownFacts
	p.ReadLevels, p.Sparse = nil, nil
	if l.levelsKnown {
		p.ReadLevels = append(p.ReadLevels, l.readLevel[:]...)
		for rk := range l.sparse {
			var bits uint8
			for lv, sparse := range l.sparse[rk] {
				if sparse {
					bits |= 1 << lv
				}
			}
			p.Sparse = append(p.Sparse, bits)
		}
	}
	if len(l.arrReads) > 0 {
		p.ArrFirst, p.ArrLen = l.arrReads[0].First, l.arrReads[0].Len
		p.ArrReads = append(p.ArrReads[:0], l.arrReads...)
	}
	for _, t := range l.templates {
		if t.removed || len(p.Templates) >= maxTemplates {
			continue
		}
		c, params := t.key.Cmd(), t.key.Params()
		rt := relTmpl{Set: c.Set, Cmd: c.Cmd, Rel: t.rel}
		switch {
		case len(params) == 0:
		case t.rel && len(params) == sizes.ObjectID:
		case t.rel && c == jdwp.CmdThreadReferenceFrames && len(params) == sizes.ObjectID+8:
			r := jdwp.NewBodyReader(params[sizes.ObjectID:], sizes)
			rt.Ints = []int32{r.Int32(), r.Int32()}
		default:
			continue // names other IDs
		}
		p.Templates = append(p.Templates, rt)
	}
}

// takeReads takes what p says of how its debugger reads the values a stop
// shows: the commands it asks (the rules deriving them may send them), its
// arrays' ranges, its objects' fields' order, and whether it lists the
// type facts of objects it does not open. A session takes them from
// the profile it imports, then from the one whose stop templates it takes
// (learnedRules.take: the profile of its own JDI).
func (l *learner) takeReads(p *profile) {
	for _, c := range p.Asked {
		if l.asked[c] == 0 {
			l.asked[c] = 1
		}
	}
	l.arrKnown, l.arrReads, l.fieldOrder = p.ArrKnown, l.arrReads[:0], p.FieldOrder
	if p.ShownFacts != factsUnknown {
		l.shownFacts = p.ShownFacts
	}
	switch {
	case len(p.ArrReads) > 0:
		l.arrReads = append(l.arrReads, p.ArrReads[:min(len(p.ArrReads), maxArrReads)]...)
	case p.ArrKnown: // a profile from before the reads were kept
		l.arrReads = append(l.arrReads, arrRead{First: p.ArrFirst, Len: p.ArrLen})
	}
}

// importFrom seeds a new session's learner with p.
func (l *learner) importFrom(p *profile, sizes jdwp.IDSizes) {
	// A file from before a rule was added has fewer. A rule starts
	// unshadowed whatever the last session made of it: that session's
	// ratios come from its steps, where JDI, its caches full, asks no
	// type facts, and shadowing them at a new session's first stop cost
	// BigApp's 16 serial round trips there 61. A stop that wastes a rule
	// shadows it again.
	for k, r := range p.Ratio[:min(len(p.Ratio), int(numKinds))] {
		l.ratio[k] = max(r, minRatio)
	}

	l.waste, l.framesRule, l.valueDepth, l.thisDepth = p.Waste, p.FramesRule, p.ValueDepth, p.ThisDepth
	if l.levelsKnown = len(p.ReadLevels) == int(numReads); l.levelsKnown {
		copy(l.readLevel[:], p.ReadLevels)
	}
	for rk, bits := range p.Sparse[:min(len(p.Sparse), int(numReads))] {
		for lv := range l.sparse[rk] {
			l.sparse[rk][lv] = bits&(1<<lv) != 0
		}
	}
	l.takeReads(p)
	if sizes.ObjectID == 0 || len(l.templates) > 0 {
		return
	}
	for _, rt := range p.Templates {
		w := jdwp.BodyWriter{Sizes: sizes}
		if rt.Rel {
			w.Thread(0)
			for _, n := range rt.Ints {
				w.Int32(n)
			}
		}
		// Asked at stops of earlier sessions; it rests after one stop
		// whose replay went unused (as the learned rules' templates: the
		// same first command and attach may be another debugger's).
		t := &template{rel: rt.Rel, stops: 2, unused: 1}
		if _, ok := keyable.Fill(&t.key, jdwp.Cmd{Set: rt.Set, Cmd: rt.Cmd}, w.Buf, sizes); !ok || l.byKey[t.key] != nil {
			continue
		}
		l.byKey[t.key] = t
		l.templates = append(l.templates, t)
	}
}
