package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// staleIDs is what a Harmony-style multi-session test sees: a class and
// its class object's IDs taken in one session, used first thing in the
// next session on the same VM.
type staleIDs struct {
	objectRefType jdwp.ErrorCode // ObjectReference.ReferenceType(class object)
	signature     jdwp.ErrorCode // ReferenceType.Signature(class)
	threadName    jdwp.ErrorCode // ThreadReference.Name(a thread of session 1)
	isCollected   string         // ObjectReference.IsCollected(class object): error and body
}

func call(t *testing.T, d *jdwptest.Debugger, cmd jdwp.Cmd, body []byte) jdwp.Packet {
	t.Helper()
	r, err := d.Call(cmd, body)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// staleSessions runs two sessions through addr to vm: the first takes
// IDs and disposes, the second, once the agent listens again, uses them
// at once.
func staleSessions(t *testing.T, ctx context.Context, vm *javavm.VM, addr string) staleIDs {
	t.Helper()
	d, err := jdwptest.Attach(addr)
	if err != nil {
		t.Fatal(err)
	}
	sizes, err := jdwp.ParseIDSizes(call(t, d, jdwp.CmdVirtualMachineIDSizes, nil).Body())
	if err != nil {
		t.Fatal(err)
	}
	// A debugger's usual lookups: the first names the stale IDs; through
	// jdwpaccel, the next session's attach prefetch asks them all again.
	var class uint64
	for _, sig := range []string{"Ljava/lang/Thread;", "Ljava/lang/String;", "Ljava/lang/Object;",
		"Ljava/lang/Class;", "Ljava/lang/System;", "Ljava/lang/Integer;"} {
		w := jdwp.BodyWriter{Sizes: sizes}
		w.String(sig)
		br := jdwp.NewBodyReader(call(t, d, jdwp.CmdVirtualMachineClassesBySignature, w.Buf).Body(), sizes)
		if br.Int32() != 1 {
			t.Fatalf("%s not found", sig)
		}
		br.Uint8()
		if id := br.ReferenceTypeID(); class == 0 {
			class = id
		}
	}
	w := jdwp.BodyWriter{Sizes: sizes}
	w.ReferenceTypeID(class)
	classObject := jdwp.NewBodyReader(call(t, d, jdwp.CmdReferenceTypeClassObject, w.Buf).Body(), sizes).ObjectID()
	br := jdwp.NewBodyReader(call(t, d, jdwp.CmdVirtualMachineAllThreads, nil).Body(), sizes)
	n := br.Int32()
	var thread uint64
	for range n {
		thread = br.ObjectID() // the last: the highest ID
	}
	if br.Err() != nil || classObject == 0 || thread == 0 {
		t.Fatalf("session 1: class object %#x, thread %#x, %v", classObject, thread, br.Err())
	}
	call(t, d, jdwp.CmdVirtualMachineDispose, nil)
	d.Close()

	if _, err := vm.NextListen(ctx); err != nil {
		t.Fatal(err)
	}
	d, err = jdwptest.Attach(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	call(t, d, jdwp.CmdVirtualMachineIDSizes, nil)
	call(t, d, jdwp.CmdVirtualMachineVersion, nil)
	var got staleIDs
	w = jdwp.BodyWriter{Sizes: sizes}
	w.ObjectID(classObject)
	got.objectRefType = call(t, d, jdwp.CmdObjectReferenceReferenceType, w.Buf).ErrorCode()
	w = jdwp.BodyWriter{Sizes: sizes}
	w.ReferenceTypeID(class)
	got.signature = call(t, d, jdwp.CmdReferenceTypeSignature, w.Buf).ErrorCode()
	w = jdwp.BodyWriter{Sizes: sizes}
	w.ObjectID(thread)
	got.threadName = call(t, d, jdwp.CmdThreadReferenceName, w.Buf).ErrorCode()
	w = jdwp.BodyWriter{Sizes: sizes}
	w.ObjectID(classObject)
	r := call(t, d, jdwp.CmdObjectReferenceIsCollected, w.Buf)
	got.isCollected = fmt.Sprintf("%v %x", r.ErrorCode(), r.Body())
	call(t, d, jdwp.CmdVirtualMachineDispose, nil)
	return got
}

// TestStaleIDsAsDirect: an ID kept from an earlier session gets the
// VM's INVALID_OBJECT (and counts as collected) through a speculating
// jdwpaccel, and in split mode, as it does directly, though the proxy's attach prefetch made the VM
// hand it out again (to the proxy) in the new session.
func TestStaleIDsAsDirect(t *testing.T) {
	b := jdwptest.JavaBuild(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := func() *javavm.VM {
		vm, err := javavm.Start(ctx, b, javavm.Deep, javavm.VMOptions{FixedPort: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(vm.Stop)
		return vm
	}
	want := staleIDs{jdwp.ErrorInvalidObject, jdwp.ErrorInvalidObject, jdwp.ErrorInvalidObject,
		fmt.Sprintf("%v %x", jdwp.ErrorNone, []byte{1})} // an unknown object counts as collected
	vm := start()
	if direct := staleSessions(t, ctx, vm, vm.Addr()); direct != want {
		t.Fatalf("directly: %+v, want %+v (HotSpot's IDs are per connection)", direct, want)
	}
	vm = start()
	addr, logs := startProxy(t, vm.Addr(), "--speculate=true")
	if proxied := staleSessions(t, ctx, vm, addr); proxied != want {
		t.Fatalf("through jdwpaccel: %+v, want %+v as directly; log:\n%s", proxied, want, logs)
	}
	vm = start()
	far := startFarEnd(t, vm.Addr())
	near := startNearEnd(t, far.addr)
	near.logs.wait(t, "of the start probe", 10*time.Second, func(rec map[string]any) bool { return rec["message"] == "far end reached" })
	if split := staleSessions(t, ctx, vm, near.addr); split != want {
		t.Fatalf("in split mode: %+v, want %+v as directly; near log:\n%s\nfar log:\n%s", split, want, near.logs, far.logs)
	}
}
