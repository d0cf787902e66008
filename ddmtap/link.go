package ddmtap

import (
	"fmt"
	"net"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jdwpaccel/jdwpaccel/ddm"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/retag"
	"github.com/rs/zerolog"
)

// Options tune the DDM client. Zero values take the defaults.
type Options struct {
	// PollInterval is how often THST is polled (DDMS: every 4 s).
	PollInterval time.Duration
	// ReplyTimeout is how long a request or probe may stay unanswered
	// before it expires (and its feature is marked unsupported).
	ReplyTimeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.PollInterval <= 0 {
		o.PollInterval = 4 * time.Second
	}
	if o.ReplyTimeout <= 0 {
		o.ReplyTimeout = 5 * time.Second
	}
	return o
}

// pendingReq is one of the proxy's DDM requests awaiting its reply. It
// waits in the VM connection's retag.Table, in slot, like every command
// towards the VM: the link keeps no pending map of its own.
type pendingReq struct {
	t    ddm.Type
	sent time.Time
}

// slot is where the link keeps a request's pendingReq in the connection's
// table, from the request to its reply.
var slot = relay.NewSlot()

// logOwnFor is how long after a connection starts every command the proxy
// sends on its own is logged at debug level.
const logOwnFor = 10 * time.Second

type expectation struct {
	feat     int
	deadline time.Time
	epoch    uint64
}

// connWriter writes the proxy's packets straight to a VM connection while
// no relay session owns it. After disable it refuses writes, and disable
// waits for a write in progress, so the session's writer never interleaves
// with it.
type connWriter struct {
	mu   sync.Mutex // guards conn writes and off
	conn net.Conn
	off  bool
}

func (w *connWriter) write(p jdwp.Packet) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.off {
		return ErrNotConnected
	}
	_, err := w.conn.Write(p)
	return err
}

func (w *connWriter) disable() {
	w.mu.Lock()
	w.off = true
	w.mu.Unlock()
}

// link is the DDM client of one VM connection: it sends the proxy's
// requests with its own IDs, pairs the replies, expires what modern VMs
// leave unanswered, polls THST, and (during a session) decides which
// VM-originated chunks the debugger gets.
type link struct {
	mon  *Monitor
	log  zerolog.Logger
	opts Options
	// ids is the VM connection's packet ID table: the link takes its
	// requests' IDs from it, and the relay session takes it over with the
	// connection (relay.VMConn.IDs), so IDs in flight from before the
	// session are never reused and their replies never reach a debugger.
	ids *retag.Table

	mu        sync.Mutex // guards the fields below
	expects   []expectation
	send      func(jdwp.Packet) error // nil while nobody may write; may keep the packet
	session   *relay.Session          // the relay session that owns the connection, nil before and after it
	closed    bool
	nextPoll  time.Time
	heapAsked bool
	// DDM notification settings are per VM connection and shared by the
	// proxy and a DDM-speaking debugger (ddmlib): own and dbg are what each
	// side asked for, the VM gets their union (see noteDebuggerDDM), and
	// each side gets the chunks it enabled (debuggerWants).
	dbgDDM   bool    // the debugger sent DDM itself
	own, dbg enables // what the proxy and the debugger enabled
	dbgNow   int     // the debugger's HPIF(1) requests not yet answered

	debuggerSeen atomic.Bool // a non-DDM command came from the debugger
	began        time.Time   // set by begin, read-only after
	knownDDM     bool        // the VM is known to speak DDM: HELO at once
	stop         chan struct{}
	done         chan struct{}
}

func newLink(mon *Monitor, log zerolog.Logger, opts Options, ids *retag.Table, knownDDM bool) *link {
	return &link{
		mon: mon, log: log, opts: opts.withDefaults(), ids: ids, knownDDM: knownDDM,
		stop: make(chan struct{}), done: make(chan struct{}),
	}
}

func (l *link) setSend(f func(jdwp.Packet) error) { l.setSession(nil, f) }

// setSession hands the connection to relay session s (nil: to none), whose
// send f writes the link's packets.
func (l *link) setSession(s *relay.Session, f func(jdwp.Packet) error) {
	l.mu.Lock()
	l.send, l.session = f, s
	l.mu.Unlock()
}

