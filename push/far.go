package push

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/logkey"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/speculator"
	"github.com/rs/zerolog"
)

// FarHooks returns the far end's hooks: sp's session in ModeAlways, with
// the stop events it speculates on held back until their bundle is sent
// (see the package doc). Install it instead of sp.Hooks, first in the
// chain. With sp nil it returns nil.
func FarHooks(sp *speculator.Speculator, cfg Config) func(*relay.Session) relay.Hooks {
	if sp == nil {
		return nil // no speculator, nothing to push (relay.ChainHooks skips nil)
	}
	cfg.fill()
	return func(rs *relay.Session) relay.Hooks {
		f := &far{cfg: cfg, rs: rs, log: rs.Logger().With().Str(relay.LogComponent, "push").Logger(),
			attaching: rs.DebuggerInfo().AttachBundle}
		if !rs.DebuggerInfo().Compressed {
			f.codec = &f.enc
		}
		f.spec = sp.NewTapped(rs, speculator.ModeAlways, f)
		f.ic = f.spec.Interceptor()
		f.usage.c = &f.dec
		// A panic must end the session: a stop event the far end holds
		// back would never be sent.
		return relay.Hooks{Interceptors: []relay.Interceptor{f}, Observers: []relay.Observer{(*farFence)(f)}, EndOnPanic: true}
	}
}

// pend is a gathered record not yet sent: its encoding is far.raw[off:off+n].
type pend struct {
	off, n int
	score  float64
}

// heldPkt is a VM packet held behind a stop event: far.heldBuf[off:off+n];
// cmd is its command, or for a reply the command it answers.
type heldPkt struct {
	off, n int
	cmd    jdwp.Cmd
}

// far is the far end's interceptor around its speculator session. All its
// code runs in the relay's turn (its hold timers through rs.Do).
//
// Lock order: the speculator's lock, then mu (the Tap methods are called
// under the former); mu is never held while calling the speculator.
type far struct {
	cfg  Config
	rs   *relay.Session
	log  zerolog.Logger
	spec *speculator.Session
	ic   relay.Interceptor // spec's

	// fence is fenceOf the last command received from the near end that
	// may change the VM's state (farFence); read when a stop's first
	// record is gathered.
	fence atomic.Uint64

	// Owned by the debugger reader goroutine (usage reports).
	dec   codec
	usage parser
	ans   []byte

	// told is where the speculator's stops stand (Event, Ended); guarded
	// by mu.
	told speculator.StopInfo

	mu        sync.Mutex // guards every field below
	stop      uint64     // serial of the stop being gathered (0: none yet)
	sent      int        // bundle bytes sent for stop
	full      bool       // stop's MaxBytesPerStop is spent
	pending   []pend     // gathered records, not yet sent, in arrival order
	sel       []pend     // sendBundle's scratch: the records a bundle takes, in arrival order
	raw       []byte     // their encodings; owned by far
	pendFence uint64     // fence when pending's first record was gathered
	holding   bool       // a stop event (heldPkts[0]) is held
	promised  bool       // the held stop's bundle goes even if empty: its gathering waits for the first read (StopInfo.Awaiting)
	holdSeq   uint64     // numbers holds, so a late timer knows its own
	timer     *time.Timer
	heldPkts  []heldPkt
	heldBuf   []byte // bytes of the held packets; owned by far
	enc       codec
	codec     *codec // &enc, or nil when the link compresses (linkCompressed): bodies go raw
	payload   []byte // a bundle's records in send order
	out       []byte // the bundle packet
	nextID    uint32 // IDs of bundle packets
	closed    bool
	quiet     bool          // the link is too fast for pushing to pay (linkRTT)
	rtt       time.Duration // the near end's last reported link round trip (0: none yet)
	// attaching: the attach bundle (stop 0) is being gathered, to be sent
	// as the session's first packet, even empty (relay.LinkInfo).
	attaching bool
	// moment and momentOf number the moments of the stop's records
	// (Record.Moment): the speculator's position of the last one seen,
	// and its number.
	moment   uint64
	momentID uint16
}

