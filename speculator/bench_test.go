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

// BenchmarkLearnFrames is the learned rules' work on a stop's first reply:
// the stopped thread's Frames, 27 frames deep (the Deep debuggee's), each
// iteration a new stop. Its reply's turn is where a belayed debugger waits
// (the one step of jdb-min at 0 ms, where the proxy's CPU is the step's).
//
//	go test -run '^$' -bench BenchmarkLearnFrames -benchmem ./speculator
func BenchmarkLearnFrames(b *testing.B) {
	rs := &relay.Session{}
	rs.SetIDSizes(sizes8)
	ss := newSession(New(Config{}, zerolog.Nop(), nil), rs)
	params := body(func(w *jdwp.BodyWriter) { w.ObjectID(thread1); w.Int32(0); w.Int32(-1) })
	const depth = 27
	frames := body(func(w *jdwp.BodyWriter) {
		w.Int32(depth)
		for i := range depth {
			w.FrameID(0x1000 + uint64(i))
			w.Location(jdwp.Location{TypeTag: 1, Class: 0x70 + uint64(i%5), Method: 0x100 + uint64(i%9), Index: 4})
		}
	})
	r := reply{ok: true, valid: true, c: jdwp.CmdThreadReferenceFrames, params: params,
		p: jdwp.AppendReply(nil, 0xA0000001, 0, frames), sizes: sizes8}
	at := jdwp.Location{TypeTag: 1, Class: 0x70, Method: 0x100, Index: 4}
	b.ReportAllocs()
	for b.Loop() {
		ss.learn.beginEpisode(thread1, at)
		ss.lrn.replied(&r)
	}
}

// TestRefusedSpeculationAllocatesNothing: a candidate speculation the
// gates refuse (here: its reply is cached) costs no allocation; the rules
// put up dozens per reply of a stop (a Frames reply's every frame's class
// facts), most of them cached from earlier stops.
func TestRefusedSpeculationAllocatesNothing(t *testing.T) {
	ss, _, _ := hitRig(t)
	ss.learn.beginEpisode(thread1, jdwp.Location{TypeTag: 1, Class: 0x70, Method: 0x71})
	params := isObsoleteBody(0x70, 0x71) // cached by hitRig
	allocs := testing.AllocsPerRun(200, func() {
		ss.specParams(sizes8, jdwp.CmdMethodIsObsolete, params, kObsolete, nil, 0)
	})
	if allocs != 0 || len(ss.learn.ep.specs) != 0 {
		t.Fatalf("a refused speculation allocates %.1f times (%d admitted)", allocs, len(ss.learn.ep.specs))
	}
}
