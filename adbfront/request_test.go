package adbfront

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/internal/adbwire"
)

func TestParseHostSerial(t *testing.T) {
	for _, c := range []struct {
		in, serial, cmd string
		ok              bool
	}{
		{"foo:bar", "foo", "bar", true},
		{"127.0.0.1:5555:forward:tcp:1;jdwp:2", "127.0.0.1:5555", "forward:tcp:1;jdwp:2", true},
		{"emulator-5554:transport", "emulator-5554", "transport", true},
		{"tcp:localhost:5555:get-state", "tcp:localhost:5555", "get-state", true},
		{"[::1]:5555:list-forward", "[::1]:5555", "list-forward", true},
		{"[::1]x:5555:list-forward", "", "", false},
		{"usb:1-4.3:get-serialno", "usb:1-4.3", "get-serialno", true},
		{"product:sdk:get-state", "product:sdk", "get-state", true},
		{"vsock:3:5555:features", "vsock:3:5555", "features", true},
		{"host:port:notaport:cmd", "host", "port:notaport:cmd", true},
		{"nocolon", "", "", false},
		{"serial:", "", "", false},
		{"", "", "", false},
		{"tcp:", "", "", false},
		{":A0", "", "", false}, // found by FuzzParseHostSerial: an empty serial
	} {
		s, cmd, ok := ParseHostSerial(c.in)
		if s != c.serial || cmd != c.cmd || ok != c.ok {
			t.Errorf("ParseHostSerial(%q) = %q, %q, %v; want %q, %q, %v", c.in, s, cmd, ok, c.serial, c.cmd, c.ok)
		}
	}
}

func TestParseRequest(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Request
	}{
		{"host:version", Request{Host: true, Service: "version"}},
		{"host:transport:emulator-5554", Request{Host: true, Kind: KindTransport, Service: "transport:emulator-5554", Sel: Selector{Kind: SelectSerial, Serial: "emulator-5554"}}},
		{"host:tport:serial:127.0.0.1:5555", Request{Host: true, Kind: KindTransport, TPort: true, Service: "tport:serial:127.0.0.1:5555", Sel: Selector{Kind: SelectSerial, Serial: "127.0.0.1:5555"}}},
		{"host:tport:any", Request{Host: true, Kind: KindTransport, TPort: true, Service: "tport:any"}},
		{"host:transport-usb", Request{Host: true, Kind: KindTransport, Service: "transport-usb", Sel: Selector{Kind: SelectUSB}}},
		{"host:transport-local", Request{Host: true, Kind: KindTransport, Service: "transport-local", Sel: Selector{Kind: SelectLocal}}},
		{"host:transport-id:7", Request{Host: true, Kind: KindTransport, Service: "transport-id:7", Sel: Selector{Kind: SelectTransportID, ID: 7}}},
		{"host-serial:abc:transport", Request{Host: true, Kind: KindTransport, Service: "transport", Sel: Selector{Kind: SelectSerial, Serial: "abc"}}},
		{"host-serial:127.0.0.1:5555:forward:tcp:8600;jdwp:42", Request{Host: true, Kind: KindForward, Service: "forward:tcp:8600;jdwp:42", Sel: Selector{Kind: SelectSerial, Serial: "127.0.0.1:5555"}, Local: "tcp:8600", Remote: "jdwp:42"}},
		{"host-transport-id:3:forward:norebind:tcp:0;jdwp:42", Request{Host: true, Kind: KindForward, Service: "forward:norebind:tcp:0;jdwp:42", Sel: Selector{Kind: SelectTransportID, ID: 3}, Local: "tcp:0", Remote: "jdwp:42", NoRebind: true}},
		{"host-usb:killforward:tcp:8600", Request{Host: true, Kind: KindKillForward, Service: "killforward:tcp:8600", Sel: Selector{Kind: SelectUSB}, Local: "tcp:8600"}},
		{"host-local:killforward-all", Request{Host: true, Kind: KindKillForwardAll, Service: "killforward-all", Sel: Selector{Kind: SelectLocal}}},
		{"host:list-forward", Request{Host: true, Kind: KindListForward, Service: "list-forward"}},
		{"jdwp:1234", Request{Kind: KindJDWP, Service: "jdwp:1234", PID: 1234}},
		{"jdwp:01234", Request{Service: "jdwp:01234"}},
		{"jdwp:-1", Request{Service: "jdwp:-1"}},
		{"track-jdwp", Request{Service: "track-jdwp"}},
		{"shell:getprop", Request{Service: "shell:getprop"}},
	} {
		got, err := ParseRequest(c.in)
		c.want.Raw = c.in
		if err != nil || got != c.want {
			t.Errorf("ParseRequest(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"host-serial:nocolon", "host-transport-id:x:version", "host-transport-id:7", "host:transport-id:x"} {
		if _, err := ParseRequest(bad); !errors.Is(err, adbwire.ErrProtocol) {
			t.Errorf("ParseRequest(%q): %v, want adbwire.ErrProtocol", bad, err)
		}
	}
}

func TestSelectorRequests(t *testing.T) {
	for _, c := range []struct {
		s                 Selector
		prefix, transport string
	}{
		{Selector{}, "host:", "host:transport-any"},
		{Selector{Kind: SelectUSB}, "host-usb:", "host:transport-usb"},
		{Selector{Kind: SelectLocal}, "host-local:", "host:transport-local"},
		{Selector{Kind: SelectSerial, Serial: "a:1"}, "host-serial:a:1:", "host:transport:a:1"},
		{Selector{Kind: SelectTransportID, ID: 9}, "host-transport-id:9:", "host:transport-id:9"},
	} {
		if c.s.Prefix() != c.prefix || c.s.Transport() != c.transport {
			t.Errorf("%v: %q %q", c.s, c.s.Prefix(), c.s.Transport())
		}
		// The prefix parses back to the selector.
		r, err := ParseRequest(c.s.Prefix() + "get-serialno")
		if err != nil || r.Sel != c.s || r.Service != "get-serialno" {
			t.Errorf("%q parsed as %+v, %v", c.s.Prefix()+"get-serialno", r, err)
		}
	}
}

// FuzzReadRequest: every framed payload parses without panicking, and a
// parsed host-serial request names its serial and service (the framing
// itself is adbwire's, fuzzed there).
func FuzzReadRequest(f *testing.F) {
	for _, s := range []string{
		"000chost:version", "001ahost:tport:serial:abc:1", "0009jdwp:1234",
		"002ahost-serial:127.0.0.1:5555:forward:tcp:0;jdwp:1", "0000", "zzzz",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := adbwire.ReadRequest(bytes.NewReader(b))
		if err != nil {
			return
		}
		r, err := ParseRequest(req)
		if err != nil {
			return
		}
		if r.Raw != req || !strings.HasSuffix(req, r.Service) {
			t.Fatalf("parsed %q as %+v", req, r)
		}
		if r.Kind == KindJDWP && r.PID <= 0 {
			t.Fatalf("jdwp request %q with pid %d", req, r.PID)
		}
	})
}

// FuzzParseHostSerial: a split puts the serial and the command back
// together around one colon.
func FuzzParseHostSerial(f *testing.F) {
	for _, s := range []string{"foo:bar", "127.0.0.1:5555:transport", "[::1]:5555:x", "vsock:1:2:x", "usb:1-1:x", "tcp:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		serial, cmd, ok := ParseHostSerial(s)
		if !ok {
			return
		}
		if serial == "" || cmd == "" || serial+":"+cmd != s {
			t.Fatalf("ParseHostSerial(%q) = %q, %q", s, serial, cmd)
		}
	})
}
