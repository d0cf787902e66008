package ddmtap

import (
	"bytes"
	"testing"
)

// FuzzDecode runs every chunk decoder, both directions, on arbitrary data:
// no panic, and whatever decodes re-encodes to data that decodes to the
// same value.
func FuzzDecode(f *testing.F) {
	for _, fx := range fixtures {
		f.Add(uint32(fx.typ), uint8(fx.dir), unhex(f, fx.data))
	}
	f.Add(uint32(TypeZLIB), uint8(VMToHost), Compressed{Inner: Chunk{Type: TypeTHDE, Data: []byte{0, 0, 0, 1}}}.AppendData(nil))
	f.Fuzz(func(t *testing.T, typ uint32, dir uint8, data []byte) {
		d := Direction(dir & 1)
		p, err := Decode(d, Chunk{Type: Type(typ), Data: data})
		if err != nil {
			return
		}
		again, err := Decode(d, Chunk{Type: p.ChunkType(), Data: p.AppendData(nil)})
		if err != nil {
			t.Fatalf("re-encoded %T does not decode: %v", p, err)
		}
		if first, second := p.AppendData(nil), again.AppendData(nil); !bytes.Equal(first, second) {
			t.Fatalf("round trip of %T:\n %x\n %x", p, first, second)
		}
	})
}

// FuzzChunks iterates arbitrary packet bodies and applies them to a monitor.
func FuzzChunks(f *testing.F) {
	f.Add(AppendCommand(nil, 1, U1{T: TypeTHEN, V: 1}, Empty{T: TypeTHST}).Body())
	f.Add([]byte{0x48, 0x50, 0x53, 0x54, 0, 0, 0, 4, 0, 0, 0, 1, 0x48, 0x50, 0x45, 0x4e, 0, 0, 0, 4, 0, 0, 0, 1})
	for _, fx := range fixtures {
		f.Add(AppendChunk(nil, fx.typ, unhex(f, fx.data)))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		m := NewMonitor("fuzz", nopLog, nil)
		m.HandlePayload(VMToHost, body)
		m.HandlePayload(HostToVM, body)
		_ = m.Snapshot()
	})
}
