package speculator

import (
	"slices"
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
	"github.com/jdwpaccel/jdwpaccel/relay"
)

// kind is the prediction rule that produced a speculation; usage is
// tracked per kind so rules the debugger does not benefit from stop.
type kind uint8

const (
	kTemplate     kind = iota // replay of a command the debugger sent at the last stop
	kDefault                  // first-stop guesses: frame count, frames, threads
	kThreadName               // name of each thread of an AllThreads reply
	kThreadStatus             // status of each thread of an AllThreads reply
	kObsolete                 // Method.IsObsolete of each frame's method
	kThis                     // StackFrame.ThisObject at learned depths
	kFrameValues              // StackFrame.GetValues with the learned slots
	kRefType                  // ObjectReference.ReferenceType of objects found
	kString                   // StringReference.Value of strings found
	kArrayLength              // ArrayReference.Length of arrays found
	kArrayValues              // ArrayReference.GetValues with the learned range
	kFields                   // ObjectReference.GetValues with the learned fields
	kFrames                   // ThreadReference.Frames sized by the learned rule from the frame count
	kClassSource              // ReferenceType.SourceFile and SourceDebugExtension of frame classes
	kClassMembers             // ReferenceType.Methods(WithGeneric) of frame classes
	kClassInfo                // fields, interfaces, superclass of object types and their superclasses
	kLineTable                // Method.LineTable of frame methods
	kVarTable                 // Method.VariableTable(WithGeneric) of frame methods at learned depths
	numKinds
)

// spec is one speculative command, from decision to reply; it stays
// referenced by its cache entry to account for its use.
type spec struct {
	key       keyable.Key
	info      keyable.Info
	scopeID   uint64
	gen       uint64
	kind      kind
	tmpl      *template
	level     uint8 // object nesting of the values it will return
	id        uint32
	sent      bool
	cancelled bool
	used      bool
	done      bool     // accounted as wasted (or superseded)
	waiters   []uint32 // belayed debugger command IDs
}

// template is a stop-state command the debugger sent at a previous stop,
// replayed at the next. rel marks a ThreadReference command about the
// stopped thread, replayed for the new stopped thread.
type template struct {
	key     keyable.Key // with the thread ID zeroed when rel
	rel     bool
	seen    uint64 // last episode the debugger sent it
	unused  int    // consecutive stops at which its replay went unused
	removed bool
}

type frameInfo struct {
	depth  int
	thread uint64
	loc    jdwp.Location
}

type methodKey struct {
	class, method, index uint64
	exact                bool
}

// episode is one stop: from a suspending event to the next resume or stop.
type episode struct {
	active     bool
	serial     uint64
	thread     uint64
	frames     map[uint64]frameInfo // frame ID -> depth and location
	requested  []*template          // templates the debugger sent, in order
	specs      []*spec
	frameCount int32  // the stopped thread's frame count, 0 until seen
	valueDepth uint64 // depths whose values the debugger asked (bit set)
	thisDepth  uint64
	threads    []uint64         // the VM's threads, from this stop's AllThreads reply
	expanded   [numKinds]bool   // rules already widened by expandSiblings
	wantFields map[uint64]uint8 // objects awaiting their type before fields
	wantArray  map[uint64]bool  // arrays awaiting their length before values
	sentKind   [numKinds]int
	usedKind   [numKinds]int
}

// learner is what the session learned about the debugger across stops.
type learner struct {
	serial    uint64
	templates []*template
	byKey     map[keyable.Key]*template
	slots     map[methodKey][]byte // SF.GetValues parameters after the frame ID
	fields    map[uint64][]byte    // reference type -> OR.GetValues parameters after the object ID
	arrFirst  int32
	arrLen    int32
	arrKnown  bool
	// framesRule is how many top frames the debugger asks after the
	// frame count: 0 unknown, -1 all of them, n > 0 at most n.
	framesRule int32
	valueDepth uint64
	thisDepth  uint64
	ratio      [numKinds]float64 // smoothed used/sent per kind
	waste      float64           // smoothed wasted/sent of stop-state speculation
	// asked is the last episode (at least 1) in which the debugger sent
	// each cacheable command (any parameters); rules derived from replies
	// predict only commands the debugger sends in this workload.
	asked map[jdwp.Cmd]uint64
}

