package jdwptest

import (
	"context"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/ddmtap/fakevm"
)

// StartDDMVM serves a fake Android VM (DDM included, see ddmtap/fakevm)
// with cfg on a loopback port until the test ends; a failed test logs the
// VM's counters.
func StartDDMVM(t testing.TB, cfg fakevm.Config) *fakevm.VM {
	t.Helper()
	vm, err := fakevm.Listen("127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		vm.Serve(ctx) //nolint:errcheck // ends with ctx
	}()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("fake VM: %+v", vm.Stats())
		}
		cancel()
		<-done
	})
	return vm
}
