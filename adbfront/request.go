// Package adbfront is a front for an adb server: it speaks the adb host
// protocol (AOSP adb's SERVICES.TXT) to clients such as Android Studio,
// ddmlib and the adb command, and forwards every request to the real adb
// server unchanged, except the JDWP streams: after a transport switch and
// jdwp:PID, the stream is handed to a JDWP function (the relay, with the
// speculative cache), and "forward tcp:N jdwp:PID" requests are served by
// the front itself so that debuggers attaching to tcp:N go through it too.
// Everything else is spliced byte for byte once its request is parsed.
// Relay is the JDWP function jdwpaccel's adb command uses: a relay server
// per device process, each session given its stream's VM connection, and a
// DDM monitor per process kept a while after the process's last stream.
// The host protocol's framing is internal/adbwire's.
//
//	f := adbfront.New(adbfront.Config{Upstream: "127.0.0.1:5037", JDWP: serveJDWP})
//	err := f.Serve(ctx, listener) // clients: adb -P PORT ..., ANDROID_ADB_SERVER_PORT=PORT
package adbfront

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/jdwpaccel/jdwpaccel/internal/adbwire"
)

// SelectorKind says how a request picks its device.
type SelectorKind uint8

// Selector kinds.
const (
	SelectAny         SelectorKind = iota // host:, host:transport-any, host:tport:any
	SelectUSB                             // host-usb:, transport-usb, tport:usb
	SelectLocal                           // host-local:, transport-local, tport:local
	SelectSerial                          // host-serial:S:, transport:S, tport:serial:S
	SelectTransportID                     // host-transport-id:N:, transport-id:N
)

// Selector is the device a request targets.
type Selector struct {
	Kind   SelectorKind
	Serial string // SelectSerial
	ID     uint64 // SelectTransportID
}

// Prefix is the host-request prefix that selects the same device, e.g.
// "host-serial:SERIAL:" or "host:".
func (s Selector) Prefix() string {
	switch s.Kind {
	case SelectUSB:
		return "host-usb:"
	case SelectLocal:
		return "host-local:"
	case SelectSerial:
		return "host-serial:" + s.Serial + ":"
	case SelectTransportID:
		return "host-transport-id:" + strconv.FormatUint(s.ID, 10) + ":"
	}
	return "host:"
}

// Transport is the host:transport request that routes a connection to the
// same device.
func (s Selector) Transport() string {
	switch s.Kind {
	case SelectUSB:
		return "host:transport-usb"
	case SelectLocal:
		return "host:transport-local"
	case SelectSerial:
		return "host:transport:" + s.Serial
	case SelectTransportID:
		return "host:transport-id:" + strconv.FormatUint(s.ID, 10)
	}
	return "host:transport-any"
}

func (s Selector) String() string {
	switch s.Kind {
	case SelectUSB:
		return "usb"
	case SelectLocal:
		return "local"
	case SelectSerial:
		return "serial:" + s.Serial
	case SelectTransportID:
		return "transport-id:" + strconv.FormatUint(s.ID, 10)
	}
	return "any"
}

// Kind classifies a request by what the front does with it.
type Kind uint8

// Request kinds.
const (
	// KindOther is forwarded and spliced byte for byte.
	KindOther Kind = iota
	// KindTransport switches the connection to a device
	// (host:transport…, host:tport:…, <prefix>:transport…); the answer is
	// OKAY (and for tport the 8-byte transport ID) or FAIL, then the
	// connection takes another request.
	KindTransport
	// KindJDWP is jdwp:PID, a device service (after a transport switch).
	KindJDWP
	// KindForward is <prefix>:forward:[norebind:]LOCAL;REMOTE.
	KindForward
	// KindKillForward is <prefix>:killforward:LOCAL.
	KindKillForward
	// KindKillForwardAll is <prefix>:killforward-all.
	KindKillForwardAll
	// KindListForward is <prefix>:list-forward.
	KindListForward
)

// Request is a parsed request.
type Request struct {
	Raw  string
	Kind Kind
	// Host says the request is for the adb server (a host… prefix);
	// otherwise it is a device service for the switched transport.
	Host bool
	// Sel is the device the prefix (or, for KindTransport, the request)
	// selects.
	Sel Selector
	// Service is the request after its host prefix.
	Service string
	// TPort says a KindTransport request answers with the transport ID.
	TPort bool
	// PID of KindJDWP.
	PID int
	// Local and Remote of KindForward (Local also of KindKillForward), and
	// NoRebind of KindForward.
	Local, Remote string
	NoRebind      bool
}

