package speculator

import (
	"testing"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
)

// lockedValueRules is a quiet session's core and value rules, its lock
// held until the test ends.
func lockedValueRules(t *testing.T) (*core, *valueRules) {
	_, s, _ := quietSession()
	ss := s.ss
	ss.mu.Lock()
	t.Cleanup(ss.mu.Unlock)
	return &ss.core, &ss.vals
}

// askedOf tells the value rules the debugger asked cmd with params.
func askedOf(vr *valueRules, cmd jdwp.Cmd, params []byte) {
	var k keyable.Key
	info, _ := keyable.Fill(&k, cmd, params, sizes8)
	vr.asked(&k, info, sizes8)
}

// TestReadLevelsFollowTheDebugger: the value rules learn, by kind of
// read, how deep the debugger reads the values a stop shows (the level at
// which the stop's speculation found each object it read), follow one
// level of fields (firstLevels) until it has read values at a stop, then
// only as deep as it read at the last stop it showed (none, if it read no
// value there); a profile carries what was learned. Fails
// with the levels not learned (valueRules.asked, endEpisode) or not
// followed (learner.follows).
func TestReadLevelsFollowTheDebugger(t *testing.T) {
	c := &core{learn: newLearner()}
	vr := valueRules{core: c}
	l := &c.learn
	for rk := range numReads {
		for level := range uint8(maxValueLevel + 1) {
			if got, want := l.follows(rk, level), level < firstLevels[rk]; got != want {
				t.Fatalf("read %d at level %d followed %v before the debugger showed a stop, want %v", rk, level, got, want)
			}
		}
	}
	read := func(cmd jdwp.Cmd, obj uint64) {
		params := body(func(w *jdwp.BodyWriter) {
			w.ObjectID(obj)
			if cmd == jdwp.CmdObjectReferenceGetValues {
				w.Int32(1)
				w.FieldID(5)
			}
		})
		var k keyable.Key
		info, ok := keyable.Fill(&k, cmd, params, sizes8)
		if !ok {
			t.Fatalf("%v: not a key", cmd)
		}
		vr.asked(&k, info, sizes8)
	}
	l.beginEpisode(thread1, jdwp.Location{})
	l.ep.objLevel[0x10], l.ep.objLevel[0x20], l.ep.objLevel[0x30] = 0, 1, 2
	read(jdwp.CmdObjectReferenceGetValues, 0x10)     // the fields of a local's object
	read(jdwp.CmdObjectReferenceReferenceType, 0x20) // the type of one of its fields' objects
	read(jdwp.CmdStringReferenceValue, 0x99)         // an object no speculation found: no level
	l.endEpisode(&c.disp)
	want := []struct {
		rk    readKind
		level uint8
		ok    bool
	}{
		{readFields, 0, true}, {readFields, 1, false},
		{readNames, 1, true}, {readNames, 2, false},
		{readElements, 0, false},
	}
	check := func(l *learner, from string) {
		for _, w := range want {
			if got := l.follows(w.rk, w.level); got != w.ok {
				t.Errorf("%s: read %d at level %d followed %v, want %v", from, w.rk, w.level, got, w.ok)
			}
		}
	}
	check(l, "after the stop")
	var p profile
	l.exportState(&p, sizes8)
	if !p.valid() {
		t.Fatalf("profile %+v not valid", p.ReadLevels)
	}
	imported := newLearner()
	imported.importFrom(&p, sizes8)
	check(&imported, "from the profile")
	l.beginEpisode(thread1, jdwp.Location{}) // a stop not shown (no frames, no value read): the levels stay
	l.endEpisode(&c.disp)
	check(l, "after a stop not shown")
	l.beginEpisode(thread1, jdwp.Location{}) // shown, no value read (jdb): none followed
	l.ep.asked = map[jdwp.Cmd]bool{jdwp.CmdThreadReferenceFrames: true}
	l.endEpisode(&c.disp)
	for rk := range numReads {
		if l.follows(rk, 0) {
			t.Errorf("read %d followed after a stop shown with no value read", rk)
		}
	}
}

