// Package ddm is the codec of DDM (Dalvik Debug Monitor), the side channel
// Android VMs speak over JDWP command set 199: chunk types, the chunk
// iterator (several chunks per packet, defensively bounded), one Go type
// per chunk layout of PROTOCOL.md (in this directory; the code's § numbers
// are its sections) with its encoder and decoder (both directions, the
// 2007 design layouts included), ZLIB-wrapped
// chunks, UTF-16 strings and heap segment runs, and whole (199,1) command
// and reply packets.
//
// A chunk is a u4 type (four ASCII characters) and a u4 length, then its
// data. DDM packets are JDWP (199,1) commands in both directions; a reply
// carries its chunks in the body, with no chunk type in the JDWP header.
//
//	it := ddm.NewChunks(p.Body())
//	for c, ok := it.Next(); ok; c, ok = it.Next() {
//		payload, err := ddm.Decode(ddm.VMToHost, c)
//		...
//	}
//	pkt := ddm.AppendCommand(nil, id, ddm.U4{T: ddm.TypeHELO, V: 1})
//
// The package keeps no state and does no I/O; the proxy's DDM client and
// monitor are in ddmtap, the fake DDM VM in ddmtap/fakevm. Decoders never
// panic on hostile input: errors wrap ErrMalformed, ErrChunkLength or
// ErrTooLarge.
package ddm