func newLearner() learner {
	l := learner{byKey: map[keyable.Key]*template{}, slots: map[methodKey][]byte{},
		fields: map[uint64][]byte{}, asked: map[jdwp.Cmd]uint64{}}
	for i := range l.ratio {
		l.ratio[i] = 1
	}
	return l
}

// Bounds of learned state and of speculation per stop.
const (
	maxTemplates   = 1024
	maxLearned     = 4096
	maxSpecPerStop = 1024
	maxDepth       = 64
)

// kindAllowed gates prediction rules: a derived rule (not a template or the
// first-stop default) predicts command c only if the debugger has sent c
// (with any parameters) in this session, and only while most of its
// speculation gets used (with an occasional probe so it can come back).
// The debugger not sending c at a stop is no evidence against the rule:
// the stop may have had nothing to ask it about (no string, no new class).
func (ss *session) kindAllowed(k kind, c jdwp.Cmd) bool {
	if k == kTemplate || k == kDefault {
		return true
	}
	if ss.learn.asked[c] == 0 {
		return false
	}
	return ss.learn.ratio[k] >= 0.3 || ss.ep.serial%8 == 0
}

func (ss *session) beginEpisode(thread uint64) {
	ss.learn.serial++
	ss.ep = episode{active: true, serial: ss.learn.serial, thread: thread,
		frames: map[uint64]frameInfo{}, wantFields: map[uint64]uint8{}, wantArray: map[uint64]bool{}}
}

// endEpisode accounts the stop's speculation and updates what was learned.
func (ss *session) endEpisode() {
	ep := &ss.ep
	if !ep.active {
		return
	}
	wasted := 0
	for _, s := range ep.specs {
		if s.cancelled || !s.sent {
			if ss.inflight[s.key] == s {
				delete(ss.inflight, s.key)
			}
			continue
		}
		if s.used {
			ep.usedKind[s.kind]++
		} else if s.info.Tier == keyable.TierStop && !s.done {
			s.done = true
			traceSpec(s, outcomeWasted, ep.serial)
			wasted++
		}
		if t := s.tmpl; t != nil && !t.removed {
			if s.used || t.seen == ep.serial {
				t.unused = 0
			} else if t.unused++; t.unused >= 2 {
				t.removed = true
				delete(ss.learn.byKey, t.key)
			}
		}
	}
	ss.queue = ss.queue[:0]
	ss.sp.countSpec(outcomeWasted, wasted)
	if stopSent := countStopSent(ep.specs); stopSent > 0 {
		ss.learn.waste = ss.learn.waste/2 + float64(wasted)/float64(stopSent)/2
	}
	for k := range ep.sentKind {
		if n := ep.sentKind[k]; n > 0 {
			ss.learn.ratio[k] = ss.learn.ratio[k]/2 + float64(ep.usedKind[k])/float64(n)/2
		}
	}
	// Templates for the next stop: what the debugger sent at this one, in
	// its order, then the older ones still alive.
	if len(ep.requested) > 0 {
		next := append([]*template(nil), ep.requested...)
		for _, t := range ss.learn.templates {
			if !t.removed && t.seen != ep.serial && len(next) < maxTemplates {
				next = append(next, t)
			}
		}
		ss.learn.templates = next
	} else {
		live := ss.learn.templates[:0]
		for _, t := range ss.learn.templates {
			if !t.removed {
				live = append(live, t)
			}
		}
		ss.learn.templates = live
	}
	if ep.valueDepth != 0 {
		ss.learn.valueDepth = ep.valueDepth
	}
	if ep.thisDepth != 0 {
		ss.learn.thisDepth = ep.thisDepth
	}
	*ep = episode{}
}

func countStopSent(specs []*spec) int {
	n := 0
	for _, s := range specs {
		if s.sent && !s.cancelled && s.info.Tier == keyable.TierStop {
			n++
		}
	}
	return n
}