// TestSparseLevelsNotFollowed: at a level where the debugger read fewer
// than half of the arrays (or objects) the stop found there, the value
// rules no longer read them all ahead (the one its user opened is read
// again by where it was found: the learned rules); where it read most of
// them they are followed; a later stop that reads most of them again
// follows them again. Fails without learner.sparse: BigApp's VS Code-like
// debugger opens one of the arrays its locals' fields hold, and each
// step read all of them ahead.
func TestSparseLevelsNotFollowed(t *testing.T) {
	c, vr := lockedValueRules(t)
	l := &c.learn
	stop := func(found, read []uint64) {
		l.beginEpisode(thread1, jdwp.Location{})
		for _, o := range found {
			vr.values(sizes8, 1, jdwp.Value{Tag: jdwp.TagArray, Bits: o})
		}
		for _, o := range read {
			askedOf(vr, jdwp.CmdArrayReferenceGetValues, body(func(w *jdwp.BodyWriter) { w.ObjectID(o); w.Int32(0); w.Int32(2) }))
		}
		l.endEpisode(&c.disp)
	}
	stop([]uint64{0xA1, 0xA2, 0xA3, 0xA4}, []uint64{0xA2})
	if l.follows(readElements, 1) {
		t.Error("the elements of arrays at level 1 followed after the debugger read one of four")
	}
	stop([]uint64{0xB1, 0xB2, 0xB3}, []uint64{0xB1, 0xB3})
	if !l.follows(readElements, 1) {
		t.Error("the elements of arrays at level 1 not followed after the debugger read two of three")
	}
}

// TestUnusedValueTemplatesDropAtOnce: a replayed read of an object's
// value that went unused is dropped after that stop (the variable holds
// another object now: BigApp's steps), a replayed read of a thread's
// state after two. Fails with every template kept for two unused stops.
func TestUnusedValueTemplatesDropAtOnce(t *testing.T) {
	c := &core{learn: newLearner()}
	l := &c.learn
	mk := func(cmd jdwp.Cmd, params []byte) *template {
		tp := &template{}
		keyable.Fill(&tp.key, cmd, params, sizes8)
		l.byKey[tp.key] = tp
		return tp
	}
	fields := mk(jdwp.CmdObjectReferenceGetValues, body(func(w *jdwp.BodyWriter) { w.ObjectID(0x55); w.Int32(1); w.FieldID(5) }))
	frames := mk(jdwp.CmdThreadReferenceFrames, body(func(w *jdwp.BodyWriter) { w.Thread(thread1); w.Int32(0); w.Int32(1) }))
	replayUnused(l, fields, frames)
	if !fields.removed || frames.removed {
		t.Errorf("after one unused replay: the object's fields dropped %v (want true), the frames %v (want false)", fields.removed, frames.removed)
	}
	replayUnused(l, fields, frames)
	if !frames.removed {
		t.Error("the frames kept after two unused replays")
	}
}

// replayUnused has l replay the templates not removed at a stop at which
// the debugger used none of them.
func replayUnused(l *learner, tps ...*template) {
	l.beginEpisode(thread1, jdwp.Location{})
	for _, tp := range tps {
		if !tp.removed {
			l.ep.specs = append(l.ep.specs, &spec{key: tp.key, info: keyable.Info{Tier: keyable.TierStop}, tmpl: tp, sent: true})
		}
	}
	l.endEpisode(&dispatcher{})
}