// recovered handles a panic recovered on one of the link's own goroutines
// (its loop, a held connection's reader). During a session the session is
// told (relay.Session.Panicked: logged and counted there, and the session
// goes on as pass-through or ends, as for a panic in a hook call);
// otherwise it is logged and counted here. Either way that goroutine's
// work stops.
func (l *link) recovered(where string, v any) {
	l.mu.Lock()
	s := l.session
	l.mu.Unlock()
	if s != nil {
		s.Panicked(v)
		return
	}
	l.mon.metrics.error(ReasonPanic)
	l.log.Error().Str(relay.LogHook, where).Str(relay.LogPanic, fmt.Sprint(v)).Str(relay.LogStack, string(debug.Stack())).
		Msg("the DDM client panicked (a bug to report); it stops monitoring this connection")
}

// begin marks the connection up, starts the timer loop and, to a VM known
// to speak DDM (found through adb, --ddm=force, or one that answered HELO
// before), sends HELO. To a VM not known yet it sends nothing: the
// debugger's own VirtualMachine.Version reply tells (see tap.FromVM and
// versionReply). Nothing else is sent before a VM has answered HELO.
//
// HotSpot must never see command set 199: its libjdwp reads the command
// set as a signed byte and indexes its dispatch table before its start,
// which crashes the VM or not depending on its memory layout. Nor is an
// unknown VM asked VirtualMachine.Version on the proxy's own behalf: an
// older Android runtime takes any non-DDM command as a debugger arriving
// (and releases an app waiting for one).
func (l *link) begin() {
	l.began = time.Now()
	l.mon.setConnected(true)
	l.mon.setRequester(l.requestHeap)
	go l.loop()
	if d := l.mon.DDM(); d == DDMYes || d == DDMUnknown && l.knownDDM {
		l.request(ddm.U4{T: ddm.TypeHELO, V: 1}) //nolint:errcheck // a failed send means the link is going away
	}
}

// newID is a fresh packet ID of the proxy's range, in flight until the
// VM's reply (or forgotten when the request expires).
func (l *link) newID() uint32 { return l.ids.NewSynthetic() }

// sendOwn records pr in the connection's table under id (in slot) and
// sends pkt, logging it at debug level during the connection's first
// seconds. During a session the relay records the command again when it
// goes out, keeping pr.
func (l *link) sendOwn(id uint32, pr pendingReq, pkt jdwp.Packet, what string) error {
	pr.sent = time.Now()
	l.mu.Lock()
	send := l.send
	closed := l.closed
	l.mu.Unlock()
	if send == nil || closed {
		l.ids.Forget(id)
		return ErrNotConnected
	}
	c := retag.Command{Cmd: jdwp.CmdDDMChunk, Sent: pr.sent, Owner: retag.Synthetic, Debugger: id}
	c.Data[slot] = &pr
	l.ids.Sent(id, c)
	if pr.sent.Sub(l.began) < logOwnFor {
		l.log.Debug().Str("command", what).Uint32("id", id).Msg("sent to the VM on the proxy's own behalf")
	}
	err := send(pkt)
	if err != nil {
		l.ids.Forget(id)
	}
	return err
}

// probePending says whether HELO is still unanswered.
func (l *link) probePending() bool {
	found := false
	l.ids.Sweep(int(slot), func(_ uint32, c *retag.Command) bool {
		found = found || c.Data[slot].(*pendingReq).t == ddm.TypeHELO
		return false
	})
	return found
}

// androidRuntime says whether a VirtualMachine.Version reply names an
// Android runtime: Dalvik ("Android DalvikVM …", vmName "DalvikVM"), ART
// with its own JDWP ("Android Runtime …", vmName "Dalvik") or ART with
// libjdwp (java.vm.name "Dalvik").
func androidRuntime(description, vmName string) bool {
	return strings.HasPrefix(vmName, "Dalvik") || strings.HasPrefix(description, "Android")
}

