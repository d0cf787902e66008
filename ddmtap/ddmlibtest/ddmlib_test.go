package ddmlibtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/ddmtap"
	"github.com/jdwpaccel/jdwpaccel/ddmtap/fakevm"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/web"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// The profiles real ddmlib can talk to. fakevm.Design2007 is not one of
// them: it is the March 2007 draft's wire layout, which no shipped VM and
// no ddmlib version spoke; ddmlib's THST parser expects the shipped
// layout (u1 header length, u1 entry length, u2 count, 18-byte entries)
// and throws BufferUnderflowException on the draft's (u4 count, 6-byte
// entries). TestDdmlibRejectsDesign2007 checks exactly that.
var ddmlibProfiles = []fakevm.Profile{fakevm.Dalvik, fakevm.ART}

const testPID = 4321

// testHeap is an explicit heap layout: objects of every kind, free gaps,
// and arrays longer than 256 units (partial runs).
var testHeap = []fakevm.Element{
	{State: 0<<3 | 1, Units: 4}, {State: 0, Units: 3}, {State: 1<<3 | 1, Units: 10},
	{State: 2<<3 | 1, Units: 300}, {State: 4<<3 | 1, Units: 6}, {State: 0, Units: 1},
	{State: 5<<3 | 1, Units: 700}, {State: 3<<3 | 1, Units: 2}, {State: 0<<3 | 1, Units: 5},
	{State: 0<<3 | 1, Units: 7}, {State: 0, Units: 40},
}

// heapClock fixes HPIF timestamps so that two walks of the same heap are
// byte-identical.
var heapClock = time.UnixMilli(1_700_000_000_123)

func vmConfig(p fakevm.Profile) fakevm.Config {
	return fakevm.Config{
		Profile: p, Seed: 11, PID: testPID, AppName: "com.example.ddmlib", Heap: testHeap,
		Now: func() time.Time { return heapClock },
	}
}

// wantHeapInfo and wantBuckets are what the VM must report for testHeap,
// computed here from the layout (8-byte allocation units).
func wantHeapInfo() PeerHeap {
	h := PeerHeap{ID: 1, Max: 256 << 20, Time: heapClock.UnixMilli()}
	for _, e := range testHeap {
		h.Size += uint64(e.Units) * 8
		if e.State&7 != 0 {
			h.Allocated += uint64(e.Units) * 8
			h.Objects++
		}
	}
	return h
}

func wantBuckets() []PeerBucket {
	sizes := map[uint8][]uint64{}
	for _, e := range testHeap {
		b := uint8(1)
		if e.State&7 != 0 {
			b = e.State>>3&7 + 2
		}
		sizes[b] = append(sizes[b], uint64(e.Units)*8)
	}
	var out []PeerBucket
	for b := uint8(0); b < 10; b++ {
		s := sizes[b]
		if len(s) == 0 {
			continue
		}
		slices.Sort(s)
		var total uint64
		for _, v := range s {
			total += v
		}
		out = append(out, PeerBucket{Bucket: b, Count: uint64(len(s)), Total: total, Smallest: s[0], Largest: s[len(s)-1], Median: s[len(s)/2]})
	}
	return out
}

// identity is what fakevm's HELO and FEAT say per profile, as ddmlib
// stores it.
type identity struct {
	vm, abi, flags string
	features       []string
}

var wantIdentity = map[fakevm.Profile]identity{
	fakevm.Dalvik: {"Dalvik v1.6.0", "armeabi-v7a", "CheckJNI=false",
		[]string{"hprof-heap-dump", "hprof-heap-dump-streaming", "method-trace-profiling", "method-trace-profiling-streaming"}},
	fakevm.ART: {"Dalvik v2.1.0", "64-bit (arm64)", "CheckJNI=false",
		[]string{"hprof-heap-dump", "hprof-heap-dump-streaming", "method-sample-profiling", "method-trace-profiling", "method-trace-profiling-streaming", "view-hierarchy"}},
}

