package ddmtap

import (
	"sync"

	"github.com/jdwpaccel/jdwpaccel/ddm"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
)

// Passive returns a relay observer that feeds mon with the DDM traffic of
// sessions whose DDM client is on the debugger's side (ddmlib in Android
// Studio, behind "jdwpaccel adb"): the debugger's requests and the VM's
// replies and chunks. It never sends anything to the VM. mon is
// connected while at least one such session lives, and shows a debugger
// attached once a session carries a non-DDM command. Use one observer per
// VM for all its sessions.
func Passive(mon *Monitor) relay.Observer {
	return &passive{mon: mon}
}

type passive struct {
	mon *Monitor

	mu       sync.Mutex // guards sessions
	sessions int        // sessions started and not ended
}

// Observe implements relay.Observer.
func (p *passive) Observe(_ *relay.Session, f *relay.Frame) {
	if f.Origin == relay.Synthetic {
		return
	}
	switch {
	case f.Dir == relay.ToVM && f.Kind == relay.KindCommand && f.Cmd == jdwp.CmdDDMChunk:
		p.mon.HandlePayload(ddm.HostToVM, f.Packet.Body())
	case f.Dir == relay.ToVM && f.Kind == relay.KindCommand:
		p.mon.setDebugger(true)
	case f.Dir == relay.ToDebugger && f.Kind == relay.KindReply && f.Cmd == jdwp.CmdDDMChunk && f.Packet.ErrorCode() == 0:
		p.mon.HandlePayload(ddm.VMToHost, f.Packet.Body())
	case f.Dir == relay.ToDebugger && f.Kind == relay.KindDDM:
		p.mon.HandlePayload(ddm.VMToHost, f.Packet.Body())
	}
}

// SessionStart implements relay.SessionObserver.
func (p *passive) SessionStart(*relay.Session) {
	p.mu.Lock()
	p.sessions++
	first := p.sessions == 1
	p.mu.Unlock()
	if first {
		p.mon.setConnected(true)
	}
}

// SessionEnd implements relay.SessionObserver.
func (p *passive) SessionEnd(*relay.Session, error) {
	p.mu.Lock()
	p.sessions--
	last := p.sessions == 0
	p.mu.Unlock()
	if last {
		p.mon.setConnected(false)
		p.mon.setDebugger(false)
	}
}