// learnCommand records what the debugger asks during a stop.
func (ss *session) learnCommand(key *keyable.Key, info keyable.Info, scopeID uint64, sizes jdwp.IDSizes) {
	ep := &ss.ep
	c := key.Cmd()
	ss.learn.asked[c] = max(ss.learn.serial, 1)
	if !ep.active {
		return
	}
	params := key.Params()
	switch c {
	case jdwp.CmdStackFrameGetValues, jdwp.CmdStackFrameThisObject:
		fr := readID(params[sizes.ObjectID:], sizes.FrameID)
		fi, ok := ep.frames[fr]
		if !ok || fi.depth >= maxDepth {
			return
		}
		if c == jdwp.CmdStackFrameThisObject {
			ep.thisDepth |= 1 << fi.depth
			return
		}
		ep.valueDepth |= 1 << fi.depth
		tail := params[sizes.ObjectID+sizes.FrameID:]
		if len(ss.learn.slots) >= maxLearned {
			clear(ss.learn.slots)
		}
		mk := methodKey{class: fi.loc.Class, method: fi.loc.Method}
		ss.learn.slots[mk] = setBytes(ss.learn.slots[mk], tail)
		mk.index, mk.exact = fi.loc.Index, true
		ss.learn.slots[mk] = setBytes(ss.learn.slots[mk], tail)
		return
	case jdwp.CmdObjectReferenceGetValues:
		if t, ok := ss.objType[scopeID]; ok {
			if len(ss.learn.fields) >= maxLearned {
				clear(ss.learn.fields)
			}
			ss.learn.fields[t] = setBytes(ss.learn.fields[t], params[sizes.ObjectID:])
		}
	case jdwp.CmdThreadReferenceFrames:
		n, cnt := be32(params[sizes.ObjectID+4:]), ep.frameCount
		if scopeOrFirst(key, sizes) == ep.thread && be32(params[sizes.ObjectID:]) == 0 && n > 0 && cnt > 0 {
			switch {
			case n < cnt:
				ss.learn.framesRule = n
			case n == cnt && (ss.learn.framesRule <= 0 || n > ss.learn.framesRule):
				ss.learn.framesRule = -1
			}
		}
	case jdwp.CmdArrayReferenceGetValues:
		ss.learn.arrFirst = be32(params[sizes.ObjectID:])
		ss.learn.arrLen = be32(params[sizes.ObjectID+4:])
		ss.learn.arrKnown = true
	}
	if info.Tier != keyable.TierStop {
		return
	}
	// A template: replayed verbatim (or for the new stopped thread).
	tk := *key
	rel := c.Set == jdwp.SetThreadReference && scopeOrFirst(key, sizes) == ep.thread
	if rel {
		tk = ss.withFirstID(key, 0, sizes)
	}
	t := ss.learn.byKey[tk]
	if t == nil {
		if len(ss.learn.byKey) >= maxTemplates {
			return
		}
		t = &template{key: tk, rel: rel}
		ss.learn.byKey[tk] = t
	}
	t.unused = 0
	if t.seen != ep.serial {
		t.seen = ep.serial
		ep.requested = append(ep.requested, t)
	}
}

// scopeOrFirst is the first object ID of a ThreadReference command's
// parameters.
func scopeOrFirst(k *keyable.Key, sizes jdwp.IDSizes) uint64 {
	return readID(k.Params(), sizes.ObjectID)
}

func setBytes(dst, src []byte) []byte {
	if string(dst) == string(src) {
		return dst
	}
	return append(dst[:0:0], src...)
}

func readID(b []byte, n int) uint64 {
	if n < 1 || n > 8 || len(b) < n {
		return 0
	}
	var v uint64
	for _, c := range b[:n] {
		v = v<<8 | uint64(c)
	}
	return v
}