// startProxy runs a DDM holder on the VM and a relay in front of it, as
// `jdwpaccel proxy` does, and returns the monitor and the debugger address.
func startProxy(t *testing.T, vmAddr string) (*ddmtap.Monitor, string) {
	t.Helper()
	return startProxyHooks(t, vmAddr, nil)
}

// startProxyHooks is startProxy with the relay's other hooks (the
// speculator's, as `jdwpaccel proxy` has them).
func startProxyHooks(t *testing.T, vmAddr string, hooks func(*relay.Session) relay.Hooks) (*ddmtap.Monitor, string) {
	t.Helper()
	h := ddmtap.NewHolder(ddmtap.HolderConfig{
		Addr: vmAddr, KnownDDM: true, Logger: zerolog.Nop(), ReconnectDelay: 10 * time.Millisecond,
		Options: ddmtap.Options{PollInterval: 100 * time.Millisecond, ReplyTimeout: time.Second},
	})
	ctx, cancel := context.WithCancel(context.Background())
	hdone := make(chan struct{})
	go func() { h.Run(ctx); close(hdone) }()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := relay.NewServer(relay.Config{DialVM: h.Dial, NewHooks: hooks, Logger: zerolog.Nop()})
	sdone := make(chan struct{})
	go func() { srv.Serve(ctx, ln); close(sdone) }()
	t.Cleanup(func() { cancel(); <-sdone; <-hdone })
	return h.Monitor(), ln.Addr().String()
}

func waitMon(t *testing.T, m *ddmtap.Monitor, what string, cond func(ddmtap.Snapshot) bool) ddmtap.Snapshot {
	t.Helper()
	s, err := m.Wait(withTimeout(t), cond)
	if err != nil {
		t.Fatalf("waiting for the monitor's %s: %v; last snapshot: identity %+v threads %+v heap info %+v", what, err, s.Identity, s.Threads, s.HeapInfo)
	}
	return s
}

// sameNames says whether ddmlib knows exactly the VM's live threads by id
// and name.
func sameNames(st ClientState, want []fakevm.Thread) bool {
	if len(st.Threads) != len(want) {
		return false
	}
	for i, th := range st.Threads { // both sorted by id
		if th.ID != want[i].ID || th.Name != want[i].Name {
			return false
		}
	}
	return true
}

// peerThreads is the VM's thread table as ddmlib should hold it.
func peerThreads(want []fakevm.Thread) []PeerThread {
	var w []PeerThread
	for _, th := range want {
		w = append(w, PeerThread{ID: th.ID, Name: th.Name, Status: int(th.Status), TID: th.TID, UTime: th.UTime, STime: th.STime, Daemon: th.Daemon})
	}
	return w
}

// threadTable makes ddmlib poll THST and waits until its thread table is
// the VM's, field by field. (ddmlib sends THST from a thread of its own,
// so no later request is ordered after it.)
func threadTable(p *Peer, want []fakevm.Thread) ClientState {
	p.t.Helper()
	w := peerThreads(want)
	p.send("thst")
	return p.wait("ddmlib's thread table to equal the VM's "+fmt.Sprintf("%+v", w), func(s ClientState) bool { return slices.Equal(s.Threads, w) })
}

func checkIdentity(t *testing.T, p fakevm.Profile, st ClientState) {
	t.Helper()
	want := wantIdentity[p]
	if st.PID != testPID || deref(st.App) != "com.example.ddmlib" || deref(st.VM) != want.vm || deref(st.ABI) != want.abi ||
		deref(st.JVMFlags) != want.flags || !st.ValidUserID || st.UserID != 0 || st.NativeDebuggable || !slices.Equal(st.Features, want.features) {
		t.Fatalf("ddmlib's view of the VM: pid %d app %s vm %s abi %s flags %s user %v/%d features %v; want %d com.example.ddmlib %+v",
			st.PID, deref(st.App), deref(st.VM), deref(st.ABI), deref(st.JVMFlags), st.ValidUserID, st.UserID, st.Features, testPID, want)
	}
}

