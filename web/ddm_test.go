package web

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/ddm"
	"github.com/jdwpaccel/jdwpaccel/ddmtap"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// ddmVM plays an Android VM's DDM side into a real ddmtap.Monitor: the
// chunks it sends are encoded and decoded by ddmtap as they would be on the
// wire.
type ddmVM struct {
	t   testing.TB
	mon *ddmtap.Monitor
	rng *rand.Rand

	mu      sync.Mutex // guards threads and nextID
	threads []ddm.ThreadStat
	nextID  uint32
}

func newDDMVM(t testing.TB, mon *ddmtap.Monitor, seed uint64) *ddmVM {
	return &ddmVM{t: t, mon: mon, rng: rand.New(rand.NewPCG(seed, 1)), nextID: 1}
}

func (v *ddmVM) send(p ddm.Payload) {
	v.mon.HandleChunk(ddm.VMToHost, ddm.Chunk{Type: p.ChunkType(), Data: p.AppendData(nil)})
}

func (v *ddmVM) hello() {
	v.send(ddm.Hello{ClientVersion: 1, PID: 31337, VMIdent: "Dalvik v2.1.0", AppName: "org.example.notes"})
}

// spawn announces a thread (THCR).
func (v *ddmVM) spawn(name string) {
	v.mu.Lock()
	id := v.nextID
	v.nextID++
	v.threads = append(v.threads, ddm.ThreadStat{ID: id, Status: 4, TID: 31337 + id*3, Daemon: id > 1})
	v.mu.Unlock()
	v.send(ddm.ThreadName{T: ddm.TypeTHCR, ID: id, Name: name})
}

// tick changes thread states and CPU times and sends a THST; every few
// ticks a worker thread is born and the oldest one dies (THDE).
func (v *ddmVM) tick(n int) {
	v.mu.Lock()
	for i := range v.threads {
		e := &v.threads[i]
		if v.rng.IntN(4) == 0 {
			e.Status = []uint8{1, 1, 2, 3, 4, 7}[v.rng.IntN(6)]
		}
		if e.Status == 1 {
			e.UTime += 1 + uint32(v.rng.IntN(20))
			e.STime += uint32(v.rng.IntN(4))
		}
	}
	var died uint32
	if n%3 == 2 && len(v.threads) > 12 {
		died = v.threads[8].ID
		v.threads = append(v.threads[:8], v.threads[9:]...)
	}
	st := ddm.ThreadStatus{Threads: append([]ddm.ThreadStat(nil), v.threads...)}
	v.mu.Unlock()
	if died != 0 {
		v.send(ddm.U4{T: ddm.TypeTHDE, V: died})
	}
	if n%3 == 0 {
		v.spawn(fmt.Sprintf("worker-%d", n))
	}
	v.send(st)
}

// appendRuns encodes one element of units allocation units (§4.2).
func appendRuns(dst []byte, state uint8, units int) []byte {
	for units > 256 {
		dst = append(dst, state|0x80, 255)
		units -= 256
	}
	return append(dst, state, byte(units-1))
}

// heap sends HPIF and a whole heap walk, HPST, HPSG chunks, HPEN.
func (v *ddmVM) heap() {
	v.send(ddm.HeapInfo{Heaps: []ddm.HeapSummary{{HeapID: 1, TimeMs: time.Now().UnixMilli(), Reason: 3, MaxSize: 192 << 20, Size: 3 << 20, Allocated: 2 << 20, Objects: 21000}}})
	v.send(ddm.U4{T: ddm.TypeHPST, V: 1})
	start := uint32(0x12c00000)
	for range 6 {
		var runs []byte
		units := 0
		for len(runs) < 16000 {
			var state uint8
			n := 2 + v.rng.IntN(12)
			switch r := v.rng.IntN(100); {
			case r < 15:
				state = 0 // free
				n = 1 + v.rng.IntN(60)
			case r < 55:
				state = 0x01 // object
			case r < 62:
				state = 0x09 // class
				n = 10 + v.rng.IntN(60)
			case r < 72:
				state = 0x11 // byte[]
				n = 2 + v.rng.IntN(600)
			case r < 85:
				state = 0x19 // char[]
			case r < 95:
				state = 0x21 // int[]
			default:
				state = 0x29 // long[]
			}
			runs = appendRuns(runs, state, n)
			units += n
		}
		v.send(ddm.HeapSegment{T: ddm.TypeHPSG, HeapID: 1, Unit: 8, Start: start, Units: uint32(units), Runs: runs})
		start += uint32(units * 8)
	}
	v.send(ddm.U4{T: ddm.TypeHPEN, V: 1})
}

