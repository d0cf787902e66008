package ddmtap

import (
	"testing"

	"github.com/jdwpaccel/jdwpaccel/ddm"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/rs/zerolog"
)

func TestPassive(t *testing.T) {
	mon := NewMonitor("adb:emu:7", zerolog.Nop(), nil)
	obs := Passive(mon)
	so := obs.(relay.SessionObserver)
	so.SessionStart(nil)
	so.SessionStart(nil)
	if s := mon.Snapshot(); !s.Connected || s.DebuggerAttached {
		t.Fatalf("after two session starts: connected %v, debugger %v", s.Connected, s.DebuggerAttached)
	}
	req := ddm.AppendCommand(nil, 1, ddm.Hello{ClientVersion: 1})
	obs.Observe(nil, &relay.Frame{Dir: relay.ToVM, Kind: relay.KindCommand, Cmd: jdwp.CmdDDMChunk, Packet: req})
	rep := ddm.AppendReply(nil, 1, ddm.Hello{ClientVersion: 1, PID: 7, AppName: "com.example.seven"})
	// The proxy's own traffic is not the client's: ignored.
	obs.Observe(nil, &relay.Frame{Dir: relay.ToDebugger, Kind: relay.KindReply, Cmd: jdwp.CmdDDMChunk, Packet: rep, Origin: relay.Synthetic})
	if mon.Snapshot().Identity.AppName != "" {
		t.Fatal("a synthetic reply was applied")
	}
	obs.Observe(nil, &relay.Frame{Dir: relay.ToDebugger, Kind: relay.KindReply, Cmd: jdwp.CmdDDMChunk, Packet: rep})
	s := mon.Snapshot()
	if s.Identity.AppName != "com.example.seven" || s.Identity.PID != 7 || s.Identity.DDM != DDMYes {
		t.Fatalf("identity after the HELO reply: %+v", s.Identity)
	}
	obs.Observe(nil, &relay.Frame{Dir: relay.ToVM, Kind: relay.KindCommand, Cmd: jdwp.CmdVirtualMachineVersion,
		Packet: jdwp.AppendCommand(nil, 2, jdwp.CmdVirtualMachineVersion, nil)})
	if !mon.Snapshot().DebuggerAttached {
		t.Error("a non-DDM command did not mark the debugger attached")
	}
	so.SessionEnd(nil, nil)
	if !mon.Snapshot().Connected {
		t.Error("disconnected while a session remains")
	}
	so.SessionEnd(nil, nil)
	if s := mon.Snapshot(); s.Connected || s.DebuggerAttached {
		t.Errorf("after the last session: connected %v, debugger %v", s.Connected, s.DebuggerAttached)
	}
}
