package speculator

import (
	"cmp"
	"slices"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/retag"
)

// Answers in the VM's order. At a stop that left threads running, a
// reply of running state fetched ahead is served only if it was read no
// earlier than every answer of running state the debugger already got
// (moment.go: the floor). A debugger that reads from several threads at
// once (java-debug: the names of the threads it lists, an object's
// fields) sends a burst of reads in no particular order; answered at once
// from the cache, each raises the floor, and the replies fetched before
// the one just answered are out of place for the reads that follow: they
// go to the VM, and every reply of running state fetched at the stop with
// them (split mode: everything the far end pushed).
//
// So a read answered from a reply of running state fetched at this stop
// waits while a reply of the same command fetched earlier (a lower
// position), still in place, has not been read: the burst's read of that
// one is likely on its way. Once it has been read, or the debugger's
// commands stop coming for orderWait (orderMax at most: the flush of
// session.holdFlush), the waiting answers go out in the order the VM gave
// the replies, each raising the floor in turn. A read that was waiting had
// been sent before the debugger got any of the answers given after it
// arrived, so any order of those reads is one the VM could have carried
// out: exact, as the floor. A debugger that reads one at a time in
// another order would wait orderWait a read and gain nothing (its next
// read is out of place anyway): once answers waited in vain (their wait
// ended with no lower reply read meanwhile), answers of their commands
// wait no more in the session (late); one that reads in the VM's order
// never waits.
//
// Nothing waits on a link whose round trip is under 2×orderWait: a read
// that misses costs less there.
//
// Before any command that is not a cached read (a resume, a Set) goes on,
// every waiting answer goes out, so that none comes after the command
// changed what it answered; an answer whose reply no longer holds when it
// goes (an event, a resume meanwhile) is asked of the VM for its read.
// Guarded by session.mu.
type order struct {
	// fetched are the replies of running state stored at this stop, not
	// read by the debugger yet (bounded by maxSpecPerStop).
	fetched []fetchedReply
	// waiting are the debugger's reads answered and not sent yet
	// (bounded by maxSpecPerStop).
	waiting []waitingAnswer
	// late are the commands whose answers waited in vain in this session
	// (no lower reply was read while they waited): the debugger reads
	// them one at a time, so theirs no longer wait. helped says a waiting
	// answer went because the reply below it was read, since the waits
	// began.
	late   []jdwp.Cmd
	helped bool
}

// fetchedReply is a reply of running state stored at this stop: its key
// and its position.
type fetchedReply struct {
	key keyable.Key
	pos uint64
}

// waitingAnswer is a debugger read (its ID) answered by the cached reply
// to key fetched at pos.
type waitingAnswer struct {
	id   uint32
	key  keyable.Key
	info keyable.Info
	subj keyable.Subject
	pos  uint64
}

// stored notes a reply of running state stored at a stop that left
// threads running, fetched at pos.
func (o *order) stored(k *keyable.Key, pos uint64) {
	if len(o.fetched) < maxSpecPerStop {
		o.fetched = append(o.fetched, fetchedReply{key: *k, pos: pos})
	}
}

// asked notes that the debugger read k.
func (o *order) asked(k *keyable.Key) {
	for i := range o.fetched {
		if o.fetched[i].key == *k {
			o.fetched[i] = o.fetched[len(o.fetched)-1]
			o.fetched = o.fetched[:len(o.fetched)-1]
			return
		}
	}
}

// stopped: a new stop begins (its answers were sent before: release).
func (o *order) stopped() { o.fetched = o.fetched[:0] }

// noteStored tells the order of a reply stored at pos.
func (ss *session) noteStored(k *keyable.Key, info keyable.Info, subj keyable.Subject, pos uint64) {
	if pos != 0 && ss.facts.partialStop() && ss.facts.running(info, subj) {
		ss.ord.stored(k, pos)
	}
}

// unreadBelow says whether a reply of command c fetched at this stop
// below pos, still in place, has not been read.
func (ss *session) unreadBelow(c jdwp.Cmd, pos uint64) bool {
	for i := range ss.ord.fetched {
		if r := &ss.ord.fetched[i]; r.pos < pos && r.pos >= ss.facts.floor && r.key.Cmd() == c {
			return true
		}
	}
	return false
}

// wait answers the debugger's read id of key, whose answer is the cached
// entry e, later, in order, if e must wait for a lower reply to be read
// (see above).
func (ss *session) wait(id uint32, key *keyable.Key, e *entry) bool {
	if len(ss.ord.fetched) == 0 || len(ss.ord.waiting) >= maxSpecPerStop || !ss.facts.running(e.info, e.subj) ||
		slices.Contains(ss.ord.late, key.Cmd()) || !ss.unreadBelow(key.Cmd(), e.pos) {
		return false
	}
	if ss.disp.rtt.min() < 2*orderWait {
		return false // on a link this fast, a miss costs less than the wait
	}
	ss.ord.waiting = append(ss.ord.waiting, waitingAnswer{id: id, key: *key, info: e.info, subj: e.subj, pos: e.pos})
	ss.holdFlush()
	return true
}

// timedOut: the debugger's commands stopped coming while answers
// waited. If no read of a lower reply let one go meanwhile, they waited
// in vain: their commands wait no more in this session (late). Then all
// go.
func (ss *session) timedOut() {
	for i := range ss.ord.waiting {
		if c := ss.ord.waiting[i].key.Cmd(); !ss.ord.helped && !slices.Contains(ss.ord.late, c) && len(ss.ord.late) < maxLate {
			ss.ord.late = append(ss.ord.late, c)
		}
	}
	ss.release(true)
}

// maxLate bounds order.late (a few read commands are of running state).
const maxLate = 16

// release sends the waiting answers in the order of their positions, as
// long as none below is unread (all: every one).
func (ss *session) release(all bool) {
	w := ss.ord.waiting
	if len(w) == 0 {
		return
	}
	slices.SortFunc(w, func(a, b waitingAnswer) int { return cmp.Compare(a.pos, b.pos) })
	n := 0
	for ; n < len(w) && (all || !ss.unreadBelow(w[n].key.Cmd(), w[n].pos)); n++ {
		ss.answerWaiting(&w[n])
	}
	ss.ord.helped = !all && (ss.ord.helped || n > 0)
	k := copy(w, w[n:])
	clear(w[k:])
	ss.ord.waiting = w[:k]
	if k > 0 {
		ss.holdFlush() // the debugger's reads still come: wait on (orderWait)
	}
}

// answerWaiting sends a waiting answer: the cached reply if it still
// holds, else the VM's (asked now for the debugger's read).
func (ss *session) answerWaiting(a *waitingAnswer) {
	if e := ss.cache.peek(&a.key); e != nil && e.pos == a.pos {
		ss.deliver(e.info, e.subj, e.pos)
		ss.belayBuf = retag.Retag(ss.belayBuf[:0], e.reply, a.id)
		ss.out.SendToDebugger(ss.belayBuf, relay.CacheHit, a.key.Cmd())
		return
	}
	again := &spec{key: a.key, info: a.info, subj: a.subj, gen: ss.facts.gen, kind: kDefault,
		reask: true, used: true, done: true, waiters: []uint32{a.id}}
	ss.disp.send(ss.out, again) // not in disp.inflight: nothing else belays on it
}
