package speculator

import "slices"

// stripToGeneric removes from p everything that names a class outside
// the JDK, and write-behind's rules.
func (p *profile) stripToGeneric() {
	p.Sigs = keep(p.Sigs, jdkSignature)
	p.Class = keep(p.Class, func(e classCmd) bool { return jdkSignature(e.Sig) })
	p.Method = keep(p.Method, func(e methodCmd) bool { return jdkSignature(e.Sig) })
	p.Slots = keep(p.Slots, func(e slotsOf) bool { return jdkSignature(e.Sig) })
	p.Shapes = keep(p.Shapes, func(e objShape) bool { return jdkSignature(e.Sig) })
	p.WB = nil
	p.Ratio, p.Waste = nil, 0 // how much of its speculation that session used: its own
	p.ReadLevels = nil        // how deep that session's program's values go: its own
	p.Sparse = nil            // which of its levels hold values read one of many: its own
	p.PrepRead = nil          // whether its breakpoints sit in inner classes: its own
	p.Learned = keepLearned(p.Learned)
}

// keepLearned drops the learned templates that read fields by their
// positions in that session's program's classes (and those reading from
// them), renumbering the rest's From.
func keepLearned(ts []learnedTmpl) []learnedTmpl {
	var out []learnedTmpl
	at := map[int]int{} // kept template's index in ts -> in out
	for i, t := range ts {
		if t.From >= 0 {
			j, ok := at[t.From]
			if !ok {
				continue
			}
			t.From = j
		}
		if slices.ContainsFunc(t.Params, func(q learnedParam) bool { return q.Src == srcFields }) {
			continue
		}
		at[i] = len(out)
		out = append(out, t)
	}
	return out
}

func keep[T any](s []T, ok func(T) bool) []T {
	var out []T
	for _, e := range s {
		if ok(e) {
			out = append(out, e)
		}
	}
	return out
}
