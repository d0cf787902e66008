package ddmtap_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/ddm"
	"github.com/jdwpaccel/jdwpaccel/ddmtap"
	"github.com/jdwpaccel/jdwpaccel/ddmtap/fakevm"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/retag"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"
)

var testOpts = ddmtap.Options{PollInterval: 50 * time.Millisecond, ReplyTimeout: 300 * time.Millisecond}

func startHolder(t *testing.T, addr string, m *ddmtap.Metrics) *ddmtap.Holder {
	t.Helper()
	h := ddmtap.NewHolder(ddmtap.HolderConfig{Addr: addr, KnownDDM: true, Logger: zerolog.Nop(), Metrics: m, Options: testOpts, ReconnectDelay: 10 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return h
}

func wait(t *testing.T, m *ddmtap.Monitor, what string, cond func(ddmtap.Snapshot) bool) ddmtap.Snapshot {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := m.Wait(ctx, cond)
	if err != nil {
		t.Fatalf("waiting for %s: %v; last snapshot: identity %+v support %v threads %+v", what, err, s.Identity, s.Support, s.Threads)
	}
	return s
}

// sameThreads says whether the monitor's live threads are exactly the VM's.
func sameThreads(s ddmtap.Snapshot, vm map[uint32]string) bool {
	if len(s.Threads) != len(vm) {
		return false
	}
	for _, th := range s.Threads {
		if name, ok := vm[th.ID]; !ok || name != th.Name {
			return false
		}
	}
	return true
}

func TestMonitorAgainstEachProfile(t *testing.T) {
	for _, p := range []fakevm.Profile{fakevm.Design2007, fakevm.Dalvik, fakevm.ART} {
		t.Run(p.String(), func(t *testing.T) {
			vm := jdwptest.StartDDMVM(t, fakevm.Config{Profile: p, Seed: 7, AppName: "com.example.app"})
			reg := prometheus.NewRegistry()
			h := startHolder(t, vm.Addr(), ddmtap.NewMetrics(reg))
			mon := h.Monitor()
			s := wait(t, mon, "identity and threads", func(s ddmtap.Snapshot) bool {
				return s.Identity.DDM == ddmtap.DDMYes && len(s.Threads) == 4 && s.Threads[0].TID != 0 || p == fakevm.Design2007 && len(s.Threads) == 4 && s.Threads[0].StatusName == "running"
			})
			if s.Identity.PID != 4242 || s.Identity.AppName != "com.example.app" || s.Threads[0].Name != "main" {
				t.Fatalf("identity %+v threads %+v", s.Identity, s.Threads)
			}
			switch p {
			case fakevm.ART:
				if s.Identity.PackageName != "com.example.app" || s.Identity.ABI != "64-bit (arm64)" {
					t.Fatalf("ART identity %+v", s.Identity)
				}
			case fakevm.Dalvik:
				if s.Identity.VMIdent != "Dalvik v1.6.0" || !s.Identity.HasUserID {
					t.Fatalf("Dalvik identity %+v", s.Identity)
				}
			}
			for i := 0; i < 6; i++ {
				vm.Churn()
			}
			want := vm.Stats().Threads
			s = wait(t, mon, "thread churn", func(s ddmtap.Snapshot) bool { return sameThreads(s, want) })
			if len(s.DeadThreads) == 0 && len(want) < 10 {
				t.Fatalf("churn left no dead threads: %+v", s)
			}
			if err := mon.RequestHeap(); err != nil {
				t.Fatal(err)
			}
			if p == fakevm.ART {
				s = wait(t, mon, "heap unsupported", func(s ddmtap.Snapshot) bool {
					return s.Support["heap_info"] == "unsupported" && s.Support["heap_segments"] == "unsupported"
				})
			} else {
				s = wait(t, mon, "heap map", func(s ddmtap.Snapshot) bool { return s.Heap != nil && len(s.HeapInfo) == 1 && s.NativeHeap != nil })
				if s.Heap.Bytes != uint64(s.HeapInfo[0].Size) || len(s.Heap.Stats) < 3 {
					t.Fatalf("heap map of %d bytes vs HPIF size %d; %d stats rows", s.Heap.Bytes, s.HeapInfo[0].Size, len(s.Heap.Stats))
				}
			}
			st := vm.Stats()
			if st.NonDDMPackets != 0 || st.DebuggerAttached {
				t.Fatalf("the monitor sent non-DDM packets: %+v", st)
			}
			if n := testutil.ToFloat64(metricChunks(reg, "THCR", "from_vm")); n < 4 {
				t.Fatalf("THCR chunks counted: %v", n)
			}
		})
	}
}

// metricChunks finds the ddm_chunks_total child for a type and direction.
func metricChunks(reg *prometheus.Registry, typ, dir string) prometheus.Collector {
	return collectorFunc(func(ch chan<- prometheus.Metric) {
		mfs, _ := reg.Gather()
		for _, mf := range mfs {
			if mf.GetName() != "jdwpaccel_ddm_chunks_total" {
				continue
			}
			for _, m := range mf.GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				if labels["type"] == typ && labels["direction"] == dir {
					ch <- prometheus.MustNewConstMetric(prometheus.NewDesc("x", "x", nil, nil), prometheus.CounterValue, m.GetCounter().GetValue())
				}
			}
		}
	})
}

type collectorFunc func(chan<- prometheus.Metric)

func (f collectorFunc) Describe(chan<- *prometheus.Desc)    {}
func (f collectorFunc) Collect(ch chan<- prometheus.Metric) { f(ch) }

// proxy runs a relay in front of the holder.
func proxy(t *testing.T, h *ddmtap.Holder) string {
	t.Helper()
	return proxyWith(t, h, nil)
}

// proxyWith is proxy with hooks of the test's own beside the tap's.
func proxyWith(t *testing.T, h *ddmtap.Holder, hooks func(*relay.Session) relay.Hooks) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := relay.NewServer(relay.Config{DialVM: h.Dial, Logger: zerolog.Nop(), NewHooks: hooks})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Serve(ctx, ln); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

type debugger struct {
	t *testing.T
	c net.Conn
	r *jdwp.Reader
}

func attach(t *testing.T, addr string) *debugger {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	// The debugger stays connected until the test ends, used or not: an
	// unreachable connection is closed by the garbage collector (its
	// descriptor's finalizer), ending the session under the test.
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(15 * time.Second))
	c.Write([]byte(jdwp.Handshake))
	if err := jdwp.ReadHandshake(c); err != nil {
		t.Fatal(err)
	}
	return &debugger{t: t, c: c, r: jdwp.NewReader(c, 0)}
}

