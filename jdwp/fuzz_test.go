package jdwp

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"
)

// fuzzSizes turns 15 bits into ID sizes, 3 bits (1..8) per ID kind.
func fuzzSizes(x uint16) IDSizes {
	f := func(i uint) int { return 1 + int(x>>(3*i)&7) }
	return IDSizes{FieldID: f(0), MethodID: f(1), ObjectID: f(2), ReferenceTypeID: f(3), FrameID: f(4)}
}

// fuzzSizes8 is the fuzzSizes input for all-8-byte IDs (HotSpot's).
const fuzzSizes8 = 0x7fff

// fuzzSizesMixed is the fuzzSizes input for sizesMixed.
const fuzzSizesMixed = 1 | 2<<3 | 4<<6 | 6<<9 | 3<<12

// codecErr reports whether err is one of the decoders' typed errors.
func codecErr(err error) bool {
	for _, e := range []error{ErrShortBody, ErrBadTag, ErrUnknownModifier, ErrUnknownEventKind, ErrTrailingData, ErrBadIDSize} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func FuzzReadPacket(f *testing.F) {
	raw, _ := stream()
	f.Add(raw)
	f.Add(raw[:len(raw)-3])
	f.Add([]byte{0, 0, 0, 5, 1, 2, 3})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data), 1<<16)
		off := 0
		for {
			p, err := r.Next()
			if err != nil {
				if err != io.EOF && !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrShortPacket) && !errors.Is(err, ErrPacketTooLarge) {
					t.Fatalf("untyped error %v", err)
				}
				if err == io.EOF && off != len(data) {
					t.Fatalf("EOF at %d of %d", off, len(data))
				}
				return
			}
			if !p.Valid() || len(p) > 1<<16 {
				t.Fatalf("invalid packet %v", p)
			}
			if !bytes.Equal(p, data[off:off+len(p)]) {
				t.Fatalf("packet at %d differs from input", off)
			}
			off += len(p)
		}
	})
}

func FuzzHeader(f *testing.F) {
	f.Add([]byte(AppendCommand(nil, 7, CmdThreadReferenceFrames, []byte{1, 2, 3})))
	f.Add([]byte(AppendReply(nil, 7, ErrorInvalidThread, nil)))
	f.Add([]byte(AppendCommand(nil, 0xffffffff, Cmd{200, 200}, nil)))
	f.Add([]byte{0, 0, 0, 11, 0, 0, 0, 1, 0x41, 1, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		p := Packet(data)
		_ = p.String() // safe on any length
		if !p.Valid() {
			return
		}
		_, _, _ = p.Cmd().String(), p.ErrorCode().String(), p.CommandSet().String()
		if int(p.Length()) != len(data) || len(p.Body()) != len(data)-HeaderSize {
			t.Fatalf("length %d body %d of %d", p.Length(), len(p.Body()), len(data))
		}
		var again Packet
		switch p.Flags() {
		case 0:
			again = AppendCommand(nil, p.ID(), p.Cmd(), p.Body())
		case FlagReply:
			again = AppendReply(nil, p.ID(), p.ErrorCode(), p.Body())
		default:
			return
		}
		if !bytes.Equal(again, p) {
			t.Fatalf("rebuilt %x, want %x", again, p)
		}
		c := p.Clone()
		c.SetID(^p.ID())
		if c.ID() != ^p.ID() || !c.Valid() {
			t.Fatal("SetID")
		}
	})
}

// opRequestSet as the first byte makes FuzzBodyReader decode the rest as
// an EventRequest.Set body.
const opRequestSet = 0xee

