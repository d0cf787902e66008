package speculator

import (
	"time"
	"unsafe"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
)

// entry is one cached reply.
type entry struct {
	reply []byte // whole reply packet; owned by the cache, never modified
	info  keyable.Info
	subj  keyable.Subject
	gen   generation
	rec   *spec     // the speculation that fetched it, nil for organic replies
	stop  uint64    // the last stop (learner serial) that stored or served it
	pos   uint64    // where the command that fetched it was on the wire (moment.go)
	at    time.Time // when it came, for a reply of running state (moment.go)
}

// entryOverhead is what an entry costs the heap beyond its reply's bytes:
// its key twice (the LRU's map and its list element), the entry, the list
// element's links and the map's share of a bucket (load factor included).
// TestCacheAccountsRealCost checks it against the heap.
const entryOverhead = int64(2*unsafe.Sizeof(keyable.Key{}) + unsafe.Sizeof(entry{}) + 4*8 + 64)

// agedOverhead is what an object-lifetime entry costs in addition: its
// place in the ageing queue.
const agedOverhead = int64(unsafe.Sizeof(aged{}))

// specOverhead is what an entry fetched by speculation costs in addition:
// the speculation it keeps (entry.rec, for the used and wasted counts),
// rounded up as the allocator rounds it.
const specOverhead = int64(unsafe.Sizeof(spec{})+15) &^ 15

// replyCost is what a reply of n bytes costs: its copy, rounded up as the
// allocator rounds small sizes, plus entryOverhead (and agedOverhead for
// an object-lifetime entry).
func replyCost(n int, t keyable.Tier) int64 {
	c := int64(n+15)&^15 + entryOverhead
	if t == keyable.TierObject {
		c += agedOverhead
	}
	return c
}

// cost is what e costs: replyCost, and specOverhead if it keeps its
// speculation.
func (e *entry) cost() int64 {
	c := replyCost(len(e.reply), e.info.Tier)
	if e.rec != nil {
		c += specOverhead
	}
	return c
}

// aged is an object-lifetime entry's place in the ageing queue: its key,
// and the stop at which it was queued.
type aged struct {
	key  keyable.Key
	stop uint64
}

// Bounds on what the cache keeps beyond its byte budget.
const (
	// maxShareOfBudget: a reply over limit/maxShareOfBudget is not cached
	// (nor copied), so that one huge array cannot flush everything else.
	maxShareOfBudget = 4
	// objectStops: an object-lifetime entry not stored or served during
	// the last objectStops stops is dropped, so that entries for objects
	// the debugger no longer looks at (a new String every step) do not
	// pile up until the budget evicts useful ones.
	objectStops = 16
)

// replyCache holds the VM's replies by key, least recently used first out.
// Guarded by session.mu.
//
// It owns the entries and their bytes. Invariants: bytes is the sum of
// entry.cost over the entries (what they keep alive) and is at most limit after
// every store (and the Speculator's gauges move with it, through evicted);
// an entry is served only while facts says it is valid, and an invalid
// one found by lookup is dropped; a speculation whose entry leaves the
// cache unused is counted wasted, once.
type replyCache struct {
	sp    *Speculator // counts bytes, entries and wasted speculation
	facts *facts      // validity of entries
	lru   *simplelru.LRU[keyable.Key, *entry]
	bytes int64  // replyCost of every entry
	peak  int64  // the most bytes ever held (for returning memory at the end)
	limit int64  // Config.CacheBytes
	stop  uint64 // the current stop (learner serial), set by tick
	// paused: store keeps nothing (a far end gone quiet: its near end
	// caches the same replies, so none would ever be served here).
	paused bool
	// ageing holds the object-lifetime entries' keys in the order they
	// were queued (stop ascending); tick drops the ones untouched for
	// objectStops stops and queues the others again. A key may be queued
	// for an entry that has since left the cache; tick skips it.
	ageing []aged
	head   int // ageing[:head] is consumed
	// valueReads holds, per object (frame), the keys of its cached reads
	// of the object's fields (the frame's variables) (permute.go: cover),
	// at most maxValueReads each. sizes are the connection's ID sizes, as
	// stores give them (they do not change within a connection): evicted,
	// the LRU's callback, has none of its own to read a key with.
	valueReads map[valuesOwner][]keyable.Key
	sizes      jdwp.IDSizes
}

func newReplyCache(sp *Speculator, f *facts) *replyCache {
	c := &replyCache{sp: sp, facts: f, limit: sp.cfg.CacheBytes}
	lru, err := simplelru.NewLRU[keyable.Key, *entry](sp.cfg.MaxEntries, c.evicted)
	if err != nil { // only for a non-positive size, which fill prevents
		panic(err)
	}
	c.lru = lru
	return c
}

// storable reports whether a reply may be cached at all.
func storable(p jdwp.Packet, info keyable.Info) bool {
	code := p.ErrorCode()
	return code == jdwp.ErrorNone || info.AbsentOK && code == jdwp.ErrorAbsentInformation
}

