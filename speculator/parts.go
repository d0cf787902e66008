package speculator

import (
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/trigger"
)

// A part is one rule set of a session (the table in the package doc): a
// type of its own, built with the session's core (its inputs: facts,
// cache, learner, dispatcher, outbox), holding only its own state. What it
// reacts to is the phase interfaces below it implements; the session (the
// router) calls each part that reacts to a phase, in the order of the
// parts table (newSession), and nothing else calls it. What it emits goes
// through the core: speculation to the dispatcher, answers and its own
// commands to the outbox, and, for a phase's context, what the phase
// returns (an answer, a reply released).
type part any

// The phases, in the order a packet meets them.
type (
	// commander sees a debugger command that is not a cacheable read
	// (x), before its effect on facts is applied. It may answer it: true
	// consumes the command, and later parts do not see it.
	commander interface{ command(x *command) bool }
	// asker sees a cacheable command the debugger asked (not a peer's
	// speculation), answered here or not.
	asker interface {
		asked(key *keyable.Key, info keyable.Info, sizes jdwp.IDSizes)
	}
	// misser sees a cacheable debugger command that goes to the VM.
	misser interface {
		missed(key *keyable.Key, sizes jdwp.IDSizes)
	}
	// replier sees a reply after facts took it in: every reply to a
	// debugger command (r.d), a successful one to the proxy's own.
	replier interface{ replied(r *reply) }
	// holder sees the reply to a speculation before it is stored: true
	// takes it (held, or dropped), and it is not stored.
	holder interface {
		hold(s *spec, p jdwp.Packet) bool
	}
	// subscriber subscribes to event kinds at construction.
	subscriber interface{ subscribe(t *trigger.Manager) }
	// compositor sees each composite event as it is read (err: it could
	// not be), and once the session took in the suspension it brings.
	compositor interface {
		seen(c *jdwp.Composite, err error)
		taken(c *jdwp.Composite)
	}
	// stopper sees each suspending stop the session takes.
	stopper interface{ stopped(sizes jdwp.IDSizes) }
	// waver speculates at a stop at a location, in waves: 0, what feeds
	// later replies' chains; 1, what rides right behind them; 2, the rest.
	waver interface {
		wave(w int, sizes jdwp.IDSizes)
	}
	// framer sees each frame of a Frames reply valid in the current stop.
	framer interface{ frame(x *frameSeen) }
	// chainer sees a reply valid in the current stop, to speculate on.
	chainer interface{ chain(x *chained) }
	// profiler takes its share of the profile an earlier session left
	// (importFrom) and leaves its share for the next (exportTo; old is
	// the one imported, or nil).
	profiler interface {
		importFrom(p *profile, sizes jdwp.IDSizes)
		exportTo(p, old *profile, sizes jdwp.IDSizes)
	}
)

// waves is how many waves a stop's speculation is sent in (waver).
const waves = 3

// parts is the session's parts table, by phase, each in table order.
type parts struct {
	commanders  []commander
	askers      []asker
	missers     []misser
	repliers    []replier
	holders     []holder
	compositors []compositor
	stoppers    []stopper
	wavers      []waver
	framers     []framer
	chainers    []chainer
	profilers   []profiler
}

// register adds ps, in order, to the phases each reacts to, and
// subscribes them to their event kinds.
func (t *parts) register(trig *trigger.Manager, ps ...part) {
	for _, p := range ps {
		add(&t.commanders, p)
		add(&t.askers, p)
		add(&t.missers, p)
		add(&t.repliers, p)
		add(&t.holders, p)
		if x, ok := p.(subscriber); ok {
			x.subscribe(trig)
		}
		add(&t.compositors, p)
		add(&t.stoppers, p)
		add(&t.wavers, p)
		add(&t.framers, p)
		add(&t.chainers, p)
		add(&t.profilers, p)
	}
}

// add appends p to list when p is a T (takes part in list's phase).
func add[T any](list *[]T, p part) {
	if x, ok := p.(T); ok {
		*list = append(*list, x)
	}
}

