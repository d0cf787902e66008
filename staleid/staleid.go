// Package staleid owns one transparency rule of the proxy: a debugger
// command naming an object or reference type ID this debugger was never
// sent in its session gets the error the VM would have given it directly.
//
// On HotSpot an ID is valid only once the VM has sent it over the
// connection (its ID table starts empty at each attach), so a debugger
// talking to the VM directly can only use IDs it was sent. Through the
// proxy the VM has also handed IDs to the proxy's own commands (attach
// prefetch, speculation), and an ID the debugger kept from an earlier
// session may now name a live object. A Guard records every object and
// reference type ID in the replies and events the debugger receives, and
// answers a command whose first parameter is an ID outside that set as
// the VM answers it (answerFor: an error, mostly; established against a
// real VM by TestAnswersOfRealVM). What it cannot prove it forwards: every
// command until a Version reply names a HotSpot VM, a command whose code
// is not established, a short body, null (0), and everything once a
// reply or event it cannot decode has reached the debugger, or the set
// outgrew its bound.
package staleid

import (
	"bytes"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
)

// maxIDs bounds a session's set; beyond it the guard stops checking.
const maxIDs = 1 << 21

// idSet is the IDs sent to the debugger; nil map until the first.
type idSet struct {
	m    map[uint64]struct{}
	full bool
}

func (s *idSet) add(id uint64) {
	if id == 0 || s.full {
		return
	}
	if s.m == nil {
		s.m = make(map[uint64]struct{}, 1024)
	}
	if len(s.m) >= maxIDs {
		s.full = true
		s.m = nil
		return
	}
	s.m[id] = struct{}{}
}

// firstParam says where the first parameter of a command is an ID to
// check, and what the VM answers when it names no object this connection
// was sent (answerFor); ok false: forward unchecked.
func firstParam(c jdwp.Cmd, sizes jdwp.IDSizes) (size int, a answer, ok bool) {
	a, ok = answerFor[c]
	if !ok {
		return 0, a, false
	}
	switch c.Set {
	case jdwp.SetReferenceType, jdwp.SetClassType, jdwp.SetArrayType, jdwp.SetInterfaceType, jdwp.SetMethod:
		return sizes.ReferenceTypeID, a, true
	}
	return sizes.ObjectID, a, true
}

// Guard is one session's interceptor and observer (install it with
// Hooks, before any interceptor that may answer the debugger). All its
// state is touched only in the relay's turn.
type Guard struct {
	ids idSet
	// off: checking stopped (an undecodable packet reached the debugger,
	// or the set is full); everything is forwarded. why says why, and
	// logged that it was logged.
	off    bool
	why    string
	logged bool
	// hotspot: a VirtualMachine.Version reply (the debugger's or the
	// proxy's own) named a HotSpot VM with the reference libjdwp, the VM
	// answerFor was established against; until then nothing is answered.
	hotspot bool
	w       walker
	comp    jdwp.Composite // decodes events, its array reused
	ans     []byte         // the answer buffer, reused (the relay copies it)
	// answered counts the commands answered (for tests).
	answered int
	// early holds the packets the debugger received before the ID sizes
	// were known (a VM_START event), decoded once they are: whole frames
	// appended, their kind and command in earlyAt.
	early   []byte
	earlyAt []earlyPacket
}

// earlyPacket is one packet of Guard.early.
type earlyPacket struct {
	kind relay.Kind
	cmd  jdwp.Cmd
	n    int
}

// maxEarly bounds Guard.early; beyond it the guard stops checking.
const maxEarly = 64 << 10

// Hooks returns a new Guard's hooks for a session: to be chained before
// the speculator (relay.ChainHooks).
func Hooks(*relay.Session) relay.Hooks {
	g := &Guard{}
	return relay.Hooks{Interceptors: []relay.Interceptor{g}, Observers: []relay.Observer{g}}
}