// store caches a copy of reply p to the command key, fetched at gen. A
// reply too large for the budget is neither copied nor cached, and an
// older entry for the key is dropped either way.
func (c *replyCache) store(key *keyable.Key, info keyable.Info, subj keyable.Subject, gen generation, pos uint64, p jdwp.Packet, rec *spec, sizes jdwp.IDSizes) {
	c.sizes = sizes
	if _, ok := c.lru.Peek(*key); ok {
		c.lru.Remove(*key) // evicted() accounts for it
	}
	size := replyCost(len(p), info.Tier)
	if rec != nil {
		size += specOverhead
	}
	if c.paused || size > c.limit/maxShareOfBudget {
		return
	}
	e := &entry{reply: append([]byte(nil), p...), info: info, subj: subj, gen: gen, rec: rec, stop: c.stop, pos: pos}
	if c.facts.running(info, subj) {
		e.at = time.Now()
	}
	c.lru.Add(*key, e)
	c.indexValues(key, true)
	if info.Tier == keyable.TierObject {
		c.ageing = append(c.ageing, aged{key: *key, stop: c.stop})
	}
	c.bytes += size
	c.peak = max(c.peak, c.bytes)
	c.sp.addCache(size, 1)
	for c.bytes > c.limit && c.lru.Len() > 0 {
		c.lru.RemoveOldest()
	}
	if info.Tier == keyable.TierClass {
		c.facts.classCached(subj.Class)
	}
}

// evicted is the LRU's callback for every entry leaving the cache.
func (c *replyCache) evicted(k keyable.Key, e *entry) {
	c.indexValues(&k, false)
	size := e.cost()
	c.bytes -= size
	c.sp.addCache(-size, -1)
	if r := e.rec; r != nil && !r.used && !r.done {
		r.done = true
		traceSpec(r, outcomeWasted, 999)
		c.sp.countSpec(outcomeWasted, 1)
	}
}

// adopt makes e, an entry without one, keep speculation rec (an attach's
// replay of pushed replies), and accounts for it.
func (c *replyCache) adopt(e *entry, rec *spec) {
	if e.rec != nil {
		return
	}
	e.rec = rec
	c.bytes += specOverhead
	c.peak = max(c.peak, c.bytes)
	c.sp.addCache(specOverhead, 0)
}

// find returns the cached entry for key that may answer the debugger
// here, or nil; the caller delivers it (facts.deliver) when the answer
// goes.
func (c *replyCache) find(key *keyable.Key) *entry {
	e := c.peek(key)
	if e == nil || !c.facts.answerable(e.info, e.subj) {
		return nil
	}
	return e
}

// servedFrom returns the entry a near end may have answered key from,
// as the session looks one up (session.FromDebugger): key's own, else
// a read of the same values that include its own (cover), else every frame of
// key's thread (framesOf), each if still valid here; else key's own
// even if no longer valid (a reply of running state this end saw
// change since it pushed it). Nil if none. It drops no entry and moves
// none in the LRU: it only says whose speculation a near end's report
// names (Session.Asked).
func (c *replyCache) servedFrom(key *keyable.Key, sizes jdwp.IDSizes) *entry {
	valid := func(e *entry) bool { return c.facts.valid(e.info, e.subj, e.gen) }
	own, ok := c.lru.Peek(*key)
	if ok && valid(own) {
		return own
	}
	if t, found := c.coverKey(key, sizes); found {
		if e, found := c.lru.Peek(t); found && valid(e) {
			return e
		}
	}
	var all keyable.Key
	if _, _, found := allFramesKey(&all, key, sizes); found && c.facts.frames.hotspot {
		if e, found := c.lru.Peek(all); found && valid(e) {
			return e
		}
	}
	if ok {
		return own
	}
	return nil
}

// drop removes the entry for key, if any (evicted accounts for it).
func (c *replyCache) drop(key *keyable.Key) { c.lru.Remove(*key) }

// peek returns a cached entry for key that is still true (for the parts
// that read replies to speculate on), dropping one that is not.
func (c *replyCache) peek(key *keyable.Key) *entry {
	e, ok := c.lru.Get(*key)
	if !ok {
		return nil
	}
	if c.usable(e) {
		e.stop = c.stop
		return e
	}
	c.lru.Remove(*key)
	return nil
}

// tick starts stop serial and drops the object-lifetime entries not
// stored or served during the last objectStops stops.
func (c *replyCache) tick(serial uint64) {
	c.stop = serial
	for c.head < len(c.ageing) && c.ageing[c.head].stop+objectStops <= serial {
		a := c.ageing[c.head]
		c.ageing[c.head] = aged{}
		c.head++
		e, ok := c.lru.Peek(a.key)
		switch {
		case !ok || e.info.Tier != keyable.TierObject:
		case e.stop+objectStops <= serial:
			c.lru.Remove(a.key)
		default:
			c.ageing = append(c.ageing, aged{key: a.key, stop: e.stop})
		}
	}
	if c.head > len(c.ageing)/2 {
		c.ageing = c.ageing[:copy(c.ageing, c.ageing[c.head:])]
		c.head = 0
	}
}

// has reports whether a valid entry for key is cached, without touching
// its recency.
func (c *replyCache) has(key *keyable.Key) bool {
	e, ok := c.lru.Peek(*key)
	return ok && c.usable(e)
}

// usable reports whether e is still true now: valid, and (a reply of
// state running threads may change) within the moment.
func (c *replyCache) usable(e *entry) bool {
	return c.facts.valid(e.info, e.subj, e.gen) && c.facts.momentOK(e.info, e.subj, e.pos, e.at)
}

// pause stops (on) or resumes storing; pausing empties the cache.
func (c *replyCache) pause(on bool) {
	c.paused = on
	if on {
		c.purge()
	}
}

// purge empties the cache (evicted returns the bytes and counts unused
// speculation).
func (c *replyCache) purge() {
	c.lru.Purge()
	c.ageing, c.head = nil, 0
}