// versionReply decides from the VM's reply to the debugger's
// VirtualMachine.Version whether a VM not known yet gets DDM.
func (l *link) versionReply(p jdwp.Packet) {
	if l.mon.DDM() != DDMUnknown {
		return
	}
	r := jdwp.NewBodyReader(p.Body(), jdwp.IDSizes{})
	desc := r.String()
	r.Int32()
	r.Int32()
	r.StringBytes() // vmVersion
	name := r.String()
	if code := p.ErrorCode(); code != 0 || r.Err() != nil {
		l.mon.setDDM(DDMNo)
		l.log.Info().Stringer("error", code).Msg("VM answered VirtualMachine.Version with an error or a malformed reply; no DDM traffic")
		return
	}
	if !androidRuntime(desc, name) {
		l.mon.setDDM(DDMNo)
		l.log.Info().Str("vm_name", name).Msg("VM is not an Android runtime; no DDM traffic")
		return
	}
	l.log.Info().Str("vm_name", name).Msg("VM is an Android runtime; asking for DDM")
	l.request(ddm.U4{T: ddm.TypeHELO, V: 1}) //nolint:errcheck // a failed send means the link is going away
}

// close stops the loop; the connection is gone.
func (l *link) close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	l.send = nil
	l.mu.Unlock()
	close(l.stop)
	<-l.done
	l.mon.setRequester(nil)
	l.mon.setConnected(false)
	l.mon.setDebugger(false)
}

// request sends one chunk with a fresh ID of the proxy's block. Only a VM
// that answered HELO, or HELO itself to a VM known or found to be an
// Android runtime, gets one (see begin). An enable (THEN, HPIF, HPSG,
// NHSG) is recorded as the proxy's and sent as the union with what the
// debugger enabled.
func (l *link) request(p ddm.Payload) error {
	if p.ChunkType() != ddm.TypeHELO && l.mon.DDM() != DDMYes {
		return ErrNotConnected
	}
	id := l.newID()
	l.mu.Lock()
	p = l.ownEnable(p)
	l.mu.Unlock()
	t := p.ChunkType()
	l.mon.metrics.chunk(ddm.HostToVM, t)
	return l.sendOwn(id, pendingReq{t: t}, ddm.AppendCommand(nil, id, p), "DDM "+t.String())
}

func (l *link) expect(feat int) {
	l.mu.Lock()
	l.expects = append(l.expects, expectation{feat: feat, deadline: time.Now().Add(l.opts.ReplyTimeout), epoch: l.mon.currentEpoch()})
	l.mu.Unlock()
}

// requestHeap is Monitor.RequestHeap for this connection: heap updates
// are enabled once per connection (and again after every reconnect, see
// helloDone), then a GC makes the VM send them.
func (l *link) requestHeap() error {
	if l.mon.DDM() != DDMYes {
		return ErrNotConnected
	}
	l.mon.wantHeap()
	if err := l.enableHeap(); err != nil {
		return err
	}
	return l.request(ddm.Empty{T: ddm.TypeHPGC})
}

// enableHeap asks for a summary and segments at every GC, once per link.
func (l *link) enableHeap() error {
	l.mu.Lock()
	done := l.heapAsked
	l.heapAsked = true
	l.mu.Unlock()
	if done {
		return nil
	}
	if err := l.request(ddm.U1{T: ddm.TypeHPIF, V: 3}); err != nil {
		return err
	}
	l.request(ddm.SegmentRequest{T: ddm.TypeHPSG, When: 1, What: 0}) //nolint:errcheck // best effort; a failed send means the link is going away
	l.request(ddm.SegmentRequest{T: ddm.TypeNHSG, When: 1, What: 0}) //nolint:errcheck
	l.expect(FeatHeapInfo)
	l.expect(FeatHeapSegments)
	l.expect(FeatNativeHeap)
	return nil
}

// fromVM handles a packet from the VM while no session owns the
// connection. ours: a reply to the proxy's own request (never for the
// debugger); chunk: a VM-originated DDM command. Every reply in the
// proxy's range is then the link's (even one whose request expired): the
// link takes it from the table, as the relay does during a session (where
// the link gets its replies from the relay, see tap.FromVM).
func (l *link) fromVM(p jdwp.Packet) (ours, chunk bool) {
	if p.IsReply() {
		c, owner := l.ids.Reply(p)
		if pr, ok := c.Data[slot].(*pendingReq); ok {
			l.reply(*pr, p)
		}
		return owner == retag.Synthetic, false
	}
	if p.Cmd() == jdwp.CmdDDMChunk {
		l.chunk(p)
		return false, true
	}
	return false, false
}

