package push

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/bench/link"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/speculator"
	"github.com/jdwpaccel/jdwpaccel/split"
	"github.com/rs/zerolog"
)

// linkRun is one driver run through both ends over split's own stream.
type linkRun struct {
	res      *javavm.DriverResult
	up, down int64 // bytes the link carried, near → far and far → near
	counters *Counters
}

// runSplitLink runs the driver against a fresh VM through a far end and a
// near end (resumable stream, heartbeat, attach bundle, pushed replies),
// a link of rtt between them, compressed or not.
func runSplitLink(t *testing.T, ctx context.Context, b *javavm.Build, rtt time.Duration, opts javavm.DriverOptions, compress bool) linkRun {
	t.Helper()
	vm, err := javavm.Start(ctx, b, opts.Debuggee, javavm.VMOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Stop()
	run := linkRun{counters: new(Counters)}
	cfg := Config{Counters: run.counters}
	farSpec := speculator.New(speculator.Config{}, zerolog.Nop(), nil)
	nearSpec := speculator.New(speculator.Config{WriteBehind: true}, zerolog.Nop(), nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	far := split.NewFar(split.FarConfig{Relay: relay.Config{DialVM: relay.DialTCP(vm.Addr())},
		Hooks: FarHooks(farSpec, cfg), Attach: true, ResumeWithin: time.Minute, Compress: compress})
	farCtx, stopFar := context.WithCancel(ctx)
	farDone := make(chan error, 1)
	go func() { farDone <- far.Serve(farCtx, ln) }()
	defer func() { stopFar(); <-farDone }()
	lk, err := link.Listen(ctx, "127.0.0.1:0", ln.Addr().String(), link.Config{RTT: rtt, Seed: 1, Bandwidth: envInt("PUSH_BANDWIDTH")}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Close()
	ended := make(sessionEnds, 1)
	opts.Addr = serve(t, relay.Config{
		DialVM: split.Dialer(split.NearConfig{Addr: lk.Addr().String(), Attach: true, Heartbeat: true, ResumeWithin: time.Minute, Compress: compress}),
		NewHooks: relay.ChainHooks(split.NearHeartbeat(0, nil), NearHooks(nearSpec, cfg),
			func(*relay.Session) relay.Hooks { return relay.Hooks{Observers: []relay.Observer{ended}} }),
	})
	if run.res, err = javavm.RunDriver(ctx, b, opts); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
	case <-ctx.Done():
		t.Fatal("the near end's session did not end after the driver exited")
	}
	lk.Close()
	st := lk.Bytes()
	run.up, run.down = st.AToB, st.BToA
	return run
}

// TestSplitCompressedRealVM steps a real JVM with an IntelliJ-like JDI
// client through both ends over a compressed link and over a plain one:
// both must see at every stop what a direct client sees, the compressed
// link must carry fewer bytes each way, and pushed bundles must cross it
// raw (the link compresses them).
func TestSplitCompressedRealVM(t *testing.T) {
	if testing.Short() {
		t.Skip("starts JVMs")
	}
	b := jdwptest.JavaBuild(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const rtt = 5 * time.Millisecond
	opts := javavm.DriverOptions{Debuggee: javavm.Deep, Profile: javavm.ProfileIdeaLike, Steps: 8, Warmup: 1}
	direct := directRun(t, ctx, b, rtt, opts)
	plain := runSplitLink(t, ctx, b, rtt, opts, false)
	packed := runSplitLink(t, ctx, b, rtt, opts, true)
	for name, r := range map[string]linkRun{"plain": plain, "compressed": packed} {
		if !slices.Equal(direct.Digests(), r.res.Digests()) {
			t.Errorf("the %s split run saw other values than the direct run:\n direct %v\n split  %v", name, direct.Digests(), r.res.Digests())
		}
	}
	ps, cs := plain.counters.Stats(), packed.counters.Stats()
	t.Logf("link bytes near→far / far→near: plain %d / %d, compressed %d / %d (%.2f / %.2f); bundles: plain %d sent of %d raw, compressed %d sent of %d raw",
		plain.up, plain.down, packed.up, packed.down, float64(packed.up)/float64(plain.up), float64(packed.down)/float64(plain.down),
		ps.BytesSent, ps.RawBytes, cs.BytesSent, cs.RawBytes)
	if packed.up >= plain.up || packed.down >= plain.down {
		t.Errorf("the compressed link carried %d / %d bytes, the plain one %d / %d: want fewer each way", packed.up, packed.down, plain.up, plain.down)
	}
	if cs.Bundles == 0 || cs.BytesSent < cs.RawBytes {
		t.Errorf("on the compressed link the far end sent %d bundles of %d bytes for %d raw record bytes: want them raw", cs.Bundles, cs.BytesSent, cs.RawBytes)
	}
	if ps.BytesSent >= ps.RawBytes {
		t.Errorf("on the plain link the far end sent %d bundle bytes for %d raw record bytes: want them compressed", ps.BytesSent, ps.RawBytes)
	}
}