func (d *debugger) send(p jdwp.Packet) {
	d.t.Helper()
	if _, err := d.c.Write(p); err != nil {
		d.t.Fatal(err)
	}
}

// next reads packets until one matches; every packet read is checked
// against the rule that the proxy's DDM never reaches the debugger.
func (d *debugger) next(what string, match func(jdwp.Packet) bool, allowDDM func(ddm.Type) bool) jdwp.Packet {
	d.t.Helper()
	for {
		p, err := d.r.Next()
		if err != nil {
			d.t.Fatalf("%s: %v", what, err)
		}
		if p.IsReply() && retag.InRange(p.ID()) {
			d.t.Fatalf("%s: the debugger got a reply to the proxy's own request: %v", what, p)
		}
		if isDDMCommand(p) {
			typ, _ := firstChunkType(p.Body())
			if allowDDM == nil || !allowDDM(typ) {
				d.t.Fatalf("%s: the debugger got a DDM chunk it did not ask for: %s", what, typ)
			}
		}
		if match(p) {
			return p.Clone()
		}
	}
}

func replyTo(id uint32) func(jdwp.Packet) bool {
	return func(p jdwp.Packet) bool { return p.IsReply() && p.ID() == id }
}

func TestSessionDetachReattach(t *testing.T) {
	vm := jdwptest.StartDDMVM(t, fakevm.Config{Profile: fakevm.Dalvik, Seed: 3, WaitForDebugger: true})
	h := startHolder(t, vm.Addr(), nil)
	mon := h.Monitor()
	addr := proxy(t, h)
	wait(t, mon, "monitoring before any debugger", func(s ddmtap.Snapshot) bool {
		return len(s.Threads) == 4 && s.Identity.WaitingForDebugger && s.Support["thread_status"] == "supported"
	})
	if err := mon.RequestHeap(); err != nil {
		t.Fatal(err)
	}
	wait(t, mon, "heap before any debugger", func(s ddmtap.Snapshot) bool { return s.Heap != nil })

	for round := 1; round <= 2; round++ {
		d := attach(t, addr)
		d.send(jdwp.AppendCommand(nil, 1, jdwp.CmdIDSizes, nil))
		d.next("IDSizes reply", replyTo(1), nil)
		wait(t, mon, "debugger seen", func(s ddmtap.Snapshot) bool { return s.DebuggerAttached && !s.Identity.WaitingForDebugger })
		// Thread churn and a GC during the session: the monitor sees them,
		// the debugger must not.
		before := mon.Snapshot().Heap
		for i := 0; i < 5; i++ {
			vm.Churn()
		}
		vm.GC()
		want := vm.Stats().Threads
		wait(t, mon, "churn during the session", func(s ddmtap.Snapshot) bool { return sameThreads(s, want) && s.Heap != before })
		// The next packet the debugger gets after everything above is the
		// reply to its command (THCR/THDE/HPSG were written earlier on the
		// same stream and were consumed).
		d.send(jdwp.AppendCommand(nil, 2, jdwp.Cmd{Set: jdwp.SetVirtualMachine, Cmd: 4}, nil))
		p := d.next("AllThreads reply", func(jdwp.Packet) bool { return true }, nil)
		if !p.IsReply() || p.ID() != 2 || p.ErrorCode() != 0 {
			t.Fatalf("round %d: got %v, want the AllThreads reply", round, p)
		}
		if !vm.Stats().DebuggerAttached {
			t.Fatal("the VM did not see the debugger")
		}
		d.c.Close()
		// The relay drops the VM connection; the holder reconnects for
		// monitoring and the monitor keeps its history.
		wait(t, mon, "reconnected without a debugger", func(s ddmtap.Snapshot) bool {
			st := vm.Stats()
			return s.Connected && !s.DebuggerAttached && st.Connections == round+1 && !st.DebuggerAttached && st.DDMRequests["HPSG"] == round+1
		})
	}
	s := mon.Snapshot()
	if s.Heap == nil || len(s.DeadThreads) == 0 {
		t.Fatalf("history lost: heap %v dead %d", s.Heap != nil, len(s.DeadThreads))
	}
	vm.Churn()
	vm.Churn()
	want := vm.Stats().Threads
	wait(t, mon, "monitoring after the last detach", func(s ddmtap.Snapshot) bool { return sameThreads(s, want) })
}

