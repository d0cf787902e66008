package push

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/speculator"
	"github.com/rs/zerolog"
)

// NearHooks returns the near end's hooks: sp's session in ModeNear (it
// serves hits and sends nothing of its own but the attach's replay, and
// its prefetch when no attach bundle was agreed), fed with the far end's
// bundles (see the package doc). Install it instead of sp.Hooks, first in
// the chain (before any interceptor that may consume the debugger's
// commands, such as write-behind). With sp nil it returns nil.
func NearHooks(sp *speculator.Speculator, cfg Config) func(*relay.Session) relay.Hooks {
	if sp == nil {
		return nil // no speculator, nothing to push (relay.ChainHooks skips nil)
	}
	cfg.fill()
	return func(rs *relay.Session) relay.Hooks {
		n := &near{cfg: cfg, log: rs.Logger().With().Str(relay.LogComponent, "push").Logger()}
		if !rs.VMInfo().Compressed {
			n.codec = &n.enc
		}
		if rs.VMInfo().AttachBundle {
			n.awaitAttach = true
			n.attachIn = make(chan struct{})
		}
		n.spec = sp.NewTapped(rs, speculator.ModeNear, n)
		n.ic = n.spec.Interceptor()
		n.p.c = &n.dec
		// A panic must end the session: as pass-through the bundles would
		// reach the debugger.
		return relay.Hooks{Interceptors: []relay.Interceptor{n}, Observers: []relay.Observer{(*nearFence)(n)}, EndOnPanic: true}
	}
}

// Bounds of a usage report.
const (
	maxUsageRecords = 4096
	maxUsageBytes   = 64 << 10
)

// near is the near end's interceptor around its speculator session.
//
// Validity: a record is stored only if (1) the far end had received the
// last command this end sent that may change the VM's state before it
// gathered the record (Header.Fence against last), and (2) nothing invalidated it
// here since its stop's event arrived (the mark taken then, checked by
// speculator.Session.Offer). Events and replies reach both ends in the
// same order, and the far end sends a bundle before any event after it.
type near struct {
	cfg  Config
	log  zerolog.Logger
	spec *speculator.Session
	ic   relay.Interceptor // spec's

	// last is fenceOf the last command sent to the far end that may
	// change the VM's state (nearFence): a bundle is only used if the far
	// end had received it when it gathered the bundle (Header.Fence).
	last atomic.Uint64

	// linkRTT is the least round trip of the last usage reports (their
	// replies come straight from the far end: the link's round trip, not
	// the VM's), in nanoseconds, 0 until one is answered; sent in the
	// next report. Written by the VM reader goroutine (rtts, nrtts).
	linkRTT atomic.Int64

	recentMu sync.Mutex           // guards recent and nrecent
	recent   [recentFences]uint64 // the last fence values noted, a ring
	nrecent  int

	// The attach bundle, when the preamble agreed on one (awaitAttach, set
	// before the session runs): the far end's first packet. attachIn is
	// closed (closeAttach, once) when the VM reader has read that packet,
	// whatever it was, or the session closes; the debugger reader waits
	// for it before the debugger's first packet, at most
	// Config.AttachWait.
	awaitAttach bool
	attachIn    chan struct{}
	attachOnce  sync.Once

	// Owned by the debugger reader goroutine.
	waited  bool // waitAttach ran (HoldDebugger)
	cmdSeen bool // the debugger's first command was seen

	// Owned by the relay's turn: where the speculator's stops stand
	// (Event, Ended: near is its session's tap).
	told speculator.StopInfo

	// Owned by the VM reader goroutine.
	firstRead bool             // the far end's first packet was read
	rtts      [8]time.Duration // the last usage reports' round trips, a ring
	nrtts     int
	dec       codec
	p         parser
	lead      bool      // a bundle awaits its stop event
	leadHdr   Header    // its header
	leadRecs  []leadRec // its records, in leadBuf
	leadBuf   []byte
	rbuf      []byte // a record's reply packet, for Offer

	mu       sync.Mutex // guards the fields below
	cur      uint64     // the far end's serial of the stop in progress here (0: none)
	curLocal uint64     // this end's serial of that stop
	mark     speculator.Mark
	attached bool   // the attach bundle was stored, and no stop's bundle since
	usage    []byte // usage records of the stop (or the attach): commands the cache answered
	usageN   int
	enc      codec
	codec    *codec // &enc, or nil when the link compresses (linkCompressed): bodies go raw
	out      []byte
}