// FromDebugger answers a command whose first ID this debugger was never
// sent, as the VM answers it (an error, mostly).
func (g *Guard) FromDebugger(s *relay.Session, f *relay.Frame) relay.Action {
	sizes, known := s.IDSizes()
	a := g.command(f, sizes, known)
	if a == relay.Consume {
		if e := s.Logger().Debug(); e.Enabled() {
			e.Str(relay.LogComponent, "staleid").Stringer(relay.LogCmd, f.Cmd).Uint32(relay.LogPacketID, f.ID).
				Stringer(relay.LogErrorCode, f.Answer.ErrorCode()).
				Msg("command names an ID this debugger was never sent; answered as the VM answers it")
		}
	}
	g.logOff(s, f)
	return a
}

// logOff logs, once, that the guard stopped checking.
func (g *Guard) logOff(s *relay.Session, f *relay.Frame) {
	if g.off && !g.logged {
		g.logged = true
		s.Logger().Debug().Str(relay.LogComponent, "staleid").Str(relay.LogReason, g.why).
			Stringer(relay.LogCmd, f.Cmd).Stringer(relay.LogKind, f.Kind).
			Msg("stale-ID checks off for this session: commands are forwarded unchecked")
	}
}

// command is FromDebugger with the session's ID sizes.
func (g *Guard) command(f *relay.Frame, sizes jdwp.IDSizes, known bool) relay.Action {
	if g.off || !known || !g.hotspot || f.Kind != relay.KindCommand {
		return relay.Forward
	}
	if g.earlyAt != nil {
		g.decodeEarly(sizes)
		if g.off {
			return relay.Forward
		}
	}
	size, a, ok := firstParam(f.Cmd, sizes)
	body := f.Packet.Body()
	if !ok || size < 1 || size > 8 || len(body) < size {
		return relay.Forward
	}
	var id uint64
	for _, c := range body[:size] {
		id = id<<8 | uint64(c)
	}
	if id == 0 || g.known(id) {
		return relay.Forward
	}
	g.answered++
	g.ans = jdwp.AppendReply(g.ans[:0], f.ID, a.code, a.body)
	f.Answer = g.ans
	// Answered by the proxy from what it knows, as a cache hit is (and
	// shown to the debugger's side of the journal and page as one);
	// Synthetic would mark the command as the proxy's own.
	f.Origin = relay.CacheHit
	return relay.Consume
}

func (g *Guard) known(id uint64) bool {
	_, ok := g.ids.m[id]
	return ok
}

// FromVM forwards everything: IDs are recorded when observed, which
// covers the proxy's own answers too.
func (g *Guard) FromVM(*relay.Session, *relay.Frame) relay.Action { return relay.Forward }

// Close releases nothing: the guard holds nothing outside the session.
func (g *Guard) Close(*relay.Session) {}

// Observe records the IDs of each packet the debugger receives: a reply
// (the VM's, or the proxy's from its cache) or an event. A packet towards
// the debugger with Origin Synthetic is one it does not receive (a reply
// to the proxy's own command, a packet an interceptor consumed).
func (g *Guard) Observe(s *relay.Session, f *relay.Frame) {
	sizes, known := s.IDSizes()
	g.observe(f, sizes, known)
	g.logOff(s, f)
}

// observe is Observe with the session's ID sizes.
func (g *Guard) observe(f *relay.Frame, sizes jdwp.IDSizes, known bool) {
	if g.off || f.Dir != relay.ToDebugger {
		return
	}
	if f.Kind == relay.KindReply && f.Cmd == jdwp.CmdVirtualMachineVersion {
		g.hotspot = hotSpotVersion(f.Packet)
	}
	if f.Origin == relay.Synthetic {
		return
	}
	if known && g.earlyAt != nil {
		g.decodeEarly(sizes)
	}
	if !known && needsSizes(f) {
		if len(g.early)+len(f.Packet) > maxEarly {
			g.stop("too much received before the ID sizes")
			return
		}
		g.early = append(g.early, f.Packet...)
		g.earlyAt = append(g.earlyAt, earlyPacket{f.Kind, f.Cmd, len(f.Packet)})
		return
	}
	g.record(f.Kind, f.Cmd, f.Packet, sizes)
	if g.ids.full {
		g.stop("too many IDs")
	}
}