// momentOf numbers the moment at position pos among the stop's (0 for
// none, or past 65535 of them): a moment's replies come one after
// another.
func (f *far) momentOf(pos uint64) uint16 {
	switch {
	case pos == 0 || f.momentID == math.MaxUint16 && pos != f.moment:
		return 0
	case pos != f.moment:
		f.moment, f.momentID = pos, f.momentID+1
	}
	return f.momentID
}

// SessionStart starts the attach bundle, if agreed: VM packets are held
// from the start, and the speculator prefetches the attach's first
// commands; their replies go in the attach bundle, sent once they are all
// in (Idle), or at MaxHold, before anything else.
func (o *farFence) SessionStart(rs *relay.Session) {
	f := (*far)(o)
	f.mu.Lock()
	if !f.attaching {
		f.mu.Unlock()
		return
	}
	f.holding = true
	f.holdSeq++
	// A VM just attached may take longer than a stop's MaxHold to answer,
	// and the near end waits for this bundle anyway (AttachWait).
	f.startTimer(max(f.cfg.MaxHold, f.cfg.AttachWait/2))
	f.mu.Unlock()
	rs.Do(func(out *relay.Outbox) { //nolint:errcheck // a session that ended sends nothing
		f.spec.Prefetch(out) // if nothing was sent, Idle: the bundle goes out empty
	})
}

// startTimer starts the timer of hold holdSeq, which releases it after d
// (expire), in the relay's turn. mu is held.
func (f *far) startTimer(d time.Duration) {
	seq := f.holdSeq
	f.timer = time.AfterFunc(d, func() {
		f.rs.Do(func(out *relay.Outbox) { f.expire(out, seq) }) //nolint:errcheck // a session that ended sends nothing
	})
}

// SessionEnd does nothing (relay.SessionObserver).
func (o *farFence) SessionEnd(*relay.Session, error) {}

// farFence is the far end's observer: it notes the last command from the
// near end that may change the VM's state, and starts the attach bundle
// (SessionStart).
type farFence far

// Observe notes each command from the near end that may change the VM's
// state, by the ID the near end sent it with (Frame.ID).
func (o *farFence) Observe(rs *relay.Session, f *relay.Frame) {
	if f.Dir == relay.ToVM && f.Kind == relay.KindCommand && f.Origin != relay.Synthetic && f.Cmd.Set != SetPush &&
		len(f.Packet) >= jdwp.HeaderSize && mayChange(rs, f) {
		o.fence.Store(fenceOf(f.ID))
	}
}

// FromDebugger consumes the near end's usage reports and passes anything
// else to the speculator.
func (f *far) FromDebugger(rs *relay.Session, fr *relay.Frame) relay.Action {
	if fr.Kind == relay.KindCommand && fr.Cmd.Set == SetPush {
		f.usageReport(rs, fr)
		return relay.Consume
	}
	return f.ic.FromDebugger(rs, fr)
}

// usageReport feeds a usage report to the learner and answers it.
func (f *far) usageReport(rs *relay.Session, fr *relay.Frame) {
	fr.Answer = jdwp.AppendReply(f.ans[:0], fr.ID, jdwp.ErrorNone, nil)
	f.ans = fr.Answer[:0]
	fr.Origin = relay.CacheHit
	if fr.Cmd != CmdUsage {
		f.protocolError(rs, fr.Cmd, nil)
		return
	}
	h, recs, err := f.usage.parse(fr.Packet.Body(), true)
	if err != nil {
		f.protocolError(rs, fr.Cmd, err)
		return
	}
	f.linkRTT(min(time.Duration(h.RTT), maxReportedRTT) * time.Microsecond)
	sizes, _ := rs.IDSizes()
	if len(recs) > 0 {
		// The near end's first report begins with the debugger's first
		// command, which names its profile here: even one that comes
		// after the VM's first stop (a VM_START) ended here.
		f.spec.Identify(fr.Out(), recs[0].Cmd, sizes)
	}
	f.mu.Lock()
	quiet, serial, active := f.quiet, f.told.Serial, f.told.Active
	f.mu.Unlock()
	switch {
	case quiet && (serial == 0 || active):
		// No bundle named the stop to the near end, which reports
		// before the debugger's resume: the stop in progress here.
	case h.Stop != serial || h.Stop != 0 && !active:
		return // the stop ended here first (a resume crossed the report)
	}
	for i := range recs {
		f.spec.Asked(fr.Out(), recs[i].Cmd, recs[i].Params, sizes)
	}
}

