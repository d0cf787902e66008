package speculator

import (
	"slices"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// TestProfileOrderIsCanonical: what a profile file holds does not depend
// on the order a debugger's concurrent reads taught it in, so that a
// regenerated prior.json changes only where what was learned changed.
func TestProfileOrderIsCanonical(t *testing.T) {
	frames := &lnode{cmd: jdwp.CmdThreadReferenceFrames, shape: "f"}
	threads := &lnode{cmd: jdwp.CmdVirtualMachineAllThreads, shape: "a"}
	name := &lnode{cmd: jdwp.CmdThreadReferenceName, shape: "n", from: threads}
	values := &lnode{cmd: jdwp.CmdStackFrameGetValues, shape: "g", from: frames}
	want := []*lnode{threads, frames, values, name}
	for _, order := range [][]*lnode{{frames, threads, name, values}, {threads, name, frames, values}, {frames, values, threads, name}} {
		g := &lgraph{nodes: order}
		if got := g.canonical(); !slices.Equal(got, want) {
			t.Errorf("nodes taught in the order %v: exported as %v, want %v", cmds(order), cmds(got), cmds(want))
		}
	}

	var a, b profile
	la := learner{asked: map[jdwp.Cmd]uint64{jdwp.CmdThreadReferenceName: 1, jdwp.CmdVirtualMachineAllThreads: 2, jdwp.CmdStackFrameGetValues: 3}}
	la.exportState(&a, jdwp.IDSizes{})
	lb := learner{asked: map[jdwp.Cmd]uint64{jdwp.CmdStackFrameGetValues: 3, jdwp.CmdThreadReferenceName: 1, jdwp.CmdVirtualMachineAllThreads: 2}}
	for range 8 { // map order differs from run to run
		b.Asked = nil
		lb.exportState(&b, jdwp.IDSizes{})
		if !slices.Equal(a.Asked, b.Asked) || !slices.IsSortedFunc(a.Asked, compareCmd) {
			t.Fatalf("asked exported as %v and %v, want one sorted order", a.Asked, b.Asked)
		}
	}
}

func cmds(ns []*lnode) []jdwp.Cmd {
	out := make([]jdwp.Cmd, len(ns))
	for i, n := range ns {
		out[i] = n.cmd
	}
	return out
}

// TestSetupTellsDebuggersApart: the setup a profile recorded is held
// against a session's: equal at its first stop to be trusted there
// (setUpAs); contradicted, while the session sets itself up, only by a
// bookkeeping kind the profile's debugger never set (jdb's thread starts
// against an IDE's class unloads alone), not by one it has yet to set, nor
// by a breakpoint or a class prepare request (the user's), nor by what is
// set after the first stop (not setup: TestFarEndWaitsForAProfileSetUpOtherwise
// has the session say which). Fails with the user's kinds counted, or a
// kind not yet set taken for a contradiction (an IDE's attach replay then
// waits for its first stop).
func TestSetupTellsDebuggersApart(t *testing.T) {
	ide := []jdwp.EventKind{jdwp.EventClassUnload}
	javaDebug := []jdwp.EventKind{jdwp.EventThreadStart, jdwp.EventThreadDeath, jdwp.EventClassUnload, jdwp.EventVMDeath}
	var s firstSets
	for _, k := range []jdwp.EventKind{jdwp.EventClassPrepare, jdwp.EventClassUnload, jdwp.EventBreakpoint} {
		s.add(k, true)
	}
	if s.contradicts(ide) || s.contradicts(javaDebug) || s.contradicts(nil) {
		t.Error("an IDE's setup so far contradicts a profile")
	}
	if !s.setUpAs(ide) || s.setUpAs(javaDebug) || !s.setUpAs(nil) {
		t.Errorf("an IDE's setup %v: set up as the IDE's %v, not as java-debug's, and as a profile that recorded none", s.setupKinds(), ide)
	}
	s.add(jdwp.EventThreadStart, true) // jdb's
	if !s.contradicts(ide) || s.contradicts(javaDebug) {
		t.Errorf("setup %v: contradicts the IDE's, not java-debug's", s.setupKinds())
	}
	s.add(jdwp.EventVMDeath, false) // after the first stop: not setup
	if got := s.setupKinds(); !slices.Equal(got, []jdwp.EventKind{jdwp.EventThreadStart, jdwp.EventClassUnload}) {
		t.Errorf("setup %v after the first stop, want thread starts and class unloads", got)
	}
}