// ParseRequest classifies a request. It fails only on requests the adb
// server would refuse to parse too (a bad host-serial or transport ID),
// so that the front can answer them itself.
func ParseRequest(raw string) (Request, error) {
	r := Request{Raw: raw, Service: raw}
	switch {
	case strings.HasPrefix(raw, "host-serial:"):
		serial, svc, ok := ParseHostSerial(strings.TrimPrefix(raw, "host-serial:"))
		if !ok {
			return r, fmt.Errorf("bad host-serial request %q: %w", raw, adbwire.ErrProtocol)
		}
		r.Host, r.Sel, r.Service = true, Selector{Kind: SelectSerial, Serial: serial}, svc
	case strings.HasPrefix(raw, "host-transport-id:"):
		rest := strings.TrimPrefix(raw, "host-transport-id:")
		idStr, svc, ok := strings.Cut(rest, ":")
		id, err := strconv.ParseUint(idStr, 10, 64)
		if !ok || err != nil {
			return r, fmt.Errorf("bad host-transport-id request %q: %w", raw, adbwire.ErrProtocol)
		}
		r.Host, r.Sel, r.Service = true, Selector{Kind: SelectTransportID, ID: id}, svc
	case strings.HasPrefix(raw, "host-usb:"):
		r.Host, r.Sel, r.Service = true, Selector{Kind: SelectUSB}, strings.TrimPrefix(raw, "host-usb:")
	case strings.HasPrefix(raw, "host-local:"):
		r.Host, r.Sel, r.Service = true, Selector{Kind: SelectLocal}, strings.TrimPrefix(raw, "host-local:")
	case strings.HasPrefix(raw, "host:"):
		r.Host, r.Service = true, strings.TrimPrefix(raw, "host:")
	}
	if !r.Host {
		if pid, ok := strings.CutPrefix(raw, "jdwp:"); ok {
			n, err := strconv.Atoi(pid)
			if err == nil && n > 0 && strconv.Itoa(n) == pid {
				r.Kind, r.PID = KindJDWP, n
			}
		}
		return r, nil
	}
	svc := r.Service
	switch {
	case strings.HasPrefix(svc, "tport:"):
		r.Kind, r.TPort = KindTransport, true
		switch rest := strings.TrimPrefix(svc, "tport:"); {
		case strings.HasPrefix(rest, "serial:"):
			r.Sel = Selector{Kind: SelectSerial, Serial: strings.TrimPrefix(rest, "serial:")}
		case rest == "usb":
			r.Sel = Selector{Kind: SelectUSB}
		case rest == "local":
			r.Sel = Selector{Kind: SelectLocal}
		case rest == "any":
			r.Sel = Selector{Kind: SelectAny}
		}
	case strings.HasPrefix(svc, "transport"):
		r.Kind = KindTransport
		switch {
		case strings.HasPrefix(svc, "transport-id:"):
			id, err := strconv.ParseUint(strings.TrimPrefix(svc, "transport-id:"), 10, 64)
			if err != nil {
				return r, fmt.Errorf("bad transport id in %q: %w", raw, adbwire.ErrProtocol)
			}
			r.Sel = Selector{Kind: SelectTransportID, ID: id}
		case svc == "transport-usb":
			r.Sel = Selector{Kind: SelectUSB}
		case svc == "transport-local":
			r.Sel = Selector{Kind: SelectLocal}
		case svc == "transport-any":
			r.Sel = Selector{Kind: SelectAny}
		case strings.HasPrefix(svc, "transport:"):
			r.Sel = Selector{Kind: SelectSerial, Serial: strings.TrimPrefix(svc, "transport:")}
		}
	case strings.HasPrefix(svc, "forward:"):
		rest := strings.TrimPrefix(svc, "forward:")
		rest, r.NoRebind = strings.CutPrefix(rest, "norebind:")
		local, remote, ok := strings.Cut(rest, ";")
		if ok && local != "" && remote != "" && !strings.Contains(remote, ";") {
			r.Kind, r.Local, r.Remote = KindForward, local, remote
		}
	case strings.HasPrefix(svc, "killforward:"):
		r.Kind, r.Local = KindKillForward, strings.TrimPrefix(svc, "killforward:")
	case svc == "killforward-all":
		r.Kind = KindKillForwardAll
	case svc == "list-forward":
		r.Kind = KindListForward
	}
	return r, nil
}

// ParseHostSerial splits "SERIAL:COMMAND" where the serial may itself hold
// colons, as adb servers do (sockets.cpp parse_host_service): an optional
// tcp:/udp: prefix, "usb:X", "product:X", "model:X", "device:X" or
// "localfilesystem:X", a vsock:CID:PORT, an [IPv6] address, and a :PORT
// that is all digits belong to the serial.
func ParseHostSerial(s string) (serial, command string, ok bool) {
	if s == "" {
		return "", "", false
	}
	n := 0 // bytes of s that belong to the serial, with its trailing ':'
	rest := func() string { return s[n:] }
	finish := func() (string, string, bool) {
		if n < 2 || n >= len(s) || s[n-1] != ':' {
			return "", "", false
		}
		return s[:n-1], s[n:], true
	}
	for _, p := range []string{"usb:", "product:", "model:", "device:", "localfilesystem:"} {
		if strings.HasPrefix(s, p) {
			n = len(p)
			i := strings.IndexByte(rest(), ':')
			if i < 0 {
				return "", "", false
			}
			n += i + 1
			return finish()
		}
	}
	if strings.HasPrefix(s, "tcp:") || strings.HasPrefix(s, "udp:") {
		n = 4
		if n == len(s) {
			return "", "", false
		}
	}
	if strings.HasPrefix(rest(), "vsock:") {
		i := strings.IndexByte(rest(), ':')
		n += i + 1
	}
	found := false
	if strings.HasPrefix(rest(), "[") {
		if i := strings.IndexByte(rest(), ']'); i >= 0 {
			n += i + 1
			if n == len(s) || s[n] != ':' {
				return "", "", false
			}
			n++
			found = true
		}
	}
	if !found {
		i := strings.IndexByte(rest(), ':')
		if i < 0 {
			return "", "", false
		}
		n += i + 1
	}
	i := strings.IndexByte(rest(), ':')
	if i < 0 {
		return finish()
	}
	port := rest()[:i]
	digits := true
	for _, c := range port {
		if c < '0' || c > '9' {
			digits = false
			break
		}
	}
	if digits {
		n += i + 1
	}
	return finish()
}