func noErrors(t *testing.T, p *Peer) {
	t.Helper()
	if errs := p.errors(); len(errs) > 0 {
		t.Fatalf("ddmlib logged warnings or errors: %q", errs)
	}
}

// TestDdmlibSeesFakeVM (task a): ddmlib connected straight to each fake VM
// profile it can talk to sees exactly what the VM is configured with: HELO
// and FEAT identity, the thread table (THCR names, THST status, tid, CPU
// times, daemon flag) before and after thread churn, and for Dalvik the
// HPIF summary and the HPSG heap walk; for ART (no heap handlers) nothing.
func TestDdmlibSeesFakeVM(t *testing.T) {
	for _, prof := range ddmlibProfiles {
		t.Run(prof.String(), func(t *testing.T) {
			vm := jdwptest.StartDDMVM(t, vmConfig(prof))
			peer := startPeer(t, vm.Addr(), testPID)
			checkIdentity(t, prof, peer.connected())

			peer.send("threads on")
			want := vm.Threads()
			peer.wait("THCR for every thread", func(s ClientState) bool { return sameNames(s, want) })
			threadTable(peer, want)

			for i := 0; i < 4; i++ {
				vm.Churn()
			}
			want = vm.Threads()
			peer.wait("THCR/THDE/THNM after churn", func(s ClientState) bool { return sameNames(s, want) })
			threadTable(peer, want)

			peer.send("heapinfo on")
			peer.send("segments on")
			peer.send("gc")
			if prof == fakevm.ART {
				// Android 12+: HPIF/HPSG are unanswered; the MPRQ reply
				// after them proves nothing came.
				if st := peer.sync(); len(st.HeapInfo) != 0 || st.Heap != nil {
					t.Fatalf("ART sent heap data: %+v %+v", st.HeapInfo, st.Heap)
				}
			} else {
				st := peer.wait("heap info and walk after a GC", func(s ClientState) bool { return len(s.HeapInfo) == 1 && s.Heap != nil })
				hi := wantHeapInfo()
				hi.Reason = 3
				if st.HeapInfo[0] != hi {
					t.Fatalf("HPIF:\n got %+v\nwant %+v", st.HeapInfo[0], hi)
				}
				if st.Heap.Bytes != hi.Size || st.Heap.Elements != uint64(len(testHeap)) || !slices.Equal(st.Heap.Buckets, wantBuckets()) {
					t.Fatalf("heap walk: %d bytes, %d elements, buckets %+v; want %d, %d, %+v", st.Heap.Bytes, st.Heap.Elements, st.Heap.Buckets, hi.Size, len(testHeap), wantBuckets())
				}
				peer.send("hpif")
				st = peer.wait("HPIF now", func(s ClientState) bool { return len(s.HeapInfo) == 1 && s.HeapInfo[0].Reason == 1 })
				if hi.Reason = 1; st.HeapInfo[0] != hi {
					t.Fatalf("HPIF(1): got %+v want %+v", st.HeapInfo[0], hi)
				}
			}
			noErrors(t, peer)
		})
	}
}

// TestDdmlibRejectsDesign2007 documents why the ddmlib tests leave out the
// design2007 profile: ddmlib reads its HELO and THCR, but fails on the
// draft's THST layout.
func TestDdmlibRejectsDesign2007(t *testing.T) {
	vm := jdwptest.StartDDMVM(t, vmConfig(fakevm.Design2007))
	peer := startPeer(t, vm.Addr(), testPID)
	if st := peer.ready(); deref(st.VM) != "Dalvik v0.9" || deref(st.App) != "com.example.ddmlib" {
		t.Fatalf("ddmlib's view of the design2007 HELO: %+v", st)
	}
	peer.send("threads on")
	want := vm.Threads()
	peer.wait("THCR for every thread", func(s ClientState) bool { return sameNames(s, want) })
	// Not peer.sync: ddmlib's THST handler fails before it reports a change.
	peer.send("thst")
	peer.until("ddmlib's THST parser to fail", func() bool {
		return slices.ContainsFunc(peer.logs, func(l string) bool {
			return strings.Contains(l, "BufferUnderflowException") && strings.Contains(l, "handleTHST")
		})
	})
	// Before it ran out of bytes, ddmlib read the draft's u4 count as its
	// header and entry lengths and the thread count, and the entries as
	// garbage.
	got := peer.current().Threads
	for i, th := range got {
		w := want[i]
		if th.Status == int(w.Status) && th.TID == w.TID && th.UTime == w.UTime && th.STime == w.STime {
			t.Fatalf("ddmlib read thread %d right from a design-layout THST: %+v; the profile no longer needs excluding", th.ID, th)
		}
	}
}

