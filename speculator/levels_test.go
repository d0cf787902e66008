package speculator

import (
	"testing"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
)

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
	_, s, _ := quietSession()
	ss := s.ss
	ss.mu.Lock()
	defer ss.mu.Unlock()
	c, vr := &ss.core, &ss.vals
	l := &c.learn
	stop := func(found, read []uint64) {
		l.beginEpisode(thread1, jdwp.Location{})
		for _, o := range found {
			vr.values(sizes8, 1, jdwp.Value{Tag: jdwp.TagArray, Bits: o})
		}
		for _, o := range read {
			params := body(func(w *jdwp.BodyWriter) { w.ObjectID(o); w.Int32(0); w.Int32(2) })
			var k keyable.Key
			info, _ := keyable.Fill(&k, jdwp.CmdArrayReferenceGetValues, params, sizes8)
			vr.asked(&k, info, sizes8)
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
