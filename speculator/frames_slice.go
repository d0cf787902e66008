package speculator

import (
	"encoding/binary"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
)

// A stopped thread's frames, read once. A debugger asks a thread's frames
// by range (JDI: Frames(0, n) once FrameCount said how deep the stack is,
// java-debug 20 of them, IntelliJ's async JDI by pages), so a replayed
// range is a guess, and one sized from the count waits a round trip for
// it. The reference agent numbers a frame by its thread's suspension and
// its depth (libjdwp's createFrameID), not by the command that listed it,
// so the reply to Frames(t, 0, -1) (every frame) holds every range's
// answer while t stays suspended: the frames from start, as many as asked.
// The speculation of a thread's frames asks them all (learnedRules.build);
// a range past the stack's end is not answered here (the VM answers it
// with an error).

// allFramesKey sets all to Frames(t, 0, -1) for key, a Frames(t, start,
// n) of another range, and returns start and n; ok is false for another
// command or parameters that do not parse.
func allFramesKey(all, key *keyable.Key, sizes jdwp.IDSizes) (start, n int32, ok bool) {
	if key.Cmd() != jdwp.CmdThreadReferenceFrames {
		return 0, 0, false
	}
	r := jdwp.NewBodyReader(key.Params(), sizes)
	t := r.Thread()
	start, n = r.Int32(), r.Int32()
	if r.Err() != nil || r.Remaining() != 0 || start < 0 || start == 0 && n == -1 {
		return 0, 0, false
	}
	return start, n, everyFrameKey(all, t, sizes)
}

// everyFrameKey sets all to Frames(t, 0, -1); false if it does not fit.
func everyFrameKey(all *keyable.Key, t jdwp.ThreadID, sizes jdwp.IDSizes) bool {
	var b [8 + 8]byte
	w := jdwp.BodyWriter{Buf: b[:0], Sizes: sizes}
	w.Thread(t)
	w.Int32(0)
	w.Int32(-1)
	_, ok := keyable.Fill(all, jdwp.CmdThreadReferenceFrames, w.Buf, sizes)
	return ok
}

// framesOf returns the cached entry of every frame of key's thread that
// may answer key, a read of a range of them, and the range; nil if none.
func (c *replyCache) framesOf(key *keyable.Key, sizes jdwp.IDSizes) (e *entry, start, n int32) {
	var all keyable.Key
	start, n, ok := allFramesKey(&all, key, sizes)
	if !ok || !c.facts.frames.hotspot {
		return nil, 0, 0
	}
	return c.find(&all), start, n
}

// sliceFrames appends to dst the reply, with packet ID id, of frames
// [start, start+n) (n -1: to the end) from reply, a reply listing every
// frame; ok is false if it does not parse or the range is not within it.
func sliceFrames(dst []byte, id uint32, reply jdwp.Packet, start, n int32, sizes jdwp.IDSizes) (jdwp.Packet, bool) {
	if len(reply) < jdwp.HeaderSize+4 || reply.ErrorCode() != jdwp.ErrorNone {
		return nil, false
	}
	body := reply.Body()
	total := int32(binary.BigEndian.Uint32(body))
	size := sizes.FrameID + 1 + sizes.ReferenceTypeID + sizes.MethodID + 8
	if total < 0 || len(body) != 4+int(total)*size {
		return nil, false
	}
	if start < 0 || start > total {
		return nil, false
	}
	if n == -1 {
		n = total - start
	}
	if n < 0 || int64(start)+int64(n) > int64(total) {
		return nil, false
	}
	off := len(dst)
	dst = jdwp.AppendReply(dst, id, jdwp.ErrorNone, nil)
	dst = binary.BigEndian.AppendUint32(dst, uint32(n))
	dst = append(dst, body[4+int(start)*size:4+int(start+n)*size]...)
	binary.BigEndian.PutUint32(dst[off:], uint32(len(dst)-off))
	return dst[off:], true
}