// TestDdmlibAgreesWithMonitor (task b): ddmlib attached through the proxy
// and the proxy's own monitor (ddmtap codec) watch the same fake VM at the
// same time and must agree on identity, every thread field and, for
// Dalvik, the heap summary and the DDMS statistics of the heap walk; so
// must the live page's JSON API over that monitor.
func TestDdmlibAgreesWithMonitor(t *testing.T) {
	for _, prof := range ddmlibProfiles {
		t.Run(prof.String(), func(t *testing.T) {
			vm := jdwptest.StartDDMVM(t, vmConfig(prof))
			for i := 0; i < 3; i++ {
				vm.Churn() // varied statuses and CPU times
			}
			mon, addr := startProxy(t, vm.Addr())
			waitMon(t, mon, "identity", func(s ddmtap.Snapshot) bool { return s.Identity.DDM == ddmtap.DDMYes })
			peer := startPeer(t, addr, testPID)
			st := peer.connected()
			checkIdentity(t, prof, st)
			peer.send("threads on")
			want := vm.Threads()
			peer.wait("THCR for every thread", func(s ClientState) bool { return sameNames(s, want) })
			if prof == fakevm.Dalvik {
				if err := mon.RequestHeap(); err != nil {
					t.Fatal(err)
				}
				peer.send("heapinfo on")
				peer.send("segments on")
				peer.send("gc")
				peer.wait("heap info and walk", func(s ClientState) bool { return len(s.HeapInfo) == 1 && s.Heap != nil })
			}
			st = threadTable(peer, want)
			// The monitor polls THST itself; wait for a poll after the
			// threads were announced.
			snap := waitMon(t, mon, "thread table", func(s ddmtap.Snapshot) bool {
				if len(s.Threads) != len(want) || (prof == fakevm.Dalvik && s.Heap == nil) {
					return false
				}
				for _, th := range s.Threads {
					if th.TID == 0 {
						return false
					}
				}
				return true
			})

			id := snap.Identity
			if id.PID != st.PID || id.AppName != deref(st.App) || id.VMIdent != deref(st.VM) || id.ABI != deref(st.ABI) ||
				id.JVMFlags != deref(st.JVMFlags) || id.HasUserID != st.ValidUserID || id.UserID != st.UserID || id.NativeDebuggable != st.NativeDebuggable {
				t.Fatalf("identity: monitor %+v, ddmlib %+v", id, st)
			}
			feats := slices.Clone(id.Features)
			slices.Sort(feats)
			if !slices.Equal(feats, st.Features) {
				t.Fatalf("features: monitor %v, ddmlib %v", feats, st.Features)
			}
			var monThreads []PeerThread
			for _, th := range snap.Threads {
				monThreads = append(monThreads, PeerThread{ID: th.ID, Name: th.Name, Status: int(th.Status), TID: th.TID, UTime: th.UTime, STime: th.STime, Daemon: th.Daemon})
			}
			if !slices.Equal(monThreads, st.Threads) {
				t.Fatalf("threads:\nmonitor %+v\n ddmlib %+v", monThreads, st.Threads)
			}
			checkAPI(t, mon, st)
			if prof != fakevm.Dalvik {
				if len(st.HeapInfo) != 0 || snap.Support["heap_info"] == "supported" {
					t.Fatalf("heap data from ART: ddmlib %+v, monitor support %v", st.HeapInfo, snap.Support)
				}
				noErrors(t, peer)
				return
			}
			h := snap.HeapInfo[0]
			mh := PeerHeap{ID: h.HeapID, Max: uint64(h.MaxSize), Size: uint64(h.Size), Allocated: uint64(h.Allocated), Objects: uint64(h.Objects), Time: h.TimeMs, Reason: h.Reason}
			if mh != st.HeapInfo[0] {
				t.Fatalf("heap info: monitor %+v, ddmlib %+v", mh, st.HeapInfo[0])
			}
			var mb []PeerBucket
			for _, b := range snap.Heap.Stats {
				mb = append(mb, PeerBucket{Bucket: b.Bucket, Count: b.Count, Total: b.Total, Smallest: b.Smallest, Largest: b.Largest, Median: b.Median})
			}
			if snap.Heap.Bytes != st.Heap.Bytes || snap.Heap.Elements != st.Heap.Elements || !slices.Equal(mb, st.Heap.Buckets) {
				t.Fatalf("heap walk: monitor %d bytes %d elements %+v; ddmlib %d bytes %d elements %+v",
					snap.Heap.Bytes, snap.Heap.Elements, mb, st.Heap.Bytes, st.Heap.Elements, st.Heap.Buckets)
			}
			noErrors(t, peer)
		})
	}
}

