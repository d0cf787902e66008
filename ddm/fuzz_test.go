package ddm

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
