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
