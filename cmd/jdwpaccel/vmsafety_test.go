package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// These tests hold the proxy to the rule that everything it sends a VM on
// its own is something a careful debugger could send in that state, with
// IDs the VM handed out and valid for that command, against real HotSpot
// VMs (which validate little and crash on some invalid input).

// wireCheck sits between the proxy and a VM, forwards both ways, and
// checks every command the VM receives: no command set of 128 or more
// (HotSpot 17 reads it as a negative index into its dispatch table), and
// every ObjectReference.GetValues asks only fields that the VM's own
// replies list for the object's class or a superclass.
type wireCheck struct {
	t  *testing.T
	ln net.Listener
	vm string

	mu       sync.Mutex // guards the fields below
	problems []string
	sizes    jdwp.IDSizes
	haveSize bool
	pending  map[uint32]jdwp.Packet // commands to the VM awaiting replies
	objType  map[uint64]uint64      // object -> class (ReferenceType replies)
	fields   map[uint64][]uint64    // class -> declared fields (Fields replies)
	super    map[uint64]uint64      // class -> superclass
	commands int                    // commands seen toward the VM
	own      int                    // of which the proxy's own (speculation, DDM)
	getVals  int                    // ObjectReference.GetValues checked
}

func newWireCheck(t *testing.T, vmAddr string) *wireCheck {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w := &wireCheck{t: t, ln: ln, vm: vmAddr, pending: map[uint32]jdwp.Packet{},
		objType: map[uint64]uint64{}, fields: map[uint64][]uint64{}, super: map[uint64]uint64{}}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() { defer wg.Done(); w.serve(c) }()
		}
	}()
	return w
}

func (w *wireCheck) Addr() string { return w.ln.Addr().String() }

func (w *wireCheck) serve(c net.Conn) {
	defer c.Close()
	vm, err := net.Dial("tcp", w.vm)
	if err != nil {
		return
	}
	defer vm.Close()
	done := make(chan struct{}, 2)
	go func() { w.pump(c, vm, true); done <- struct{}{} }()
	go func() { w.pump(vm, c, false); done <- struct{}{} }()
	<-done
}

// pump copies src to dst packet by packet after the handshake, checking
// each packet.
func (w *wireCheck) pump(src, dst net.Conn, toVM bool) {
	defer dst.Close()
	hs := make([]byte, len(jdwp.Handshake))
	if _, err := io.ReadFull(src, hs); err != nil {
		return
	}
	if _, err := dst.Write(hs); err != nil {
		return
	}
	r := jdwp.NewReader(src, 0)
	for {
		p, err := r.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !strings.Contains(err.Error(), "reset") {
				w.t.Logf("wire check: %v", err)
			}
			return
		}
		if toVM {
			w.command(p)
		} else if p.IsReply() {
			w.reply(p)
		}
		if _, err := dst.Write(p); err != nil {
			return
		}
	}
}

