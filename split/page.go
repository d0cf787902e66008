package split

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"sync"
	"time"
)

// The far end's live page travels over the link too: a stream opened with
// FlagPage carries HTTP/1.1 to FarConfig.Page once the preamble accepted
// it, so that the near end can show the far end's DDM monitor without a
// second tunnel, behind the same TLS and token as the sessions.

// PageTransport returns an http.RoundTripper that reaches the far end's
// page over link streams (any request URL's host is ignored).
func PageTransport(cfg NearConfig) *http.Transport {
	return &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			c, br, _, err := connect(ctx, cfg, FlagPage, Resume{})
			if err != nil {
				return nil, err
			}
			return &bufferedConn{Conn: c, r: br}, nil
		},
		MaxIdleConns:    4,
		IdleConnTimeout: 90 * time.Second,
	}
}

// bufferedConn reads through the reader that read the preamble.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// pageServer serves FarConfig.Page on the page streams handed to it.
type pageServer struct {
	srv   *http.Server
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPageServer(h http.Handler) *pageServer {
	p := &pageServer{conns: make(chan net.Conn), done: make(chan struct{})}
	p.srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go p.srv.Serve(p) //nolint:errcheck // ends with close
	return p
}

// serve hands c to the HTTP server, or closes it when the server is
// closed.
func (p *pageServer) serve(c net.Conn) {
	select {
	case p.conns <- c:
	case <-p.done:
		c.Close()
	}
}

func (p *pageServer) close() {
	p.Close()
	p.srv.Close()
}

// Accept, Close and Addr make the page server its HTTP server's listener.
func (p *pageServer) Accept() (net.Conn, error) {
	select {
	case c := <-p.conns:
		return c, nil
	case <-p.done:
		return nil, net.ErrClosed
	}
}

func (p *pageServer) Close() error {
	p.once.Do(func() { close(p.done) })
	return nil
}

func (p *pageServer) Addr() net.Addr { return pageAddr{} }

type pageAddr struct{}

func (pageAddr) Network() string { return "split" }
func (pageAddr) String() string  { return "far-end-page" }
