package push

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/speculator"
	"github.com/jdwpaccel/jdwpaccel/split"
	"github.com/rs/zerolog"
)

// splitLink runs split mode's two ends in front of vm, over the split
// stream (preamble and all), each asking for the attach bundle or
// offering it as attach says, and attaches a debugger to the near end
// (without a command yet); seen counts what reached the far end from the
// near end.
func splitLink(t *testing.T, vm *jdwptest.VM, cfg Config, attach bool) (*jdwptest.Debugger, *fromNear) {
	t.Helper()
	seen := &fromNear{n: map[jdwp.Cmd]int{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	far := split.NewFar(split.FarConfig{Relay: relay.Config{DialVM: relay.DialTCP(vm.Addr()), Logger: zerolog.Nop()},
		Hooks: relay.ChainHooks(FarHooks(newSpec(), cfg), func(*relay.Session) relay.Hooks {
			return relay.Hooks{Observers: []relay.Observer{seen}}
		}), Attach: attach, Logger: zerolog.Nop()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); far.Serve(ctx, ln) }() //nolint:errcheck // nil after cancel
	t.Cleanup(func() { cancel(); <-done })
	nearAddr := serve(t, relay.Config{DialVM: split.Dialer(split.NearConfig{Addr: ln.Addr().String(), Attach: attach, Logger: zerolog.Nop()}),
		NewHooks: NearHooks(newSpec(), cfg), Logger: zerolog.Nop()})
	d, err := jdwptest.Attach(nearAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, seen
}

// attachScript is vmScript with the rest of what a debugger asks first.
func attachScript() map[jdwp.Cmd]jdwptest.ReplyFunc {
	s := vmScript()
	s[jdwp.CmdVirtualMachineVersion] = jdwptest.Body(jdwptest.VersionBody("fake VM", "Fake"))
	s[jdwp.CmdVirtualMachineCapabilitiesNew] = jdwptest.Body(make([]byte, 32))
	return s
}

// TestAttachBundle: with the attach bundle agreed, the debugger's first
// commands (IDSizes, Version, CapabilitiesNew) are answered by the near end
// from the far end's attach bundle: neither they nor a prefetch of the
// near end's own cross the link, however quickly the debugger asks.
func TestAttachBundle(t *testing.T) {
	vm := jdwptest.StartVM(t, jdwptest.Script{Replies: attachScript()})
	cnt := new(Counters)
	d, seen := splitLink(t, vm, Config{Counters: cnt}, true)
	first := []jdwp.Cmd{jdwp.CmdIDSizes, jdwp.CmdVirtualMachineVersion, jdwp.CmdVirtualMachineCapabilitiesNew}
	for _, c := range first {
		r, err := d.Call(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.ErrorCode() != jdwp.ErrorNone || len(r.Body()) == 0 {
			t.Errorf("%v: reply %v", c, r)
		}
	}
	for _, c := range first {
		if n := seen.count(c); n != 0 {
			t.Errorf("%v crossed to the far end %d times, want it answered from the attach bundle", c, n)
		}
		if n := count(vm, c); n != 1 {
			t.Errorf("the VM got %v %d times, want once (the far end's prefetch)", c, n)
		}
	}
	// The near end learned the ID sizes from the bundle: a command with
	// IDs is read and forwarded as usual.
	if _, err := d.Call(jdwp.CmdThreadReferenceName, threadParams(thread1)); err != nil {
		t.Fatal(err)
	}
	if st := cnt.Stats(); st.BundlesReceived != 1 || st.Stored != int64(len(first)) {
		t.Errorf("stats %+v: want one bundle with the %d replies stored", st, len(first))
	}
}

// TestAttachBundleNotAgreed: without the agreement (an end that does not
// ask or offer it) the near end prefetches the attach itself, across the
// link, as before.
func TestAttachBundleNotAgreed(t *testing.T) {
	vm := jdwptest.StartVM(t, jdwptest.Script{Replies: attachScript()})
	cnt := new(Counters)
	d, seen := splitLink(t, vm, Config{Counters: cnt}, false)
	if _, err := d.Call(jdwp.CmdIDSizes, nil); err != nil {
		t.Fatal(err)
	}
	if n := seen.count(jdwp.CmdIDSizes); n != 1 {
		t.Errorf("IDSizes crossed to the far end %d times, want once (the near end's prefetch)", n)
	}
	if st := cnt.Stats(); st.BundlesReceived != 0 {
		t.Errorf("stats %+v: want no bundle", st)
	}
}

// TestNearAttachWaitBound: a far end that agreed to the attach bundle but
// sends nothing holds the debugger's first command for AttachWait at most.
func TestNearAttachWaitBound(t *testing.T) {
	vm := jdwptest.StartVM(t, jdwptest.Script{Replies: attachScript()})
	// A far end without push hooks that says it pushes: nothing comes.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	far := split.NewFar(split.FarConfig{Relay: relay.Config{DialVM: relay.DialTCP(vm.Addr()), Logger: zerolog.Nop()},
		Attach: true, Logger: zerolog.Nop()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); far.Serve(ctx, ln) }() //nolint:errcheck // nil after cancel
	t.Cleanup(func() { cancel(); <-done })
	const wait = 50 * time.Millisecond
	nearAddr := serve(t, relay.Config{DialVM: split.Dialer(split.NearConfig{Addr: ln.Addr().String(), Attach: true, Logger: zerolog.Nop()}),
		NewHooks: NearHooks(newSpec(), Config{AttachWait: wait}), Logger: zerolog.Nop()})
	d, err := jdwptest.Attach(nearAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	start := time.Now()
	r, err := d.Call(jdwp.CmdIDSizes, nil)
	if err != nil || r.ErrorCode() != jdwp.ErrorNone {
		t.Fatalf("IDSizes: %v %v", r, err)
	}
	if el := time.Since(start); el < wait {
		t.Errorf("answered after %v, want the first command held for the bundle (%v)", el, wait)
	}
}

// TestFarEmptyAttachBundle: a VM that does not answer the attach's
// prefetch in time still gets the near end its attach bundle first,
// empty, then what the VM sent meanwhile.
func TestFarEmptyAttachBundle(t *testing.T) {
	release := make(chan struct{})
	script := attachScript()
	script[jdwp.CmdIDSizes] = func(jdwp.Packet) (jdwp.ErrorCode, []byte) {
		<-release
		return 0, idsBody()
	}
	vm := jdwptest.StartVM(t, jdwptest.Script{Replies: script})
	t.Cleanup(func() { close(release) }) // before the VM's own cleanup
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := relay.NewServer(relay.Config{DialVM: relay.DialTCP(vm.Addr()), Logger: zerolog.Nop(),
		NewHooks: FarHooks(newSpec(), Config{MaxHold: 10 * time.Millisecond, AttachWait: 20 * time.Millisecond})})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		srv.ServeConnInfo(ctx, c, relay.LinkInfo{AttachBundle: true}) //nolint:errcheck // ends with the test
	}()
	t.Cleanup(func() { cancel(); ln.Close(); <-done })
	d, err := jdwptest.Attach(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ev := stopEvent(77)
	if err := vm.Send(ev); err != nil {
		t.Fatal(err)
	}
	b := next(t, d)
	if b.IsReply() || b.Cmd() != CmdBundle {
		t.Fatalf("first packet %v, want the attach bundle", b)
	}
	var c codec
	defer c.close()
	p := parser{c: &c}
	h, recs, err := p.parse(b.Body(), false)
	if err != nil || h.Stop != 0 || len(recs) != 0 {
		t.Errorf("attach bundle %+v with %d records (%v), want an empty one for stop 0", h, len(recs), err)
	}
	if e := next(t, d); string(e) != string(ev) {
		t.Errorf("after the attach bundle %v, want the event the VM sent meanwhile", e)
	}
}

// TestAttachUsageIdentifies: the debugger's first command, answered from
// the attach bundle, reaches the far end first, in a usage report for stop
// 0, so the far end knows the debugger (its profile) as if it had seen the
// command.
func TestAttachUsageIdentifies(t *testing.T) {
	vm := jdwptest.StartVM(t, jdwptest.Script{Replies: attachScript()})
	d, seen := splitLink(t, vm, Config{}, true)
	if _, err := d.Call(jdwp.CmdIDSizes, nil); err != nil {
		t.Fatal(err)
	}
	// A miss: forwarded to the far end, after the report.
	if _, err := d.Call(jdwp.CmdThreadReferenceName, threadParams(thread1)); err != nil {
		t.Fatal(err)
	}
	cmds := seen.commands()
	if len(cmds) < 2 || cmds[0].Cmd() != CmdUsage {
		t.Fatalf("commands at the far end %v, want a usage report first", cmds)
	}
	var c codec
	defer c.close()
	p := parser{c: &c}
	h, recs, err := p.parse(cmds[0].Body(), true)
	if err != nil || h.Stop != 0 || len(recs) != 1 || recs[0].Cmd != jdwp.CmdIDSizes {
		t.Errorf("first usage report %+v %+v %v, want stop 0 with the IDSizes", h, recs, err)
	}
}

// TestNearReportsFirstCommand: without an attach bundle too, the
// debugger's first command, answered at the near end (here from its own
// attach prefetch), reaches the far end in a usage report before any
// command of the debugger's: the far end knows the debugger (its profile)
// by it, not by its near end's own commands, which follow the near end's
// profile and differ from session to session. Fails with the report sent
// only when an attach bundle was stored.
func TestNearReportsFirstCommand(t *testing.T) {
	vm := jdwptest.StartVM(t, jdwptest.Script{Replies: attachScript()})
	d, seen := splitLink(t, vm, Config{}, false)
	if _, err := d.Call(jdwp.CmdIDSizes, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Call(jdwp.CmdThreadReferenceName, threadParams(thread1)); err != nil { // forwarded
		t.Fatal(err)
	}
	var c codec
	defer c.close()
	p := parser{c: &c}
	for _, cmd := range seen.commands() {
		switch {
		case cmd.Cmd() == CmdUsage:
			if _, recs, err := p.parse(cmd.Body(), true); err == nil && len(recs) > 0 && recs[0].Cmd == jdwp.CmdIDSizes {
				return
			}
		case cmd.Cmd() == jdwp.CmdThreadReferenceName:
			t.Fatalf("the debugger's Name reached the far end before a report of its first command: %v", seen.commands())
		}
	}
	t.Fatalf("no usage report of the first command among %v", seen.commands())
}

// TestFarIdentifiesByALateReport: the near end's report of the debugger's
// first command still names the debugger (its profile's key) when it
// reaches the far end after the VM's first stop there, a report the far
// end no longer learns reads from: keyed by whatever the near end forwarded
// first, which depends on what the near end knew, the far end learned its
// profile under one key and looked it up under another. Fails with the
// report's first command passed on only with its reads.
func TestFarIdentifiesByALateReport(t *testing.T) {
	vm := jdwptest.StartVM(t, jdwptest.Script{Replies: attachScript()})
	learn := t.TempDir() + "/learn.json"
	sp := speculator.New(speculator.Config{LearnFile: learn}, zerolog.Nop(), nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := relay.NewServer(relay.Config{DialVM: relay.DialTCP(vm.Addr()), NewHooks: FarHooks(sp, Config{MaxHold: time.Minute}), Logger: zerolog.Nop()})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	addr := ln.Addr().String()
	d, err := jdwptest.Attach(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	start := jdwp.Composite{SuspendPolicy: jdwp.SuspendAll, Events: []jdwp.Event{{Kind: jdwp.EventVMStart, Thread: thread1}}}
	ev := jdwp.AppendCommand(nil, 1, jdwp.CmdComposite, jdwptest.AppendComposite(nil, sizes8, &start))
	if err := vm.Send(ev); err != nil {
		t.Fatal(err)
	}
	for p := next(t, d); string(p) != string(ev); p = next(t, d) {
	}
	var c codec
	defer c.close()
	late := appendBody(nil, Header{Records: 1}, appendUsage(nil, jdwp.CmdIDSizes, nil), &c)
	if _, err := d.Call(CmdUsage, late); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Call(jdwp.CmdVirtualMachineVersion, nil); err != nil { // forwarded
		t.Fatal(err)
	}
	d.Close()
	cancel() // Serve returns once every session ended: its profile kept
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(learn)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("/%d.%d", jdwp.CmdIDSizes.Set, jdwp.CmdIDSizes.Cmd)
	for k := range m {
		if !strings.HasSuffix(k, want) {
			t.Errorf("the far end learned its profile under %q, want the debugger's first command's %q", k, want)
		}
	}
	if len(m) == 0 {
		t.Error("the far end learned no profile")
	}
}
