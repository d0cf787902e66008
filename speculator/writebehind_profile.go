package speculator

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"slices"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// What write-behind carries from a session to the next attach of the same
// debugger to the same kind of VM (the profile, persist.go), so that the
// attach's EventRequest.Sets (class-prepare requests, deferred
// breakpoints) are written behind from the second Set on instead of each
// waiting a round trip.
//
// Why this is proven, and no more than this:
//
//   - Shapes. The VM checks a Set's event kind, suspend policy and
//     modifier kinds (in order) in its own code (libjdwp's eventRequest
//     and eventFilter), against nothing but its capabilities: whether a
//     shape is accepted is a property of the VM's build and its
//     capabilities, not of the session. The profile is keyed by the VM's
//     Version reply (VM name, version, JDWP version: the build), and its
//     shapes are taken only when this session's CapabilitiesNew reply is
//     byte-identical to the one they were recorded under. The IDs in a
//     Set are still proven per session (writeBehind.proven): a shape
//     carries none.
//   - Sequence. That the VM gives each Set the next request ID (libjdwp's
//     one counter) is a property of its code too; the profile records it
//     once a session saw two Sets' replies consecutive back to back. It
//     stands in for this session's seqBack only: the last ID must still be
//     exact (a Set's reply in this session: the first Set is forwarded, the
//     counter's start is not assumed), no Set in flight or failed since,
//     and the whole VM suspended with no resume in flight (as at a suspend=y
//     attach, attachVMStart), so that nothing but this debugger's Sets can
//     number requests in between. A reply numbered otherwise clears it
//     for the session (writeBehind.replied), and is not recorded.
//
// A written-behind Set the VM answers otherwise still ends the session
// (writebehind.go), as for a rule learned in the session.

// maxProfileShapes bounds the shapes a profile keeps.
const maxProfileShapes = 64

// wbProfile is write-behind's part of a profile.
type wbProfile struct {
	Caps   string   `json:"caps"`             // hash of the CapabilitiesNew reply the shapes were accepted under
	Shapes [][]byte `json:"shapes,omitempty"` // Set shapes the VM accepted: kind, policy, modifier kinds
	Seq    bool     `json:"seq"`              // Sets' request IDs were consecutive back to back
}

func (p *wbProfile) valid() bool {
	if p == nil {
		return true
	}
	if len(p.Shapes) > maxProfileShapes {
		return false
	}
	for _, b := range p.Shapes {
		if _, ok := shapeOf(b); !ok {
			return false
		}
	}
	return true
}

// shapeOf reads a shape back from its bytes.
func shapeOf(b []byte) (shape, bool) {
	var s shape
	if len(b) < 2 || len(b) > len(s.b) {
		return s, false
	}
	s.n = uint8(len(b) - 2)
	copy(s.b[:], b)
	return s, true
}

// capsHash is the key of a CapabilitiesNew reply body.
func capsHash(body []byte) string {
	h := sha256.Sum256(body)
	return hex.EncodeToString(h[:12])
}

// importFrom takes write-behind's rules from the attach's profile once
// both it and this session's capabilities are known (see above).
func (w *writeBehind) importFrom(p *profile, _ jdwp.IDSizes) {
	w.prof = p.WB
	w.takeProfile()
}

func (w *writeBehind) takeProfile() {
	if !w.on || w.imported || w.prof == nil || w.caps == "" {
		return
	}
	w.imported = true
	p := w.prof
	if p.Caps != w.caps {
		return
	}
	for _, b := range p.Shapes {
		if s, ok := shapeOf(b); ok {
			w.shapes[s] = struct{}{}
		}
	}
	w.seqKind = p.Seq && !w.seqWrong
}

// exportTo leaves write-behind's part of the profile, or old's when this
// session learned nothing to keep.
func (w *writeBehind) exportTo(p, old *profile, _ jdwp.IDSizes) {
	if p.WB = w.export(); p.WB == nil && old != nil {
		p.WB = old.WB
	}
}

func (w *writeBehind) export() *wbProfile {
	if !w.on || w.caps == "" || len(w.shapes) == 0 {
		return nil
	}
	p := &wbProfile{Caps: w.caps, Seq: (w.seqBack || w.seqKind) && !w.seqWrong}
	for s := range w.shapes {
		if s.n == malformed || len(p.Shapes) >= maxProfileShapes {
			continue
		}
		p.Shapes = append(p.Shapes, append([]byte(nil), s.b[:2+int(s.n)]...))
	}
	slices.SortFunc(p.Shapes, bytes.Compare) // one order: a profile file does not churn
	return p
}

// capsKnown notes this session's CapabilitiesNew reply.
func (w *writeBehind) capsKnown(p jdwp.Packet) {
	if w.caps == "" {
		w.caps = capsHash(p.Body())
		w.takeProfile()
	}
}
