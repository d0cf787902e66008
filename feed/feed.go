package feed

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
)

// maxVMs bounds the histories kept: beyond it, a new VM's history
// replaces one that no session or reader uses.
const maxVMs = 256

// maxPending bounds the events a session keeps undecoded until the VM's
// ID sizes are known (the VM's VM_START arrives before the debugger's
// IDSizes is answered); larger bodies than maxPendingBody are recorded
// without their fields.
const (
	maxPending     = 16
	maxPendingBody = 4096
)

// Names resolves IDs to names from what the proxy already knows, without
// sending anything to the VM (convo.Watcher implements it). It is called
// in the session's turn, under the Feed's lock, so it must not call the
// Feed. Strings it returns must never be modified.
type Names interface {
	Resolve(s *relay.Session, thread uint64, loc *jdwp.Location) Resolved
}

// Resolved are the names Names knows; empty strings and Line 0 are
// unknown.
type Resolved struct {
	Thread string
	// Class is the location's class signature, Method the method's name,
	// Line its source line at the location's index.
	Class, Method string
	Line          int32
}

// Config configures a Feed.
type Config struct {
	// VMOf names a session's VM (the web API's VM ID); nil: the relay's
	// name for it (relay.Config.VM).
	VMOf func(*relay.Session) string
	// Names, when set, names threads and locations.
	Names Names
	// Size is how many events each VM's history keeps (DefaultHistory
	// when 0).
	Size int
	// Now is the clock of records the relay did not time (sessions, DDM);
	// time.Now when nil.
	Now func() time.Time
}

// Feed is the event history of every VM, a relay observer. Safe for
// concurrent use.
type Feed struct {
	cfg Config
	// pending counts sessions holding events until their ID sizes are
	// known: while it is 0, Observe returns at once for every packet but
	// an event.
	pending atomic.Int32

	mu       sync.Mutex // guards vms, sessions and everything they hold
	vms      map[string]*history
	sessions map[*relay.Session]*sessionState
}

// sessionState is a session's decoder. Guarded by Feed.mu.
type sessionState struct {
	vm      string
	h       *history
	comp    jdwp.Composite // reused for each event
	pending []pendingEvent // before the ID sizes are known
}

type pendingEvent struct {
	at   time.Time
	body []byte // a copy
	head bool   // body is the head alone (compositeHead bytes)
}

// compositeHead is the size of an Event.Composite's head: suspend policy,
// event count, first event's kind (jdwp.CompositeHead).
const compositeHead = 1 + 4 + 1