// needsSizes says whether decoding f takes the ID sizes.
func needsSizes(f *relay.Frame) bool {
	switch f.Kind {
	case relay.KindEvent:
		return true
	case relay.KindReply:
		return f.Packet.ErrorCode() == jdwp.ErrorNone && replyLayouts[f.Cmd] != ""
	}
	return false
}

// decodeEarly records the packets kept before the sizes were known.
func (g *Guard) decodeEarly(sizes jdwp.IDSizes) {
	early, at := g.early, g.earlyAt
	g.early, g.earlyAt = nil, nil
	off := 0
	for _, e := range at {
		if g.off {
			return
		}
		g.record(e.kind, e.cmd, jdwp.Packet(early[off:off+e.n]), sizes)
		off += e.n
	}
	if g.ids.full {
		g.stop("too many IDs")
	}
}

// stop makes the guard forward everything from now on, for reason why.
func (g *Guard) stop(why string) {
	g.off, g.why = true, why
	g.ids = idSet{}
	g.early, g.earlyAt = nil, nil
}

// record adds the IDs of p, a packet of kind answering cmd (for a reply)
// that the debugger receives; one it cannot decode stops the guard.
func (g *Guard) record(kind relay.Kind, cmd jdwp.Cmd, p jdwp.Packet, sizes jdwp.IDSizes) {
	switch kind {
	case relay.KindReply:
		if p.ErrorCode() != jdwp.ErrorNone {
			return
		}
		l, ok := replyLayouts[cmd]
		if !ok {
			g.stop("a reply to a command of unknown layout")
			return
		}
		if l == "" {
			return
		}
		g.w = walker{b: p.Body(), sizes: sizes, ids: &g.ids}
		if !g.w.walk(l) {
			g.stop("a reply that does not fit its command's layout")
		}
	case relay.KindEvent:
		if g.comp.Decode(p.Body(), sizes) != nil {
			g.stop("an event that does not decode")
			return
		}
		for i := range g.comp.Events {
			e := &g.comp.Events[i]
			g.ids.add(e.Thread)
			g.ids.add(e.Location.Class)
			g.ids.add(e.CatchLocation.Class)
			g.ids.add(e.TypeID)
			if e.Object.IsObject() {
				g.ids.add(e.Object.Bits)
			}
			if e.Value.IsObject() {
				g.ids.add(e.Value.Bits)
			}
		}
	case relay.KindDDM:
	default:
		if !p.IsReply() {
			g.stop("a VM command of unknown layout")
		}
	}
}

// hotSpotVersion says whether a VirtualMachine.Version reply names a
// HotSpot VM with the reference libjdwp. Android's runtimes and OpenJ9
// were not asked what they answer for an ID never sent.
func hotSpotVersion(p jdwp.Packet) bool {
	if p.ErrorCode() != jdwp.ErrorNone {
		return false
	}
	var r jdwp.BodyReader
	r.Reset(p.Body(), jdwp.IDSizes{})
	desc := r.StringBytes()
	r.Int32()
	r.Int32()
	r.StringBytes() // vmVersion
	name := r.StringBytes()
	if r.Err() != nil || !bytes.HasPrefix(desc, []byte("Java Debug Wire Protocol (Reference Implementation)")) {
		return false
	}
	return bytes.Contains(name, []byte("HotSpot")) ||
		bytes.HasPrefix(name, []byte("OpenJDK ")) && bytes.HasSuffix(name, []byte(" VM")) && !bytes.Contains(name, []byte("J9"))
}
