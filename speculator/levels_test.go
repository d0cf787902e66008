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