// TestDdmlibThroughProxyKeepsMonitoring (tasks c and 3): ddmlib acts as
// the debugger through the proxy while the proxy monitors the same VM.
// ddmlib turns heap info off when it connects (HPIF 0), and here also
// turns threads and segments on and off again: the VM must keep what the
// proxy enabled (its settings are per connection and shared), the proxy's
// heap and thread updates must continue, and ddmlib must get exactly what
// it enabled.
func TestDdmlibThroughProxyKeepsMonitoring(t *testing.T) {
	vm := jdwptest.StartDDMVM(t, vmConfig(fakevm.Dalvik))
	mon, addr := startProxy(t, vm.Addr())
	waitMon(t, mon, "threads", func(s ddmtap.Snapshot) bool { return len(s.Threads) == len(vm.Threads()) })
	if err := mon.RequestHeap(); err != nil {
		t.Fatal(err)
	}
	waitMon(t, mon, "heap", func(s ddmtap.Snapshot) bool { return s.Heap != nil && len(s.HeapInfo) == 1 })
	proxyWants := fakevm.Settings{ThreadNotify: true, HPIFWhen: 3, HPSGWhen: 1, NHSGWhen: 1}
	settings := func(when string) {
		t.Helper()
		if got := vm.Stats().DDM; got != proxyWants {
			t.Fatalf("%s: the VM's DDM settings are %+v, want the proxy's %+v", when, got, proxyWants)
		}
	}
	settings("before ddmlib")

	peer := startPeer(t, addr, testPID)
	st := peer.connected() // ddmlib's connect-time HPIF(0) has reached the VM
	checkIdentity(t, fakevm.Dalvik, st)
	settings("after ddmlib connected")
	if len(st.HeapInfo) != 0 || st.Heap != nil || len(st.Threads) != 0 {
		t.Fatalf("ddmlib got data it did not enable: %+v", st)
	}
	// gc runs a collection in the VM and waits until the monitor has its
	// heap info and walk (everything earlier has reached the monitor: each
	// caller first waited for a later packet on the same connection).
	gc := func(what string, cond func(ddmtap.Snapshot) bool) {
		t.Helper()
		before := mon.Snapshot()
		vm.GC()
		waitMon(t, mon, what, func(s ddmtap.Snapshot) bool {
			return s.HeapInfoTime.After(before.HeapInfoTime) && s.Heap.Time.After(before.Heap.Time) && cond(s)
		})
	}
	gc("heap info and walk after ddmlib's HPIF(0)", func(ddmtap.Snapshot) bool { return true })

	threadsOnOff(t, vm, mon, peer, settings)

	// Heap segments: ddmlib on (gets a walk), then off (HPSG 0,0).
	peer.send("segments on")
	peer.send("gc")
	st = peer.wait("ddmlib's heap walk", func(s ClientState) bool { return s.Heap != nil })
	if st.Heap.Bytes != wantHeapInfo().Size || !slices.Equal(st.Heap.Buckets, wantBuckets()) {
		t.Fatalf("ddmlib's heap walk through the proxy: %+v", st.Heap)
	}
	if len(st.HeapInfo) != 0 {
		t.Fatalf("ddmlib got HPIF with heap info updates off: %+v", st.HeapInfo)
	}
	peer.send("segments off")
	peer.sync()
	settings("after ddmlib's HPSG(0,0)")
	gc("heap walk after ddmlib's HPSG(0,0)", func(ddmtap.Snapshot) bool { return true })

	// Heap info: one now (HPIF 1), then every GC (HPIF 3), then off.
	peer.send("hpif")
	st = peer.wait("ddmlib's HPIF(1)", func(s ClientState) bool { return len(s.HeapInfo) == 1 })
	if hi := wantHeapInfo(); st.HeapInfo[0].Reason != 1 || st.HeapInfo[0].Size != hi.Size {
		t.Fatalf("ddmlib's HPIF(1) through the proxy: %+v", st.HeapInfo[0])
	}
	peer.send("heapinfo on")
	peer.sync() // the proxy has taken ddmlib's HPIF(3) before the GC (the ack says only that ddmlib sent it)
	vm.GC()
	peer.wait("ddmlib's HPIF at a GC", func(s ClientState) bool { return len(s.HeapInfo) == 1 && s.HeapInfo[0].Reason == 3 })
	peer.send("heapinfo off")
	peer.sync()
	settings("after ddmlib's second HPIF(0)")
	gc("heap info after ddmlib's second HPIF(0)", func(s ddmtap.Snapshot) bool { return s.HeapInfo[0].Reason == 3 })

	noErrors(t, peer)
	if s := vm.Stats(); s.NonDDMPackets != 0 || mon.Snapshot().DebuggerAttached {
		t.Fatalf("ddmlib sent only DDM, yet the VM saw %d non-DDM packets / the monitor a debugger", s.NonDDMPackets)
	}
	t.Logf("VM DDM requests: %v", vm.Stats().DDMRequests)
}

