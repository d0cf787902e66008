package ddmlibtest

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/ddmtap"
	"github.com/jdwpaccel/jdwpaccel/ddmtap/fakevm"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/share"
	"github.com/rs/zerolog"
)

// TestDdmlibObservesBesideDebugger: on a fake Android VM behind the proxy
// (DDM holder, relay, the shared-VM hub), a debugger attaches first (the
// controller) and Google's ddmlib second, as a DDM observer: ddmlib sees
// the VM's identity and its threads, live, while the debugger's session
// goes on untouched; the debugger never sees a DDM chunk it did not ask
// for.
func TestDdmlibObservesBesideDebugger(t *testing.T) {
	vm := jdwptest.StartDDMVM(t, vmConfig(fakevm.Dalvik))
	h := ddmtap.NewHolder(ddmtap.HolderConfig{
		Addr: vm.Addr(), KnownDDM: true, Logger: zerolog.Nop(), ReconnectDelay: 10 * time.Millisecond,
		Options: ddmtap.Options{PollInterval: 100 * time.Millisecond, ReplyTimeout: time.Second},
	})
	ctx, cancel := context.WithCancel(context.Background())
	hdone := make(chan struct{})
	go func() { h.Run(ctx); close(hdone) }()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	front := share.NewFront(vm.Addr(), share.Config{Logger: zerolog.Nop()})
	sdone := make(chan struct{})
	go func() {
		share.Serve(ctx, relay.NewServer(relay.Config{DialVM: h.Dial, Logger: zerolog.Nop()}), front, ln, nil, 0)
		close(sdone)
	}()
	t.Cleanup(func() { cancel(); <-sdone; <-hdone })
	addr := ln.Addr().String()

	dbg, err := jdwptest.Attach(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer dbg.Close()
	version := func(when string) {
		t.Helper()
		p, err := dbg.Call(jdwp.CmdVirtualMachineVersion, nil)
		if err != nil || p.ErrorCode() != 0 {
			t.Fatalf("%s: the debugger's Version: %v, %v", when, p, err)
		}
	}
	version("alone")

	peer := startPeer(t, addr, testPID)
	checkIdentity(t, fakevm.Dalvik, peer.connected())
	jdwptest.Await(t, "ddmlib attached as an observer", front.Changed, func() (bool, string) {
		cl := front.Clients()
		return len(cl) == 2 && cl[0].Role == "controller" && cl[1].Role == "observer", ""
	})
	version("beside ddmlib")
	peer.send("threads on")
	want := vm.Threads()
	peer.wait("ddmlib's THCR burst", func(s ClientState) bool { return sameNames(s, want) })
	threadTable(peer, want)
	vm.Churn()
	vm.Churn()
	want = vm.Threads()
	peer.wait("THCR/THDE/THNM after churn", func(s ClientState) bool { return sameNames(s, want) })
	version("after ddmlib's threads")
	noErrors(t, peer)

	// The debugger asked for no DDM: it got none of ddmlib's chunks.
	if p, err := dbg.NextWithin(100 * time.Millisecond); err == nil {
		t.Fatalf("the debugger got %v", p)
	}
	if got := front.Denied(); got != 0 {
		t.Errorf("%d of ddmlib's commands were refused", got)
	}
}