// withFirstID returns a copy of k whose first (object) ID parameter is v.
func (ss *session) withFirstID(k *keyable.Key, v uint64, sizes jdwp.IDSizes) keyable.Key {
	ss.pbuf = append(ss.pbuf[:0], k.Params()...)
	putID(ss.pbuf, v, sizes.ObjectID)
	var out keyable.Key
	if _, ok := keyable.Fill(&out, k.Cmd(), ss.pbuf, sizes); !ok {
		return *k // cannot happen: same layout, same sizes
	}
	return out
}

// ---- speculation ----------------------------------------------------------

// speculateStop sends the first wave at a suspending event: the commands
// whose replies feed later waves first, then the replayed templates.
func (ss *session) speculateStop(rs *relay.Session, sizes jdwp.IDSizes) {
	t := ss.ep.thread
	if len(ss.learn.templates) == 0 {
		ss.specThread(rs, sizes, jdwp.CmdThreadReferenceFrameCount, t, kDefault)
		ss.specFrames(rs, sizes, t, 0, -1, kDefault)
		ss.specParams(rs, sizes, jdwp.CmdVirtualMachineAllThreads, nil, kDefault, nil, 0)
		ss.specThread(rs, sizes, jdwp.CmdThreadReferenceName, t, kDefault)
		ss.specThread(rs, sizes, jdwp.CmdThreadReferenceStatus, t, kDefault)
		return
	}
	for pass := 0; pass < 2; pass++ {
		for _, tp := range ss.learn.templates {
			if tp.removed {
				continue
			}
			c := tp.key.Cmd()
			feeds := c == jdwp.CmdThreadReferenceFrames || c == jdwp.CmdThreadReferenceFrameCount ||
				c == jdwp.CmdVirtualMachineAllThreads
			if feeds != (pass == 0) {
				continue
			}
			params := tp.key.Params()
			if tp.rel {
				ss.pbuf = append(ss.pbuf[:0], params...)
				putID(ss.pbuf, t, sizes.ObjectID)
				params = ss.pbuf
			}
			ss.specParams(rs, sizes, c, params, kTemplate, tp, 0)
		}
	}
}

func (ss *session) specThread(rs *relay.Session, sizes jdwp.IDSizes, c jdwp.Cmd, thread uint64, k kind) {
	w := jdwp.BodyWriter{Buf: ss.pbuf[:0], Sizes: sizes}
	w.ObjectID(thread)
	ss.pbuf = w.Buf
	ss.specParams(rs, sizes, c, ss.pbuf, k, nil, 0)
}

func (ss *session) specFrames(rs *relay.Session, sizes jdwp.IDSizes, thread uint64, start, n int32, k kind) {
	w := jdwp.BodyWriter{Buf: ss.pbuf[:0], Sizes: sizes}
	w.ObjectID(thread)
	w.Int32(start)
	w.Int32(n)
	ss.pbuf = w.Buf
	ss.specParams(rs, sizes, jdwp.CmdThreadReferenceFrames, ss.pbuf, k, nil, 0)
}

// specParams speculates command c with the given parameters unless the
// answer is cached or in flight, the rule is gated, the scope is not
// suspended, or the stop's budget is spent.
func (ss *session) specParams(rs *relay.Session, sizes jdwp.IDSizes, c jdwp.Cmd, params []byte, k kind, tp *template, level uint8) {
	ep := &ss.ep
	if !ep.active || len(ep.specs) >= maxSpecPerStop || !ss.kindAllowed(k, c) {
		return
	}
	s := &spec{kind: k, tmpl: tp, level: level}
	info, ok := keyable.Fill(&s.key, c, params, sizes)
	if !ok {
		return
	}
	s.info = info
	s.scopeID = s.key.ScopeID(info, sizes)
	if !ss.scopeOK(info, s.scopeID) {
		return
	}
	if e, ok := ss.cache.Peek(s.key); ok && ss.valid(e.info, e.scopeID, e.gen) {
		return
	}
	if old := ss.inflight[s.key]; old != nil && !old.cancelled && ss.valid(old.info, old.scopeID, old.gen) {
		return
	}
	if !ss.safeToSend(s, sizes) {
		ss.sp.countSpec(outcomeWithheld, 1)
		return
	}
	s.gen = ss.gen
	ss.inflight[s.key] = s
	ep.specs = append(ep.specs, s)
	if ss.nInFlight < ss.sp.cfg.MaxInFlight {
		ss.send(rs, s)
	} else {
		ss.queue = append(ss.queue, s)
	}
}