// nearFence is the near end's observer: it notes the last command sent
// to the far end that may change the VM's state.
type nearFence near

// Observe notes each command towards the far end that may change the
// VM's state, by the ID it goes on the wire with. A command written behind
// (answered by the speculator, relay.WriteBehind) goes on the wire as a
// copy with an ID of the proxy's, observed as it is sent, before the
// debugger's: that copy is the one noted. Any other command an interceptor
// consumed and never sent is noted too: bundles are then dropped until the
// next such command the far end receives (safe, and it heals).
func (o *nearFence) Observe(rs *relay.Session, f *relay.Frame) {
	if f.Dir != relay.ToVM || f.Kind != relay.KindCommand || f.Cmd.Set == SetPush || f.Origin == relay.WriteBehind ||
		len(f.Packet) < jdwp.HeaderSize || !mayChange(rs, f) {
		return
	}
	v := fenceOf(f.Packet.ID())
	o.recentMu.Lock()
	defer o.recentMu.Unlock()
	reused := false
	for _, r := range o.recent[:min(o.nrecent, recentFences)] {
		reused = reused || r == v
	}
	o.recent[o.nrecent%recentFences] = v
	o.nrecent++
	if reused {
		// A debugger that reuses packet IDs: the far end's fence cannot
		// tell this command from the earlier one, so no bundle matches
		// until the next command with a fresh ID.
		v |= 1 << 63
	}
	o.last.Store(v)
}

// recentFences is how many of the last state-changing commands' IDs the
// near end remembers to detect a reused ID.
const recentFences = 64

// fenceOf is the fence value of a command sent with packet ID id (zero
// stands for none yet).
func fenceOf(id uint32) uint64 { return 1<<32 | uint64(id) }

// mayChange reports whether a command may change the VM's state: anything
// but a cacheable command whose parameters fit its layout (the
// speculator's own rule) and the event requests. An EventRequest.Set,
// Clear or ClearAllBreakpoints changes only which events the VM will
// report once it runs, which no read's reply says: a debugger deletes
// the request of the breakpoint it stopped at (JDI's IDEs do at once) or
// sets new ones while the far end still gathers the stop, and the
// records gathered across it hold.
func mayChange(rs *relay.Session, f *relay.Frame) bool {
	switch f.Cmd {
	case jdwp.CmdEventRequestSet, jdwp.CmdEventRequestClear, jdwp.CmdEventRequestClearAllBreakpoints:
		return false
	}
	if _, ok := keyable.Lookup(f.Cmd); !ok {
		return true
	}
	sizes, _ := rs.IDSizes()
	var k keyable.Key
	_, fits := keyable.Fill(&k, f.Cmd, f.Packet.Body(), sizes)
	return !fits
}

// HoldDebugger holds the debugger's first packet until the attach bundle
// was read (relay.Gate), outside the relay's turn, so that the VM reader
// can read it meanwhile.
func (n *near) HoldDebugger(*relay.Session) {
	if n.awaitAttach && !n.waited {
		n.waitAttach()
	}
}