// maxReportedRTT bounds the round trip a usage report may claim (µs).
const maxReportedRTT = time.Minute / time.Microsecond

// linkRTT takes the near end's round trip to the VM through the link (0:
// not known yet) and decides whether pushing pays: under
// speculator.LowRTT a round trip costs about what gathering a stop's
// state here and holding its event costs, so the far end goes quiet: it
// neither speculates nor holds events, and the near end, getting events
// without bundles, speculates on them itself (as the IDE-side proxy
// does). It pushes again once the near end measures a slower link.
func (f *far) linkRTT(rtt time.Duration) {
	if rtt <= 0 {
		return
	}
	quiet := rtt < speculator.LowRTT
	f.mu.Lock()
	changed := quiet != f.quiet
	f.quiet, f.rtt = quiet, rtt
	f.mu.Unlock()
	if !changed {
		return
	}
	mode := speculator.ModeAlways
	if quiet {
		mode = speculator.ModeNever
	}
	f.spec.SetMode(mode)
	f.log.Debug().Dur(logkey.RTT, rtt).Bool("quiet", quiet).Msg("the near end's round trip changed whether pushing pays")
}

func (f *far) protocolError(rs *relay.Session, c jdwp.Cmd, err error) {
	f.cfg.Counters.bad.Add(1)
	f.cfg.Metrics.badBundle()
	f.log.Error().Err(err).Stringer(relay.LogCmd, c).Msg("the near end sent a push packet this end cannot read; closing the session")
	rs.Close()
}

