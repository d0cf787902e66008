package ddmtap

import (
	"github.com/jdwpaccel/jdwpaccel/ddm"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
)

// tap is the link's relay.Interceptor during a debugger session.
type tap struct{ l *link }

// FromDebugger implements relay.Interceptor: it only observes.
func (t tap) FromDebugger(_ *relay.Session, f *relay.Frame) relay.Action {
	if f.Kind != relay.KindCommand {
		return relay.Forward
	}
	if f.Cmd == jdwp.CmdDDMChunk {
		t.l.noteDebuggerDDM(f.Packet.Body())
	} else if !t.l.debuggerSeen.Load() {
		t.l.debuggerSeen.Store(true)
		t.l.mon.setDebugger(true)
	}
	return relay.Forward
}

// FromVM implements relay.Interceptor: it consumes replies to the proxy's
// requests and the VM-originated chunks the debugger did not ask for, and
// feeds the monitor with all DDM traffic, the debugger's included.
func (t tap) FromVM(_ *relay.Session, f *relay.Frame) relay.Action {
	switch f.Kind {
	case relay.KindReply:
		if pr, ok := f.Data(slot).(*pendingReq); ok {
			t.l.reply(*pr, f.Packet)
			f.Origin = relay.Synthetic
			return relay.Consume
		}
		if f.Cmd == jdwp.CmdVirtualMachineVersion {
			t.l.versionReply(f.Packet)
		}
		if f.Cmd == jdwp.CmdDDMChunk && f.Packet.ErrorCode() == 0 {
			t.l.mon.HandlePayload(ddm.VMToHost, f.Packet.Body())
		}
	case relay.KindDDM:
		t.l.chunk(f.Packet)
		if !t.l.debuggerWants(f.Packet.Body()) {
			f.Origin = relay.Synthetic
			return relay.Consume
		}
	}
	return relay.Forward
}

// Close implements relay.Interceptor.
func (t tap) Close(*relay.Session) { t.l.setSend(nil) }
