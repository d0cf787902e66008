package web

import (
	"net"
	"net/http"
	"net/url"
	"strings"
)

// The security headers every response carries: no page of another site
// may frame this one (clickjacking the VM controls).
const (
	headerFrameOptions = "DENY"
	headerCSP          = "frame-ancestors 'none'"
)

// setSecurityHeaders sets the headers every response carries.
func setSecurityHeaders(h http.Header) {
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", headerFrameOptions)
	h.Set("Content-Security-Policy", headerCSP)
}

// Guard protects an HTTP surface of a process that controls VMs from other
// web sites, including through DNS rebinding:
//
//   - a request whose Host is not this server's gets 421 Misdirected
//     Request: loopback names (localhost, 127.0.0.0/8, [::1]) with any
//     port, and the listen address when it is not loopback (which the
//     command allows only with --allow-remote). A page of another site
//     that rebinds its name to 127.0.0.1 still sends its own name as Host;
//   - a state-changing request (any method but GET, HEAD, OPTIONS) whose
//     Origin is present and is not a page of this server gets 403
//     Forbidden: its scheme must be http, its host an allowed one and its
//     port the listen port (a page another local program serves, a dev
//     server on 127.0.0.1:9999, is another origin);
//   - every response carries X-Frame-Options: DENY and a
//     Content-Security-Policy with frame-ancestors 'none'.
//
// listen is the address the server listens on, with the port it got (port
// 0, not known, lets an Origin of any port through).
// When it binds every interface (0.0.0.0, [::] or no host), any IP literal
// is also an allowed host: a rebinding attack needs a DNS name, and the
// server cannot know every name of the machine.
func Guard(next http.Handler, listen string) http.Handler {
	g := &guard{next: next}
	if host, port, err := net.SplitHostPort(listen); err == nil {
		if port != "0" {
			g.port = port
		}
		host = strings.ToLower(strings.Trim(host, "[]"))
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			g.anyIP = true
		} else if !isLoopbackHost(host) {
			g.extra = host
		}
	}
	return g
}

type guard struct {
	next  http.Handler
	extra string // a non-loopback listen host (lower case, no brackets)
	anyIP bool   // the server listens on every interface
	port  string // the listen port; empty when not known
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	setSecurityHeaders(w.Header())
	if !g.allowedHost(r.Host) {
		http.Error(w, "this server answers only for localhost (a DNS rebinding attack? else use http://127.0.0.1:PORT/)", http.StatusMisdirectedRequest)
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		if o, ok := r.Header["Origin"]; ok && !g.allowedOrigin(strings.Join(o, ",")) {
			http.Error(w, "cross-origin request refused", http.StatusForbidden)
			return
		}
	}
	g.next.ServeHTTP(w, r)
}

// allowedHost reports whether a Host header (host, host:port, [v6]:port)
// names this server.
func (g *guard) allowedHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	host = strings.TrimSuffix(host, ".")
	if host == "" {
		return false
	}
	if isLoopbackHost(host) || (g.extra != "" && host == g.extra) {
		return true
	}
	return g.anyIP && net.ParseIP(host) != nil
}

// allowedOrigin reports whether an Origin header names a page of this
// server: plain http, an allowed host, the listen port. "null" (a
// sandboxed frame, a file, a redirect) does not.
func (g *guard) allowedOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Scheme != "http" || u.Host == "" || u.Path != "" && u.Path != "/" {
		return false
	}
	port := u.Port()
	if port == "" {
		port = "80"
	}
	if g.port != "" && port != g.port {
		return false
	}
	return g.allowedHost(u.Host)
}

// isLoopbackHost reports whether host (lower case, no brackets or port)
// is localhost or a loopback IP.
func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