// FromVM passes the VM's packets to the speculator, then holds a stop
// event it speculates on, and every packet but replies to cacheable reads
// behind it, until the stop's first bundle is sent. (Replies to reads may
// overtake it: the debugger cannot have sent one that depends on the
// stop.)
//
// A reply to a resume or any other command that may change the VM's state
// must not overtake a held stop event (the near end would apply them in
// the wrong order), nor release it: HotSpot often sends a stop's event
// before its reply to the resume that ran the thread there, and releasing
// the event then sent it before anything was gathered, so the near end
// met the stop with nothing pushed and missed every read of it. Such a
// reply is held behind the event, with the ID the near end receives.
func (f *far) FromVM(rs *relay.Session, fr *relay.Frame) relay.Action {
	if f.ic.FromVM(rs, fr) == relay.Consume {
		return relay.Consume
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if fr.Kind == relay.KindReply {
		if _, read := keyable.Lookup(fr.Cmd); read {
			return relay.Forward
		}
		if f.holding {
			f.hold(fr.Packet, fr.Cmd)
			jdwp.Packet(f.heldBuf[len(f.heldBuf)-len(fr.Packet):]).SetID(fr.ID)
			fr.Origin = relay.Synthetic
			return relay.Consume
		}
		f.flush(fr.Out()) // what was gathered goes first
		return relay.Forward
	}
	// VM_DEATH is not held: the VM's connection ends right after it (what
	// is held is released before it).
	if f.holding && !(fr.Kind == relay.KindEvent && jdwp.StartsWithVMDeath(fr.Packet.Body())) {
		f.hold(fr.Packet, fr.Cmd)
		fr.Origin = relay.Synthetic
		return relay.Consume
	}
	// Records gathered before this packet go before it: the near end
	// applies the packet's effect (an event's invalidation) after them.
	f.flush(fr.Out())
	// Where the speculator's stops stand after the event (Event).
	serial, active, idle := f.told.Serial, f.told.Active, f.told.Idle
	if fr.Kind != relay.KindEvent || !active || serial == f.stop || f.closed || f.quiet {
		return relay.Forward
	}
	f.stop, f.sent, f.full = serial, 0, false
	f.moment, f.momentID = 0, 0
	f.cfg.Counters.stops.Add(1)
	f.hold(fr.Packet, fr.Cmd)
	f.holding = true
	// A stop whose gathering waits for the debugger's first read goes at
	// once, with a bundle even if empty: the near end then knows this end
	// gathers the stop (it speculates itself on a stop without one), and
	// takes what comes after that read.
	if f.promised = f.told.Awaiting; f.promised && len(f.pending) == 0 {
		f.pendFence = f.fence.Load()
	}
	fr.Origin = relay.Synthetic
	if idle || f.promised {
		f.flush(fr.Out())
		return relay.Consume
	}
	f.holdSeq++
	f.startTimer(f.holdFor())
	return relay.Consume
}

// holdFor is how long a stop event may be held: MaxHold, or up to one
// link round trip (at most maxLinkHold) when the near end reported a
// longer one. Whatever the bundle would lack once the event went costs
// the debugger at least that round trip, and a far end gathering a big
// stop (BigApp's first breakpoint: fields three levels deep) on a busy
// machine takes longer than MaxHold. mu is held.
func (f *far) holdFor() time.Duration {
	return max(f.cfg.MaxHold, min(f.rtt, maxLinkHold))
}

// maxLinkHold bounds the hold holdFor takes from the link's round trip.
const maxLinkHold = 250 * time.Millisecond

// hold queues a copy of p (of command cmd, or a reply to it) behind the
// held stop event.
func (f *far) hold(p jdwp.Packet, cmd jdwp.Cmd) {
	f.heldPkts = append(f.heldPkts, heldPkt{off: len(f.heldBuf), n: len(p), cmd: cmd})
	f.heldBuf = append(f.heldBuf, p...)
}

// expire releases the stop event held by hold seq when MaxHold passed.
func (f *far) expire(out *relay.Outbox, seq uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.holding && f.holdSeq == seq {
		f.cfg.Counters.expiry.Add(1)
		f.flush(out)
	}
}

// Event notes where the speculator's stops stand after a VM event
// (speculator.Tap): FromVM holds the event of a stop that began.
func (f *far) Event(_ *relay.Outbox, st speculator.StopInfo) {
	f.mu.Lock()
	f.told = st
	f.mu.Unlock()
}

// Ended notes that the speculator's stop ended (speculator.Tap).
func (f *far) Ended(*relay.Outbox, uint64) {
	f.mu.Lock()
	f.told.Active = false
	f.mu.Unlock()
}

// Stored gathers a speculative reply of the current stop (speculator.Tap).
func (f *far) Stored(out *relay.Outbox, r *speculator.SpecReply) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed || (r.Stop != f.stop || f.stop == 0) && !f.attaching {
		// While attaching, anything stored goes in the attach bundle; the
		// near end's validity rules drop what belongs to a stop it has not
		// seen yet.
		return
	}
	if f.full {
		f.cfg.Counters.capped.Add(1)
		f.cfg.Metrics.record(outcomeCapped, 1)
		return
	}
	if len(f.pending) == 0 {
		f.pendFence = f.fence.Load()
	}
	off := len(f.raw)
	f.raw = appendRecord(f.raw, r.Cmd, r.Params, r.Reply.ErrorCode(), r.Reply.Body(), f.momentOf(r.Moment))
	f.pending = append(f.pending, pend{off: off, n: len(f.raw) - off, score: r.Score})
	if len(f.raw) >= 4*(f.cfg.MaxBytesPerStop-f.sent) {
		// Enough to fill the stop's budget even well compressed.
		f.flush(out)
	}
}

