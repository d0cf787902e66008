package speculator

import (
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
	"github.com/rs/zerolog"
)

func testCache(t *testing.T, limit int64) *replyCache {
	t.Helper()
	sp := New(Config{CacheBytes: limit}, zerolog.Nop(), nil)
	f := newFacts(sp)
	return newReplyCache(sp, &f)
}

// stringKey is the key of StringReference.Value for object id.
func stringKey(t *testing.T, id uint64) (keyable.Key, keyable.Info) {
	t.Helper()
	var params [8]byte
	binary.BigEndian.PutUint64(params[:], id)
	k, info, ok := newKey(jdwp.CmdStringReferenceValue, params[:], sizes8)
	if !ok {
		t.Fatal("no key for StringReference.Value")
	}
	return k, info
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestCacheAccountsRealCost: the bytes the cache accounts for cover what
// its entries really cost the heap (keys held twice, entries, the LRU's
// links, the ageing queue), so --cache-bytes bounds memory. With the old
// flat 200-byte overhead this accounted for under half of the heap used.
// An entry fetched by speculation also keeps that speculation.
func TestCacheAccountsRealCost(t *testing.T) {
	for _, speculated := range []bool{false, true} {
		const n = 50_000
		reply := jdwp.AppendReply(nil, 1, jdwp.ErrorNone, make([]byte, 29)) // a short string's reply
		c := testCache(t, 1<<40)
		keys := make([]keyable.Key, n)
		infos := make([]keyable.Info, n)
		for i := range keys {
			keys[i], infos[i] = stringKey(t, uint64(i+1))
		}
		before := heapInUse()
		for i := range keys {
			var rec *spec
			if speculated {
				rec = &spec{key: keys[i], info: infos[i], sent: true}
			}
			c.store(&keys[i], infos[i], keyable.Subject{}, 0, 0, reply, rec, sizes8)
		}
		used := heapInUse() - before
		runtime.KeepAlive(c)
		if c.lru.Len() != n {
			t.Fatalf("%d entries, want %d", c.lru.Len(), n)
		}
		ratio := float64(c.bytes) / float64(used)
		t.Logf("speculated %v, %d entries: accounted %d bytes, heap grew %d bytes (%.2f)", speculated, n, c.bytes, used, ratio)
		if ratio < 0.9 || ratio > 2 {
			t.Fatalf("speculated %v: accounted %d bytes for %d bytes of heap (ratio %.2f, want 0.9..2)", speculated, c.bytes, used, ratio)
		}
	}
}

// TestCacheSkipsHugeReplies: a reply over a quarter of the budget is not
// copied and does not evict what is cached.
func TestCacheSkipsHugeReplies(t *testing.T) {
	c := testCache(t, 1<<20)
	small := jdwp.AppendReply(nil, 1, jdwp.ErrorNone, make([]byte, 100))
	for i := 0; i < 100; i++ {
		k, info := stringKey(t, uint64(i+1))
		c.store(&k, info, keyable.Subject{}, 0, 0, small, nil, sizes8)
	}
	huge := jdwp.AppendReply(nil, 2, jdwp.ErrorNone, make([]byte, 300<<10))
	k, info := stringKey(t, 1000)
	allocs := testing.AllocsPerRun(10, func() { c.store(&k, info, keyable.Subject{}, 0, 0, huge, nil, sizes8) })
	if c.lru.Len() != 100 || c.lru.Contains(k) {
		t.Fatalf("%d entries after a huge reply (cached: %v), want the 100 small ones", c.lru.Len(), c.lru.Contains(k))
	}
	if allocs != 0 {
		t.Fatalf("a huge reply cost %v allocations; it must not be copied", allocs)
	}
}

// TestCacheAgesOutObjects: object-lifetime entries that no stop touches
// leave the cache after objectStops stops (at most twice that), while
// the ones the debugger keeps reading stay.
func TestCacheAgesOutObjects(t *testing.T) {
	c := testCache(t, 1<<30)
	reply := jdwp.AppendReply(nil, 1, jdwp.ErrorNone, make([]byte, 20))
	kept, keptInfo := stringKey(t, 1)
	c.tick(1)
	c.store(&kept, keptInfo, keyable.Subject{}, 0, 0, reply, nil, sizes8)
	var id uint64 = 100
	for stop := uint64(1); stop <= 200; stop++ {
		c.tick(stop)
		for i := 0; i < 5; i++ { // a few new objects every stop
			k, info := stringKey(t, id)
			id++
			c.store(&k, info, keyable.Subject{}, 0, 0, reply, nil, sizes8)
		}
		if c.find(&kept) == nil {
			t.Fatalf("stop %d: the entry read at every stop was dropped", stop)
		}
	}
	if max := 5 * 2 * objectStops; c.lru.Len() > max+1 {
		t.Fatalf("%d entries after 200 stops of 5 new objects each, want at most %d", c.lru.Len(), max+1)
	}
	if len(c.ageing)-c.head > 5*2*objectStops+1 {
		t.Fatalf("ageing queue holds %d keys", len(c.ageing)-c.head)
	}
}

// TestQuietSessionCachesNothing: a session that sends nothing of its own
// (SetMode(ModeNever): split mode's far end on a fast link, whose near
// end caches the same replies) empties its cache and stores nothing, so
// the debugger's repeated read reaches the VM every time; back in
// ModeAlways it caches again.
func TestQuietSessionCachesNothing(t *testing.T) {
	sp := newTestSpeculator(Config{})
	rigModes.Store(sp, ModeAlways)
	r := startRig(t, sp)
	fs := &frameState{}
	r.vm.setHandler(fs.handler)
	read := func() {
		t.Helper()
		if p := r.dbg.call(nextID(), jdwp.CmdVirtualMachineVersion, nil); p.ErrorCode() != 0 {
			t.Fatal(p.ErrorCode())
		}
	}
	read()
	read()
	if n := r.vm.count(jdwp.CmdVirtualMachineVersion); n != 1 {
		t.Fatalf("speculating session: the VM got Version %d times, want 1 (then cached)", n)
	}
	v, _ := rigSessions.Load(sp)
	s := v.(*Session)
	s.SetMode(ModeNever)
	if st := sp.Stats(); st.CacheBytes != 0 || st.CacheEntries != 0 {
		t.Errorf("quiet: cache holds %d bytes in %d entries, want none", st.CacheBytes, st.CacheEntries)
	}
	read()
	read()
	if n := r.vm.count(jdwp.CmdVirtualMachineVersion); n != 3 {
		t.Errorf("quiet: the VM got Version %d times, want 3 (nothing cached)", n)
	}
	if st := sp.Stats(); st.CacheBytes != 0 || st.CacheEntries != 0 {
		t.Errorf("quiet: cache holds %d bytes in %d entries, want none", st.CacheBytes, st.CacheEntries)
	}
	s.SetMode(ModeAlways)
	read()
	read()
	if n := r.vm.count(jdwp.CmdVirtualMachineVersion); n != 4 {
		t.Errorf("speculating again: the VM got Version %d times, want 4 (cached again)", n)
	}
}
