package staleid

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/speculator"
	"github.com/rs/zerolog"
)

// recorded is one packet of a session as the guard saw it.
type recorded struct {
	dir    relay.Direction
	kind   relay.Kind
	origin relay.Origin
	cmd    jdwp.Cmd
	packet jdwp.Packet
}

// recorder keeps every packet of its session, and the session's guard and
// ID sizes once it ends.
type recorder struct {
	mu      sync.Mutex // guards all below
	packets []recorded
	sizes   jdwp.IDSizes
	ended   chan struct{}
}

func (r *recorder) Observe(s *relay.Session, f *relay.Frame) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.packets = append(r.packets, recorded{f.Dir, f.Kind, f.Origin, f.Cmd, f.Packet.Clone()})
	r.sizes, _ = s.IDSizes()
}
func (r *recorder) SessionStart(*relay.Session)      {}
func (r *recorder) SessionEnd(*relay.Session, error) { close(r.ended) }
func (r *recorder) stream() ([]recorded, jdwp.IDSizes) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.packets, r.sizes
}

// driveThroughGuard runs the JDI driver with profile on a new Deep VM
// through a relay with a guard in front of a speculator, and returns the
// guard and the session's packets.
func driveThroughGuard(t testing.TB, b *javavm.Build, profile string) (*Guard, []recorded, jdwp.IDSizes) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	vm, err := javavm.Start(ctx, b, javavm.Deep, javavm.VMOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Stop()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sp := speculator.New(speculator.Config{}, zerolog.Nop(), nil)
	var g *Guard
	rec := &recorder{ended: make(chan struct{})}
	srv := relay.NewServer(relay.Config{DialVM: relay.DialTCP(vm.Addr()), Logger: zerolog.Nop(),
		NewHooks: relay.ChainHooks(func(s *relay.Session) relay.Hooks {
			h := Hooks(s)
			g = h.Interceptors[0].(*Guard)
			return h
		}, sp.Hooks, func(*relay.Session) relay.Hooks { return relay.Hooks{Observers: []relay.Observer{rec}} })})
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	go srv.Serve(sctx, ln) //nolint:errcheck // ends with sctx
	if _, err := javavm.RunDriver(ctx, b, javavm.DriverOptions{Addr: ln.Addr().String(), Profile: profile,
		Debuggee: javavm.Deep, Steps: 5, Breakpoints: 5}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-rec.ended:
	case <-ctx.Done():
		t.Fatal("the session did not end after the driver exited")
	}
	packets, sizes := rec.stream()
	return g, packets, sizes
}

// TestRealDebuggersNeverAnswered: real JDI debuggers (IDE-like and
// vscode-like, through a speculator) only ever name IDs they were sent:
// the guard decodes every reply and event they get and answers none of
// their commands.
func TestRealDebuggersNeverAnswered(t *testing.T) {
	b := jdwptest.JavaBuild(t)
	for _, profile := range []string{javavm.ProfileIdeaLike, javavm.ProfileVSCodeLike} {
		t.Run(profile, func(t *testing.T) {
			g, packets, _ := driveThroughGuard(t, b, profile)
			if g.off || g.answered != 0 || len(g.ids.m) == 0 {
				t.Fatalf("guard off %v (%s), answered %d, %d IDs known, after %d packets", g.off, g.why, g.answered, len(g.ids.m), len(packets))
			}
			t.Logf("%d packets, %d IDs sent to the debugger", len(packets), len(g.ids.m))
		})
	}
}
