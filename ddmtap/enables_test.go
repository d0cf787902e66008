package ddmtap

import (
	"bytes"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/ddm"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/retag"
)

// enableRig is a link during a session: the proxy's requests are captured,
// the debugger's go through the tap.
type enableRig struct {
	t    *testing.T
	l    *link
	tp   tap
	sent []jdwp.Packet
}

func newEnableRig(t *testing.T) *enableRig {
	mon := NewMonitor("vm", nopLog, nil)
	mon.setDDM(DDMYes) // the VM answered HELO
	r := &enableRig{t: t, l: newLink(mon, nopLog, Options{}, retag.NewTable(), true)}
	r.tp = tap{l: r.l}
	r.l.setSend(func(p jdwp.Packet) error { r.sent = append(r.sent, p.Clone()); return nil })
	return r
}

// proxy sends one of the proxy's requests and returns the chunk data the
// VM got.
func (r *enableRig) proxy(p ddm.Payload) []byte {
	r.t.Helper()
	n := len(r.sent)
	if err := r.l.request(p); err != nil || len(r.sent) != n+1 {
		r.t.Fatalf("proxy request %v: %v", p.ChunkType(), err)
	}
	return chunkData(r.sent[n])
}

// debugger passes one of the debugger's requests through the tap and
// returns the chunk data the VM gets.
func (r *enableRig) debugger(id uint32, p ddm.Payload) []byte {
	r.t.Helper()
	pkt := ddm.AppendCommand(nil, id, p)
	f := relay.Frame{Dir: relay.ToVM, Kind: relay.KindCommand, Packet: pkt, ID: id, Cmd: pkt.Cmd()}
	if r.tp.FromDebugger(nil, &f) != relay.Forward {
		r.t.Fatalf("debugger's %v not forwarded", p.ChunkType())
	}
	if f.Packet.ID() != id || len(f.Packet) != len(ddm.AppendCommand(nil, id, p)) {
		r.t.Fatalf("debugger's %v changed beyond its data: %x", p.ChunkType(), []byte(f.Packet))
	}
	return chunkData(f.Packet)
}

// vm passes a VM-originated chunk through the tap; it returns whether the
// debugger gets it, and the data it gets.
func (r *enableRig) vm(p ddm.Payload) (bool, []byte) {
	r.t.Helper()
	pkt := ddm.AppendCommand(nil, 0x10000001, p)
	f := relay.Frame{Dir: relay.ToDebugger, Kind: relay.KindDDM, Packet: pkt, Cmd: pkt.Cmd()}
	fwd := r.tp.FromVM(nil, &f) == relay.Forward
	return fwd, chunkData(f.Packet)
}

// chunkData is the data of a DDM packet's first chunk.
func chunkData(p jdwp.Packet) []byte {
	it := ddm.NewChunks(p.Body())
	c, _ := it.Next()
	return c.Data
}

func heapInfo(reason uint8) ddm.HeapInfo {
	return ddm.HeapInfo{Heaps: []ddm.HeapSummary{{HeapID: 1, TimeMs: 42, Reason: reason, MaxSize: 1 << 20, Size: 4096, Allocated: 1024, Objects: 3}}}
}

func want(t *testing.T, what string, got []byte, want ...byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: the VM got % x, want % x", what, got, want)
	}
}

