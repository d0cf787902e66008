package speculator

import (
	"testing"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/rs/zerolog"
)

// hitRig is a session with one cached IsObsolete reply, driven without a
// network: only the debugger-side hit path runs.
func hitRig(tb testing.TB) (*session, *relay.Session, *relay.Frame) {
	rs := &relay.Session{}
	rs.SetIDSizes(sizes8)
	ss := newSession(New(Config{}, zerolog.Nop(), nil), rs)
	ss.att.started = true // no VM behind this rig: no attach prefetch
	cmd := jdwp.AppendCommand(nil, 7, jdwp.CmdMethodIsObsolete, isObsoleteBody(0x70, 0x71))
	k, info, ok := keyOf(cmd, sizes8)
	if !ok {
		tb.Fatal("not keyable")
	}
	ss.cache.store(&k, info, k.Subject(info, sizes8), ss.facts.gen, 0, jdwp.AppendReply(nil, 0xA0000001, 0, []byte{0}), nil, sizes8)
	return ss, rs, &relay.Frame{Kind: relay.KindCommand, Packet: cmd, ID: 7}
}

func TestHitPathDoesNotAllocate(t *testing.T) {
	ss, rs, f := hitRig(t)
	allocs := testing.AllocsPerRun(200, func() {
		f.Answer, f.Origin = nil, relay.Forwarded
		if ss.FromDebugger(rs, f) != relay.Consume || f.Origin != relay.CacheHit || f.Answer.ID() != 7 {
			t.Fatal("not a hit")
		}
	})
	if allocs != 0 {
		t.Fatalf("hit path allocates %.1f times", allocs)
	}
}

func BenchmarkHit(b *testing.B) {
	ss, rs, f := hitRig(b)
	b.ReportAllocs()
	for b.Loop() {
		f.Answer = nil
		ss.FromDebugger(rs, f)
	}
}
