package speculator

import (
	"testing"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// FuzzWalkReply: any reply body, to any command whose paths the learned
// rules read, is walked without panicking, and every item found is within
// the body (its index below the body's length) with a path of that
// command.
func FuzzWalkReply(f *testing.F) {
	cmds := []jdwp.Cmd{jdwp.CmdVirtualMachineAllThreads, jdwp.CmdThreadReferenceFrames, jdwp.CmdStackFrameGetValues,
		jdwp.CmdObjectReferenceGetValues, jdwp.CmdArrayReferenceGetValues, jdwp.CmdStackFrameThisObject,
		jdwp.CmdObjectReferenceReferenceType, jdwp.CmdClassTypeSuperclass, jdwp.CmdReferenceTypeInterfaces}
	f.Add(uint8(0), body(func(w *jdwp.BodyWriter) { w.Int32(2); w.ObjectID(1); w.ObjectID(2) }))
	f.Add(uint8(1), body(func(w *jdwp.BodyWriter) {
		w.Int32(1)
		w.FrameID(9)
		w.Location(jdwp.Location{TypeTag: 1, Class: 3, Method: 4, Index: 5})
	}))
	f.Add(uint8(2), body(func(w *jdwp.BodyWriter) { w.Int32(1); w.Value(jdwp.Value{Tag: jdwp.TagObject, Bits: 7}) }))
	f.Add(uint8(4), body(func(w *jdwp.BodyWriter) { w.Uint8('L'); w.Int32(1); w.Value(jdwp.Value{Tag: jdwp.TagString, Bits: 7}) }))
	f.Fuzz(func(t *testing.T, c uint8, b []byte) {
		cmd := cmds[int(c)%len(cmds)]
		walkReply(cmd, b, sizes8, func(it *item) {
			if it.i < 0 || it.i > len(b) || it.path == pNone || it.sp == 0 {
				t.Fatalf("%v: item %+v from a body of %d bytes", cmd, *it, len(b))
			}
		})
	})
}
