package convo

import (
	"slices"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// Reply reads the reply (a successful one) to the command Command returned
// qp for; a nil qp (a command the State did not note) is ignored.
func (st *State) Reply(qp *query, c jdwp.Cmd, body []byte, sizes jdwp.IDSizes) {
	if qp == nil {
		return
	}
	q := *qp
	st.release(qp)
	if q.cmd != c {
		return
	}
	r := &st.r
	r.Reset(body, sizes)
	switch c {
	case jdwp.CmdVirtualMachineAllThreads:
		st.allThreads(r)
	case jdwp.CmdVirtualMachineAllClasses, jdwp.CmdVirtualMachineAllClassesWithGeneric:
		n := r.Count(1 + sizes.ReferenceTypeID + 4 + 4)
		for i := 0; i < n && r.Err() == nil; i++ {
			r.Uint8()
			ref := r.ReferenceTypeID()
			sig := r.StringBytes()
			if c == jdwp.CmdVirtualMachineAllClassesWithGeneric {
				r.StringBytes()
			}
			r.Int32()
			if r.Err() == nil {
				st.setSignature(ref, sig)
			}
		}
	case jdwp.CmdVirtualMachineClassesBySignature:
		n := r.Count(1 + sizes.ReferenceTypeID + 4)
		for i := 0; i < n && r.Err() == nil; i++ {
			r.Uint8()
			ref := r.ReferenceTypeID()
			r.Int32()
			if r.Err() == nil && q.hasSig {
				st.setSignature(ref, []byte(q.sig))
			}
		}
	case jdwp.CmdReferenceTypeSignature, jdwp.CmdReferenceTypeSignatureWithGeneric:
		if sig := r.StringBytes(); r.Err() == nil {
			st.setSignature(q.a, sig)
		}
	case jdwp.CmdReferenceTypeSourceFile:
		if src := r.StringBytes(); r.Err() == nil {
			if ci, ok := st.classes[q.a]; ok || len(st.classes) < maxClasses {
				if ci.source != string(src) {
					ci.source = string(src)
					st.classes[q.a] = ci
				}
			}
		}
	case jdwp.CmdReferenceTypeMethods, jdwp.CmdReferenceTypeMethodsWithGeneric:
		n := r.Count(sizes.MethodID + 4 + 4 + 4)
		for i := 0; i < n && r.Err() == nil; i++ {
			m := r.MethodID()
			name := r.StringBytes()
			r.StringBytes() // signature
			if c == jdwp.CmdReferenceTypeMethodsWithGeneric {
				r.StringBytes()
			}
			r.Int32() // modifiers
			if r.Err() != nil {
				break
			}
			k := methodKey{q.a, m}
			mi, ok := st.methods[k]
			if !ok && len(st.methods) >= maxMethods {
				continue
			}
			if mi.name != string(name) {
				mi.name = string(name)
				st.methods[k] = mi
			}
		}
	case jdwp.CmdMethodLineTable:
		r.Int64() // start
		r.Int64() // end
		n := r.Count(8 + 4)
		k := methodKey{q.a, q.b}
		mi, ok := st.methods[k]
		if r.Err() != nil || !ok && len(st.methods) >= maxMethods {
			return
		}
		lines := mi.lines[:0]
		for i := 0; i < n && r.Err() == nil && i < maxLines; i++ {
			idx := uint64(r.Int64())
			ln := r.Int32()
			if r.Err() == nil {
				lines = append(lines, lineEntry{idx, ln})
			}
		}
		slices.SortFunc(lines, func(a, b lineEntry) int {
			switch {
			case a.index < b.index:
				return -1
			case a.index > b.index:
				return 1
			}
			return 0
		})
		if lines == nil {
			lines = []lineEntry{}
		}
		mi.lines = lines
		st.methods[k] = mi
	case jdwp.CmdThreadReferenceName:
		name := r.StringBytes()
		if t := st.thread(q.a); r.Err() == nil && t != nil && t.Name != string(name) {
			t.Name = string(name)
		}
	case jdwp.CmdThreadReferenceStatus:
		s := r.Int32()
		sus := r.Int32()
		if t := st.thread(q.a); r.Err() == nil && t != nil {
			t.Status, t.Suspended, t.StatusStop = s, sus&1 != 0, st.stop
		}
	case jdwp.CmdThreadReferenceFrameCount:
		n := r.Int32()
		if t := st.thread(q.a); r.Err() == nil && t != nil {
			t.FrameCount = int(max(n, 0))
			if t.FramesStop != st.stop {
				t.Frames = t.Frames[:0]
			}
			t.FramesStop = st.stop
		}
	case jdwp.CmdThreadReferenceFrames:
		st.frames(r, q)
	}
}

func (st *State) allThreads(r *jdwp.BodyReader) {
	n := r.Count(r.Sizes().ObjectID)
	seen := make(map[uint64]bool, min(n, maxThreads))
	var order []uint64
	for i := 0; i < n && r.Err() == nil && i < maxThreads; i++ {
		id := r.ObjectID()
		if r.Err() != nil || seen[id] {
			continue
		}
		seen[id] = true
		order = append(order, id)
	}
	if r.Err() != nil {
		return
	}
	for id := range st.threads {
		if !seen[id] {
			delete(st.threads, id)
		}
	}
	for _, id := range order {
		if t := st.thread(id); t != nil {
			t.known = true
		}
	}
	st.order = order
}

func (st *State) frames(r *jdwp.BodyReader, q query) {
	t := st.thread(q.a)
	n := r.Count(r.Sizes().FrameID + 1 + r.Sizes().ReferenceTypeID + r.Sizes().MethodID + 8)
	if t == nil || r.Err() != nil || q.start < 0 {
		return
	}
	if t.FramesStop != st.stop {
		t.Frames, t.FrameCount = t.Frames[:0], -1
	}
	at := int(q.start)
	if at > len(t.Frames) {
		return // a gap: keep what is contiguous from the top
	}
	fs := t.Frames[:at]
	for i := 0; i < n && r.Err() == nil && len(fs) < maxFrames; i++ {
		r.FrameID()
		loc := r.Location()
		if r.Err() == nil {
			fs = append(fs, Frame{ClassID: loc.Class, MethodID: loc.Method, Index: loc.Index, Line: -1})
		}
	}
	t.Frames, t.FramesStop = fs, st.stop
}
