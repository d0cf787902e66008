package split

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// packetStream returns n packets of JDWP-like bytes: some repeat earlier
// ones (as a debugger's commands at each stop do), some are signatures,
// some are random.
func packetStream(rng *rand.Rand, n int) [][]byte {
	sigs := []string{"Ljava/lang/String;", "Ljava/util/HashMap$Node;", "Ljava/lang/Object;", "[I", "Lcom/example/Main$Inner;"}
	var out [][]byte
	for i := range n {
		var p []byte
		switch {
		case i > 0 && rng.IntN(3) == 0:
			p = bytes.Clone(out[rng.IntN(i)])
		case rng.IntN(2) == 0:
			for range 1 + rng.IntN(200) {
				p = append(p, sigs[rng.IntN(len(sigs))]...)
				p = append(p, byte(rng.Uint32()))
			}
		default:
			p = make([]byte, 1+rng.IntN(3000))
			for j := range p {
				p[j] = byte(rng.Uint32())
			}
		}
		out = append(out, p)
	}
	return out
}

// TestCompressedRoundTrip sends packet streams through a compressed
// connection in both directions at once, in lockstep: each packet must be
// readable whole before the next is written, so none waits in a
// compressor or a decompressor for more bytes.
func TestCompressedRoundTrip(t *testing.T) {
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 1))
		a, b := net.Pipe()
		za, zb := newZconn(a, nil, 0), newZconn(b, nil, 0)
		ab, ba := packetStream(rng, 300), packetStream(rng, 300)
		errs := make(chan error, 4)
		send := func(c *zconn, ps [][]byte, next <-chan struct{}) {
			for _, p := range ps {
				if _, err := c.Write(p); err != nil {
					errs <- err
					return
				}
				<-next
			}
			errs <- nil
		}
		recv := func(c *zconn, ps [][]byte, next chan<- struct{}) {
			for i, p := range ps {
				got := make([]byte, len(p))
				if _, err := io.ReadFull(c, got); err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(got, p) {
					errs <- fmt.Errorf("packet %d differs", i)
					return
				}
				next <- struct{}{}
			}
			errs <- nil
		}
		nab, nba := make(chan struct{}), make(chan struct{})
		go send(za, ab, nab)
		go recv(zb, ab, nab)
		go send(zb, ba, nba)
		go recv(za, ba, nba)
		for range 4 {
			if err := <-errs; err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
		}
		// A close between blocks reads as the end of the stream.
		go a.Close()
		if n, err := zb.Read(make([]byte, 10)); n != 0 || err != io.EOF {
			t.Errorf("seed %d: read after the peer closed: %d, %v; want 0, EOF", seed, n, err)
		}
		b.Close()
	}
}

// TestCompressedRawPrefix: the far end reads the near end's handshake
// uncompressed, then the compressed stream.
func TestCompressedRawPrefix(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go func() {
		a.Write([]byte("JDWP-Handshake"))
		newCompressor(a).Write([]byte("after"))
	}()
	z := newZconn(b, nil, len("JDWP-Handshake"))
	got := make([]byte, len("JDWP-Handshakeafter"))
	if _, err := io.ReadFull(z, got); err != nil || string(got) != "JDWP-Handshakeafter" {
		t.Fatalf("read %q, %v", got, err)
	}
}

func compressAll(t testing.TB, p []byte, opts ...zstd.EOption) []byte {
	var buf bytes.Buffer
	enc, err := zstd.NewWriter(&buf, opts...)
	if err != nil {
		t.Fatal(err)
	}
	enc.Write(p)
	enc.Close()
	return buf.Bytes()
}

// TestDecompressionBomb: a stream that decodes to far more than it is
// read as a stream through a decompressor whose memory stays within its
// window, and a stream that asks for a bigger window is refused.
func TestDecompressionBomb(t *testing.T) {
	const size = 256 << 20
	bomb := compressAll(t, make([]byte, size), zstd.WithWindowSize(zstdWindow), zstd.WithEncoderConcurrency(1))
	t.Logf("%d zero bytes compress to %d", size, len(bomb))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	n, err := io.CopyBuffer(io.Discard, newDecompressor(bytes.NewReader(bomb)), make([]byte, 32<<10))
	runtime.ReadMemStats(&after)
	if err != nil || n != size {
		t.Fatalf("decompressed %d bytes, %v; want %d", n, err, size)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8*zstdMaxWindow {
		t.Errorf("decompressing %d bytes allocated %d bytes; want at most %d", size, alloc, 8*zstdMaxWindow)
	}

	wide := compressAll(t, make([]byte, 4*zstdMaxWindow), zstd.WithWindowSize(4*zstdMaxWindow), zstd.WithEncoderConcurrency(1))
	_, err = io.Copy(io.Discard, newDecompressor(bytes.NewReader(wide)))
	if !errors.Is(err, ErrBadCompression) {
		t.Errorf("a stream with a %d-byte window: %v; want ErrBadCompression", 4*zstdMaxWindow, err)
	}
}

// FuzzDecompress feeds the decompressor arbitrary bytes: it must return
// data or an error, never panic, and never decode more than its input
// can say within bounded memory.
func FuzzDecompress(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 2))
	var buf bytes.Buffer
	w := newCompressor(&buf)
	for _, p := range packetStream(rng, 20) {
		w.Write(p)
	}
	f.Add(buf.Bytes())
	f.Add(compressAll(f, make([]byte, 100000)))
	f.Add([]byte{0x28, 0xb5, 0x2f, 0xfd})
	f.Fuzz(func(t *testing.T, data []byte) {
		u := newDecompressor(bytes.NewReader(data))
		n, err := io.CopyN(io.Discard, u, 64<<20)
		if err != nil && err != io.EOF && !errors.Is(err, ErrBadCompression) && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("after %d bytes: unexpected error %v", n, err)
		}
	})
}