// New returns an empty feed.
func New(cfg Config) *Feed {
	if cfg.Size <= 0 {
		cfg.Size = DefaultHistory
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Feed{cfg: cfg, vms: map[string]*history{}, sessions: map[*relay.Session]*sessionState{}}
}

func (f *Feed) vmOf(s *relay.Session) string {
	if f.cfg.VMOf != nil {
		return f.cfg.VMOf(s)
	}
	return s.VM()
}

// historyLocked is vm's history, made if need be. Callers hold mu.
func (f *Feed) historyLocked(vm string) *history {
	if h := f.vms[vm]; h != nil {
		return h
	}
	if len(f.vms) >= maxVMs {
		f.evictLocked()
	}
	h := newHistory(f.cfg.Size, f.cfg.Now())
	f.vms[vm] = h
	return h
}

// evictLocked drops a history no session and no reader uses, if any.
func (f *Feed) evictLocked() {
	used := map[*history]bool{}
	for _, ss := range f.sessions {
		used[ss.h] = true
	}
	for vm, h := range f.vms {
		if !used[h] && len(h.subs) == 0 {
			delete(f.vms, vm)
			return
		}
	}
}

// SessionStart implements relay.SessionObserver.
func (f *Feed) SessionStart(s *relay.Session) {
	vm := f.vmOf(s)
	at := f.cfg.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	h := f.historyLocked(vm)
	f.sessions[s] = &sessionState{vm: vm, h: h}
	r := h.add(at)
	r.kind, r.session = KindSessionStart, s.ID
	h.wake()
}

// SessionEnd implements relay.SessionObserver.
func (f *Feed) SessionEnd(s *relay.Session, err error) {
	at := f.cfg.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	ss := f.sessions[s]
	if ss == nil {
		return
	}
	if len(ss.pending) > 0 {
		f.pending.Add(-1)
		sizes, known := s.IDSizes()
		f.flushLocked(s, ss, sizes, known)
	}
	delete(f.sessions, s)
	r := ss.h.add(at)
	r.kind, r.session = KindSessionEnd, s.ID
	if err != nil {
		r.note = err.Error()
	}
	ss.h.wake()
}

// Observe implements relay.Observer: it records the events the VM sends
// the debugger. Other packets cost a comparison (and while a session
// awaits its ID sizes, a lock).
func (f *Feed) Observe(s *relay.Session, fr *relay.Frame) {
	event := fr.Kind == relay.KindEvent && fr.Origin != relay.Synthetic
	if !event && f.pending.Load() == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	ss := f.sessions[s]
	if ss == nil {
		return
	}
	sizes, known := s.IDSizes()
	if len(ss.pending) > 0 && known {
		f.pending.Add(-1)
		f.flushLocked(s, ss, sizes, true)
	}
	if !event {
		return
	}
	body := fr.Packet.Body()
	if !known {
		if len(ss.pending) == 0 {
			f.pending.Add(1)
		}
		if len(ss.pending) < maxPending {
			p := pendingEvent{at: fr.Time, head: len(body) > maxPendingBody}
			if p.head {
				body = body[:compositeHead] // its first event's kind
			}
			p.body = append([]byte(nil), body...)
			ss.pending = append(ss.pending, p)
			return
		}
		// Too many before the sizes: these and the rest, in order, with
		// their kinds alone.
		f.pending.Add(-1)
		f.flushLocked(s, ss, sizes, false)
		f.recordLocked(s, ss, fr.Time, body, sizes, false)
		return
	}
	f.recordLocked(s, ss, fr.Time, body, sizes, true)
}

// flushLocked records the events held until the ID sizes were known
// (without their fields when they never became known). Callers hold mu
// and have taken the session out of the pending count.
func (f *Feed) flushLocked(s *relay.Session, ss *sessionState, sizes jdwp.IDSizes, known bool) {
	for _, p := range ss.pending {
		f.recordLocked(s, ss, p.at, p.body, sizes, known && !p.head)
	}
	ss.pending = nil
}

// recordLocked records the events of an Event.Composite body. Without the
// ID sizes only the first event's kind is known (jdwp.CompositeHead); a
// body that does not decode is recorded as far as it did.
func (f *Feed) recordLocked(s *relay.Session, ss *sessionState, at time.Time, body []byte, sizes jdwp.IDSizes, known bool) {
	h := ss.h
	c := &ss.comp
	c.Events = c.Events[:0]
	if known {
		c.Decode(body, sizes) //nolint:errcheck // the events decoded before a failure are recorded
	} else if policy, first, ok := jdwp.CompositeHead(body); ok {
		c.SuspendPolicy = policy
		c.Events = append(c.Events, jdwp.Event{Kind: first})
	}
	for i := range c.Events {
		e := &c.Events[i]
		r := h.add(at)
		r.session, r.ev, r.policy, r.req, r.thread = s.ID, e.Kind, c.SuspendPolicy, e.RequestID, e.Thread
		r.kind = kindOf(e.Kind, c.SuspendPolicy)
		if known && e.Kind.Locatable() {
			r.hasLoc, r.loc = true, e.Location
		}
		switch e.Kind {
		case jdwp.EventClassPrepare, jdwp.EventClassUnload:
			r.tag, r.typeID, r.status = e.RefTypeTag, e.TypeID, e.Status
			sig := e.Signature
			if len(sig) > MaxSignature {
				sig, r.sigCut = sig[:MaxSignature], true
			}
			r.sig = append(r.sig, sig...)
		}
		if f.cfg.Names != nil && known && (r.thread != 0 || r.hasLoc) {
			var loc *jdwp.Location
			if r.hasLoc {
				loc = &r.loc
			}
			r.names = f.cfg.Names.Resolve(s, r.thread, loc)
			r.names.Thread, r.names.Class, r.names.Method = bounded(r.names.Thread), bounded(r.names.Class), bounded(r.names.Method)
		}
	}
	if len(c.Events) > 0 {
		h.wake()
	}
}

// kindOf is the feed's kind of a JDWP event in a composite of the given
// suspend policy.
func kindOf(k jdwp.EventKind, policy jdwp.SuspendPolicy) Kind {
	switch k {
	case jdwp.EventVMStart:
		return KindVMStart
	case jdwp.EventVMDeath:
		return KindVMDeath
	case jdwp.EventThreadStart:
		return KindThreadStart
	case jdwp.EventThreadDeath:
		return KindThreadDeath
	case jdwp.EventClassPrepare:
		return KindClassPrepare
	case jdwp.EventClassUnload:
		return KindClassUnload
	}
	if k.Locatable() && policy != jdwp.SuspendNone {
		return KindStop
	}
	return KindEvent
}

// DDMThread records a DDM thread change of the VM vm: kind is
// KindDDMThreadStart, KindDDMThreadRename or KindDDMThreadDeath, id the
// DDM thread ID, name its name (may be empty for a death).
func (f *Feed) DDMThread(vm string, kind Kind, id uint32, name string, at time.Time) {
	if at.IsZero() {
		at = f.cfg.Now()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(name) > MaxSignature {
		name = strings.Clone(name[:MaxSignature])
	}
	h := f.historyLocked(vm)
	r := h.add(at)
	r.kind, r.ddmID, r.ddmName = kind, id, name
	h.wake()
}

// bounded is s, or "" when it is longer than MaxSignature: a record keeps
// a name Names gave it alive, and the history's memory stays bounded.
func bounded(s string) string {
	if len(s) > MaxSignature {
		return ""
	}
	return s
}

// Sub is a reader's subscription to a VM's events: Wake delivers a value
// when events were added since the last one.
type Sub struct {
	vm   string
	wake chan struct{}
}

// Wake receives when events were added to the VM's history.
func (s *Sub) Wake() <-chan struct{} { return s.wake }

// Subscribe wakes the returned Sub whenever vm gets events; Unsubscribe
// it when done. Subscribe before the first Read, so that no event added
// between the two goes unnoticed.
func (f *Feed) Subscribe(vm string) *Sub {
	s := &Sub{vm: vm, wake: make(chan struct{}, 1)}
	f.mu.Lock()
	defer f.mu.Unlock()
	h := f.historyLocked(vm)
	h.subs = append(h.subs, s)
	return s
}

// Unsubscribe ends s.
func (f *Feed) Unsubscribe(s *Sub) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := f.vms[s.vm]
	if h == nil {
		return
	}
	for i, o := range h.subs {
		if o == s {
			h.subs[i] = h.subs[len(h.subs)-1]
			h.subs[len(h.subs)-1] = nil
			h.subs = h.subs[:len(h.subs)-1]
			return
		}
	}
}

// Read appends to buf at most limit of vm's events after the cursor after
// (the ID of the last event the reader has; 0: from the oldest kept), in
// order, and returns a Reset when the cursor did not lead to them: the
// events then start from the oldest kept.
func (f *Feed) Read(vm string, after uint64, buf []Event, limit int) ([]Event, *Reset) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := f.historyLocked(vm)
	return h.read(after, buf, limit)
}
