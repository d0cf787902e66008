package javavm

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench/link"
	"github.com/rs/zerolog"
)

// TestFixedPortTwoDebuggers: a VM started with FixedPort listens on the
// same port after the first debugger detaches, so a hop that dials it with
// VM.Dial serves two debuggers in a row, the second attaching at once. The
// driver reports each stop through OnStop as it goes.
func TestFixedPortTwoDebuggers(t *testing.T) {
	b := testBuild(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	vm, err := Start(ctx, b, Deep, VMOptions{FixedPort: true})
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Stop()
	port := vm.Port()
	lk, err := link.Serve(ctx, mustListen(t), vm.Dial, link.Config{}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Close()
	for i := range 2 {
		var mu sync.Mutex
		var seen []int
		res, err := RunDriver(ctx, b, DriverOptions{
			Addr: lk.Addr().String(), Profile: ProfileJDBMin, Debuggee: Deep, Steps: 2, Warmup: 1,
			OnStop: func(s Stop) { mu.Lock(); seen = append(seen, s.Index); mu.Unlock() },
		})
		if err != nil {
			t.Fatalf("debugger %d: %v\nVM output:\n%s", i+1, err, vm.Output())
		}
		mu.Lock()
		if len(res.Stops) != 3 || len(seen) != 3 || seen[2] != 2 {
			t.Errorf("debugger %d: %d stops, OnStop saw %v; want 3 stops 0..2", i+1, len(res.Stops), seen)
		}
		mu.Unlock()
		if vm.Port() != port {
			t.Errorf("debugger %d: agent port %d, want the fixed %d", i+1, vm.Port(), port)
		}
	}
}

func mustListen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}
