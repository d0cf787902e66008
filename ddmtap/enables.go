package ddmtap

import (
	"github.com/jdwpaccel/jdwpaccel/ddm"
)

// enables are one side's DDM notification settings on a VM connection:
// what its last THEN, HPIF, HPSG and NHSG requests asked for.
type enables struct {
	threads bool     // THEN
	hpif    uint8    // HPIF when: 0 never, 2 next GC, 3 every GC (1 is one-shot)
	hpsg    [2]uint8 // HPSG when (0, 1), what (0 HPSG, 1 HPSO)
	nhsg    [2]uint8 // NHSG when, what
}

// unionSeg is the segment setting that serves both sides: on if either
// wants it, with the debugger's "what" when it wants segments (the monitor
// decodes HPSG and HPSO alike).
func unionSeg(own, dbg [2]uint8) [2]uint8 {
	switch {
	case dbg[0] != 0:
		return dbg
	case own[0] != 0:
		return own
	}
	return dbg
}

// ownEnable records an enable request of the proxy and returns the request
// the VM must get: the union with the debugger's settings. l.mu is held.
func (l *link) ownEnable(p ddm.Payload) ddm.Payload {
	switch v := p.(type) {
	case ddm.U1:
		switch {
		case v.T == ddm.TypeTHEN:
			l.own.threads = v.V != 0
			if l.dbg.threads {
				v.V = 1
			}
		case v.T == ddm.TypeHPIF && (v.V == 0 || v.V == 2 || v.V == 3):
			l.own.hpif = v.V
			v.V = max(l.own.hpif, l.dbg.hpif)
		}
		return v
	case ddm.SegmentRequest:
		own, dbg := &l.own.hpsg, l.dbg.hpsg
		switch v.T {
		case ddm.TypeHPSG:
		case ddm.TypeNHSG:
			own, dbg = &l.own.nhsg, l.dbg.nhsg
		default:
			return v
		}
		if v.When > 1 || v.What > 1 {
			return v // the VM answers FAIL and keeps its setting
		}
		*own = [2]uint8{v.When, v.What}
		u := unionSeg(*own, dbg)
		v.When, v.What = u[0], u[1]
		return v
	}
	return p
}

// noteDebuggerDDM records what a debugger's own DDM request enables and
// rewrites the request in place so that the VM keeps what the proxy
// enabled: ddmlib sends HPIF(0) when it connects (and THEN(0), HPSG(0,0),
// NHSG(0,1) when the user turns updates off), which would otherwise turn
// off the proxy's monitoring for the rest of the connection. The VM gets
// the union of both sides' settings, so it answers the rewritten request
// exactly as it would have answered the original (an empty reply, or
// none): these handlers reply the same to an enable and a disable. A
// THEN(0) kept at THEN(1) makes the VM re-announce its threads, to the
// monitor only.
func (l *link) noteDebuggerDDM(body []byte) {
	it := ddm.NewChunks(body)
	c, ok := it.Next()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dbgDDM = true
	if !ok || len(c.Data) == 0 {
		return
	}
	d := c.Data // aliases body: rewritten in place, same length
	switch c.Type {
	case ddm.TypeTHEN:
		l.dbg.threads = d[0] != 0
		if l.own.threads {
			d[0] = 1
		}
	case ddm.TypeHPIF:
		switch d[0] {
		case 1:
			l.dbgNow++ // one-shot; the setting does not change
		case 0, 2, 3:
			l.dbg.hpif = d[0]
			d[0] = max(l.own.hpif, l.dbg.hpif)
		}
	case ddm.TypeHPSG, ddm.TypeNHSG:
		if len(d) < 2 || d[0] > 1 || d[1] > 1 {
			return // the VM answers FAIL and keeps its setting
		}
		own, dbg := l.own.hpsg, &l.dbg.hpsg
		if c.Type == ddm.TypeNHSG {
			own, dbg = l.own.nhsg, &l.dbg.nhsg
		}
		*dbg = [2]uint8{d[0], d[1]}
		u := unionSeg(own, *dbg)
		d[0], d[1] = u[0], u[1]
	}
}

// hpifReason is the offset of the first heap's reason byte in HPIF data
// (u4 heap count, u4 heap id, u8 timestamp, u1 reason), and hpifEntry the
// size of one heap's entry.
const (
	hpifReason = 16
	hpifEntry  = 4 + 8 + 1 + 4*4
)

// debuggerWants says whether a VM-originated DDM payload goes to the
// debugger: only if the debugger speaks DDM itself and, for the families
// the proxy may have enabled on its own, if the debugger enabled them too.
// An HPIF is the debugger's if it asked for one now (reason 1), or at
// every GC, or at the next GC (then that one-shot is used up, and the
// reason rewritten in place to 2 where the VM, kept at every GC for the
// proxy, said 3).
func (l *link) debuggerWants(body []byte) bool {
	it := ddm.NewChunks(body)
	c, _ := it.Next()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.dbgDDM {
		return false
	}
	switch c.Type {
	case ddm.TypeTHCR, ddm.TypeTHDE, ddm.TypeTHNM:
		return l.dbg.threads
	case ddm.TypeHPIF:
		if len(c.Data) <= hpifReason {
			return l.dbg.hpif != 0
		}
		switch {
		case c.Data[hpifReason] == 1:
			if l.dbgNow == 0 {
				return false
			}
			l.dbgNow--
			return true
		case l.dbg.hpif == 3:
			return true
		case l.dbg.hpif == 2:
			l.dbg.hpif = 0
			for i := hpifReason; i < len(c.Data); i += hpifEntry {
				c.Data[i] = 2
			}
			return true
		}
		return false
	case ddm.TypeHPST, ddm.TypeHPEN, ddm.TypeHPSG, ddm.TypeHPSO:
		return l.dbg.hpsg[0] != 0
	case ddm.TypeNHST, ddm.TypeNHEN, ddm.TypeNHSG:
		return l.dbg.nhsg[0] != 0
	}
	return true
}