func TestDDMAdapter(t *testing.T) {
	mon := ddmtap.NewMonitor("127.0.0.1:8600", zerolog.Nop(), nil)
	vm := newDDMVM(t, mon, 1)
	vm.hello()
	for _, n := range []string{"main", "Signal Catcher", "HeapTaskDaemon"} {
		vm.spawn(n)
	}
	vm.tick(1)
	vm.send(ddm.HeapInfo{Heaps: []ddm.HeapSummary{{HeapID: 1, TimeMs: 1, MaxSize: 100, Size: 80, Allocated: 20, Objects: 3}}})
	vm.send(ddm.U4{T: ddm.TypeHPST, V: 1})
	// object 2 units, object 3 units (merged by the tap into one run),
	// free 300 units (a partial run), byte[] 1 unit.
	runs := appendRuns(appendRuns(appendRuns(appendRuns(nil, 0x01, 2), 0x01, 3), 0x00, 300), 0x11, 1)
	vm.send(ddm.HeapSegment{T: ddm.TypeHPSG, HeapID: 1, Unit: 8, Start: 0x1000, Units: 306, Runs: runs})
	vm.send(ddm.U4{T: ddm.TypeHPEN, V: 1})

	src := &DDMSource{Monitors: func() []*ddmtap.Monitor { return []*ddmtap.Monitor{mon} },
		SessionsFunc: func() []Session {
			return []Session{{ID: 1, Debugger: "127.0.0.1:5000", VM: "127.0.0.1:8600"}, {ID: 2, Debugger: "gone", VM: "127.0.0.1:8600", Ended: time.Now()}}
		}}
	vms := src.VMs()
	if len(vms) != 1 || vms[0].ID != "127.0.0.1:8600" || vms[0].App != "org.example.notes" || vms[0].PID != 31337 || !vms[0].DDM ||
		len(vms[0].Debuggers) != 1 || vms[0].Debuggers[0] != "127.0.0.1:5000" {
		t.Fatalf("vms = %+v", vms)
	}
	ths := src.Threads("127.0.0.1:8600")
	if len(ths) != 3 || ths[0].Name != "main" || ths[0].TID != 31340 || ths[0].Status == "" {
		t.Fatalf("threads = %+v", ths)
	}
	if src.Threads("nope") != nil || src.Heap("nope").Generation != 0 {
		t.Fatal("unknown VM has data")
	}
	h := src.Heap("127.0.0.1:8600")
	if h.Generation == 0 || h.Info.Size != 80 || len(h.Segments) != 1 {
		t.Fatalf("heap = %+v", h)
	}
	s := SummarizeHeap(h, 1000)
	if s.TotalBytes != 306*8 || s.Map.Cells != 306 || s.Map.Kinds[:5] != "22222" || s.Map.Kinds[5] != '1' || s.Map.Kinds[305] != '4' {
		t.Fatalf("map %d cells, %d bytes: %.8q…", s.Map.Cells, s.TotalBytes, s.Map.Kinds)
	}
	// Statistics are the tap's, over elements: two objects, not one merged run.
	stats := map[HeapKind]HeapKindStats{}
	for _, st := range s.Stats {
		stats[st.Kind] = st
	}
	if o := stats[HeapObject]; o.Count != 2 || o.Smallest != 16 || o.Largest != 24 || o.TotalBytes != 40 {
		t.Fatalf("object stats %+v", o)
	}
	if f := stats[HeapFree]; f.Count != 1 || f.TotalBytes != 2400 {
		t.Fatalf("free stats %+v", f)
	}
	for _, se := range s.Histogram.Series {
		if se.Kind == HeapObject && se.Counts[HistogramBin(16)] != 2 {
			t.Fatalf("object histogram %v", se.Counts)
		}
	}
}

// TestBrowserDDM shows the page fed by a real ddmtap.Monitor that a fake
// DDM VM keeps busy, in a real browser.
func TestBrowserDDM(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test in -short mode")
	}
	mon := ddmtap.NewMonitor("127.0.0.1:8600", zerolog.Nop(), nil)
	vm := newDDMVM(t, mon, 2)
	vm.hello()
	for _, n := range []string{"main", "Signal Catcher", "HeapTaskDaemon", "ReferenceQueueDaemon", "FinalizerDaemon", "Binder:31337_1", "Binder:31337_2", "RenderThread", "worker-a", "worker-b", "worker-c", "worker-d"} {
		vm.spawn(n)
	}
	vm.tick(1)
	vm.heap()

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the VM keeps changing until the test ends
		defer wg.Done()
		tk := time.NewTicker(150 * time.Millisecond)
		defer tk.Stop()
		for n := 2; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-tk.C:
			}
			vm.tick(n)
			if n%10 == 0 {
				vm.heap()
			}
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })

	fake := NewFakeSource(3) // the accelerator's figures and the session
	src := &DDMSource{
		Monitors:  func() []*ddmtap.Monitor { return []*ddmtap.Monitor{mon} },
		AccelFunc: fake.Accel,
		SessionsFunc: func() []Session {
			ss := fake.Sessions()
			for i := range ss {
				ss[i].VM = mon.Name()
			}
			return ss
		},
	}
	h := NewHandler(src, prometheus.NewRegistry(), zerolog.Nop(), WithInterval(250*time.Millisecond))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	t.Cleanup(h.Close)
	browserCheck(t, srv.URL+"/", "screenshot-ddm.png")
}
