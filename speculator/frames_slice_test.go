package speculator

import (
	"bytes"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// deepStack answers a stopped thread's frames by range, as HotSpot's
// libjdwp does: frame i's ID is 0xF0+i, ranges past the end are refused.
func deepStack(depth int32, fs *frameState) func(p jdwp.Packet) (jdwp.ErrorCode, []byte) {
	return func(p jdwp.Packet) (jdwp.ErrorCode, []byte) {
		switch p.Cmd() {
		case jdwp.CmdVirtualMachineVersion:
			return 0, jdwptestVersion("OpenJDK 64-Bit Server VM")
		case jdwp.CmdThreadReferenceFrameCount:
			return 0, body(func(w *jdwp.BodyWriter) { w.Int32(depth) })
		case jdwp.CmdThreadReferenceFrames:
			r := jdwp.NewBodyReader(p.Body(), sizes8)
			r.Thread()
			start, n := r.Int32(), r.Int32()
			if n == -1 {
				n = depth - start
			}
			if start < 0 || n < 0 || start+n > depth {
				return jdwp.ErrorInvalidLength, nil
			}
			return 0, body(func(w *jdwp.BodyWriter) {
				w.Int32(n)
				for i := start; i < start+n; i++ {
					w.FrameID(0xF0 + uint64(i))
					w.Location(jdwp.Location{TypeTag: 1, Class: 0x70, Method: 0x71 + uint64(i), Index: 4})
				}
			})
		}
		return fs.handler(p)
	}
}

// TestFramesFromAllFrames: on HotSpot, a stopped thread's frames are read
// ahead all at once, and the debugger's ranges of them are answered from
// that reply, as the VM answers them; a range past the stack's end goes
// to the VM (which refuses it). Fails with ranges only answered from a
// reply to the same range (replyCache.framesOf), or sliced wrong.
func TestFramesFromAllFrames(t *testing.T) {
	fs := &frameState{count: 3, values: 10}
	r := newRigWith(t, Config{}, deepStack(5, fs))
	r.dbg.call(nextID(), jdwp.CmdIDSizes, nil)
	r.dbg.call(nextID(), jdwp.CmdVirtualMachineVersion, nil)
	r.event(jdwp.SuspendAll, bpEvent(thread1))
	r.expectEvent()
	all := body(func(w *jdwp.BodyWriter) { w.Thread(thread1); w.Int32(0); w.Int32(-1) })
	r.vm.waitAsked("every frame read ahead", jdwp.CmdThreadReferenceFrames, all)
	r.barrier()
	handler := deepStack(5, fs)
	for _, rg := range [][2]int32{{0, 2}, {1, 3}, {3, -1}, {0, 5}} {
		b := body(func(w *jdwp.BodyWriter) { w.Thread(thread1); w.Int32(rg[0]); w.Int32(rg[1]) })
		before := r.vm.count(jdwp.CmdThreadReferenceFrames)
		p := r.dbg.call(nextID(), jdwp.CmdThreadReferenceFrames, b)
		_, want := handler(jdwp.AppendCommand(nil, 1, jdwp.CmdThreadReferenceFrames, b))
		if p.ErrorCode() != 0 || !bytes.Equal(p.Body(), want) {
			t.Errorf("frames %v: %v %x, want %x", rg, p.ErrorCode(), p.Body(), want)
		}
		if n := r.vm.count(jdwp.CmdThreadReferenceFrames) - before; n != 0 {
			t.Errorf("frames %v went to the VM", rg)
		}
	}
	past := body(func(w *jdwp.BodyWriter) { w.Thread(thread1); w.Int32(0); w.Int32(20) })
	if p := r.dbg.call(nextID(), jdwp.CmdThreadReferenceFrames, past); p.ErrorCode() != jdwp.ErrorInvalidLength {
		t.Errorf("frames past the end answered %v, want the VM's %v", p.ErrorCode(), jdwp.ErrorInvalidLength)
	}
	r.dbg.quiet()
}

// FuzzSliceFrames feeds sliceFrames arbitrary replies and ranges: it
// answers only a range within a reply that parses, with as many frames
// as asked, never panics.
func FuzzSliceFrames(f *testing.F) {
	f.Add(body(func(w *jdwp.BodyWriter) {
		w.Int32(2)
		for i := range 2 {
			w.FrameID(uint64(i))
			w.Location(jdwp.Location{TypeTag: 1, Class: 1, Method: 2, Index: 3})
		}
	}), int32(0), int32(1))
	f.Add([]byte{0, 0, 0, 1}, int32(0), int32(-1))
	f.Fuzz(func(t *testing.T, b []byte, start, n int32) {
		reply := jdwp.AppendReply(nil, 1, 0, b)
		out, ok := sliceFrames(nil, 7, reply, start, n, sizes8)
		if !ok {
			return
		}
		size := 8 + 1 + 8 + 8 + 8
		got := jdwp.NewBodyReader(out.Body(), sizes8).Int32()
		if out.ID() != 7 || int(out.Length()) != len(out) || len(out.Body()) != 4+int(got)*size || n != -1 && got != n {
			t.Fatalf("slice (%d, %d) of %x: %x", start, n, b, out)
		}
	})
}
