package split

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/klauspost/compress/zstd"
	"github.com/prometheus/client_golang/prometheus/testutil"
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
		za, zb := newZconn(a, nil, 0, compressedCounters{}), newZconn(b, nil, 0, compressedCounters{})
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
	z := newZconn(b, nil, len("JDWP-Handshake"), compressedCounters{})
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
		n, err := io.CopyN(io.Discard, u, 1<<20)
		if err != nil && err != io.EOF && !errors.Is(err, ErrBadCompression) && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("after %d bytes: unexpected error %v", n, err)
		}
	})
}

// TestCompressAgreed: a connection is compressed only when the near end
// offers it and the far end agrees; an end that does not (as an end that
// does not know the flag) leaves the stream as it was, byte for byte
// plain JDWP after the preamble. Compressed, each direction after the
// preamble (after the near end's JDWP handshake) is one zstd stream of
// that same JDWP.
func TestCompressAgreed(t *testing.T) {
	for _, tc := range []struct{ offer, agree bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		v := newVMSide(t)
		f := startFar(t, v, "127.0.0.1:0", FarConfig{Compress: tc.agree})
		up, down := recordThreeCalls(t, f, NearConfig{Compress: tc.offer})
		want := tc.offer && tc.agree
		ur := strings.NewReader(up.String())
		h, err := ReadHello(ur)
		if err != nil || (h.Flags&FlagCompress != 0) != tc.offer {
			t.Fatalf("offer %v: hello %+v, %v", tc.offer, h, err)
		}
		dr := strings.NewReader(down.String())
		rep, err := ReadReply(dr)
		if err != nil || (rep.Flags&ReplyCompress != 0) != want {
			t.Fatalf("offer %v, agree %v: reply %+v, %v; want compression %v", tc.offer, tc.agree, rep, err, want)
		}
		if err := jdwp.ReadHandshake(ur); err != nil {
			t.Fatalf("near→far: no plain handshake after the hello: %v", err)
		}
		var upJDWP, downJDWP io.Reader = ur, dr
		if want {
			upJDWP, downJDWP = newDecompressor(ur), newDecompressor(dr)
		}
		if err := jdwp.ReadHandshake(downJDWP); err != nil {
			t.Fatalf("offer %v, agree %v: far→near: no handshake after the reply: %v", tc.offer, tc.agree, err)
		}
		if cmds, _ := countPackets(t, upJDWP); cmds != 3 {
			t.Errorf("offer %v, agree %v: near→far carried %d commands, want 3", tc.offer, tc.agree, cmds)
		}
		if _, replies := countPackets(t, downJDWP); replies != 3 {
			t.Errorf("offer %v, agree %v: far→near carried %d replies, want 3", tc.offer, tc.agree, replies)
		}
		f.stop()
		// The far end counts its compressed connections' bytes: on the
		// wire, what the hop saw after the preamble (and the near end's
		// handshake); in the stream, at least the JDWP handshake and
		// packets.
		c := f.metrics.compressedAt(EndFar)
		var wantWireIn, wantWireOut float64
		if want {
			wantWireIn = float64(len(up.String()) - len(AppendHello(nil, h)) - len(jdwp.Handshake))
			wantWireOut = float64(len(down.String()) - len(AppendReply(nil, rep)))
		}
		if got := testutil.ToFloat64(c.wireReceived); got != wantWireIn {
			t.Errorf("offer %v, agree %v: the far end counted %g compressed bytes received, the hop carried %g", tc.offer, tc.agree, got, wantWireIn)
		}
		if got := testutil.ToFloat64(c.wireSent); got != wantWireOut {
			t.Errorf("offer %v, agree %v: the far end counted %g compressed bytes sent, the hop carried %g", tc.offer, tc.agree, got, wantWireOut)
		}
		if in, out := testutil.ToFloat64(c.streamReceived), testutil.ToFloat64(c.streamSent); want != (in > 0 && out > float64(len(jdwp.Handshake))) {
			t.Errorf("offer %v, agree %v: the far end counted %g and %g stream bytes received and sent", tc.offer, tc.agree, in, out)
		}
	}
}

// countPackets reads JDWP packets from r to its end.
func countPackets(t *testing.T, r io.Reader) (cmds, replies int) {
	t.Helper()
	jr := jdwp.NewReader(r, 0)
	for {
		p, err := jr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("not JDWP: %v", err)
		}
		if p.IsReply() {
			replies++
		} else {
			cmds++
		}
	}
}

// compressedLeg reports whether the held session's live link is
// compressed.
func (r *resumeRig) compressedLeg(t *testing.T) bool {
	st := r.held(t)
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.link != nil && st.link.z != nil
}

// TestResumeCompressed: a compressed resumable session goes on across a
// drop, and across ten, byte for byte; each new link is compressed again
// (a fresh compressor on each end, the unacknowledged frames compressed
// anew).
func TestResumeCompressed(t *testing.T) {
	t.Run("drop", func(t *testing.T) {
		r := newResumeRig(t, 30*time.Second, FarConfig{Compress: true}, NearConfig{Compress: true})
		if !r.compressedLeg(t) {
			t.Fatal("the first link is not compressed")
		}
		resumeAfterDrop(t, r)
		if !r.compressedLeg(t) {
			t.Error("the link after the drop is not compressed")
		}
	})
	t.Run("ten drops", func(t *testing.T) {
		r := newResumeRig(t, 30*time.Second, FarConfig{Compress: true}, NearConfig{Compress: true})
		resumeTenDrops(t, r)
		if !r.compressedLeg(t) {
			t.Error("the link after the drops is not compressed")
		}
	})
}