// command is a debugger command that is not a cacheable read, as the
// command phase sees it.
type command struct {
	f     *relay.Frame
	sizes jdwp.IDSizes
	// d is kept with the command until its reply: a part keeps its own
	// per-command state there (d.wb).
	d *cmdData
	// eff is the command's effect on facts (keyable's table), applied
	// once the phase is over.
	eff keyable.Effect
	// set is the command's EventRequest.Set, read once for every part
	// (set.ok false for another command, or one that does not parse).
	set eventRequest
}

// eventRequest is an EventRequest.Set as read once for the parts: its
// modifiers alias the command's body (patterns included).
type eventRequest struct {
	is     bool // the command is an EventRequest.Set
	kind   jdwp.EventKind
	policy jdwp.SuspendPolicy
	// n is the modifier count the Set declares, -1 if the body ends
	// before it; mods are the modifiers read before the body ended or
	// held one that does not parse (at most n).
	n    int
	mods []jdwp.Modifier
	// whole: n modifiers read, and nothing after them.
	whole bool
}

// read reads body as an EventRequest.Set into er, reusing its modifiers.
func (er *eventRequest) read(body []byte, sizes jdwp.IDSizes) {
	r := jdwp.NewBodyReader(body, sizes)
	er.is = true
	er.kind, er.policy = jdwp.EventKind(r.Uint8()), jdwp.SuspendPolicy(r.Uint8())
	er.mods, er.whole = er.mods[:0], false
	er.n = int(r.Int32())
	if r.Err() != nil {
		er.n = -1
		return
	}
	if er.n < 0 || er.n > r.Remaining() { // (each modifier takes a byte at least)
		return
	}
	for i := 0; i < er.n; i++ {
		m := r.Modifier()
		if r.Err() != nil {
			return
		}
		er.mods = append(er.mods, m)
	}
	er.whole = r.Remaining() == 0
}

// reply is a reply as the reply phase sees it.
type reply struct {
	rs *relay.Session
	// d is what was kept with a debugger command (nil for a reply to the
	// proxy's own, or one fetched elsewhere).
	d      *cmdData
	ok     bool // the reply is no error
	c      jdwp.Cmd
	params []byte // the command's parameters, if it was keyed
	sig    string // a ClassesBySignature's signature
	p      jdwp.Packet
	sizes  jdwp.IDSizes
	// valid: a keyed command whose facts nothing invalidated since it
	// was sent.
	valid bool
	// offered: fetched elsewhere (Session.Offer): facts and write-behind
	// learn from it, the attach's and prepare rule's replay do not.
	offered bool
}

// frameSeen is one frame of a Frames reply valid in the current stop.
type frameSeen struct {
	sizes  jdwp.IDSizes
	key    *keyable.Key // the Frames command's
	index  int          // the frame's in the reply
	thread jdwp.ThreadID
	depth  int
	frame  jdwp.FrameID
	loc    jdwp.Location
	first  bool // the reply's first frame
	// speculating: speculation is on (speculating); when off, the frame
	// is only recorded.
	speculating bool
	// released are replies held for this frame's confirmation, now to
	// be stored (and chained on) by the router: emitted by a framer.
	released []heldReply
	// classesSeen, methodsSeen and varsSeen are the classes and methods
	// of the reply's frames so far whose facts the stop rules put up
	// (stopRules.specClassMeta): methods' line tables, variable tables.
	classesSeen []jdwp.ClassID
	methodsSeen []methodKey
	varsSeen    []methodKey
}

// heldReply is the reply to a speculation held until it may be stored.
type heldReply struct {
	s *spec
	p jdwp.Packet
}

// chained is a reply valid in the current stop, as the chain phase sees it.
type chained struct {
	key   *keyable.Key
	p     jdwp.Packet
	sizes jdwp.IDSizes
	level uint8 // object nesting of the values it holds
}