// FromDebugger reports the stop's cache hits to the far end before the
// first command that is not a cacheable read or is not answered here,
// and notes each hit.
func (n *near) FromDebugger(rs *relay.Session, f *relay.Frame) relay.Action {
	if f.Kind != relay.KindCommand || len(f.Packet) < jdwp.HeaderSize {
		return n.ic.FromDebugger(rs, f)
	}
	if _, ok := keyable.Lookup(f.Cmd); !ok {
		n.sendUsage(rs, f.Out())
	}
	first := !n.cmdSeen
	n.cmdSeen = true
	a := n.ic.FromDebugger(rs, f)
	if a == relay.Forward {
		// A miss: the far end learns the hits before it, so that it
		// learns the order the debugger reads in (the order it gathers
		// in, which decides what may answer reads of running state).
		// The report goes to the VM before the command (relay.Outbox).
		n.sendUsage(rs, f.Out())
	}
	if a == relay.Consume && (f.Origin == relay.CacheHit || first) {
		n.mu.Lock()
		attached := n.attached
		if (n.cur != 0 || attached || first) && n.usageN < maxUsageRecords && len(n.usage) < maxUsageBytes {
			n.usage = appendUsage(n.usage, f.Cmd, f.Packet.Body())
			n.usageN++
		}
		n.mu.Unlock()
		if first {
			// The debugger's first command identifies it (its profile's
			// key): the far end learns it before any command from here,
			// however it was answered here (from the attach bundle, the
			// attach's prefetch, the VM connection's ID sizes).
			n.sendUsage(rs, f.Out())
		}
	}
	return a
}

// sendUsage sends the stop's usage report, if it has one, with the
// link's round trip in microseconds (0 while unknown), through out.
func (n *near) sendUsage(rs *relay.Session, out *relay.Outbox) {
	rtt := time.Duration(n.linkRTT.Load())
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.usageN == 0 {
		return
	}
	n.out = jdwp.AppendCommand(n.out[:0], rs.IDs().NewSynthetic(), CmdUsage, nil)
	h := Header{Stop: n.cur, RTT: uint32(min(rtt/time.Microsecond, maxReportedRTT)), Records: uint32(n.usageN)}
	n.out = appendBody(n.out, h, n.usage, n.codec)
	fixLength(n.out)
	n.usage, n.usageN = n.usage[:0], 0
	out.SendToVM(n.out, relay.Synthetic)
	n.cfg.Counters.usage.Add(1)
}

// FromVM consumes bundles (they never reach the debugger) and passes
// everything else to the speculator; the stop event a bundle came before
// stores its records.
func (n *near) FromVM(rs *relay.Session, f *relay.Frame) relay.Action {
	if n.awaitAttach && !n.firstRead {
		n.firstRead = true
		defer n.closeAttach()
		if f.Kind == relay.KindVMCommand && f.Cmd == CmdBundle {
			f.Origin = relay.Synthetic
			n.attachBundle(rs, f)
			return relay.Consume
		}
		n.log.Warn().Stringer(relay.LogCmd, f.Cmd).Msg("the far end agreed to send the attach bundle first but sent another packet; the attach goes on without it")
	}
	if f.Kind == relay.KindReply && f.Cmd == CmdUsage && f.Latency > 0 {
		n.sampleRTT(f.Latency)
	}
	if f.Kind == relay.KindVMCommand && f.Cmd.Set == SetPush {
		f.Origin = relay.Synthetic
		n.bundle(rs, f)
		return relay.Consume
	}
	if f.Kind == relay.KindEvent {
		// The far end sends a stop's bundle before its event; an event
		// without one is a stop it pushed nothing for, which the near
		// end speculates on itself.
		n.spec.Unpushed(!n.lead)
	}
	a := n.ic.FromVM(rs, f)
	if f.Kind == relay.KindEvent && n.lead {
		n.lead = false
		serial, m := n.told.Serial, n.told.Mark // after the event (Event)
		n.mu.Lock()
		n.cur, n.curLocal, n.mark, n.attached = n.leadHdr.Stop, serial, m, false
		n.usage, n.usageN = n.usage[:0], 0
		n.mu.Unlock()
		n.offer(rs, n.leadHdr, n.leadRecords(), m)
	}
	return a
}