// checkAPI compares ddmlib's view with the live page's JSON API over the
// same monitor: the VM row, the thread table (status as the DDMS label)
// and, when ddmlib has them, the heap summary and the DDMS statistics.
func checkAPI(t *testing.T, mon *ddmtap.Monitor, st ClientState) {
	t.Helper()
	h := web.NewHandler(&web.DDMSource{Monitors: func() []*ddmtap.Monitor { return []*ddmtap.Monitor{mon} }}, prometheus.NewRegistry(), zerolog.Nop())
	t.Cleanup(h.Close)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	get := func(path string, v any) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s", path, resp.Status)
		}
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
	}
	var vms []web.VM
	get("/api/v1/vms", &vms)
	if len(vms) != 1 || vms[0].Ident != deref(st.VM) || vms[0].App != deref(st.App) || vms[0].PID != st.PID || !vms[0].DDM {
		t.Fatalf("API VMs %+v; ddmlib %s %s %d", vms, deref(st.VM), deref(st.App), st.PID)
	}
	vm := "/api/v1/vms/" + url.PathEscape(vms[0].ID)
	var threads []web.Thread
	get(vm+"/threads", &threads)
	var want []web.Thread
	for _, th := range st.Threads {
		want = append(want, web.Thread{ID: th.ID, TID: th.TID, Name: th.Name, Status: ddmtap.StatusName(uint8(th.Status)), UTime: th.UTime, STime: th.STime, Daemon: th.Daemon})
	}
	if !slices.Equal(threads, want) {
		t.Fatalf("API threads:\n    %+v\nddmlib %+v", threads, want)
	}
	if len(st.HeapInfo) == 0 || st.Heap == nil {
		return
	}
	var heap web.HeapSummary
	get(vm+"/heap", &heap)
	hi := st.HeapInfo[0]
	if in := heap.Info; in == nil || in.MaxBytes != hi.Max || in.SizeBytes != hi.Size || in.AllocatedBytes != hi.Allocated || in.Objects != hi.Objects {
		t.Fatalf("API heap info %+v; ddmlib %+v", heap.Info, hi)
	}
	var stats []PeerBucket
	for _, k := range heap.Stats {
		if k.Count > 0 {
			stats = append(stats, PeerBucket{Bucket: uint8(k.Kind), Count: k.Count, Total: k.TotalBytes, Smallest: k.Smallest, Largest: k.Largest, Median: k.Median})
		}
	}
	if heap.TotalBytes != st.Heap.Bytes || !slices.Equal(stats, st.Heap.Buckets) {
		t.Fatalf("API heap: %d bytes %+v; ddmlib %d bytes %+v", heap.TotalBytes, stats, st.Heap.Bytes, st.Heap.Buckets)
	}
}

