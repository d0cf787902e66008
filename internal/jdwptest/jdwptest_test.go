package jdwptest

import (
	"bytes"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// TestVMAndDebugger: the VM answers from its table, then its default, and
// records the commands; After and Send deliver events; the debugger's Call
// skips events to its reply; the VM's Close ends the debugger's
// connection.
func TestVMAndDebugger(t *testing.T) {
	ev := jdwp.AppendCommand(nil, 0x20000001, jdwp.CmdComposite, []byte{2, 0, 0, 0, 0})
	vm := StartVM(t, Script{
		Replies: map[jdwp.Cmd]ReplyFunc{
			jdwp.CmdVirtualMachineVersion: Body([]byte("v1")),
			jdwp.CmdIDSizes:               func(jdwp.Packet) (jdwp.ErrorCode, []byte) { return jdwp.ErrorNotImplemented, nil },
		},
		Default: Body([]byte("other")),
		After: func(c *Conn, cmd jdwp.Packet) error {
			if cmd.Cmd() == jdwp.CmdVirtualMachineResume {
				return c.Write(ev)
			}
			return nil
		},
	})
	d, err := Attach(vm.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, c := range []struct {
		cmd  jdwp.Cmd
		code jdwp.ErrorCode
		body string
	}{
		{jdwp.CmdVirtualMachineVersion, 0, "v1"},
		{jdwp.CmdIDSizes, jdwp.ErrorNotImplemented, ""},
		{jdwp.Cmd{Set: 11, Cmd: 6}, 0, "other"},
	} {
		p, err := d.Call(c.cmd, []byte{9})
		if err != nil || p.ErrorCode() != c.code || string(p.Body()) != c.body {
			t.Fatalf("%v: %v %v %q", c.cmd, err, p.ErrorCode(), p.Body())
		}
	}
	// After: the resume's reply, then the event.
	if _, err := d.Send(jdwp.CmdVirtualMachineResume, nil); err != nil {
		t.Fatal(err)
	}
	if p, err := d.Next(); err != nil || !p.IsReply() {
		t.Fatalf("want the resume's reply: %v %v", p, err)
	}
	if p, err := d.Next(); err != nil || !bytes.Equal(p, ev) {
		t.Fatalf("want the event after the resume: %v %v", p, err)
	}
	// Send: an event to every connection, before the next reply.
	if err := vm.Send(ev); err != nil {
		t.Fatal(err)
	}
	if p, err := d.Next(); err != nil || !bytes.Equal(p, ev) {
		t.Fatalf("want the sent event: %v %v", p, err)
	}
	cmds := vm.Commands()
	if len(cmds) != 4 || cmds[0].Cmd() != jdwp.CmdVirtualMachineVersion || !bytes.Equal(cmds[0].Body(), []byte{9}) || cmds[3].Cmd() != jdwp.CmdVirtualMachineResume {
		t.Fatalf("commands = %v", cmds)
	}
	if n := vm.Connections(); n != 1 {
		t.Fatalf("%d connections, want 1", n)
	}
	vm.Close()
	if err := d.WaitClosed(); err != nil {
		t.Fatal(err)
	}
	if err := vm.Send(ev); err == nil {
		t.Fatal("Send with no connection succeeded")
	}
}

// TestVMOverPipe: Serve runs one connection of a net.Pipe.
func TestVMOverPipe(t *testing.T) {
	a, b := net.Pipe()
	vm := NewVM(Script{Default: Body([]byte("pipe"))})
	done := make(chan error, 1)
	go func() { done <- vm.Serve(b) }()
	d, err := AttachConn(a)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := d.Call(jdwp.CmdVirtualMachineVersion, nil); err != nil || string(p.Body()) != "pipe" {
		t.Fatalf("%v %v", p, err)
	}
	d.Close()
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

// TestWaitClosedReportsAPacket: a packet instead of the end is an error.
func TestWaitClosedReportsAPacket(t *testing.T) {
	vm := StartVM(t, Script{})
	d, err := Attach(vm.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Send(jdwp.CmdVirtualMachineVersion, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.WaitClosed(); err == nil || !strings.Contains(err.Error(), "instead of") {
		t.Fatalf("WaitClosed = %v, want the reply reported", err)
	}
}

func TestBuffer(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for range 100 {
				fmt.Fprintf(&b, "%d", i)
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if n := len(b.String()); n != 400 {
		t.Fatalf("%d bytes, want 400", n)
	}
}

func TestEventually(t *testing.T) {
	n := 0
	Eventually(t, "three calls", func() (bool, string) { n++; return n == 3, fmt.Sprint(n) })
	if n != 3 {
		t.Fatalf("cond called %d times, want 3", n)
	}
}

// TestAwait: cond is checked again at each signal, not polled.
func TestAwait(t *testing.T) {
	var mu sync.Mutex
	ch, v := make(chan struct{}), 0
	changed := func() <-chan struct{} { mu.Lock(); defer mu.Unlock(); return ch }
	set := func(n int) {
		mu.Lock()
		v = n
		close(ch)
		ch = make(chan struct{})
		mu.Unlock()
	}
	checks := 0
	go func() {
		for i := 1; i <= 3; i++ {
			set(i)
		}
	}()
	Await(t, "v = 3", changed, func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		checks++
		return v == 3, fmt.Sprint(v)
	})
	if checks > 4 {
		t.Fatalf("cond checked %d times for 3 changes: polled", checks)
	}
}

// TestVMHoldRelease: a held VM records commands (Count, Changed) but
// answers none; Release answers them in order, and later commands as they
// come.
func TestVMHoldRelease(t *testing.T) {
	vm := StartVM(t, Script{Default: Body([]byte("x"))})
	d, err := Attach(vm.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Call(jdwp.CmdVirtualMachineVersion, nil); err != nil {
		t.Fatal(err)
	}
	vm.Hold()
	var ids []uint32
	for range 3 {
		id, err := d.Send(jdwp.CmdVirtualMachineAllThreads, nil)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	Await(t, "3 AllThreads recorded", vm.Changed, func() (bool, string) {
		n := vm.Count(jdwp.CmdVirtualMachineAllThreads)
		return n == 3, fmt.Sprint(n)
	})
	if p, err := d.NextWithin(100 * time.Millisecond); err == nil {
		t.Fatalf("a held VM answered: %v", p)
	}
	vm.Release()
	for _, id := range ids {
		p, err := d.Next()
		if err != nil || !p.IsReply() || p.ID() != id {
			t.Fatalf("after Release: %v, %v; want the reply to %d", p, err, id)
		}
	}
	if p, err := d.Call(jdwp.CmdVirtualMachineVersion, nil); err != nil || string(p.Body()) != "x" {
		t.Fatalf("after Release: %v, %v", p, err)
	}
	if n := vm.Count(jdwp.CmdVirtualMachineVersion); n != 2 {
		t.Errorf("Count(Version) = %d, want 2", n)
	}
}
