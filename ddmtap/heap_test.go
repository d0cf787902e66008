package ddmtap

import (
	"encoding/hex"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/ddm"
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

func TestHeapStats(t *testing.T) {
	var b heapBuilder
	b.start(1)
	seg, err := ddm.DecodeHeapSegment(ddm.TypeHPSG, unhex(t, "00000001 08 12c00000 00000000 00000136 | 0902 0001 91ff 112b 0900 0900 0002"))
	if err != nil {
		t.Fatal(err)
	}
	b.add(seg)
	m := b.finish(false, zeroTime)
	stats := map[string]BucketStats{}
	for _, s := range m.Stats {
		stats[s.Label] = s
	}
	obj := stats["class object"]
	// class objects: 24, 8, 8 bytes → count 3, total 40, median = sorted[1] = 8.
	if obj.Count != 3 || obj.Total != 40 || obj.Smallest != 8 || obj.Largest != 24 || obj.Median != 8 || obj.Average != 13 {
		t.Fatalf("class object stats %+v", obj)
	}
	if free := stats["free"]; free.Count != 2 || free.Total != 16+24 {
		t.Fatalf("free stats %+v", free)
	}
	if arr := stats["1-byte array (byte[], boolean[])"]; arr.Count != 1 || arr.Total != 2400 {
		t.Fatalf("byte[] stats %+v", arr)
	}
	if len(obj.Sizes) != 2 || obj.Sizes[0] != (SizeCount{8, 2}) || obj.Histogram[3] != 2 || obj.Histogram[4] != 1 {
		t.Fatalf("sizes %+v histogram %v", obj.Sizes, obj.Histogram[:6])
	}
	// Map runs: class 24 | free 16 | byte[] 2400 | obj 16 (two merged) | free 24.
	want := []MapRun{{3, 24}, {1, 16}, {4, 2400}, {3, 16}, {1, 24}}
	if len(m.Segments) != 1 || !reflect.DeepEqual(m.Segments[0].Runs, want) || m.Bytes != 2480 {
		t.Fatalf("segments %+v bytes %d", m.Segments, m.Bytes)
	}
}

var zeroTime time.Time
