package ddmtap_test

import (
	"context"
	"net"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/ddm"
	"github.com/jdwpaccel/jdwpaccel/ddmtap"
	"github.com/jdwpaccel/jdwpaccel/ddmtap/fakevm"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/retag"
	"github.com/jdwpaccel/jdwpaccel/speculator"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// TestDebuggerIDsInProxyRanges: a debugger whose packet IDs fall in the
// block the DDM client used to own (0x50000000) and in the proxy's range
// (retag.SyntheticBase, where the DDM client and the speculator now both
// take theirs) gets, through the whole hook chain (the held connection's
// DDM tap, then the speculator), exactly one reply to each command, with
// its own ID and the right body, while the DDM client keeps polling with
// IDs of the same table.
func TestDebuggerIDsInProxyRanges(t *testing.T) {
	vm := jdwptest.StartDDMVM(t, fakevm.Config{Profile: fakevm.Dalvik, Seed: 3, AppName: "com.example.ids"})
	h := startHolder(t, vm.Addr(), ddmtap.NewMetrics(prometheus.NewRegistry()))
	// The held connection's DDM client is polling (THST) with IDs from
	// the connection's table before the debugger arrives.
	wait(t, h.Monitor(), "DDM threads", func(s ddmtap.Snapshot) bool {
		return s.Identity.DDM == ddmtap.DDMYes && len(s.Threads) == 4
	})

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sp := speculator.New(speculator.Config{}, zerolog.Nop(), nil)
	srv := relay.NewServer(relay.Config{DialVM: h.Dial, NewHooks: sp.Hooks, Logger: zerolog.Nop()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Serve(ctx, ln); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	d := attach(t, ln.Addr().String())

	version := jdwp.Cmd{Set: jdwp.SetVirtualMachine, Cmd: 1}
	allThreads := jdwp.Cmd{Set: jdwp.SetVirtualMachine, Cmd: 4}
	sent := map[uint32]jdwp.Cmd{}
	var batch []byte
	add := func(id uint32, c jdwp.Cmd, body []byte) {
		if _, dup := sent[id]; dup {
			t.Fatalf("test bug: ID %#x twice", id)
		}
		sent[id] = c
		batch = append(batch, jdwp.AppendCommand(nil, id, c, body)...)
	}
	cmds := []jdwp.Cmd{version, jdwp.CmdIDSizes, allThreads}
	for i := uint32(0); i < 16; i++ {
		add(0x50000000+i, cmds[i%3], nil)
	}
	// The first IDs of the range are those the DDM client took first, and
	// the next ones those it is taking while the debugger sends.
	for i := uint32(0); i < 64; i++ {
		add(retag.SyntheticBase+i, cmds[i%3], nil)
	}
	add(0xFFFFFFFF, version, nil)
	add(7, allThreads, nil)
	helo := ddm.AppendCommand(nil, retag.SyntheticBase+100, ddm.U4{T: ddm.TypeHELO, V: 1})
	sent[retag.SyntheticBase+100] = jdwp.CmdDDMChunk
	batch = append(batch, helo...)
	d.send(batch)

	got := map[uint32]bool{}
	for len(got) < len(sent) {
		p, err := d.r.Next()
		if err != nil {
			t.Fatalf("after %d of %d replies: %v", len(got), len(sent), err)
		}
		if !p.IsReply() {
			continue // a VM-originated chunk or event
		}
		c, ok := sent[p.ID()]
		switch {
		case !ok:
			t.Fatalf("reply with ID %#x, which the debugger never used: %v", p.ID(), p)
		case got[p.ID()]:
			t.Fatalf("second reply to %#x", p.ID())
		case p.ErrorCode() != jdwp.ErrorNone:
			t.Fatalf("reply to %#x (%v): error %v", p.ID(), c, p.ErrorCode())
		}
		got[p.ID()] = true
		checkBody(t, c, p)
	}
	// Nothing else follows: the next reply is to the next command.
	d.send(jdwp.AppendCommand(nil, 8, jdwp.CmdIDSizes, nil))
	for {
		p, err := d.r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if p.IsReply() {
			if p.ID() != 8 {
				t.Fatalf("extra reply %v; want only the reply to 8", p)
			}
			break
		}
	}
	d.c.Close()
}

// checkBody checks that a reply's body is one the fake VM gives to c.
func checkBody(t *testing.T, c jdwp.Cmd, p jdwp.Packet) {
	t.Helper()
	r := jdwp.NewBodyReader(p.Body(), jdwp.IDSizes{ObjectID: 8})
	switch c {
	case jdwp.Cmd{Set: jdwp.SetVirtualMachine, Cmd: 1}:
		if s := r.String(); s != "fake dalvik VM" {
			t.Fatalf("reply %#x to %v: description %q", p.ID(), c, s)
		}
	case jdwp.CmdIDSizes:
		if len(p.Body()) != 20 {
			t.Fatalf("reply %#x to %v: %d bytes, want 20", p.ID(), c, len(p.Body()))
		}
	case jdwp.Cmd{Set: jdwp.SetVirtualMachine, Cmd: 4}:
		if n := r.Int32(); n != 4 || len(p.Body()) != 4+4*8 {
			t.Fatalf("reply %#x to %v: %d threads in %d bytes", p.ID(), c, n, len(p.Body()))
		}
	case jdwp.CmdDDMChunk:
		if typ, _ := firstChunkType(p.Body()); typ != ddm.TypeHELO {
			t.Fatalf("reply %#x to %v: chunk %v, want HELO", p.ID(), c, typ)
		}
	}
}
