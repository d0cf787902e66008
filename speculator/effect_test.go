package speculator

import (
	"testing"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/rs/zerolog"
)

// TestEffectsFollowTheTable sends every non-cacheable command of keyable's
// table (and an unknown one) through a session and checks that the
// invalidation it causes is the one its row's effect calls for.
func TestEffectsFollowTheTable(t *testing.T) {
	want := map[keyable.Effect]string{
		keyable.EffectReadOnly:       "",
		keyable.EffectResume:         "resume",
		keyable.EffectInvoke:         "invoke",
		keyable.EffectSuspendVM:      "suspend",
		keyable.EffectSuspendThread:  "suspend",
		keyable.EffectRedefine:       "redefine",
		keyable.EffectDisposeObjects: "dispose",
		keyable.EffectMutate:         "mutation",
		keyable.EffectUnknown:        "unknown_command",
	}
	rows := keyableTable()
	rows = append(rows, keyable.Command{Cmd: jdwp.Cmd{Set: 99, Cmd: 1}})
	for i, row := range rows {
		if row.Cacheable() {
			// Without parameters a command that takes some has no key:
			// it is treated as a mutation, conservatively.
			if _, _, ok := newKey(row.Cmd, nil, sizes8); ok {
				continue
			}
			row.Effect = keyable.EffectMutate
		}
		rs := &relay.Session{}
		rs.SetIDSizes(sizes8)
		sp := New(Config{}, zerolog.Nop(), nil)
		ss := newSession(sp, rs)
		f := &relay.Frame{Kind: relay.KindCommand, Packet: jdwp.AppendCommand(nil, uint32(i+1), row.Cmd, nil), ID: uint32(i + 1)}
		if ss.FromDebugger(rs, f) != relay.Forward {
			t.Errorf("%v not forwarded", row.Cmd)
		}
		got := ""
		for r, n := range sp.Stats().Invalidations {
			if n > 0 {
				if got != "" {
					t.Errorf("%v: invalidated for %s and %s", row.Cmd, got, r)
				}
				got = r
			}
		}
		if w, ok := want[row.Effect]; !ok || got != w {
			t.Errorf("%v (%v): invalidated for %q, want %q", row.Cmd, row.Effect, got, w)
		}
	}
}
