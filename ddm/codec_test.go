package ddm

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// unhex decodes a hex fixture written with spaces and | separators.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	s = strings.NewReplacer(" ", "", "|", "", "\n", "", "\t", "").Replace(s)
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad fixture %q: %v", s, err)
	}
	return b
}

// Fixtures: chunk data written by hand from the reference's layout tables
// (ddm/PROTOCOL.md §2, §4), field by field.
var fixtures = []struct {
	name string
	dir  Direction
	typ  Type
	data string
	want Payload
}{
	{"HELO request", HostToVM, TypeHELO, "00000001", U4{T: TypeHELO, V: 1}},
	{"HELO reply, 2007 design", VMToHost, TypeHELO,
		// version 1 | pid 4242 | identLen 11 | nameLen 3 | "Dalvik v0.9" | "app"
		"00000001 00001092 0000000b 00000003 | 0044 0061 006c 0076 0069 006b 0020 0076 0030 002e 0039 | 0061 0070 0070",
		Hello{ClientVersion: 1, PID: 4242, VMIdent: "Dalvik v0.9", AppName: "app"}},
	{"HELO reply, user id and ABI", VMToHost, TypeHELO,
		// ... "V" | "" | userId 10 | abi lstr "x86"
		"00000001 00000007 00000001 00000000 | 0056 | 0000000a | 00000003 0078 0038 0036",
		Hello{ClientVersion: 1, PID: 7, VMIdent: "V", Optional: 2, UserID: 10, ABI: "x86"}},
	{"FEAT reply", VMToHost, TypeFEAT, "00000002 | 00000001 0061 | 00000002 0062 0063",
		StringList{T: TypeFEAT, Items: []string{"a", "bc"}}},
	{"APNM with user id and package", VMToHost, TypeAPNM, "00000001 0061 | 00000000 | 00000001 0070",
		AppName{Name: "a", Optional: 2, PackageName: "p"}},
	{"WAIT", VMToHost, TypeWAIT, "00", U1{T: TypeWAIT, V: 0}},
	{"EXIT", HostToVM, TypeEXIT, "00000001", U4{T: TypeEXIT, V: 1}},
	{"THEN enable", HostToVM, TypeTHEN, "01", U1{T: TypeTHEN, V: 1}},
	{"THCR main", VMToHost, TypeTHCR, "00000001 | 00000004 006d 0061 0069 006e",
		ThreadName{T: TypeTHCR, ID: 1, Name: "main"}},
	{"THNM", VMToHost, TypeTHNM, "00000002 | 00000001 0078", ThreadName{T: TypeTHNM, ID: 2, Name: "x"}},
	{"THDE", VMToHost, TypeTHDE, "00000009", U4{T: TypeTHDE, V: 9}},
	{"THST real layout", VMToHost, TypeTHST,
		// headerLen 4 | entry 18 | count 1 | id 1, status 1, tid 4242, utime 10, stime 5, daemon 0
		"04 12 0001 | 00000001 01 00001092 0000000a 00000005 00",
		ThreadStatus{Threads: []ThreadStat{{ID: 1, Status: 1, TID: 4242, UTime: 10, STime: 5}}}},
	{"THST design layout", VMToHost, TypeTHST, "00000001 | 00000001 01 00",
		ThreadStatus{Design: true, Threads: []ThreadStat{{ID: 1, Status: 1}}}},
	{"STKL request", HostToVM, TypeSTKL, "00000003", U4{T: TypeSTKL, V: 3}},
	{"STKL reply", VMToHost, TypeSTKL,
		// reserved | thread 3 | depth 1 | "C" | "m" | no file | line -2
		"00000000 00000003 00000001 | 00000001 0043 | 00000001 006d | 00000000 | fffffffe",
		StackTrace{ThreadID: 3, Frames: []StackFrame{{Class: "C", Method: "m", Line: -2}}}},
	{"HPIF request", HostToVM, TypeHPIF, "03", U1{T: TypeHPIF, V: 3}},
	{"HPIF data", VMToHost, TypeHPIF,
		// count 1 | heap 1 | ts 0x18f00000000 | reason 3 | max 256 MiB | size 1 MiB | alloc 512 KiB | objects 1000
		"00000001 | 00000001 0000018f00000000 03 10000000 00100000 00080000 000003e8",
		HeapInfo{Heaps: []HeapSummary{{HeapID: 1, TimeMs: 0x18f00000000, Reason: 3, MaxSize: 256 << 20, Size: 1 << 20, Allocated: 512 << 10, Objects: 1000}}}},
	{"HPSG request", HostToVM, TypeHPSG, "01 00", SegmentRequest{T: TypeHPSG, When: 1}},
	{"NHSG request", HostToVM, TypeNHSG, "01 00", SegmentRequest{T: TypeNHSG, When: 1}},
	{"HPST", VMToHost, TypeHPST, "00000001", U4{T: TypeHPST, V: 1}},
	{"HPEN", VMToHost, TypeHPEN, "00000001", U4{T: TypeHPEN, V: 1}},
	{"NHST", VMToHost, TypeNHST, "00000001", U4{T: TypeNHST, V: 1}},
	{"NHEN", VMToHost, TypeNHEN, "00000001", U4{T: TypeNHEN, V: 1}},
	{"HPSG segment with a partial run", VMToHost, TypeHPSG,
		// heap 1 | unit 8 | start 0x12c00000 | offset 0 | 305 units |
		// class object/hard 3 units | free 2 units | byte[] 300 units = (0x91,255)+(0x11,43)
		"00000001 08 12c00000 00000000 00000131 | 0902 0001 91ff 112b",
		HeapSegment{T: TypeHPSG, HeapID: 1, Unit: 8, Start: 0x12c00000, Units: 305, Runs: []byte{0x09, 0x02, 0x00, 0x01, 0x91, 0xff, 0x11, 0x2b}, Elements: 3}},
	{"HPSO segment", VMToHost, TypeHPSO, "00000001 08 00010000 00000000 00000001 | 0900",
		HeapSegment{T: TypeHPSO, HeapID: 1, Unit: 8, Start: 0x10000, Units: 1, Runs: []byte{0x09, 0x00}, Elements: 1}},
	{"NHSG segment", VMToHost, TypeNHSG, "00000001 08 40000000 00000000 00000002 | 3901",
		HeapSegment{T: TypeNHSG, HeapID: 1, Unit: 8, Start: 0x40000000, Units: 2, Runs: []byte{0x39, 0x01}, Elements: 1}},
	{"HPGC", HostToVM, TypeHPGC, "", Empty{T: TypeHPGC}},
	{"REAE", HostToVM, TypeREAE, "01", U1{T: TypeREAE, V: 1}},
	{"REAQ reply", VMToHost, TypeREAQ, "01", U1{T: TypeREAQ, V: 1}},
	{"REAL reply", VMToHost, TypeREAL,
		// header 15/9/8 | 1 entry | strings at 15+9+8=32 | 2 classes, 1 method, 1 file |
		// size 24, tid 1, class 0, depth 1 | frame class 1, method 0, file 0, line 42 |
		// classes "S" "W" | methods "r" | files "F"
		"0f 09 08 0001 00000020 0002 0001 0001 | 00000018 0001 0000 01 | 0001 0000 0000 002a |" +
			"00000001 0053 00000001 0057 | 00000001 0072 | 00000001 0046",
		Allocations{Entries: []Allocation{{Size: 24, TID: 1, Class: "S", Frames: []AllocFrame{{Class: "W", Method: "r", File: "F", Line: 42}}}}}},
	{"FAIL", VMToHost, TypeFAIL, "00000001 | 00000003 0062 0061 0064", Fail{Code: 1, Message: "bad"}},
	{"HPDU request", HostToVM, TypeHPDU, "00000001 0066", Filename{T: TypeHPDU, Name: "f"}},
	{"HPDU reply", VMToHost, TypeHPDU, "ff", U1{T: TypeHPDU, V: 0xff}},
	{"MPRS", HostToVM, TypeMPRS, "00800000 00000000 | 00000001 0074", Profiling{T: TypeMPRS, BufferSize: 8 << 20, File: "t"}},
	{"MPSS", HostToVM, TypeMPSS, "00800000 00000000", Profiling{T: TypeMPSS, BufferSize: 8 << 20}},
	{"SPSS", HostToVM, TypeSPSS, "00800000 00000000 000003e8", Profiling{T: TypeSPSS, BufferSize: 8 << 20, IntervalMicros: 1000}},
	{"MPRQ reply", VMToHost, TypeMPRQ, "02", U1{T: TypeMPRQ, V: 2}},
	{"VULW reply", VMToHost, TypeVULW, "00000001 00000001 0077", StringList{T: TypeVULW, Items: []string{"w"}}},
	{"STAG", VMToHost, TypeSTAG, "41544348", U4{T: TypeSTAG, V: uint32(MakeType("ATCH"))}},
	{"ARTT blob", VMToHost, TypeARTT, "0102", Raw{T: TypeARTT, Data: []byte{1, 2}}},
	{"UTF-16 with a surrogate pair", VMToHost, TypeTHCR, "00000001 | 00000003 00e9 d83d de00",
		ThreadName{T: TypeTHCR, ID: 1, Name: "é\U0001F600"}},
}