// threadsOnOff has ddmlib, attached through the proxy, turn thread updates
// on (it gets the THCR burst and a THST) and off again (THEN 0): the VM
// must keep notifying for the proxy (settings checks that), the monitor
// must follow thread churn, and ddmlib must get no more thread chunks.
func threadsOnOff(t *testing.T, vm *fakevm.VM, mon *ddmtap.Monitor, peer *Peer, settings func(string)) {
	t.Helper()
	peer.send("threads on")
	want := vm.Threads()
	peer.wait("ddmlib's THCR burst", func(s ClientState) bool { return sameNames(s, want) })
	threadTable(peer, want)
	peer.send("threads off")
	if st := peer.sync(); len(st.Threads) != 0 {
		t.Fatalf("ddmlib kept threads after turning updates off: %+v", st.Threads)
	}
	settings("after ddmlib's THEN(0)")
	vm.Churn()
	vm.Churn()
	live := vm.Stats().Threads
	waitMon(t, mon, "thread churn after ddmlib's THEN(0)", func(s ddmtap.Snapshot) bool {
		if len(s.Threads) != len(live) {
			return false
		}
		for _, th := range s.Threads {
			if live[th.ID] != th.Name {
				return false
			}
		}
		return true
	})
	if st := peer.sync(); len(st.Threads) != 0 {
		t.Fatalf("ddmlib got THCR/THDE after THEN(0): %+v", st.Threads)
	}

}

// TestDdmlibThroughProxyARTThreads is the thread half of
// TestDdmlibThroughProxyKeepsMonitoring on ART, which leaves the
// (unchanged or rewritten) THEN unanswered until a debugger loads its agent.
func TestDdmlibThroughProxyARTThreads(t *testing.T) {
	vm := jdwptest.StartDDMVM(t, vmConfig(fakevm.ART))
	mon, addr := startProxy(t, vm.Addr())
	waitMon(t, mon, "threads", func(s ddmtap.Snapshot) bool { return len(s.Threads) == len(vm.Threads()) })
	settings := func(when string) {
		t.Helper()
		if got, want := vm.Stats().DDM, (fakevm.Settings{ThreadNotify: true}); got != want {
			t.Fatalf("%s: the VM's DDM settings are %+v, want the proxy's %+v", when, got, want)
		}
	}
	peer := startPeer(t, addr, testPID)
	checkIdentity(t, fakevm.ART, peer.connected())
	settings("after ddmlib connected")
	threadsOnOff(t, vm, mon, peer, settings)
	noErrors(t, peer)
	if s := vm.Stats(); s.NonDDMPackets != 0 {
		t.Fatalf("ddmlib sent only DDM, yet the VM saw %d non-DDM packets", s.NonDDMPackets)
	}
}