func TestDebuggerSpeakingDDM(t *testing.T) {
	vm := jdwptest.StartDDMVM(t, fakevm.Config{Profile: fakevm.Dalvik, Seed: 5})
	h := startHolder(t, vm.Addr(), nil)
	mon := h.Monitor()
	addr := proxy(t, h)
	wait(t, mon, "monitoring", func(s ddmtap.Snapshot) bool { return len(s.Threads) == 4 })
	d := attach(t, addr)
	threads := func(t ddm.Type) bool {
		return t == ddm.TypeTHCR || t == ddm.TypeTHDE || t == ddm.TypeTHNM
	}
	// ddmlib's ids start at 0x40000000.
	d.send(ddm.AppendCommand(nil, 0x40000001, ddm.U4{T: ddm.TypeHELO, V: 1}))
	p := d.next("HELO reply", replyTo(0x40000001), nil)
	if typ, _ := firstChunkType(p.Body()); typ != ddm.TypeHELO {
		t.Fatalf("debugger's HELO reply carries %s", typ)
	}
	d.send(ddm.AppendCommand(nil, 0x40000002, ddm.U1{T: ddm.TypeTHEN, V: 1}))
	n := 0
	d.next("THCR burst for the debugger", func(p jdwp.Packet) bool {
		if isDDMCommand(p) {
			n++
		}
		return n == 4
	}, threads)
	d.next("THEN reply", replyTo(0x40000002), threads)
	// The proxy's heap request: its chunks must not reach this debugger,
	// which never enabled heap updates.
	before := mon.Snapshot().Version
	if err := mon.RequestHeap(); err != nil {
		t.Fatal(err)
	}
	wait(t, mon, "heap", func(s ddmtap.Snapshot) bool { return s.Heap != nil && s.Version > before })
	vm.Churn()
	d.send(jdwp.AppendCommand(nil, 0x40000003, jdwp.CmdIDSizes, nil))
	d.next("IDSizes reply", replyTo(0x40000003), threads)
}

