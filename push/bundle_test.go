package push

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// encodeBundle is a bundle body of recs, compressed with c (nil: raw).
func encodeBundle(h Header, recs []Record, c *codec) []byte {
	var raw []byte
	for _, r := range recs {
		raw = appendRecord(raw, r.Cmd, r.Params, r.Error, r.Body, r.Moment)
	}
	h.Records = uint32(len(recs))
	return appendBody(nil, h, raw, c)
}

func sampleRecords() []Record {
	name := jdwp.BodyWriter{Sizes: sizes8}
	name.String("main")
	return []Record{
		{Cmd: jdwp.CmdThreadReferenceName, Params: bytes.Repeat([]byte{0, 0, 0, 0, 0, 0, 0, 1}, 1), Body: name.Buf, Moment: 3},
		{Cmd: jdwp.CmdVirtualMachineAllThreads, Body: bytes.Repeat([]byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1}, 20)},
		{Cmd: jdwp.CmdMethodVariableTable, Params: make([]byte, 16), Error: jdwp.ErrorAbsentInformation},
	}
}

func TestBundleRoundTrip(t *testing.T) {
	for _, compress := range []bool{false, true} {
		var c codec
		defer c.close()
		enc := &c
		if !compress {
			enc = nil
		}
		want := sampleRecords()
		body := encodeBundle(Header{Stop: 7, Fence: 3, RTT: 5}, want, enc)
		if got := body[1]&flagZstd != 0; got != compress {
			t.Errorf("compress %v: zstd flag %v", compress, got)
		}
		p := parser{c: &c}
		h, got, err := p.parse(body, false)
		if err != nil {
			t.Fatalf("compress %v: %v", compress, err)
		}
		if h.Stop != 7 || h.Fence != 3 || h.RTT != 5 || int(h.Records) != len(want) {
			t.Errorf("header %+v", h)
		}
		if !slices.EqualFunc(got, want, func(a, b Record) bool {
			return a.Cmd == b.Cmd && bytes.Equal(a.Params, b.Params) && a.Error == b.Error && bytes.Equal(a.Body, b.Body)
		}) {
			t.Errorf("compress %v: records %+v, want %+v", compress, got, want)
		}
	}
}

func TestBundleRejects(t *testing.T) {
	var c codec
	defer c.close()
	good := encodeBundle(Header{Stop: 1}, sampleRecords(), nil)
	cases := map[string][]byte{
		"empty":       nil,
		"short":       good[:headerSize-1],
		"version":     append([]byte{9}, good[1:]...),
		"flags":       append([]byte{Version, 0x80}, good[2:]...),
		"truncated":   good[:len(good)-1],
		"trailing":    append(slices.Clone(good), 0),
		"bad zstd":    append(append([]byte{Version, flagZstd}, good[2:headerSize]...), 1, 2, 3, 4),
		"huge count":  func() []byte { b := slices.Clone(good); b[22] = 0xff; return b }(),
		"huge length": func() []byte { b := slices.Clone(good); b[26] = 0xff; return b }(),
	}
	for name, body := range cases {
		p := parser{c: &c}
		if _, _, err := p.parse(body, false); !errors.Is(err, ErrBadBundle) {
			t.Errorf("%s: err %v, want ErrBadBundle", name, err)
		}
	}
}

// FuzzBundle feeds the parser arbitrary bodies: it must return records or
// an error, never panic, and records it returns must lie within the body's
// decoded payload and encode back to it.
func FuzzBundle(f *testing.F) {
	var c codec
	f.Add(encodeBundle(Header{Stop: 1}, sampleRecords(), nil), false)
	f.Add(encodeBundle(Header{Stop: 2, Fence: 9}, sampleRecords(), &c), false)
	var usage []byte
	for _, r := range sampleRecords() {
		usage = appendUsage(usage, r.Cmd, r.Params)
	}
	f.Add(appendBody(nil, Header{Stop: 3, Records: 3}, usage, &c), true)
	f.Add([]byte{Version, 0}, false)
	f.Fuzz(func(t *testing.T, body []byte, isUsage bool) {
		var dc codec
		defer dc.close()
		p := parser{c: &dc}
		h, recs, err := p.parse(body, isUsage)
		if err != nil {
			if !errors.Is(err, ErrBadBundle) {
				t.Fatalf("error %v does not wrap ErrBadBundle", err)
			}
			return
		}
		if uint32(len(recs)) != h.Records {
			t.Fatalf("%d records, header says %d", len(recs), h.Records)
		}
		var raw []byte
		for _, r := range recs {
			if isUsage {
				raw = appendUsage(raw, r.Cmd, r.Params)
			} else {
				raw = appendRecord(raw, r.Cmd, r.Params, r.Error, r.Body, r.Moment)
			}
		}
		if uint32(len(raw)) != h.RawLen {
			t.Fatalf("records encode to %d bytes, header says %d", len(raw), h.RawLen)
		}
	})
}

var sizes8 = jdwp.IDSizes{FieldID: 8, MethodID: 8, ObjectID: 8, ReferenceTypeID: 8, FrameID: 8}

// TestMomentNumbers: the far end numbers the moments of a stop's records
// from 1, the replies of one moment (one speculator position) alike, and
// none for a reply read outside one.
func TestMomentNumbers(t *testing.T) {
	var f far
	got := []uint16{f.momentOf(7 << 16), f.momentOf(7 << 16), f.momentOf(0), f.momentOf(9 << 16), f.momentOf(9 << 16)}
	if want := []uint16{1, 1, 0, 2, 2}; !slices.Equal(got, want) {
		t.Fatalf("moment numbers %v, want %v", got, want)
	}
	f.momentID = math.MaxUint16
	if n := f.momentOf(11 << 16); n != 0 {
		t.Errorf("past the last number a moment is numbered %d, want 0 (none)", n)
	}
}
