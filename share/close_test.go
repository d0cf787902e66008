package share

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"

	"github.com/rs/zerolog"
)

// TestCloseWhileClientsArrive: clients arriving while the front closes
// are either served (and waited for) or turned away, never counted after
// Close began to wait (go test -race flagged the WaitGroup's Add racing
// its Wait before the front ordered them).
func TestCloseWhileClientsArrive(t *testing.T) {
	f := NewFront("close", Config{Logger: zerolog.Nop()})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	var turned sync.Map
	for i := range 32 {
		a, b := net.Pipe()
		b.Close() // the client hangs up: its handshake fails at once
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := f.serve(ctx, a, false, func(net.Conn) {}, func() {})
			if errors.Is(err, net.ErrClosed) {
				turned.Store(i, true)
			}
		}()
		if i == 16 {
			f.Close()
		}
	}
	wg.Wait()
	f.Close()
	if !f.isClosed() {
		t.Fatal("the front does not know it was closed")
	}
}