func TestFixtures(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			data := unhex(t, f.data)
			got, err := Decode(f.dir, Chunk{Type: f.typ, Data: data})
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !reflect.DeepEqual(got, f.want) {
				t.Fatalf("decode:\n got %#v\nwant %#v", got, f.want)
			}
			if enc := f.want.AppendData(nil); !bytes.Equal(enc, data) {
				t.Fatalf("encode:\n got %x\nwant %x", enc, data)
			}
			if f.want.ChunkType() != f.typ {
				t.Fatalf("ChunkType %s, want %s", f.want.ChunkType(), f.typ)
			}
		})
	}
}

func TestPacketFraming(t *testing.T) {
	// A whole HELO request: length 23 | id | flags 0 | set 0xc7 | cmd 1 | chunk.
	want := unhex(t, "00000017 50000001 00 c7 01 | 48454c4f 00000004 00000001")
	got := AppendCommand(nil, 0x50000001, U4{T: TypeHELO, V: 1})
	if !bytes.Equal(got, want) {
		t.Fatalf("HELO packet\n got %x\nwant %x", []byte(got), want)
	}
	if got.IsReply() || got.Cmd() != jdwp.CmdDDMChunk {
		t.Fatal("not recognised as a DDM command")
	}
	// An empty reply is exactly 11 bytes.
	if r := AppendReply(nil, 7); len(r) != 11 || !r.IsReply() || r.Length() != 11 {
		t.Fatalf("empty reply %x", []byte(r))
	}
}