// send writes a speculative command to the VM. It runs under ss.mu so no
// later debugger command can overtake it (belay relies on that order).
func (ss *session) send(rs *relay.Session, s *spec) {
	s.id = ss.ids.NewSynthetic()
	s.sent = true
	ss.nInFlight++
	ss.ep.sentKind[s.kind]++
	ss.trig.Track(s.id, s.key.Cmd(), cmdData{spec: s})
	ss.sendBuf = s.key.AppendCommand(ss.sendBuf[:0], s.id)
	traceSpec(s, outcomeSent, ss.ep.serial)
	ss.sp.countSpec(outcomeSent, 1)
	if time.Since(ss.began) < logOwnFor {
		ss.log.Debug().Stringer("command", s.key.Cmd()).Uint32("id", s.id).Msg("sent to the VM on the proxy's own behalf")
	}
	if err := rs.SendToVM(ss.sendBuf, relay.Synthetic); err != nil {
		ss.log.Debug().Err(err).Msg("cannot send a speculative command")
	}
}

// drain sends queued speculation as in-flight room frees up.
func (ss *session) drain(rs *relay.Session) {
	for len(ss.queue) > 0 && ss.nInFlight < ss.sp.cfg.MaxInFlight {
		s := ss.queue[0]
		ss.queue = ss.queue[1:]
		if s.cancelled || !ss.valid(s.info, s.scopeID, s.gen) {
			if ss.inflight[s.key] == s {
				delete(ss.inflight, s.key)
			}
			s.cancelled = true
			continue
		}
		ss.send(rs, s)
	}
}