// TestDebuggerDisablesKeepProxyEnables: with the proxy monitoring threads
// and heap, ddmlib's disables (THEN 0, HPIF 0, HPSG 0,0, NHSG 0,1) reach
// the VM rewritten to the proxy's enables, while the debugger gets only
// the chunks it enabled.
func TestDebuggerDisablesKeepProxyEnables(t *testing.T) {
	r := newEnableRig(t)
	want(t, "proxy THEN(1)", r.proxy(ddm.U1{T: ddm.TypeTHEN, V: 1}), 1)
	if err := r.l.enableHeap(); err != nil {
		t.Fatal(err)
	}
	want(t, "proxy HPIF(3)", r.sent[1].Body()[8:], 3)
	want(t, "proxy HPSG(1,0)", r.sent[2].Body()[8:], 1, 0)
	want(t, "proxy NHSG(1,0)", r.sent[3].Body()[8:], 1, 0)

	// ddmlib's connect: HPIF(0) (and the user turning things off).
	want(t, "debugger HPIF(0)", r.debugger(0x40000001, ddm.U1{T: ddm.TypeHPIF, V: 0}), 3)
	want(t, "debugger THEN(0)", r.debugger(0x40000002, ddm.U1{T: ddm.TypeTHEN, V: 0}), 1)
	want(t, "debugger HPSG(0,0)", r.debugger(0x40000003, ddm.SegmentRequest{T: ddm.TypeHPSG}), 1, 0)
	want(t, "debugger NHSG(0,1)", r.debugger(0x40000004, ddm.SegmentRequest{T: ddm.TypeNHSG, When: 0, What: 1}), 1, 0)
	// Requests the VM rejects or that change no setting pass unchanged.
	want(t, "debugger HPIF(7)", r.debugger(0x40000005, ddm.U1{T: ddm.TypeHPIF, V: 7}), 7)
	want(t, "debugger HPSG(2,0)", r.debugger(0x40000006, ddm.SegmentRequest{T: ddm.TypeHPSG, When: 2}), 2, 0)

	for _, c := range []ddm.Payload{
		ddm.ThreadName{T: ddm.TypeTHCR, ID: 9, Name: "w"}, ddm.U4{T: ddm.TypeTHDE, V: 9}, ddm.ThreadName{T: ddm.TypeTHNM, ID: 9, Name: "x"},
		heapInfo(3), ddm.U4{T: ddm.TypeHPST, V: 1}, ddm.HeapSegment{T: ddm.TypeHPSG, HeapID: 1, Unit: 8, Units: 1, Runs: []byte{1, 0}}, ddm.U4{T: ddm.TypeHPEN, V: 1},
		ddm.U4{T: ddm.TypeNHST, V: 1}, ddm.U4{T: ddm.TypeNHEN, V: 1},
	} {
		if fwd, _ := r.vm(c); fwd {
			t.Fatalf("the debugger got %v it turned off", c.ChunkType())
		}
	}
	if fwd, _ := r.vm(ddm.U1{T: ddm.TypeWAIT}); !fwd {
		t.Fatal("WAIT (no enable) did not reach a DDM debugger")
	}
	// The monitor saw all of it.
	if s := r.l.mon.Snapshot(); len(s.HeapInfo) != 1 || len(s.DeadThreads) != 1 {
		t.Fatalf("monitor: heap info %+v, dead threads %+v", s.HeapInfo, s.DeadThreads)
	}

	// HPIF(1): one-shot for the debugger, the setting stays.
	want(t, "debugger HPIF(1)", r.debugger(0x40000007, ddm.U1{T: ddm.TypeHPIF, V: 1}), 1)
	if fwd, _ := r.vm(heapInfo(1)); !fwd {
		t.Fatal("the debugger did not get the HPIF it asked for now")
	}
	if fwd, _ := r.vm(heapInfo(1)); fwd {
		t.Fatal("the debugger got a second HPIF for one HPIF(1)")
	}
	// HPIF(2): the VM stays at every GC for the proxy; the debugger gets the
	// next one, labelled as its next-GC one, and no more.
	want(t, "debugger HPIF(2)", r.debugger(0x40000008, ddm.U1{T: ddm.TypeHPIF, V: 2}), 3)
	fwd, data := r.vm(heapInfo(3))
	if !fwd || data[16] != 2 {
		t.Fatalf("next-GC HPIF for the debugger: forwarded %v, reason %d", fwd, data[16])
	}
	if fwd, _ := r.vm(heapInfo(3)); fwd {
		t.Fatal("the debugger's next-GC HPIF was delivered twice")
	}

	// The debugger turns threads and segments on: chunks reach it; off
	// again: the VM still keeps them for the proxy.
	want(t, "debugger THEN(1)", r.debugger(0x40000009, ddm.U1{T: ddm.TypeTHEN, V: 1}), 1)
	want(t, "debugger HPSG(1,0)", r.debugger(0x4000000a, ddm.SegmentRequest{T: ddm.TypeHPSG, When: 1}), 1, 0)
	for _, c := range []ddm.Payload{ddm.ThreadName{T: ddm.TypeTHCR, ID: 10, Name: "v"}, ddm.U4{T: ddm.TypeHPST, V: 1}, ddm.U4{T: ddm.TypeHPEN, V: 1}} {
		if fwd, _ := r.vm(c); !fwd {
			t.Fatalf("the debugger did not get %v it enabled", c.ChunkType())
		}
	}
	want(t, "debugger THEN(0) again", r.debugger(0x4000000b, ddm.U1{T: ddm.TypeTHEN, V: 0}), 1)
	if fwd, _ := r.vm(ddm.ThreadName{T: ddm.TypeTHCR, ID: 11, Name: "u"}); fwd {
		t.Fatal("THCR reached the debugger after its THEN(0)")
	}
}

