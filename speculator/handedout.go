package speculator

import "github.com/jdwpaccel/jdwpaccel/jdwp"

// methodName names a method within its class.
type methodName struct{ name, sig string }

// handedOut is the class and method IDs this connection's replies and
// events handed out, with their names: the only IDs the attach replay
// sends. Part of facts (read by safeToSend), guarded by session.mu.
type handedOut struct {
	sigOf   map[jdwp.ClassID]string
	methods map[jdwp.ClassID]map[jdwp.MethodID]methodName
}

func (h *handedOut) class(c jdwp.ClassID, sig string) {
	if h.sigOf == nil {
		h.sigOf = map[jdwp.ClassID]string{}
		h.methods = map[jdwp.ClassID]map[jdwp.MethodID]methodName{}
	}
	if len(h.sigOf) >= maxInvalMap {
		clear(h.sigOf)
		clear(h.methods)
	}
	h.sigOf[c] = sig
}

// forget drops class c (unloaded or redefined).
func (h *handedOut) forget(c jdwp.ClassID) {
	delete(h.sigOf, c)
	delete(h.methods, c)
}

// attachOK says whether every ID in an attach replay's parameters was
// handed out by this connection: the class, and a method of that class.
func (h *handedOut) attachOK(s *spec, sizes jdwp.IDSizes) bool {
	params := s.key.Params()
	if len(params) == 0 {
		return true
	}
	r := jdwp.NewBodyReader(params, sizes)
	c := r.Class()
	if _, ok := h.sigOf[c]; !ok || r.Err() != nil {
		return false
	}
	if r.Remaining() == 0 {
		return true
	}
	_, ok := h.methods[c][r.Method()]
	return ok && r.Err() == nil && r.Remaining() == 0
}
