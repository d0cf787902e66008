package staleid

import (
	"sync"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
)

var (
	streamOnce  sync.Once
	streamPkts  []recorded
	streamSizes jdwp.IDSizes
)

// realStream is an IDE-like JDI session on the Deep program (attach,
// five breakpoints, a stop, five steps), through a guard and a
// speculator: every packet as the guard's session saw it, recorded once.
func realStream(b *testing.B) ([]recorded, jdwp.IDSizes) {
	streamOnce.Do(func() {
		_, streamPkts, streamSizes = driveThroughGuard(b, jdwptest.JavaBuild(b), javavm.ProfileIdeaLike)
	})
	if streamPkts == nil {
		b.Fatal("no stream recorded")
	}
	return streamPkts, streamSizes
}

// replay runs the stream's packets through g as the relay would: the
// debugger's commands through command, what the debugger gets through
// observe.
func replay(g *Guard, pkts []recorded, sizes jdwp.IDSizes, f *relay.Frame) {
	for i := range pkts {
		p := &pkts[i]
		*f = relay.Frame{Dir: p.dir, Kind: p.kind, Origin: p.origin, Cmd: p.cmd, Packet: p.packet}
		if p.dir == relay.ToVM {
			if p.kind == relay.KindCommand && p.origin != relay.Synthetic {
				f.ID = p.packet.ID()
				if g.command(f, sizes, true) == relay.Consume {
					panic("a real debugger's command answered")
				}
			}
			continue
		}
		g.observe(f, sizes, true)
	}
}

// BenchmarkGuard is the guard's cost per packet over a real IDE-like
// session: "steady", a guard that has seen the session's IDs already (a
// session's usual packet), and "fresh", a new guard per session (its set
// grows from nothing).
func BenchmarkGuard(b *testing.B) {
	pkts, sizes := realStream(b)
	var f relay.Frame
	report := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(pkts)), "ns/packet")
		b.ReportMetric(0, "ns/op")
	}
	b.Run("steady", func(b *testing.B) {
		g := &Guard{}
		replay(g, pkts, sizes, &f)
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			replay(g, pkts, sizes, &f)
		}
		report(b)
		if g.off {
			b.Fatal("guard off")
		}
	})
	b.Run("fresh", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			replay(&Guard{}, pkts, sizes, &f)
		}
		report(b)
	})
	b.Logf("%d packets per session", len(pkts))
}