// sampleRTT takes a usage report's round trip (the far end answers at
// once) and keeps the least of the last few as the link's.
func (n *near) sampleRTT(d time.Duration) {
	n.rtts[n.nrtts%len(n.rtts)] = d
	n.nrtts++
	least := d
	for _, r := range n.rtts[:min(n.nrtts, len(n.rtts))] {
		least = min(least, r)
	}
	n.linkRTT.Store(int64(least))
}

// waitAttach holds the debugger's first packet until the attach bundle
// was read (or the far end's first packet was something else, or the
// session closed), at most Config.AttachWait: then the debugger's first
// commands find its replies cached, whichever goroutine runs first.
func (n *near) waitAttach() {
	n.waited = true
	t := time.NewTimer(n.cfg.AttachWait)
	defer t.Stop()
	select {
	case <-n.attachIn:
	case <-t.C:
		n.log.Warn().Dur("wait", n.cfg.AttachWait).Msg("no attach bundle from the far end in time; the debugger's first command goes on without it")
	}
}

func (n *near) closeAttach() { n.attachOnce.Do(func() { close(n.attachIn) }) }

// attachBundle stores the attach bundle: the replies to the attach's
// first commands, which the far end prefetched as its session began. They
// are VM-wide constants (the ID sizes, the version, the capabilities),
// valid from the start; the ID sizes are set on the session first, since
// the relay only learns them from replies it relays.
func (n *near) attachBundle(rs *relay.Session, f *relay.Frame) {
	h, recs, err := n.p.parse(f.Packet.Body(), false)
	if err != nil {
		n.protocolError(rs, f.Cmd, err)
		return
	}
	n.cfg.Counters.received.Add(1)
	if h.Stop != 0 {
		n.protocolError(rs, f.Cmd, fmt.Errorf("the attach bundle is for stop %d, not 0", h.Stop))
		return
	}
	for _, r := range recs {
		if r.Cmd == jdwp.CmdIDSizes && r.Error == jdwp.ErrorNone && len(r.Params) == 0 {
			if sz, err := jdwp.ParseIDSizes(r.Body); err == nil {
				rs.SetIDSizes(sz)
			}
		}
	}
	n.offer(rs, h, recs, speculator.MarkNow())
	n.spec.Attached(f.Out())
	n.mu.Lock()
	n.attached = true
	n.mu.Unlock()
}

// bundle reads a bundle: one for the stop in progress is offered at once,
// one for a stop whose event is still to come waits for it, and one for a
// stop that has ended is dropped.
func (n *near) bundle(rs *relay.Session, f *relay.Frame) {
	if f.Cmd != CmdBundle {
		n.protocolError(rs, f.Cmd, nil)
		return
	}
	h, recs, err := n.p.parse(f.Packet.Body(), false)
	if err != nil {
		n.protocolError(rs, f.Cmd, err)
		return
	}
	n.cfg.Counters.received.Add(1)
	serial, active := n.told.Serial, n.told.Active
	n.mu.Lock()
	cur, local, m := n.cur, n.curLocal, n.mark
	n.mu.Unlock()
	switch {
	case h.Stop == cur && active && serial == local:
		n.offer(rs, h, recs, m)
	case h.Stop > cur:
		n.keepLead(h, recs)
	default:
		n.stale(h)
	}
}

// keepLead copies a bundle's records until its stop event arrives.
func (n *near) keepLead(h Header, recs []Record) {
	if n.lead && n.leadHdr.Stop == h.Stop {
		if h.Fence != n.leadHdr.Fence {
			h.Fence = 0 // gathered across a command from here: drop both
		}
		h.Records += n.leadHdr.Records
	} else {
		n.leadBuf, n.leadRecs = n.leadBuf[:0], n.leadRecs[:0]
	}
	n.lead, n.leadHdr = true, h
	for _, r := range recs {
		lr := leadRec{cmd: r.Cmd, code: r.Error, moment: r.Moment, p: len(n.leadBuf), pn: len(r.Params)}
		n.leadBuf = append(n.leadBuf, r.Params...)
		lr.b, lr.bn = len(n.leadBuf), len(r.Body)
		n.leadBuf = append(n.leadBuf, r.Body...)
		n.leadRecs = append(n.leadRecs, lr)
	}
}

