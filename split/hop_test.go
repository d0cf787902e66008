package split

import (
	"net"
	"sync"
	"testing"
)

// faultHop is a TCP hop between a near end and a far end whose faults a
// test drives: drop closes every connection it carries (the link dies),
// setDown makes it close new connections at once (the link stays dead),
// stall makes it stop forwarding while keeping its connections open (a
// hung tunnel), and setTarget points it at another far end.
type faultHop struct {
	ln net.Listener
	wg sync.WaitGroup

	mu      sync.Mutex // guards the fields below
	target  string
	down    bool
	conns   map[net.Conn]bool
	stalled chan struct{} // closed when a stall ends; nil when not stalled
	accepts int           // connections forwarded, counted at accept
}

func newFaultHop(t *testing.T, target string) *faultHop {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &faultHop{ln: ln, target: target, conns: map[net.Conn]bool{}}
	h.wg.Go(h.acceptLoop)
	t.Cleanup(func() {
		ln.Close()
		h.setDown(true)
		h.unstall()
		h.drop()
		h.wg.Wait()
	})
	return h
}

func (h *faultHop) addr() string { return h.ln.Addr().String() }

func (h *faultHop) acceptLoop() {
	for {
		c, err := h.ln.Accept()
		if err != nil {
			return
		}
		h.mu.Lock()
		down, target := h.down, h.target
		h.mu.Unlock()
		if down {
			c.Close()
			continue
		}
		u, err := net.Dial("tcp", target)
		if err != nil {
			c.Close()
			continue
		}
		h.mu.Lock()
		h.conns[c], h.conns[u] = true, true
		h.accepts++
		h.mu.Unlock()
		h.wg.Go(func() { h.pipe(u, c) })
		h.wg.Go(func() { h.pipe(c, u) })
	}
}

// pipe copies src to dst, holding what it read while the hop is stalled.
func (h *faultHop) pipe(dst, src net.Conn) {
	defer func() {
		dst.Close()
		src.Close()
		h.mu.Lock()
		delete(h.conns, dst)
		delete(h.conns, src)
		h.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		h.mu.Lock()
		stalled := h.stalled
		h.mu.Unlock()
		if stalled != nil {
			<-stalled
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// drop closes every connection the hop carries.
func (h *faultHop) drop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.conns {
		c.Close()
	}
}

func (h *faultHop) setDown(down bool) {
	h.mu.Lock()
	h.down = down
	h.mu.Unlock()
}

func (h *faultHop) setTarget(addr string) {
	h.mu.Lock()
	h.target = addr
	h.mu.Unlock()
}

func (h *faultHop) stall() {
	h.mu.Lock()
	if h.stalled == nil {
		h.stalled = make(chan struct{})
	}
	h.mu.Unlock()
}

func (h *faultHop) unstall() {
	h.mu.Lock()
	if h.stalled != nil {
		close(h.stalled)
		h.stalled = nil
	}
	h.mu.Unlock()
}

func (h *faultHop) accepted() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.accepts
}
