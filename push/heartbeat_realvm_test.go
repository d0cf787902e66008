package push

import (
	"context"
	"net"
	"slices"
	"sync/atomic"
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

// beatCounter counts the heartbeats a near end sends.
type beatCounter struct{ n atomic.Int64 }

func (b *beatCounter) Observe(_ *relay.Session, f *relay.Frame) {
	if f.Dir == relay.ToVM && f.Kind == relay.KindCommand && f.Cmd == split.CmdHeartbeat {
		b.n.Add(1)
	}
}

// TestSplitHeartbeatRealVM steps a real JVM through both ends over the
// split stream (preamble, attach bundle, pushed replies) with a link
// timeout short enough that heartbeats cross the link all along, from the
// attach on: the driver must see what it sees directly, every stop.
func TestSplitHeartbeatRealVM(t *testing.T) {
	if testing.Short() {
		t.Skip("starts JVMs")
	}
	b := jdwptest.JavaBuild(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The session lasts several beats, and the timeout leaves a loaded
	// machine (CI runs packages in parallel on two cores) room to stall a
	// process for a second without the link counting as silent.
	const rtt, timeout = 5 * time.Millisecond, 1500 * time.Millisecond // a beat every 500 ms
	opts := javavm.DriverOptions{Debuggee: javavm.Deep, Profile: javavm.ProfileIdeaLike, Steps: 16, Warmup: 1}
	direct := directRun(t, ctx, b, rtt, opts)

	vm, err := javavm.Start(ctx, b, opts.Debuggee, javavm.VMOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Stop()
	farSpec := speculator.New(speculator.Config{}, zerolog.Nop(), nil)
	nearSpec := speculator.New(speculator.Config{WriteBehind: true}, zerolog.Nop(), nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	far := split.NewFar(split.FarConfig{Relay: relay.Config{DialVM: relay.DialTCP(vm.Addr())},
		Hooks: FarHooks(farSpec, Config{}), Attach: true, LinkTimeout: timeout})
	farCtx, stopFar := context.WithCancel(ctx)
	farDone := make(chan error, 1)
	go func() { farDone <- far.Serve(farCtx, ln) }()
	defer func() { stopFar(); <-farDone }()
	lk, err := link.Listen(ctx, "127.0.0.1:0", ln.Addr().String(), link.Config{RTT: rtt, Seed: 1}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Close()
	beats := new(beatCounter)
	opts.Addr = serve(t, relay.Config{
		DialVM: split.Dialer(split.NearConfig{Addr: lk.Addr().String(), Attach: true, Heartbeat: true, LinkTimeout: timeout}),
		NewHooks: relay.ChainHooks(split.NearHeartbeat(timeout, nil), NearHooks(nearSpec, Config{}),
			func(*relay.Session) relay.Hooks { return relay.Hooks{Observers: []relay.Observer{beats}} }),
	})
	res, err := javavm.RunDriver(ctx, b, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d heartbeats; near end %+v", beats.n.Load(), nearSpec.Stats())
	if !slices.Equal(direct.Digests(), res.Digests()) {
		t.Errorf("the split run saw other values than the direct run:\n direct %v\n split  %v", direct.Digests(), res.Digests())
	}
	if beats.n.Load() == 0 {
		t.Error("no heartbeat crossed the link")
	}
	if st := nearSpec.Stats(); st.Hits == 0 {
		t.Errorf("the near end served nothing from pushed replies: %+v", st)
	}
}