// chain speculates the next wave from a reply (speculative or organic)
// valid in the current stop.
func (ss *session) chain(rs *relay.Session, key *keyable.Key, gen uint64, p jdwp.Packet, sizes jdwp.IDSizes, level uint8) {
	if !ss.ep.active || !ss.speculating() || gen < ss.stopInval {
		return
	}
	r := jdwp.NewBodyReader(p.Body(), sizes)
	params := key.Params()
	switch key.Cmd() {
	case jdwp.CmdVirtualMachineAllThreads:
		n := r.Count(sizes.ObjectID)
		ss.ep.threads = ss.ep.threads[:0]
		for i := 0; i < n && r.Err() == nil; i++ {
			t := r.ObjectID()
			if len(ss.ep.threads) < maxSpecPerStop {
				ss.ep.threads = append(ss.ep.threads, t)
			}
			ss.specThread(rs, sizes, jdwp.CmdThreadReferenceName, t, kThreadName)
			ss.specThread(rs, sizes, jdwp.CmdThreadReferenceStatus, t, kThreadStatus)
		}
	case jdwp.CmdThreadReferenceFrames:
		thread := readID(params, sizes.ObjectID)
		start := int(be32(params[sizes.ObjectID:]))
		n := r.Count(sizes.FrameID + 1 + sizes.ReferenceTypeID + sizes.MethodID + 8)
		for i := 0; i < n && r.Err() == nil; i++ {
			fr := r.FrameID()
			loc := r.Location()
			if r.Err() != nil {
				break
			}
			d := start + i
			ss.ep.frames[fr] = frameInfo{depth: d, thread: thread, loc: loc}
			if thread != ss.ep.thread {
				continue
			}
			w := jdwp.BodyWriter{Buf: ss.pbuf[:0], Sizes: sizes}
			w.ReferenceTypeID(loc.Class)
			w.MethodID(loc.Method)
			ss.pbuf = w.Buf
			ss.specParams(rs, sizes, jdwp.CmdMethodIsObsolete, ss.pbuf, kObsolete, nil, 0)
			ss.specClassMeta(rs, sizes, loc, d)
			if d >= maxDepth {
				continue
			}
			if ss.learn.thisDepth&(1<<d) != 0 {
				w := jdwp.BodyWriter{Buf: ss.pbuf[:0], Sizes: sizes}
				w.ObjectID(thread)
				w.FrameID(fr)
				ss.pbuf = w.Buf
				ss.specParams(rs, sizes, jdwp.CmdStackFrameThisObject, ss.pbuf, kThis, nil, 0)
			}
			if ss.learn.valueDepth&(1<<d) != 0 {
				tail, ok := ss.learn.slots[methodKey{class: loc.Class, method: loc.Method, index: loc.Index, exact: true}]
				if !ok {
					tail, ok = ss.learn.slots[methodKey{class: loc.Class, method: loc.Method}]
				}
				if ok {
					w := jdwp.BodyWriter{Buf: ss.pbuf[:0], Sizes: sizes}
					w.ObjectID(thread)
					w.FrameID(fr)
					w.Buf = append(w.Buf, tail...)
					ss.pbuf = w.Buf
					ss.specParams(rs, sizes, jdwp.CmdStackFrameGetValues, ss.pbuf, kFrameValues, nil, 0)
				}
			}
		}
	case jdwp.CmdThreadReferenceFrameCount:
		// The debugger sizes its frames request by the count: when the
		// count changed since the last stop, the replayed template asks
		// the wrong number of frames.
		thread := readID(params, sizes.ObjectID)
		n := r.Int32()
		if r.Err() != nil || thread != ss.ep.thread || n <= 0 {
			return
		}
		ss.ep.frameCount = n
		if rule := ss.learn.framesRule; rule != 0 {
			if rule > 0 {
				n = min(n, rule)
			}
			ss.specFrames(rs, sizes, thread, 0, n, kFrames)
		}
	case jdwp.CmdStackFrameThisObject:
		v := r.TaggedObjectID()
		if r.Err() == nil {
			ss.values(rs, sizes, 0, v)
		}
	case jdwp.CmdStackFrameGetValues, jdwp.CmdObjectReferenceGetValues:
		lvl := uint8(0)
		if key.Cmd() == jdwp.CmdObjectReferenceGetValues {
			lvl = level + 1
		}
		n := r.Count(1)
		for i := 0; i < n && r.Err() == nil; i++ {
			v := r.Value()
			if r.Err() == nil {
				ss.values(rs, sizes, lvl, v)
			}
		}
	case jdwp.CmdArrayReferenceGetValues:
		tag := jdwp.Tag(r.Uint8())
		if !tag.IsObject() {
			return
		}
		n := r.Count(1)
		for i := 0; i < n && r.Err() == nil; i++ {
			v := r.Value()
			if r.Err() == nil {
				ss.values(rs, sizes, level+1, v)
			}
		}
	case jdwp.CmdObjectReferenceReferenceType:
		obj := readID(params, sizes.ObjectID)
		r.Uint8()
		t := r.ReferenceTypeID()
		if r.Err() != nil {
			return
		}
		ss.setObjType(obj, t)
		ss.specTypeInfo(rs, sizes, t)
		if lvl, ok := ss.ep.wantFields[obj]; ok {
			delete(ss.ep.wantFields, obj)
			ss.specFields(rs, sizes, obj, t, lvl)
		}
	case jdwp.CmdClassTypeSuperclass:
		sup := r.ReferenceTypeID()
		if r.Err() == nil {
			ss.specTypeInfo(rs, sizes, sup)
		}
	case jdwp.CmdArrayReferenceLength:
		arr := readID(params, sizes.ObjectID)
		n := r.Int32()
		if r.Err() == nil && ss.ep.wantArray[arr] {
			delete(ss.ep.wantArray, arr)
			ss.specArrayValues(rs, sizes, arr, n, level)
		}
	}
}

