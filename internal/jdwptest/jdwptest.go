// Package jdwptest is the shared test kit: a scripted JDWP VM, a scripted
// debugger, a fake Android VM with DDM (StartDDMVM), a locked buffer,
// waiting helpers and the bundled Java build and JVMs. The JDK lookup for
// tests that need a real JVM is internal/jdktest.
//
// It is imported by _test.go files only, so that the testing package is
// never linked into the jdwpaccel binary.
//
//	vm := jdwptest.StartVM(t, jdwptest.Script{Default: jdwptest.Body([]byte("vm-a"))})
//	d, err := jdwptest.Attach(vm.Addr())
//	...
//	p, err := d.Call(jdwp.CmdVirtualMachineVersion, nil)
package jdwptest

import (
	"bytes"
	"sync"
	"testing"
	"time"
)

// Timeout bounds every wait of the kit: nothing in a test waits forever.
const Timeout = 15 * time.Second

// Buffer is a bytes.Buffer safe for concurrent use: a command's output
// written by one goroutine and read by the test, which can wait for what
// it expects with Await(t, what, buf.Changed, cond).
type Buffer struct {
	mu      sync.Mutex // guards b and changed
	b       bytes.Buffer
	changed chan struct{} // closed by the next Write; nil until asked for
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.changed != nil {
		close(b.changed)
		b.changed = nil
	}
	return b.b.Write(p)
}

// Changed returns a channel closed by the next Write: the change signal
// for Await.
func (b *Buffer) Changed() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.changed == nil {
		b.changed = make(chan struct{})
	}
	return b.changed
}

// Bytes returns a copy of what was written so far.
func (b *Buffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.b.Bytes())
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Eventually polls cond until it holds, and fails the test after Timeout
// with what and cond's last state. Poll only what has no signal to wait
// on (the state of another process, goroutine or file descriptor counts);
// where a change signal exists, use Await.
func Eventually(t testing.TB, what string, cond func() (ok bool, state string)) {
	t.Helper()
	deadline := time.Now().Add(Timeout)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s; last state: %s", Timeout, what, state)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Await waits until cond holds, checking it again each time the channel
// changed returns (taken before each check) is closed, and fails the test
// after Timeout with what and cond's last state.
func Await(t testing.TB, what string, changed func() <-chan struct{}, cond func() (ok bool, state string)) {
	t.Helper()
	deadline := time.NewTimer(Timeout)
	defer deadline.Stop()
	for {
		ch := changed()
		ok, state := cond()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("timed out after %v waiting for %s; last state: %s", Timeout, what, state)
		}
	}
}