// leadRec is a record of a bundle awaiting its event: its parameters are
// near.leadBuf[p:p+pn], its reply body leadBuf[b:b+bn].
type leadRec struct {
	cmd          jdwp.Cmd
	code         jdwp.ErrorCode
	moment       uint16
	p, pn, b, bn int
}

// leadRecords returns the waiting bundle's records, pointing into leadBuf.
func (n *near) leadRecords() []Record {
	n.p.recs = n.p.recs[:0]
	for _, lr := range n.leadRecs {
		n.p.recs = append(n.p.recs, Record{Cmd: lr.cmd, Error: lr.code, Moment: lr.moment,
			Params: n.leadBuf[lr.p : lr.p+lr.pn], Body: n.leadBuf[lr.b : lr.b+lr.bn]})
	}
	return n.p.recs
}

// stale counts a bundle dropped whole.
func (n *near) stale(h Header) {
	n.cfg.Counters.stale.Add(1)
	n.cfg.Counters.staleRecs.Add(int64(h.Records))
	n.cfg.Metrics.record(outcomeStale, int(h.Records))
}

// offer stores a bundle's records fetched during the stop marked m.
func (n *near) offer(rs *relay.Session, h Header, recs []Record, m speculator.Mark) {
	if h.Fence != n.last.Load() {
		// Gathered before the far end received the last command sent
		// from here that may have changed what they say.
		n.stale(h)
		return
	}
	sizes, _ := rs.IDSizes()
	var stored, stale, dup, unusable int
	for _, r := range recs {
		n.rbuf = jdwp.AppendReply(n.rbuf[:0], 0, r.Error, r.Body)
		switch n.spec.Offer(r.Cmd, r.Params, n.rbuf, m.InMoment(r.Moment), sizes) {
		case speculator.OfferStored:
			stored++
		case speculator.OfferStale:
			stale++
		case speculator.OfferCached:
			dup++
		default:
			unusable++
		}
	}
	c := n.cfg.Counters
	c.stored.Add(int64(stored))
	c.staleRecs.Add(int64(stale))
	c.dups.Add(int64(dup))
	c.unusable.Add(int64(unusable))
	mt := n.cfg.Metrics
	mt.record(outcomeStored, stored)
	mt.record(outcomeStale, stale)
	mt.record(outcomeDup, dup)
	mt.record(outcomeUnusable, unusable)
}

func (n *near) protocolError(rs *relay.Session, c jdwp.Cmd, err error) {
	n.cfg.Counters.bad.Add(1)
	n.cfg.Metrics.badBundle()
	n.log.Error().Err(err).Stringer(relay.LogCmd, c).Msg("the far end sent a push packet this end cannot read; closing the session")
	rs.Close()
}

// Event notes where the speculator's stops stand after a VM event
// (speculator.Tap).
func (n *near) Event(_ *relay.Outbox, st speculator.StopInfo) { n.told = st }

// Ended notes that the speculator's stop ended (speculator.Tap).
func (n *near) Ended(*relay.Outbox, uint64) { n.told.Active = false }

// Stored does nothing: the near end pushes nothing (speculator.Tap).
func (n *near) Stored(*relay.Outbox, *speculator.SpecReply) {}

// Idle does nothing (speculator.Tap).
func (n *near) Idle(*relay.Outbox, uint64) {}

// Close releases the session's speculator and codecs.
func (n *near) Close(rs *relay.Session) {
	if n.awaitAttach {
		n.closeAttach()
	}
	n.ic.Close(rs)
	n.dec.close()
	n.mu.Lock()
	n.enc.close()
	n.mu.Unlock()
}
