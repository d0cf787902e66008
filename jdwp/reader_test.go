package jdwp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"
	"testing/iotest"
)

// stream builds back-to-back packets of varied sizes, commands and replies.
func stream() ([]byte, []Packet) {
	var buf []byte
	var offs []int
	add := func(p []byte) { offs = append(offs, len(buf)); buf = append(buf, p...) }
	add(AppendCommand(nil, 1, CmdIDSizes, nil))
	add(AppendReply(nil, 1, 0, AppendIDSizes(nil, IDSizes{8, 8, 8, 8, 8})))
	add(AppendCommand(nil, 2, CmdThreadReferenceFrames, bytes.Repeat([]byte{7}, 16)))
	add(AppendReply(nil, 2, ErrorInvalidThread, nil))
	add(AppendCommand(nil, 3, CmdDDMChunk, bytes.Repeat([]byte{0xd}, 9000))) // larger than the initial buffer
	add(AppendCommand(nil, 4, CmdComposite, []byte{0, 0, 0, 0, 0}))
	offs = append(offs, len(buf))
	pkts := make([]Packet, len(offs)-1)
	for i := range pkts {
		pkts[i] = Packet(buf[offs[i]:offs[i+1]])
	}
	return buf, pkts
}

func TestReaderReassembly(t *testing.T) {
	raw, want := stream()
	for name, mk := range map[string]func(io.Reader) io.Reader{
		"whole":   func(r io.Reader) io.Reader { return r },
		"onebyte": iotest.OneByteReader,
		"half":    iotest.HalfReader,
		"dataerr": iotest.DataErrReader,
	} {
		t.Run(name, func(t *testing.T) {
			r := NewReader(mk(bytes.NewReader(raw)), 0)
			for i, w := range want {
				p, err := r.Next()
				if err != nil {
					t.Fatalf("packet %d: %v", i, err)
				}
				if !bytes.Equal(p, w) || !p.Valid() {
					t.Fatalf("packet %d: got %v, want %v", i, p, w)
				}
			}
			if p, err := r.Next(); err != io.EOF {
				t.Fatalf("after last: %v %v, want io.EOF", p, err)
			}
		})
	}
}

func TestReaderBadLength(t *testing.T) {
	for _, c := range []struct {
		length uint32
		want   error
	}{
		{0, ErrShortPacket},
		{10, ErrShortPacket},
		{1 << 20, ErrPacketTooLarge},
		{0xffffffff, ErrPacketTooLarge},
	} {
		var b [HeaderSize]byte
		binary.BigEndian.PutUint32(b[:], c.length)
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		r := NewReader(bytes.NewReader(b[:]), 1<<20-1)
		_, err := r.Next()
		runtime.ReadMemStats(&ms1)
		if !errors.Is(err, c.want) {
			t.Errorf("length %d: %v, want %v", c.length, err, c.want)
		}
		// The reader's 64 KiB bufio buffer and 4 KiB packet buffer, but
		// never the announced size.
		if d := ms1.TotalAlloc - ms0.TotalAlloc; d > 256<<10 {
			t.Errorf("length %d: allocated %d bytes", c.length, d)
		}
		if cap(r.buf) > 4096 {
			t.Errorf("length %d: buffer grew to %d", c.length, cap(r.buf))
		}
	}
}

func TestReaderTruncated(t *testing.T) {
	raw, _ := stream()
	first := AppendCommand(nil, 1, CmdIDSizes, nil)
	for _, n := range []int{1, 3, 4, 10, 12 + 5} {
		r := NewReader(iotest.HalfReader(bytes.NewReader(raw[len(first):][:n])), 0)
		if _, err := r.Next(); !errors.Is(err, ErrTruncated) {
			t.Errorf("cut at %d: %v, want ErrTruncated", n, err)
		}
	}
	// A complete packet then a cut one.
	r := NewReader(bytes.NewReader(raw[:len(first)+5]), 0)
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); !errors.Is(err, ErrTruncated) {
		t.Errorf("second: %v, want ErrTruncated", err)
	}
	// Read errors pass through.
	boom := errors.New("boom")
	r = NewReader(io.MultiReader(bytes.NewReader(raw[:6]), iotest.ErrReader(boom)), 0)
	if _, err := r.Next(); !errors.Is(err, boom) {
		t.Errorf("read error: %v", err)
	}
	r = NewReader(iotest.ErrReader(boom), 0)
	if _, err := r.Next(); !errors.Is(err, boom) {
		t.Errorf("read error at start: %v", err)
	}
}