// TestAndroidFoundFromDebuggersVersion: a DDM VM at a plain address (not
// known to speak DDM) gets nothing before a debugger arrives; the VM's
// reply to the debugger's VirtualMachine.Version names an Android runtime,
// which starts monitoring, and the holder keeps it up after the debugger
// leaves.
func TestAndroidFoundFromDebuggersVersion(t *testing.T) {
	vm := jdwptest.StartDDMVM(t, fakevm.Config{Profile: fakevm.Dalvik, Threads: 2})
	h := ddmtap.NewHolder(ddmtap.HolderConfig{Addr: vm.Addr(), Logger: zerolog.Nop(), Options: testOpts, ReconnectDelay: 10 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	p := proxy(t, h)
	d := attach(t, p)
	if st := vm.Stats(); st.Connections > 1 || len(st.DDMRequests) != 0 {
		t.Fatalf("before the debugger's first command: %+v, want no connection but the debugger's and no DDM", st)
	}
	d.send(jdwp.AppendCommand(nil, 1, jdwp.CmdVirtualMachineVersion, nil))
	d.next("Version", replyTo(1), nil)
	wait(t, h.Monitor(), "DDM after the Version reply", func(s ddmtap.Snapshot) bool {
		return s.Identity.DDM == ddmtap.DDMYes && len(s.Threads) == 3
	})
	d.c.Close()
	// The VM is now known: the holder reconnects and keeps monitoring.
	wait(t, h.Monitor(), "held again after the debugger left", func(s ddmtap.Snapshot) bool {
		return s.Connected && !s.DebuggerAttached
	})
}

// TestVMDyingOnHELOIsNeverProbedAgain: a VM that closes the connection with
// HELO unanswered (as a HotSpot crashing on command set 199 does) is
// marked and gets no DDM again, neither held nor in later sessions.
func TestVMDyingOnHELOIsNeverProbedAgain(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	helos := make(chan int, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if jdwp.ReadHandshake(c) != nil || jdwp.WriteHandshake(c) != nil {
					return
				}
				r := jdwp.NewReader(c, 0)
				for {
					p, err := r.Next()
					if err != nil {
						helos <- 0
						return
					}
					if p.Cmd() == jdwp.CmdDDMChunk {
						helos <- 1
						return // "crash"
					}
					c.Write(jdwp.AppendReply(nil, p.ID(), jdwp.ErrorNone, nil))
				}
			}()
		}
	}()
	addr := ln.Addr().String()
	h := ddmtap.NewHolder(ddmtap.HolderConfig{Addr: addr, KnownDDM: true, Logger: zerolog.Nop(), Options: testOpts, ReconnectDelay: 10 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	wait(t, h.Monitor(), "VM marked after dying on HELO", func(s ddmtap.Snapshot) bool { return s.Identity.DDM == ddmtap.DDMNo })
	// A debugger session afterwards gets a plain connection: no HELO.
	d := attach(t, proxy(t, h))
	d.send(jdwp.AppendCommand(nil, 1, jdwp.CmdIDSizes, nil))
	d.next("IDSizes", replyTo(1), nil)
	d.c.Close()
	if n := <-helos; n != 1 {
		t.Fatal("the held connection ended without HELO")
	}
	if n := <-helos; n != 0 {
		t.Fatalf("the debugger's connection carried DDM after the VM died on HELO")
	}
}

// TestTakeInsideAPacket: the debugger arrives while the held connection is
// in the middle of a VM packet. The holder stops reading there and hands
// over what it buffered: the debugger gets the packet kept for it while
// holding (VM_START) and then the cut packet, intact, whether it fits the
// holder's read buffer or not.
func TestTakeInsideAPacket(t *testing.T) {
	for _, events := range []int{1, 10000} {
		t.Run(fmt.Sprintf("%d_events", events), func(t *testing.T) {
			// Composite events, IDs of 8 bytes: suspend policy, count, then
			// per event kind, request ID, thread.
			composite := func(id uint32, kind jdwp.EventKind, n int) jdwp.Packet {
				body := append([]byte{0}, binary.BigEndian.AppendUint32(nil, uint32(n))...)
				for i := range n {
					body = append(body, byte(kind))
					body = binary.BigEndian.AppendUint32(body, 0)
					body = binary.BigEndian.AppendUint64(body, uint64(i+1))
				}
				return jdwp.AppendCommand(nil, id, jdwp.CmdComposite, body)
			}
			start := composite(1, jdwp.EventVMStart, 1)
			cut := composite(2, jdwp.EventThreadStart, events)
			if cut.Length() > 64<<10 != (events > 1) {
				t.Fatalf("packet of %d bytes", cut.Length())
			}

			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
			attached := make(chan struct{})
			vmDone := make(chan error, 1)
			go func() {
				vmDone <- func() error {
					c, err := ln.Accept()
					if err != nil {
						return err
					}
					defer c.Close()
					if err := jdwp.ReadHandshake(c); err != nil {
						return err
					}
					jdwp.WriteHandshake(c)
					c.Write(start)
					r := jdwp.NewReader(c, 0)
					helo, err := r.Next()
					if err != nil {
						return err
					}
					go io.Copy(io.Discard, c) // the proxy's DDM requests after HELO
					c.Write(ddm.AppendReply(nil, helo.ID(), ddm.Hello{ClientVersion: 1, PID: 77, VMIdent: "V", AppName: "app"}))
					// THCR and the first half of the cut packet in one write:
					// once the monitor has the thread, the holder has read
					// (at least the start of) the half too.
					half := len(cut) / 2
					thcr := ddm.AppendCommand(nil, 0x20000001, ddm.ThreadName{T: ddm.TypeTHCR, ID: 1, Name: "main"})
					c.Write(append(thcr, cut[:half]...))
					<-attached
					_, err = c.Write(cut[half:])
					return err
				}()
			}()

			h := startHolder(t, ln.Addr().String(), nil)
			wait(t, h.Monitor(), "the VM's THCR", func(s ddmtap.Snapshot) bool { return len(s.Threads) == 1 })
			d := attach(t, proxy(t, h)) // the relay took the connection
			close(attached)
			if err := <-vmDone; err != nil {
				t.Fatal(err)
			}
			for _, want := range []jdwp.Packet{start, cut} {
				got := d.next("the held packets", func(jdwp.Packet) bool { return true }, nil)
				if !bytes.Equal(got, want) {
					t.Fatalf("debugger got %v (%d bytes), want %v (%d bytes)", got, len(got), want, len(want))
				}
			}
		})
	}
}

// TestHolderReportsTheFirstThreads: a holder given OnThreadChange reports
// every thread of the VM's first list as created (the callback is the
// monitor's before the holder runs: the live page's thread events begin
// with each thread's start, and no death comes without one).
func TestHolderReportsTheFirstThreads(t *testing.T) {
	vm := jdwptest.StartDDMVM(t, fakevm.Config{Profile: fakevm.Dalvik, Seed: 7, Logger: zerolog.Nop()})
	created := make(chan uint32, 64)
	h := ddmtap.NewHolder(ddmtap.HolderConfig{Addr: vm.Addr(), KnownDDM: true, Logger: zerolog.Nop(), Options: testOpts,
		ReconnectDelay: 10 * time.Millisecond, OnThreadChange: func(c ddmtap.ThreadChange) {
			if c.Kind == ddmtap.ThreadCreated {
				created <- c.ID
			}
		}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	s := wait(t, h.Monitor(), "the first threads", func(s ddmtap.Snapshot) bool { return len(s.Threads) == 4 })
	seen := map[uint32]bool{}
	for len(seen) < len(s.Threads) {
		select {
		case id := <-created:
			seen[id] = true
		case <-time.After(jdwptest.Timeout):
			t.Fatalf("reported created %v of %+v", seen, s.Threads)
		}
	}
	for _, th := range s.Threads {
		if !seen[th.ID] {
			t.Errorf("thread %d (%s) never reported created", th.ID, th.Name)
		}
	}
}

// yielder is an interceptor keeping a state of its own (relay.Yielder, as
// the speculator's held moment): it counts the yields asked of it.
type yielder struct{ n atomic.Int32 }

func (*yielder) FromDebugger(*relay.Session, *relay.Frame) relay.Action { return relay.Forward }
func (*yielder) FromVM(*relay.Session, *relay.Frame) relay.Action       { return relay.Forward }
func (*yielder) Close(*relay.Session)                                   {}
func (y *yielder) Yield(*relay.Session, *relay.Outbox)                  { y.n.Add(1) }

// TestTapYieldsBeforeItsRequests: the tap's own requests, sent while a
// debugger's session runs, find the VM as the program left it: the
// session's hooks holding a state of their own are asked to end it first
// (relay.Session.Yield). Fails with the tap sending without yielding.
func TestTapYieldsBeforeItsRequests(t *testing.T) {
	vm := jdwptest.StartDDMVM(t, fakevm.Config{Profile: fakevm.Dalvik, Seed: 3})
	h := startHolder(t, vm.Addr(), nil)
	mon := h.Monitor()
	y := &yielder{}
	addr := proxyWith(t, h, func(*relay.Session) relay.Hooks { return relay.Hooks{Interceptors: []relay.Interceptor{y}} })
	d := attach(t, addr)
	d.send(jdwp.AppendCommand(nil, 1, jdwp.CmdIDSizes, nil))
	d.next("IDSizes reply", replyTo(1), nil)
	wait(t, mon, "debugger seen", func(s ddmtap.Snapshot) bool { return s.DebuggerAttached })
	before := mon.Snapshot().Heap
	if err := mon.RequestHeap(); err != nil {
		t.Fatal(err)
	}
	wait(t, mon, "a heap walk during the session", func(s ddmtap.Snapshot) bool { return s.Heap != nil && s.Heap != before })
	if y.n.Load() == 0 {
		t.Error("the tap sent its requests during the session without asking the hooks to yield")
	}
}
