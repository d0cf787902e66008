package speculator

import (
	"testing"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// TestProvableShapes: the shapes provableShape takes are the proof's
// (writebehind_provable.go), by event kind: only the modifiers it names,
// a breakpoint's location and a step's Step exactly once, and no shape of
// another kind or suspend policy.
func TestProvableShapes(t *testing.T) {
	const (
		count, thread, class, match = jdwp.ModCount, jdwp.ModThreadOnly, jdwp.ModClassOnly, jdwp.ModClassMatch
		loc, step, inst, field      = jdwp.ModLocationOnly, jdwp.ModStep, jdwp.ModInstanceOnly, jdwp.ModFieldOnly
	)
	for _, tc := range []struct {
		kind jdwp.EventKind
		mods []jdwp.ModKind
		want bool
	}{
		{jdwp.EventThreadStart, []jdwp.ModKind{count}, true},
		{jdwp.EventThreadDeath, []jdwp.ModKind{class}, false},
		{jdwp.EventClassPrepare, []jdwp.ModKind{match, jdwp.ModClassExclude, class, count}, true},
		{jdwp.EventClassPrepare, []jdwp.ModKind{thread}, false},
		{jdwp.EventBreakpoint, []jdwp.ModKind{loc, thread, class, count}, true},
		{jdwp.EventBreakpoint, nil, false},
		{jdwp.EventBreakpoint, []jdwp.ModKind{loc, loc}, false},
		{jdwp.EventBreakpoint, []jdwp.ModKind{loc, match}, false},
		{jdwp.EventSingleStep, []jdwp.ModKind{step, count, class, match}, true},
		{jdwp.EventSingleStep, []jdwp.ModKind{count}, false},
		{jdwp.EventSingleStep, []jdwp.ModKind{step, thread}, false},
		{jdwp.EventMethodExitWithReturnValue, []jdwp.ModKind{thread, class, inst}, true},
		{jdwp.EventMethodEntry, nil, true},
		{jdwp.EventMethodExit, []jdwp.ModKind{match}, false},
		{jdwp.EventFieldAccess, []jdwp.ModKind{field}, false},
		{jdwp.EventException, nil, false},
	} {
		c := &wbCmd{kind: tc.kind, shape: shape{n: 2}}
		c.shape.b[1] = byte(jdwp.SuspendEventThread)
		for _, k := range tc.mods {
			c.mods = append(c.mods, jdwp.Modifier{Kind: k})
		}
		if got := provableShape(c); got != tc.want {
			t.Errorf("%v %v: provable %v, want %v", tc.kind, tc.mods, got, tc.want)
		}
		c.shape.b[1] = 3 // a policy the agent takes unchecked: never proven
		if provableShape(c) {
			t.Errorf("%v %v with suspend policy 3 taken as provable", tc.kind, tc.mods)
		}
	}
}
