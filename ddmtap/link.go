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
	// began is when begin ran: a session's hooks may send before the
	// holder's begin (the debugger's Version reply), from another
	// goroutine.
	began time.Time

	debuggerSeen atomic.Bool // a non-DDM command came from the debugger
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
	l.mu.Lock()
	l.began = time.Now()
	l.mu.Unlock()
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
	began := l.began
	l.mu.Unlock()
	if send == nil || closed {
		l.ids.Forget(id)
		return ErrNotConnected
	}
	c := retag.Command{Cmd: jdwp.CmdDDMChunk, Sent: pr.sent, Owner: retag.Synthetic, Debugger: id}
	c.Data[slot] = &pr
	l.ids.Sent(id, c)
	if pr.sent.Sub(began) < logOwnFor {
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