// TestCompressionByTheLinksRoundTrip: a near end with a Link offers
// compression by the round trip its probe measured: not on a link under
// CompressMinRTT (loopback is under an hour), on one at or above it
// (loopback is above a nanosecond), and, before anything was measured or
// without a Link, as Compress says.
func TestCompressionByTheLinksRoundTrip(t *testing.T) {
	v := newVMSide(t)
	f := startFar(t, v, "127.0.0.1:0", FarConfig{Compress: true})
	for _, tc := range []struct {
		name   string
		minRTT time.Duration
		link   bool
		probe  bool
		want   bool
	}{
		{"fast link", time.Hour, true, true, false},
		{"slow link", time.Nanosecond, true, true, true},
		{"not measured yet", time.Hour, true, false, true},
		{"no link", time.Hour, false, false, true},
		{"no threshold", 0, true, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := NearConfig{Addr: f.addr, Compress: true, CompressMinRTT: tc.minRTT}
			if tc.link {
				nc.Link = new(Link)
			}
			if tc.probe {
				if _, err := Probe(t.Context(), nc); err != nil {
					t.Fatal(err)
				}
				if nc.Link.RTT() <= 0 {
					t.Fatalf("the probe measured a round trip of %v", nc.Link.RTT())
				}
			}
			vc, err := Dialer(nc)(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			defer vc.Conn.Close()
			if vc.Info.Compressed != tc.want {
				t.Errorf("link round trip %v, threshold %v: compressed %v, want %v", nc.Link.RTT(), tc.minRTT, vc.Info.Compressed, tc.want)
			}
		})
	}
}

// TestResumeKeepsTheFirstLinksCompression: a reconnect offers compression
// as the session's first connection did, though the round trip measured
// since would decide otherwise (the session's hooks chose how to send
// their payloads by the first: relay.LinkInfo.Compressed).
func TestResumeKeepsTheFirstLinksCompression(t *testing.T) {
	link := new(Link)
	r := newResumeRig(t, 30*time.Second, FarConfig{Compress: true}, NearConfig{Compress: true, CompressMinRTT: time.Hour, Link: link})
	if !r.compressedLeg(t) {
		t.Fatal("the first link, its round trip not measured yet, is not compressed")
	}
	if rtt := link.RTT(); rtt <= 0 || rtt >= time.Hour {
		t.Fatalf("the first connection measured a round trip of %v", rtt)
	}
	resumeAfterDrop(t, r)
	if !r.compressedLeg(t) {
		t.Error("the link after the drop is not compressed, where the first was")
	}
}

// TestLinkRTT: a Link's round trip is the smallest of its last four
// samples, so one slow preamble (a busy end) does not make a fast link
// slow, and four slow ones do.
func TestLinkRTT(t *testing.T) {
	var l Link
	if l.RTT() != 0 {
		t.Fatalf("no sample: %v", l.RTT())
	}
	ms := time.Millisecond
	for i, tc := range []struct{ sample, want time.Duration }{
		{ms, ms}, {10 * ms, ms}, {3 * ms, ms}, {5 * ms, ms},
		{7 * ms, 3 * ms}, // the 1 ms sample is the fifth last now
		{20 * ms, 3 * ms}, {20 * ms, 5 * ms}, {20 * ms, 7 * ms}, {20 * ms, 20 * ms},
		{ms / 2, ms / 2},
	} {
		l.measured(tc.sample)
		if got := l.RTT(); got != tc.want {
			t.Fatalf("after sample %d (%v): %v, want %v", i, tc.sample, got, tc.want)
		}
	}
}

// TestHeartbeatMeasuresTheLink: each heartbeat answer's round trip goes
// to the Link (one without a latency, none), and the answer is absorbed.
func TestHeartbeatMeasuresTheLink(t *testing.T) {
	l := new(Link)
	h := &nearBeat{link: l}
	for _, tc := range []struct{ latency, want time.Duration }{{0, 0}, {3 * time.Millisecond, 3 * time.Millisecond}, {time.Millisecond, time.Millisecond}} {
		f := &relay.Frame{Kind: relay.KindReply, Cmd: CmdHeartbeat, Latency: tc.latency}
		if a := h.FromVM(nil, f); a != relay.Consume {
			t.Fatalf("a heartbeat's answer was not absorbed: %v", a)
		}
		if got := l.RTT(); got != tc.want {
			t.Errorf("after an answer in %v: the link's round trip %v, want %v", tc.latency, got, tc.want)
		}
	}
	if a := (&nearBeat{}).FromVM(nil, &relay.Frame{Kind: relay.KindReply, Cmd: CmdHeartbeat, Latency: time.Millisecond}); a != relay.Consume {
		t.Fatalf("without a Link, a heartbeat's answer was not absorbed: %v", a)
	}
}