// loopReader serves the same bytes forever, so steady-state reading can be
// measured without the source allocating.
type loopReader struct {
	b   []byte
	off int
}

func (l *loopReader) Read(p []byte) (int, error) {
	n := copy(p, l.b[l.off:])
	l.off = (l.off + n) % len(l.b)
	return n, nil
}

func TestReaderNoAllocs(t *testing.T) {
	raw, want := stream()
	r := NewReader(&loopReader{b: raw}, 0)
	for range want { // grow the buffer to the largest packet
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
	}
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Reader.Next allocates %v per packet", allocs)
	}
}

func BenchmarkReaderNext(b *testing.B) {
	raw, _ := stream()
	r := NewReader(&loopReader{b: raw}, 0)
	b.SetBytes(int64(len(raw) / 6))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Next(); err != nil {
			b.Fatal(err)
		}
	}
}

// stallReader serves b, then fails with errStalled as a peer that stopped
// sending would leave a reader blocked.
type stallReader struct{ b []byte }

var errStalled = errors.New("stalled")

func (s *stallReader) Read(p []byte) (int, error) {
	if len(s.b) == 0 {
		return 0, errStalled
	}
	n := copy(p, s.b)
	s.b = s.b[n:]
	return n, nil
}

// TestReaderStalledHugePacket: a peer announcing a 64 MiB packet that
// sends only part of it commits memory in proportion to what it sent, not
// to what it announced (20 such connections used to commit 1.35 GB).
func TestReaderStalledHugePacket(t *testing.T) {
	const announced = 64 << 20
	for _, sent := range []int{0, 100, 3 << 20} {
		hdr := make([]byte, 0, HeaderSize+sent)
		hdr = binary.BigEndian.AppendUint32(hdr, announced)
		hdr = append(hdr, 0, 0, 0, 1, 0, 1, 1)
		hdr = append(hdr, make([]byte, sent)...)
		r := NewReader(&stallReader{b: hdr}, announced)
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		_, err := r.Next()
		runtime.ReadMemStats(&ms1)
		if !errors.Is(err, errStalled) {
			t.Fatalf("sent %d: %v, want the stall", sent, err)
		}
		// Doubling as bytes arrive holds at most twice what was sent, and
		// all the buffers it went through add up to at most four times.
		if d, limit := ms1.TotalAlloc-ms0.TotalAlloc, uint64(4*sent+256<<10); d > limit {
			t.Errorf("sent %d of %d announced bytes: allocated %d bytes, want at most %d", sent, announced, d, limit)
		}
	}
}

// TestReaderShrinksAfterBigPacket: the buffer grown for one big packet is
// returned before the next, while a moderately large one is kept.
func TestReaderShrinksAfterBigPacket(t *testing.T) {
	var raw []byte
	raw = AppendCommand(raw, 1, CmdDDMChunk, make([]byte, 8<<20))
	raw = AppendCommand(raw, 2, CmdIDSizes, nil)
	raw = AppendCommand(raw, 3, CmdDDMChunk, make([]byte, 300<<10))
	raw = AppendCommand(raw, 4, CmdIDSizes, nil)
	r := NewReader(bytes.NewReader(raw), 0)
	for i, wantCap := range []struct{ min, max int }{
		{8 << 20, 16 << 20}, {0, initialBufSize}, {300 << 10, keepBufSize}, {300 << 10, keepBufSize},
	} {
		p, err := r.Next()
		if err != nil || p.ID() != uint32(i+1) {
			t.Fatalf("packet %d: %v, %v", i+1, p, err)
		}
		if c := cap(r.buf); c < wantCap.min || c > wantCap.max {
			t.Errorf("after packet %d (%d bytes): buffer capacity %d, want %d..%d", i+1, len(p), c, wantCap.min, wantCap.max)
		}
	}
}