// TestProxyEnablesKeepDebuggerEnables: the other way round. The debugger
// enabled first (HPSO segments, every-GC summaries); the proxy's later
// enables and its disables on the way out keep what the debugger asked.
func TestProxyEnablesKeepDebuggerEnables(t *testing.T) {
	r := newEnableRig(t)
	want(t, "debugger HPSG(1,1)", r.debugger(0x40000001, ddm.SegmentRequest{T: ddm.TypeHPSG, When: 1, What: 1}), 1, 1)
	want(t, "debugger HPIF(3)", r.debugger(0x40000002, ddm.U1{T: ddm.TypeHPIF, V: 3}), 3)
	want(t, "debugger THEN(1)", r.debugger(0x40000003, ddm.U1{T: ddm.TypeTHEN, V: 1}), 1)
	if err := r.l.enableHeap(); err != nil {
		t.Fatal(err)
	}
	want(t, "proxy HPIF(3)", r.sent[0].Body()[8:], 3)
	want(t, "proxy HPSG(1,0) with the debugger's HPSO", r.sent[1].Body()[8:], 1, 1)
	want(t, "proxy NHSG(1,0)", r.sent[2].Body()[8:], 1, 0)
	want(t, "proxy THEN(0)", r.proxy(ddm.U1{T: ddm.TypeTHEN, V: 0}), 1)
	want(t, "proxy HPIF(0)", r.proxy(ddm.U1{T: ddm.TypeHPIF, V: 0}), 3)
	want(t, "proxy HPSG(0,0)", r.proxy(ddm.SegmentRequest{T: ddm.TypeHPSG}), 1, 1)
	want(t, "proxy NHSG(0,0)", r.proxy(ddm.SegmentRequest{T: ddm.TypeNHSG}), 0, 0)
	// Nobody wants threads any more once both sides turned them off.
	want(t, "debugger THEN(0)", r.debugger(0x40000004, ddm.U1{T: ddm.TypeTHEN, V: 0}), 0)
	if fwd, _ := r.vm(ddm.HeapSegment{T: ddm.TypeHPSO, HeapID: 1, Unit: 8, Units: 1, Runs: []byte{1, 0}}); !fwd {
		t.Fatal("HPSO did not reach the debugger that asked for it")
	}
}

// TestPlainDebuggerGetsNoDDM: a debugger that never sent DDM gets no
// VM-originated chunk at all.
func TestPlainDebuggerGetsNoDDM(t *testing.T) {
	r := newEnableRig(t)
	for _, c := range []ddm.Payload{ddm.U1{T: ddm.TypeWAIT}, heapInfo(1), ddm.ThreadName{T: ddm.TypeTHCR, ID: 1, Name: "main"}} {
		if fwd, _ := r.vm(c); fwd {
			t.Fatalf("%v reached a debugger that speaks no DDM", c.ChunkType())
		}
	}
}
