package ddmtap_test

import (
	"encoding/binary"

	"github.com/jdwpaccel/jdwpaccel/ddm"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// isDDMCommand reports whether p is a DDM (199,1) command packet.
func isDDMCommand(p jdwp.Packet) bool {
	return len(p) >= jdwp.HeaderSize && !p.IsReply() && p.Cmd() == jdwp.CmdDDMChunk
}

// firstChunkType returns the type of a DDM payload's first chunk without
// decoding it.
func firstChunkType(payload []byte) (ddm.Type, bool) {
	if len(payload) < ddm.ChunkHeaderSize {
		return 0, false
	}
	return ddm.Type(binary.BigEndian.Uint32(payload)), true
}