// chunk handles a VM-originated DDM command.
func (l *link) chunk(p jdwp.Packet) { l.mon.HandlePayload(ddm.VMToHost, p.Body()) }

// reply handles the VM's reply to one of the proxy's requests.
func (l *link) reply(pr pendingReq, p jdwp.Packet) {
	if code := p.ErrorCode(); code != 0 {
		if pr.t == ddm.TypeHELO {
			l.mon.setDDM(DDMNo)
			l.log.Info().Stringer("error", code).Msg("VM answered HELO with a JDWP error: not a DDM VM; no further DDM traffic")
			return
		}
		l.mon.countError(ReasonJDWPError, code, "VM answered a DDM request with a JDWP error")
		return
	}
	if len(p.Body()) == 0 {
		return // null handler result: an empty reply
	}
	first := l.mon.HandlePayload(ddm.VMToHost, p.Body())
	if pr.t == ddm.TypeHELO && first == ddm.TypeHELO {
		l.helloDone()
	}
}

// helloDone starts monitoring after a HELO reply.
func (l *link) helloDone() {
	l.log.Info().Msg("VM speaks DDM; monitoring threads")
	l.request(ddm.Empty{T: ddm.TypeFEAT})    //nolint:errcheck // best effort; a failed send means the link is going away
	l.request(ddm.U1{T: ddm.TypeTHEN, V: 1}) //nolint:errcheck
	l.expect(FeatThreadNotify)
	l.poll()
	if l.mon.heapWanted() {
		l.enableHeap() //nolint:errcheck
	}
}

func (l *link) poll() {
	if l.mon.supportOf(FeatThreadStatus) == Unsupported {
		return
	}
	if l.request(ddm.Empty{T: ddm.TypeTHST}) == nil {
		l.expect(FeatThreadStatus)
	}
	l.mu.Lock()
	l.nextPoll = time.Now().Add(l.opts.PollInterval)
	l.mu.Unlock()
}

// dataReply says whether a request type is answered with data when it
// works, so that silence is worth counting as a timeout.
func dataReply(t ddm.Type) bool {
	switch t {
	case ddm.TypeHELO, ddm.TypeFEAT, ddm.TypeTHST, ddm.TypeSTKL, ddm.TypeREAQ, ddm.TypeREAL:
		return true
	}
	return false
}

// loop expires requests and probes and polls THST. A panic ends it
// (recovered).
func (l *link) loop() {
	defer close(l.done)
	defer func() {
		if v := recover(); v != nil {
			l.recovered("link loop", v)
		}
	}()
	tick := min(l.opts.PollInterval, l.opts.ReplyTimeout) / 4
	tick = max(tick, 10*time.Millisecond)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case now := <-t.C:
			l.expire(now)
			l.mu.Lock()
			due := !l.nextPoll.IsZero() && now.After(l.nextPoll)
			l.mu.Unlock()
			if due && l.mon.DDM() == DDMYes {
				l.poll()
			}
		}
	}
}

func (l *link) expire(now time.Time) {
	var timedOut []ddm.Type
	var probes []expectation
	// Dropped from the table: a late reply is still the proxy's (its ID is
	// in the proxy's range), out of the debugger's ID space.
	l.ids.Sweep(int(slot), func(_ uint32, c *retag.Command) bool {
		pr := c.Data[slot].(*pendingReq)
		if now.Sub(pr.sent) <= l.opts.ReplyTimeout {
			return false
		}
		if dataReply(pr.t) {
			timedOut = append(timedOut, pr.t)
		}
		return true
	})
	l.mu.Lock()
	kept := l.expects[:0]
	for _, e := range l.expects {
		if now.After(e.deadline) {
			probes = append(probes, e)
		} else {
			kept = append(kept, e)
		}
	}
	l.expects = kept
	l.mu.Unlock()
	for _, t := range timedOut {
		l.mon.countError(ReasonTimeout, nil, "VM left the proxy's "+t.String()+" request unanswered")
	}
	for _, e := range probes {
		if l.mon.supportOf(e.feat) != Supported {
			l.mon.setSupport(e.feat, Unsupported)
			l.log.Info().Str("feature", FeatureNames[e.feat]).Msg("VM does not answer this DDM feature; marked unsupported")
		} else if e.feat == FeatThreadNotify {
			l.mon.sweepThreads(e.epoch)
		}
	}
}

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