// expandSiblings widens a miss: the debugger asked a thread's name or
// status, or a frame method's IsObsolete, that no rule predicted (the
// first time it asks it, typically at the first stop); it will ask the
// same of every thread listed, or every frame, so those are speculated now
// (sent ahead of the debugger's own command).
func (ss *session) expandSiblings(rs *relay.Session, sizes jdwp.IDSizes, key *keyable.Key) {
	ep := &ss.ep
	if !ep.active || !ss.speculating() {
		return
	}
	c := key.Cmd()
	switch c {
	case jdwp.CmdThreadReferenceName, jdwp.CmdThreadReferenceStatus:
		k := kThreadName
		if c == jdwp.CmdThreadReferenceStatus {
			k = kThreadStatus
		}
		own := readID(key.Params(), sizes.ObjectID)
		if ep.expanded[k] || !slices.Contains(ep.threads, own) {
			return
		}
		ep.expanded[k] = true
		for _, t := range ep.threads {
			if t != own {
				ss.specThread(rs, sizes, c, t, k)
			}
		}
	case jdwp.CmdMethodIsObsolete:
		params := key.Params()
		class := readID(params, sizes.ReferenceTypeID)
		method := readID(params[sizes.ReferenceTypeID:], sizes.MethodID)
		if ep.expanded[kObsolete] {
			return
		}
		found := false
		for _, fi := range ep.frames {
			if fi.loc.Class == class && fi.loc.Method == method {
				found = true
				break
			}
		}
		if !found {
			return
		}
		ep.expanded[kObsolete] = true
		for _, fi := range ep.frames {
			if fi.loc.Class == class && fi.loc.Method == method {
				continue
			}
			w := jdwp.BodyWriter{Buf: ss.pbuf[:0], Sizes: sizes}
			w.ReferenceTypeID(fi.loc.Class)
			w.MethodID(fi.loc.Method)
			ss.pbuf = w.Buf
			ss.specParams(rs, sizes, c, ss.pbuf, kObsolete, nil, 0)
		}
	}
}

// values speculates on one value found in a frame, object or array: a
// string's value, an array's length and first elements, an object's type
// and (at the first level) its fields.
func (ss *session) values(rs *relay.Session, sizes jdwp.IDSizes, level uint8, v jdwp.Value) {
	if v.IsNull() || !v.IsObject() || level > 1 {
		return
	}
	o := v.Bits
	w := jdwp.BodyWriter{Buf: ss.pbuf[:0], Sizes: sizes}
	w.ObjectID(o)
	ss.pbuf = w.Buf
	switch v.Tag {
	case jdwp.TagString:
		ss.specParams(rs, sizes, jdwp.CmdStringReferenceValue, ss.pbuf, kString, nil, level)
	case jdwp.TagArray:
		if !ss.learn.arrKnown {
			return
		}
		var lk keyable.Key
		if _, ok := keyable.Fill(&lk, jdwp.CmdArrayReferenceLength, ss.pbuf, sizes); !ok {
			return
		}
		if e := ss.lookup(&lk); e != nil && len(e.reply) >= jdwp.HeaderSize+4 && jdwp.Packet(e.reply).ErrorCode() == 0 {
			ss.specArrayValues(rs, sizes, o, be32(e.reply[jdwp.HeaderSize:]), level)
			return
		}
		ss.ep.wantArray[o] = true
		ss.specParams(rs, sizes, jdwp.CmdArrayReferenceLength, ss.pbuf, kArrayLength, nil, level)
	case jdwp.TagObject:
		if t, ok := ss.objType[o]; ok {
			if level == 0 {
				ss.specFields(rs, sizes, o, t, level)
			}
			return
		}
		if level == 0 {
			ss.ep.wantFields[o] = level
		}
		ss.specParams(rs, sizes, jdwp.CmdObjectReferenceReferenceType, ss.pbuf, kRefType, nil, level)
	}
}

// classMetaCmds are the class-lifetime facts the debugger may ask about a
// frame's class when it first meets it, with the rule that predicts each.
var classMetaCmds = [...]struct {
	c jdwp.Cmd
	k kind
}{
	{jdwp.CmdReferenceTypeSourceFile, kClassSource},
	{jdwp.CmdReferenceTypeSourceDebugExtension, kClassSource},
	{jdwp.CmdReferenceTypeMethodsWithGeneric, kClassMembers},
	{jdwp.CmdReferenceTypeMethods, kClassMembers},
}