// Idle sends what was gathered once the speculation is done
// (speculator.Tap).
func (f *far) Idle(out *relay.Outbox, stop uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.attaching || stop == f.stop && (f.holding || len(f.pending) > 0) {
		// (While attaching, a suspending event the VM sent meanwhile may
		// have begun a stop: the attach bundle goes first whatever stop.)
		f.flush(out)
	}
}

// flush sends the pending records as one bundle, then the held packets,
// in that order, through out. mu is held.
func (f *far) flush(out *relay.Outbox) {
	if (len(f.pending) > 0 || f.attaching || f.promised) && !f.closed {
		f.sendBundle(out)
	}
	f.attaching = false
	f.pending, f.raw = f.pending[:0], f.raw[:0]
	if !f.holding {
		return
	}
	f.holding = false
	if f.timer != nil {
		f.timer.Stop()
		f.timer = nil
	}
	for _, h := range f.heldPkts {
		p := jdwp.Packet(f.heldBuf[h.off : h.off+h.n])
		out.SendToDebugger(p, relay.Forwarded, h.cmd)
	}
	f.heldPkts, f.heldBuf = f.heldPkts[:0], f.heldBuf[:0]
}

// sendBundle sends the pending records, the most likely used first, as
// many as the stop's budget takes; the others are counted capped. mu is
// held.
func (f *far) sendBundle(out *relay.Outbox) {
	slices.SortStableFunc(f.pending, func(a, b pend) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return 0
	})
	budget := f.cfg.MaxBytesPerStop - f.sent
	n := len(f.pending)
	for {
		// The most likely used, in the order they were fetched: the near
		// end takes that as the order the VM read them in (speculator.Offer).
		f.sel = append(f.sel[:0], f.pending[:n]...)
		slices.SortFunc(f.sel, func(a, b pend) int { return a.off - b.off })
		f.payload = f.payload[:0]
		for _, p := range f.sel {
			f.payload = append(f.payload, f.raw[p.off:p.off+p.n]...)
		}
		h := Header{Stop: f.stop, Fence: f.pendFence, Records: uint32(n)}
		f.out = jdwp.AppendCommand(f.out[:0], 0, CmdBundle, nil)
		f.out = appendBody(f.out, h, f.payload, f.codec)
		if len(f.out) <= budget || n == 0 {
			break
		}
		// Too big: keep the share of records that fits (at least one
		// fewer), by their raw size.
		n = max(0, min(n-1, n*budget/len(f.out)))
	}
	if dropped := len(f.pending) - n; dropped > 0 {
		f.full = true
		f.cfg.Counters.capped.Add(int64(dropped))
		f.cfg.Metrics.record(outcomeCapped, dropped)
	}
	if n == 0 && !f.attaching && !f.promised {
		return
	}
	f.promised = false
	f.nextID++
	p := jdwp.Packet(f.out)
	p.SetID(f.nextID)
	fixLength(p)
	out.SendToDebugger(p, relay.Synthetic, CmdBundle)
	f.sent += len(p)
	c := f.cfg.Counters
	c.bundles.Add(1)
	c.bytes.Add(int64(len(p)))
	c.raw.Add(int64(len(f.payload)))
	c.records.Add(int64(n))
	f.cfg.Metrics.sent(len(p), n)
}

// Close releases the session's speculator and codecs and stops any hold
// timer. Both readers have stopped: the usage decoder is free.
func (f *far) Close(rs *relay.Session) {
	f.ic.Close(rs)
	f.dec.close()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	if f.timer != nil {
		f.timer.Stop()
	}
	f.enc.close()
}