// TestTypeFactsOfUnopenedObjectsLearned: a debugger that shows an object
// (reads its type) and does not open it (reads none of its fields), and
// lists no type facts of its type it never listed before (Eclipse's JDI
// under java-debug), gets no type facts read ahead for such objects at
// the next stops, but still for those it opens; one that lists them
// (OpenJDK's JDI) gets them again; a type listed at an earlier stop and
// not listed again is no evidence either way. Fails without
// learner.learnShownFacts: BigApp's VS Code-like debugger had the
// fields, interfaces and superclass of each object its locals' fields
// hold read ahead, half of its first stop's waste.
func TestTypeFactsOfUnopenedObjectsLearned(t *testing.T) {
	c, vr := lockedValueRules(t)
	l := &c.learn
	ask := func(cmd jdwp.Cmd, id uint64) {
		params := body(func(w *jdwp.BodyWriter) { w.ObjectID(id) })
		if cmd == jdwp.CmdObjectReferenceGetValues {
			params = body(func(w *jdwp.BodyWriter) { w.ObjectID(id); w.Int32(1); w.FieldID(7) })
		}
		askedOf(vr, cmd, params)
	}
	// stop shows the local lo (opened) and the object o its field holds
	// (not opened), of type ot; the debugger lists the fields of lo's
	// type, and of ot if lists.
	stop := func(lo, o uint64, ot jdwp.ClassID, lists bool) {
		l.beginEpisode(thread1, jdwp.Location{})
		c.facts.setObjType(jdwp.ObjectID(lo), 0x100)
		c.facts.setObjType(jdwp.ObjectID(o), ot)
		vr.values(sizes8, 0, jdwp.Value{Tag: jdwp.TagObject, Bits: lo})
		vr.values(sizes8, 1, jdwp.Value{Tag: jdwp.TagObject, Bits: o})
		ask(jdwp.CmdObjectReferenceReferenceType, lo)
		ask(jdwp.CmdReferenceTypeFieldsWithGeneric, 0x100)
		ask(jdwp.CmdObjectReferenceGetValues, lo)
		ask(jdwp.CmdObjectReferenceReferenceType, o)
		if lists {
			ask(jdwp.CmdReferenceTypeFieldsWithGeneric, uint64(ot))
		}
		c.endEpisode()
	}
	// lists says whether the rules would read the type facts of a local
	// and of an object a local's field holds, found at a new stop.
	lists := func() (local, held bool) {
		l.beginEpisode(thread1, jdwp.Location{})
		defer c.endEpisode()
		vr.values(sizes8, 0, jdwp.Value{Tag: jdwp.TagObject, Bits: 0x90})
		vr.values(sizes8, 1, jdwp.Value{Tag: jdwp.TagObject, Bits: 0x91})
		return vr.listsFacts(0x90), vr.listsFacts(0x91)
	}
	if local, held := lists(); !local || !held {
		t.Fatalf("before any stop: type facts of a local %v, of a field's object %v; want both", local, held)
	}
	stop(0x10, 0x11, 0x200, false)
	if local, held := lists(); !local || held {
		t.Errorf("after a stop that listed no type of an object shown and not opened: type facts of a local %v (want true), of a field's object %v (want false)", local, held)
	}
	stop(0x20, 0x21, 0x300, true)
	if _, held := lists(); !held {
		t.Error("after a stop that listed the type of an object shown and not opened, its type facts are not read ahead")
	}
	stop(0x30, 0x31, 0x300, false) // 0x300 listed before: JDI keeps it
	if _, held := lists(); !held {
		t.Error("a stop that did not list again a type listed before was taken as a debugger that lists none")
	}
}

// TestSparseLevelsKeptInTheProfile: the levels a session found sparse,
// and whether its debugger lists the type facts of objects it does not
// open, go in its profile and come back in the next session's learner,
// whose first stop then does not read the sparse level's siblings ahead;
// a profile claiming more than a learner holds does not read back. Fails
// without them exported (exportState) or imported (importFrom).
func TestSparseLevelsKeptInTheProfile(t *testing.T) {
	l := newLearner()
	l.readLevel, l.levelsKnown = [numReads]uint8{readFields: 1, readElements: 2, readNames: 2}, true
	l.sparse[readElements][1] = true
	l.shownFacts = factsNotListed
	var p profile
	l.exportState(&p, sizes8)
	if !p.valid() {
		t.Fatalf("the profile exported does not read back: %+v", p)
	}
	next := newLearner()
	next.importFrom(&p, sizes8)
	if next.follows(readElements, 1) || !next.follows(readElements, 0) {
		t.Errorf("next session: elements at level 1 followed %v (want false), at level 0 %v (want true)", next.follows(readElements, 1), next.follows(readElements, 0))
	}
	if next.shownFacts != factsNotListed {
		t.Errorf("next session: shown facts %d, want %d", next.shownFacts, factsNotListed)
	}
	for _, bad := range []profile{{ShownFacts: factsNotListed + 1}, {Sparse: make([]uint8, numReads+1)}, {Sparse: []uint8{1 << (maxValueLevel + 1)}}, {PrepRead: []int8{2}}} {
		if bad.valid() {
			t.Errorf("a profile with %+v reads back", bad)
		}
	}
}