// typeInfoCmds are the class-lifetime facts the debugger asks about an
// object's type to list its fields (visible fields need the superclasses
// and interfaces too).
var typeInfoCmds = [...]jdwp.Cmd{
	jdwp.CmdReferenceTypeFieldsWithGeneric, jdwp.CmdReferenceTypeFields,
	jdwp.CmdReferenceTypeInterfaces, jdwp.CmdClassTypeSuperclass,
}

// specTypeInfo speculates the type facts the debugger asked for types
// before (cached, so nothing is sent, for a type seen before).
func (ss *session) specTypeInfo(rs *relay.Session, sizes jdwp.IDSizes, t uint64) {
	if t == 0 {
		return
	}
	for _, c := range typeInfoCmds {
		if ss.learn.asked[c] == 0 {
			continue
		}
		w := jdwp.BodyWriter{Buf: ss.pbuf[:0], Sizes: sizes}
		w.ReferenceTypeID(t)
		ss.pbuf = w.Buf
		ss.specParams(rs, sizes, c, ss.pbuf, kClassInfo, nil, 0)
	}
}

// specClassMeta speculates the class metadata of a frame's class and
// method that the debugger asked for classes before (already cached for a
// class seen before, so this sends nothing for it): class-lifetime facts,
// valid until the class is unloaded or redefined.
func (ss *session) specClassMeta(rs *relay.Session, sizes jdwp.IDSizes, loc jdwp.Location, depth int) {
	for _, m := range classMetaCmds {
		if ss.learn.asked[m.c] == 0 {
			continue
		}
		w := jdwp.BodyWriter{Buf: ss.pbuf[:0], Sizes: sizes}
		w.ReferenceTypeID(loc.Class)
		ss.pbuf = w.Buf
		ss.specParams(rs, sizes, m.c, ss.pbuf, m.k, nil, 0)
	}
	w := jdwp.BodyWriter{Buf: ss.pbuf[:0], Sizes: sizes}
	w.ReferenceTypeID(loc.Class)
	w.MethodID(loc.Method)
	ss.pbuf = w.Buf
	if ss.learn.asked[jdwp.CmdMethodLineTable] != 0 {
		ss.specParams(rs, sizes, jdwp.CmdMethodLineTable, ss.pbuf, kLineTable, nil, 0)
	}
	if depth < maxDepth && ss.learn.valueDepth&(1<<depth) != 0 {
		for _, c := range [...]jdwp.Cmd{jdwp.CmdMethodVariableTableWithGeneric, jdwp.CmdMethodVariableTable} {
			if ss.learn.asked[c] != 0 {
				ss.specParams(rs, sizes, c, ss.pbuf, kVarTable, nil, 0)
			}
		}
	}
}

func (ss *session) specFields(rs *relay.Session, sizes jdwp.IDSizes, obj, t uint64, level uint8) {
	tail, ok := ss.learn.fields[t]
	if !ok {
		return
	}
	w := jdwp.BodyWriter{Buf: ss.pbuf[:0], Sizes: sizes}
	w.ObjectID(obj)
	w.Buf = append(w.Buf, tail...)
	ss.pbuf = w.Buf
	ss.specParams(rs, sizes, jdwp.CmdObjectReferenceGetValues, ss.pbuf, kFields, nil, level)
}

func (ss *session) specArrayValues(rs *relay.Session, sizes jdwp.IDSizes, arr uint64, length int32, level uint8) {
	first, n := ss.learn.arrFirst, ss.learn.arrLen
	if n < 0 || first < 0 || first >= length {
		return
	}
	n = min(n, length-first)
	if n <= 0 {
		return
	}
	w := jdwp.BodyWriter{Buf: ss.pbuf[:0], Sizes: sizes}
	w.ObjectID(arr)
	w.Int32(first)
	w.Int32(n)
	ss.pbuf = w.Buf
	ss.specParams(rs, sizes, jdwp.CmdArrayReferenceGetValues, ss.pbuf, kArrayValues, nil, level)
}
