package speculator

import (
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
	rec   *spec // the speculation that fetched it, nil for organic replies
}

// entryOverhead approximates the bytes of an entry beyond its reply.
const entryOverhead = 200

// replyCache holds the VM's replies by key, least recently used first out.
// Guarded by session.mu.
//
// It owns the entries and their bytes. Invariants: bytes is the sum of
// len(reply)+entryOverhead over the entries and is at most limit after
// every store (and the Speculator's gauges move with it, through evicted);
// an entry is served only while facts says it is valid, and an invalid
// one found by lookup is dropped; a speculation whose entry leaves the
// cache unused is counted wasted, once.
type replyCache struct {
	sp    *Speculator // counts bytes, entries and wasted speculation
	facts *facts      // validity of entries
	lru   *simplelru.LRU[keyable.Key, *entry]
	bytes int64 // reply bytes + overhead in the cache
	limit int64 // Config.CacheBytes
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

// store caches a copy of reply p to the command key, fetched at gen.
func (c *replyCache) store(key *keyable.Key, info keyable.Info, subj keyable.Subject, gen generation, p jdwp.Packet, rec *spec) {
	e := &entry{reply: append([]byte(nil), p...), info: info, subj: subj, gen: gen, rec: rec}
	size := int64(len(e.reply) + entryOverhead)
	if _, ok := c.lru.Peek(*key); ok {
		c.lru.Remove(*key) // evicted() accounts for it
	}
	c.lru.Add(*key, e)
	c.bytes += size
	c.sp.addCache(size, 1)
	for c.bytes > c.limit && c.lru.Len() > 0 {
		c.lru.RemoveOldest()
	}
	if info.Tier == keyable.TierClass {
		c.facts.classCached(subj.Class)
	}
}

// evicted is the LRU's callback for every entry leaving the cache.
func (c *replyCache) evicted(_ keyable.Key, e *entry) {
	size := int64(len(e.reply) + entryOverhead)
	c.bytes -= size
	c.sp.addCache(-size, -1)
	if r := e.rec; r != nil && !r.used && !r.done {
		r.done = true
		traceSpec(r, outcomeWasted, 999)
		c.sp.countSpec(outcomeWasted, 1)
	}
}

// lookup returns a valid cached entry for key, dropping an invalid one.
func (c *replyCache) lookup(key *keyable.Key) *entry {
	e, ok := c.lru.Get(*key)
	if !ok {
		return nil
	}
	if c.facts.valid(e.info, e.subj, e.gen) {
		return e
	}
	c.lru.Remove(*key)
	return nil
}

// has reports whether a valid entry for key is cached, without touching
// its recency.
func (c *replyCache) has(key *keyable.Key) bool {
	e, ok := c.lru.Peek(*key)
	return ok && c.facts.valid(e.info, e.subj, e.gen)
}

// purge empties the cache (evicted returns the bytes and counts unused
// speculation).
func (c *replyCache) purge() { c.lru.Purge() }