func TestSeveralChunksPerPacket(t *testing.T) {
	p := AppendCommand(nil, 1, U1{T: TypeTHEN, V: 1}, Empty{T: TypeTHST}, U4{T: TypeSTKL, V: 2})
	it := NewChunks(p.Body())
	var types []string
	for c, ok := it.Next(); ok; c, ok = it.Next() {
		types = append(types, c.Type.String())
	}
	if it.Err() != nil || strings.Join(types, ",") != "THEN,THST,STKL" {
		t.Fatalf("chunks %v, err %v", types, it.Err())
	}
	// A length running past the packet stops the iteration with an error.
	bad := unhex(t, "54484352 00000010 0000")
	it = NewChunks(bad)
	if _, ok := it.Next(); ok || !errors.Is(it.Err(), ErrChunkLength) {
		t.Fatalf("bad length: err %v", it.Err())
	}
}

func TestZLIB(t *testing.T) {
	inner := ThreadName{T: TypeTHCR, ID: 5, Name: strings.Repeat("worker", 50)}
	z := Compressed{Inner: Chunk{Type: TypeTHCR, Data: inner.AppendData(nil)}}
	data := z.AppendData(nil)
	if len(data) >= len(z.Inner.Data) {
		t.Fatalf("ZLIB chunk %d bytes not smaller than its %d-byte content", len(data), len(z.Inner.Data))
	}
	// Header: original type and uncompressed length.
	if !bytes.Equal(data[:4], []byte("THCR")) || int(data[4])<<24|int(data[5])<<16|int(data[6])<<8|int(data[7]) != len(z.Inner.Data) {
		t.Fatalf("ZLIB header %x", data[:8])
	}
	got, err := Decode(VMToHost, Chunk{Type: TypeZLIB, Data: data})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, Inflated{Inner: inner}) {
		t.Fatalf("got %#v", got)
	}
	// As a payload (Inflated) it travels as one ZLIB chunk holding that data.
	chunks := NewChunks(AppendCommand(nil, 1, Inflated{Inner: inner}).Body())
	c, ok := chunks.Next()
	if !ok || c.Type != TypeZLIB || !bytes.Equal(c.Data, data) {
		t.Fatalf("ZLIB payload in a packet: chunk %v %x, ok %v", c.Type, c.Data, ok)
	}
	// A lying length is rejected.
	data[7]++
	if _, err := Decode(VMToHost, Chunk{Type: TypeZLIB, Data: data}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("lying length: %v", err)
	}
}

func TestMalformed(t *testing.T) {
	cases := []struct {
		dir  Direction
		typ  Type
		data string
	}{
		{VMToHost, TypeHELO, "00000001 00000002 00000010 00000000 0041"}, // ident longer than the data
		{VMToHost, TypeTHST, "04 12 0002 | 00000001 01 00001092 0000000a 00000005 00"},
		{VMToHost, TypeTHST, "02 12 0000"},                                         // header length below 4
		{VMToHost, TypeHPSG, "00000001 08 12c00000 00000000 00000005 | 0902"},      // units mismatch
		{VMToHost, TypeHPSG, "00000001 08 12c00000 00000000 00000100 | 89ff"},      // ends inside a partial run
		{VMToHost, TypeHPSG, "00000001 08 12c00000 00000000 00000101 | 89ff 1100"}, // partial continued by another state
		{VMToHost, TypeHPSG, "00000001 08 12c00000 00000000 00000001 | 09"},        // odd run bytes
		{VMToHost, TypeFEAT, "7fffffff"},
		{VMToHost, TypeREAL, "0f 09 08 0001 000000ff 0000 0000 0000"}, // offset outside
		{VMToHost, TypeTHCR, "00000001 00000001 d8"},
	}
	for _, c := range cases {
		if _, err := Decode(c.dir, Chunk{Type: c.typ, Data: unhex(t, c.data)}); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s %q: err %v, want ErrMalformed", c.typ, c.data, err)
		}
	}
}
