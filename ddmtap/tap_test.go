package ddmtap

import (
	"testing"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/retag"
)

// TestTapHotPathAllocs: the interceptor adds no allocation to non-DDM
// packets in either direction.
func TestTapHotPathAllocs(t *testing.T) {
	l := newLink(NewMonitor("vm", nopLog, nil), nopLog, Options{}, retag.NewTable(), false)
	tp := tap{l: l}
	cmd := jdwp.AppendCommand(nil, 7, jdwp.Cmd{Set: jdwp.SetThreadReference, Cmd: 1}, make([]byte, 8))
	reply := jdwp.AppendReply(nil, 7, 0, make([]byte, 16))
	event := jdwp.AppendCommand(nil, 9, jdwp.CmdComposite, make([]byte, 20))
	var f relay.Frame
	allocs := testing.AllocsPerRun(1000, func() {
		f = relay.Frame{Dir: relay.ToVM, Kind: relay.KindCommand, Packet: cmd, Cmd: cmd.Cmd()}
		if tp.FromDebugger(nil, &f) != relay.Forward {
			t.Fatal("command consumed")
		}
		f = relay.Frame{Dir: relay.ToDebugger, Kind: relay.KindReply, Packet: reply, Cmd: cmd.Cmd()}
		if tp.FromVM(nil, &f) != relay.Forward {
			t.Fatal("reply consumed")
		}
		f = relay.Frame{Dir: relay.ToDebugger, Kind: relay.KindEvent, Packet: event, Cmd: event.Cmd()}
		if tp.FromVM(nil, &f) != relay.Forward {
			t.Fatal("event consumed")
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per packet triple", allocs)
	}
	// A late reply in the proxy's ID range (its request expired) is left
	// to the relay, which absorbs every reply to the proxy's own commands
	// (relay's TestLateSyntheticReplyAbsorbed); the speculator's replies
	// pass the tap the same way.
	late := jdwp.AppendReply(nil, retag.SyntheticBase+42, 0, nil)
	f = relay.Frame{Dir: relay.ToDebugger, Kind: relay.KindReply, Packet: late, Origin: relay.Synthetic}
	if tp.FromVM(nil, &f) != relay.Forward {
		t.Fatal("the tap took a reply to a request it is not waiting for")
	}
}