func (w *wireCheck) command(p jdwp.Packet) {
	if p.IsReply() {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.commands++
	own := p.ID() >= 0xA0000000 // speculation or DDM (retag.SyntheticBase)
	if own {
		w.own++
	}
	if p.Cmd().Set >= 128 {
		w.problems = append(w.problems, fmt.Sprintf("%v (command set %d) sent to a HotSpot VM (own: %v)", p.Cmd(), p.Cmd().Set, own))
	}
	w.pending[p.ID()] = append(jdwp.Packet(nil), p...)
	if p.Cmd() != jdwp.CmdObjectReferenceGetValues || !w.haveSize {
		return
	}
	w.getVals++
	r := jdwp.NewBodyReader(p.Body(), w.sizes)
	obj := r.ObjectID()
	n := r.Count(w.sizes.FieldID)
	t, known := w.objType[obj]
	for i := 0; i < n && r.Err() == nil; i++ {
		f := r.FieldID()
		if !known {
			w.problems = append(w.problems, fmt.Sprintf("GetValues on object %#x of a class never reported (own: %v)", obj, own))
			return
		}
		if !w.declares(t, f) {
			w.problems = append(w.problems, fmt.Sprintf("GetValues on object %#x of class %#x with field %#x not of that class or a superclass (own: %v)", obj, t, f, own))
		}
	}
}

// declares says whether class t or a known superclass declares field f.
func (w *wireCheck) declares(t, f uint64) bool {
	for hops := 0; t != 0 && hops < 64; hops++ {
		for _, d := range w.fields[t] {
			if d == f {
				return true
			}
		}
		t = w.super[t]
	}
	return false
}

func (w *wireCheck) reply(p jdwp.Packet) {
	w.mu.Lock()
	defer w.mu.Unlock()
	cmd, ok := w.pending[p.ID()]
	delete(w.pending, p.ID())
	if !ok || p.ErrorCode() != jdwp.ErrorNone {
		return
	}
	sz := w.sizes
	params := jdwp.NewBodyReader(cmd.Body(), sz)
	r := jdwp.NewBodyReader(p.Body(), sz)
	switch cmd.Cmd() {
	case jdwp.CmdIDSizes:
		if s, err := jdwp.ParseIDSizes(p.Body()); err == nil {
			w.sizes, w.haveSize = s, true
		}
	case jdwp.CmdObjectReferenceReferenceType:
		obj := params.ObjectID()
		r.Uint8()
		w.objType[obj] = r.ReferenceTypeID()
	case jdwp.CmdClassTypeSuperclass:
		c := params.ReferenceTypeID()
		w.super[c] = r.ReferenceTypeID()
	case jdwp.CmdReferenceTypeFields, jdwp.CmdReferenceTypeFieldsWithGeneric:
		c := params.ReferenceTypeID()
		n := r.Count(sz.FieldID)
		for i := 0; i < n && r.Err() == nil; i++ {
			w.fields[c] = append(w.fields[c], r.FieldID())
			r.StringBytes()
			r.StringBytes()
			if cmd.Cmd() == jdwp.CmdReferenceTypeFieldsWithGeneric {
				r.StringBytes()
			}
			r.Int32()
		}
	}
}

// check fails the test on any problem and returns the counts.
func (w *wireCheck) check() (commands, own, getValues int) {
	w.t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.problems {
		w.t.Error(p)
	}
	return w.commands, w.own, w.getVals
}

// TestHotSpotSurvivesProxyWorkdirSweep: started from working directories
// whose absolute paths are 20 to 130 characters long (which moves HotSpot's
// heap layout around: with a DDM HELO sent on first contact, lengths 40,
// 50, 90 and 100 crashed OpenJDK 17 every time on the machine this was
// found on), a suspend=y JVM must survive the default proxy's start and an
// IDE-like session through it, and receive no vendor command set.
func TestHotSpotSurvivesProxyWorkdirSweep(t *testing.T) {
	b := jdwptest.JavaBuild(t)
	root, err := os.MkdirTemp("/tmp", "w")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	for _, n := range []int{20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120, 130} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			dir := filepath.Join(root, strings.Repeat("d", n-len(root)-1))
			if len(dir) != n {
				t.Fatalf("path %q is %d long", dir, len(dir))
			}
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			vm, err := javavm.Start(testCtx(t), b, javavm.Shallow, javavm.VMOptions{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(vm.Stop)
			w := newWireCheck(t, vm.Addr())
			addr, logs := startProxy(t, w.Addr(), "--log-level", "debug")
			res, err := javavm.RunDriver(testCtx(t), b, javavm.DriverOptions{
				Addr: addr, Profile: javavm.ProfileIdeaLike, Debuggee: javavm.Shallow, Steps: 3, Warmup: 1})
			select {
			case <-vm.Done():
				t.Fatalf("the JVM died:\n%s", vm.Output())
			default:
			}
			if err != nil {
				t.Fatalf("IDE-like session through the proxy: %v\nJVM output:\n%s\nproxy log:\n%s", err, vm.Output(), logs)
			}
			if len(res.Stops) != 4 {
				t.Fatalf("%d stops, want 4", len(res.Stops))
			}
			cmds, own, _ := w.check()
			t.Logf("cwd length %d: JVM alive after %d commands (%d the proxy's own)", n, cmds, own)
		})
	}
}

// TestSpeculatorFieldIDsAcrossLayouts drives the speculator over objects
// of 24 classes with different field layouts taking turns in the same
// locals, against a real JVM: every ObjectReference.GetValues the VM gets
// (the debugger's and the proxy's) names only fields of the object's class
// or its superclasses, and every stop looks as it does directly.
func TestSpeculatorFieldIDsAcrossLayouts(t *testing.T) {
	b := jdwptest.JavaBuild(t)
	opts := javavm.DriverOptions{Profile: javavm.ProfileIdeaLike, Debuggee: javavm.Layouts, Steps: 40, Warmup: 1, Dump: true}
	opts.Addr = jdwptest.StartJava(t, b, javavm.Layouts).Addr()
	direct, err := javavm.RunDriver(testCtx(t), b, opts)
	if err != nil {
		t.Fatal(err)
	}
	vm := jdwptest.StartJava(t, b, javavm.Layouts)
	w := newWireCheck(t, vm.Addr())
	var logs *jdwptest.Buffer
	opts.Addr, logs = startProxy(t, w.Addr())
	proxied, err := javavm.RunDriver(testCtx(t), b, opts)
	if err != nil {
		t.Fatalf("%v\nproxy log:\n%s", err, logs)
	}
	select {
	case <-vm.Done():
		t.Fatalf("the JVM died:\n%s", vm.Output())
	default:
	}
	if len(direct.Stops) != len(proxied.Stops) || len(direct.Stops) == 0 {
		t.Fatalf("direct saw %d stops, proxied %d", len(direct.Stops), len(proxied.Stops))
	}
	for i := range direct.Stops {
		if d, p := direct.Stops[i], proxied.Stops[i]; d.Digest != p.Digest {
			t.Fatalf("stop %d differs:\n--- direct\n%s\n--- proxied\n%s", i, d.Text, p.Text)
		}
	}
	cmds, own, getValues := w.check()
	if own == 0 || getValues == 0 {
		t.Fatalf("nothing to check: %d commands, %d speculative, %d GetValues", cmds, own, getValues)
	}
	t.Logf("%d commands to the VM, %d speculative, %d ObjectReference.GetValues checked", cmds, own, getValues)
}