func FuzzBodyReader(f *testing.F) {
	for _, sz := range []uint16{fuzzSizes8, fuzzSizesMixed} {
		s := fuzzSizes(sz)
		w := BodyWriter{Sizes: s}
		for i, v := range allValues() {
			w.Uint8(0)
			w.Value(v)
			w.Uint8(2)
			w.TaggedObjectID(Value{TagThread, uint64(i)})
		}
		w.Uint8(1)
		w.Location(Location{TypeTagClass, 1, 2, 3})
		w.Uint8(3)
		w.String("Ljava/lang/Object;")
		for _, m := range allModifiers() {
			w.Uint8(4)
			w.Modifier(m)
		}
		w.Uint8(5)
		w.Uint8(uint8(TagShort))
		w.Int16(-3)
		f.Add(w.Buf, sz)
		req := EventRequestSet{EventBreakpoint, SuspendAll, allModifiers()}
		f.Add(AppendEventRequestSet([]byte{opRequestSet}, s, &req), sz)
	}
	f.Fuzz(func(t *testing.T, data []byte, sz uint16) {
		sizes := fuzzSizes(sz)
		if len(data) > 0 && data[0] == opRequestSet {
			var s EventRequestSet
			if err := s.Decode(data[1:], sizes); err != nil {
				if !codecErr(err) {
					t.Fatalf("untyped error %v", err)
				}
				return
			}
			var again EventRequestSet
			body := AppendEventRequestSet(nil, sizes, &s)
			if err := again.Decode(body, sizes); err != nil || !reflect.DeepEqual(again, s) {
				t.Fatalf("request set round trip: %v\n got %+v\nwant %+v", err, again, s)
			}
			return
		}
		r := NewBodyReader(data, sizes)
		w := BodyWriter{Sizes: sizes}
		for r.Remaining() > 0 && r.Err() == nil {
			op := r.Uint8() % 6
			start := r.Offset()
			w.Buf = w.Buf[:0]
			var mod Modifier
			switch op {
			case 0:
				w.Value(r.Value())
			case 1:
				w.Location(r.Location())
			case 2:
				w.TaggedObjectID(r.TaggedObjectID())
			case 3:
				w.StringBytes(r.StringBytes())
			case 4:
				mod = r.Modifier()
				w.Modifier(mod)
			case 5:
				tag := Tag(r.Uint8())
				v := r.UntaggedValue(tag)
				w.Uint8(uint8(tag))
				w.UntaggedValue(v)
			}
			if r.Err() != nil {
				break
			}
			consumed := data[start:r.Offset()]
			if op == 4 {
				// Booleans normalise to 0/1, so compare decoded forms.
				back := NewBodyReader(w.Buf, sizes)
				if got := back.Modifier(); back.Err() != nil || !reflect.DeepEqual(got, mod) || len(w.Buf) != len(consumed) {
					t.Fatalf("modifier round trip: %v %+v want %+v", back.Err(), got, mod)
				}
				continue
			}
			if !bytes.Equal(w.Buf, consumed) {
				t.Fatalf("op %d re-encodes %x, consumed %x", op, w.Buf, consumed)
			}
		}
		if err := r.Err(); err != nil && !codecErr(err) {
			t.Fatalf("untyped error %v", err)
		}
	})
}

func FuzzComposite(f *testing.F) {
	for _, sz := range []uint16{fuzzSizes8, fuzzSizesMixed} {
		for _, e := range allEvents() {
			f.Add(AppendComposite(nil, fuzzSizes(sz), &Composite{SuspendAll, []Event{e}}), sz)
		}
		f.Add(AppendComposite(nil, fuzzSizes(sz), &Composite{SuspendEventThread, allEvents()}), sz)
	}
	f.Add([]byte{0, 0, 0, 0, 1, 3, 0, 0, 0, 0}, uint16(fuzzSizes8))
	f.Fuzz(func(t *testing.T, data []byte, sz uint16) {
		sizes := fuzzSizes(sz)
		var c Composite
		if err := c.Decode(data, sizes); err != nil {
			if !codecErr(err) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		body := AppendComposite(nil, sizes, &c)
		if len(body) != len(data) {
			t.Fatalf("re-encoded %d bytes from %d", len(body), len(data))
		}
		var again Composite
		if err := again.Decode(body, sizes); err != nil || !reflect.DeepEqual(again, c) {
			t.Fatalf("round trip: %v\n got %+v\nwant %+v", err, again, c)
		}
	})
}
