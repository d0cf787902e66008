package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/discover"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/rs/zerolog"
)

// TestWarnNoLocalVM checks the start-up warning for a --vm on this
// machine with nothing listening on its port, against a fake /proc
// reader: it names the port and the agent option to start the VM with,
// and stays silent for a listening port, an unknown answer or another
// machine.
func TestWarnNoLocalVM(t *testing.T) {
	for _, c := range []struct {
		vm               string
		listening, known bool
		want             string // "" for no warning
	}{
		{"127.0.0.1:5005", false, true, "address=5005"},
		{"localhost:8000", false, true, "listens on port 8000"},
		{"[::1]:5005", false, true, "address=5005"},
		{"127.0.0.1:5005", true, true, ""},
		{"127.0.0.1:5005", false, false, ""},
		{"192.0.2.1:5005", false, true, ""}, // TEST-NET: not this machine
		{"vmhost.example:5005", false, true, ""},
	} {
		var buf jdwptest.Buffer
		asked := -1
		warnNoLocalVM(c.vm, func(port uint16) (bool, bool) {
			asked = int(port)
			return c.listening, c.known
		}, zerolog.New(&buf))
		got := buf.String()
		switch {
		case c.want == "" && got != "":
			t.Errorf("%s (listening %v, known %v): warned %s", c.vm, c.listening, c.known, got)
		case c.want != "" && (!strings.Contains(got, c.want) || !strings.Contains(got, `"level":"warn"`)):
			t.Errorf("%s: log %q, want a warning with %q", c.vm, got, c.want)
		case c.want != "" && !strings.Contains(c.vm, ":"+strconv.Itoa(asked)):
			t.Errorf("%s: asked about port %d", c.vm, asked)
		}
	}
}

// TestAbsentVMSaysWhatToCheck runs the proxy at a --vm on this machine
// where nothing listens: it warns at start, and the line at the refused
// attach says what to check.
func TestAbsentVMSaysWhatToCheck(t *testing.T) {
	if _, known := discover.LocalListener(1); !known {
		t.Skip("no /proc/net/tcp here")
	}
	if on, _ := discover.LocalListener(1); on {
		t.Skip("something listens on port 1 of this machine")
	}
	p := faultProxy(t, "127.0.0.1:1")
	p.logs.wait(t, "warning that nothing listens", 5*time.Second, func(rec map[string]any) bool {
		m, _ := rec["message"].(string)
		return rec["level"] == "warn" && strings.Contains(m, "nothing on this machine listens on port 1")
	})
	if _, err := tryAttach(p.addr); err == nil {
		t.Fatal("a debugger attached to a VM that is not there")
	}
	p.logs.wait(t, "at the refused attach", 10*time.Second, func(rec map[string]any) bool {
		e, _ := rec["error"].(string)
		return rec["reason"] == "dial_vm" && strings.Contains(e, "check that the VM runs with -agentlib:jdwp=transport=dt_socket,server=y,address=1")
	})
}