// TestReaderSkipsOversized: an oversized packet is reported with its
// header, and the packet after it is read whole.
func TestReaderSkipsOversized(t *testing.T) {
	var raw []byte
	raw = AppendCommand(raw, 1, CmdIDSizes, nil)
	raw = AppendReply(raw, 2, 0, bytes.Repeat([]byte{0xee}, 10000))
	raw = AppendCommand(raw, 3, CmdIDSizes, []byte{1, 2, 3})
	for name, mk := range map[string]func(io.Reader) io.Reader{
		"whole":   func(r io.Reader) io.Reader { return r },
		"onebyte": iotest.OneByteReader,
	} {
		t.Run(name, func(t *testing.T) {
			r := NewReader(mk(bytes.NewReader(raw)), 4096)
			if p, err := r.Next(); err != nil || p.ID() != 1 {
				t.Fatalf("first: %v, %v", p, err)
			}
			_, err := r.Next()
			var tl *TooLargeError
			if !errors.As(err, &tl) || !errors.Is(err, ErrPacketTooLarge) {
				t.Fatalf("second: %v, want a *TooLargeError", err)
			}
			if h := tl.Packet(); !h.IsReply() || h.ID() != 2 || h.Length() != 10011 || tl.Max != 4096 {
				t.Errorf("reported header %v (max %d), want reply 2 of 10011 bytes", h, tl.Max)
			}
			if p, err := r.Next(); err != nil || p.ID() != 3 || string(p.Body()) != "\x01\x02\x03" {
				t.Fatalf("after the oversized packet: %v, %v", p, err)
			}
			if _, err := r.Next(); err != io.EOF {
				t.Fatalf("at the end: %v", err)
			}
		})
	}
	// The stream ending inside the skipped body is a truncation.
	r := NewReader(bytes.NewReader(raw[:len(raw)-30]), 4096)
	r.Next()
	r.Next()
	if _, err := r.Next(); !errors.Is(err, ErrTruncated) {
		t.Errorf("cut inside the skipped packet: %v, want ErrTruncated", err)
	}
}

// TestOwnedBigPacket: a packet above 1 MiB is the caller's to keep: the
// next packet does not overwrite it. A smaller one is not.
func TestOwnedBigPacket(t *testing.T) {
	big := AppendCommand(nil, 1, CmdIDSizes, bytes.Repeat([]byte{0xaa}, 2<<20))
	small := AppendCommand(nil, 2, CmdIDSizes, bytes.Repeat([]byte{0x55}, 100))
	var stream []byte
	stream = append(stream, big...)
	stream = append(stream, big...)
	stream = append(stream, small...)
	stream = append(stream, small...)
	r := NewReader(bytes.NewReader(stream), 4<<20)
	p1, err := r.Next()
	if err != nil || !r.Owned(p1) {
		t.Fatalf("first big packet: %v, owned %v", err, err == nil && r.Owned(p1))
	}
	p2, err := r.Next()
	if err != nil || !r.Owned(p2) || !r.Owned(p2) {
		t.Fatalf("second big packet: %v", err)
	}
	if &p1[0] == &p2[0] || !bytes.Equal(p1, big) {
		t.Fatal("the second big packet overwrote the first, which the caller owned")
	}
	s1, err := r.Next()
	if err != nil || r.Owned(s1) || r.Owned(p2) {
		t.Fatalf("small packet: %v, owned %v; the big one still reported owned: %v", err, r.Owned(s1), r.Owned(p2))
	}
	if !bytes.Equal(p2, big) {
		t.Fatal("a small packet overwrote the owned big one")
	}
}
