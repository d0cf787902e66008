package main

import (
	"flag"
	"io"
	"regexp"
	"strings"
	"testing"
)

// TestProxyFlagValues parses proxy flags as a user types them and checks
// the values they set: "--ddm force" without "=", sizes with the units
// the help names.
func TestProxyFlagValues(t *testing.T) {
	for _, c := range []struct {
		args  []string
		check func(*proxyFlags) bool
	}{
		{[]string{"--ddm", "force"}, func(p *proxyFlags) bool { return p.ddm.mode == ddmForce }},
		{[]string{"--ddm", "false"}, func(p *proxyFlags) bool { return p.ddm.mode == ddmOff }},
		{[]string{"--ddm=force"}, func(p *proxyFlags) bool { return p.ddm.mode == ddmForce }},
		{[]string{"--ddm=false", "--ddm"}, func(p *proxyFlags) bool { return p.ddm.mode == ddmOn }},
		{[]string{"-ddm", "force", "--vm", "127.0.0.1:5"}, func(p *proxyFlags) bool { return p.ddm.mode == ddmForce && p.vm == "127.0.0.1:5" }},
		{[]string{"--cache-bytes", "64MiB"}, func(p *proxyFlags) bool { return p.cacheBytes == 64<<20 }},
		{[]string{"--cache-bytes", "64M"}, func(p *proxyFlags) bool { return p.cacheBytes == 64<<20 }},
		{[]string{"--cache-bytes", "1GB"}, func(p *proxyFlags) bool { return p.cacheBytes == 1e9 }},
		{[]string{"--cache-bytes", "65536"}, func(p *proxyFlags) bool { return p.cacheBytes == 65536 }},
		{[]string{"--journal-max-bytes", "10kB"}, func(p *proxyFlags) bool { return p.journalMax == 10000 }},
		{[]string{"--journal-raw-bytes", "-1"}, func(p *proxyFlags) bool { return p.journalRaw == -1 }},
		{[]string{"--max-packet-size", "2MiB"}, func(p *proxyFlags) bool { return p.maxPacket == 2<<20 }},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var pf proxyFlags
			fs := flag.NewFlagSet("proxy", flag.ContinueOnError)
			pf.register(fs)
			code, ok := parseFlags(fs, c.args, &env{stdout: io.Discard, stderr: io.Discard})
			if !ok {
				t.Fatalf("not parsed (exit %d)", code)
			}
			if !c.check(&pf) {
				t.Errorf("ddm %v, cache %d, journal max %d raw %d, max packet %d, vm %q",
					pf.ddm.mode.String(), pf.cacheBytes, pf.journalMax, pf.journalRaw, pf.maxPacket, pf.vm)
			}
		})
	}
}

// TestFlagErrorsSayWhatIsWanted runs the proxy and the far end with flags
// that are wrong in syntax or range: each is a usage error at parse time
// whose message names the flag and what it wants.
func TestFlagErrorsSayWhatIsWanted(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"proxy", "--vm", "127.0.0.1:99999"}, `bad --vm "127.0.0.1:99999": port 99999 is out of range`},
		{[]string{"proxy", "--vm", "127.0.0.1:0"}, "port 0 names no port"},
		{[]string{"proxy", "--vm", "127.0.0.1:http"}, "the port must be a number"},
		{[]string{"proxy", "--vm", "127.0.0.1:"}, "no port"},
		{[]string{"proxy", "--vm", "nonsense"}, `bad --vm "nonsense": want HOST:PORT`},
		{[]string{"proxy", "--vm", "127.0.0.1:1", "--listen", "nonsense"}, `bad --listen "nonsense": want HOST:PORT`},
		{[]string{"proxy", "--vm", "127.0.0.1:1", "--listen", "127.0.0.1:70000"}, "bad --listen"},
		{[]string{"proxy", "--vm", "127.0.0.1:1", "--http-addr", "127.0.0.1"}, "bad --http-addr"},
		{[]string{"proxy", "--far", "127.0.0.1:99999"}, "bad --far"},
		{[]string{"far", "--vm", "127.0.0.1:99999"}, "bad --vm"},
		{[]string{"far", "--vm", "127.0.0.1:1", "--listen", "x"}, "bad --listen"},
		{[]string{"proxy", "--vm", "127.0.0.1:1", "--log-level", "verbose"}, "want trace, debug, info, warn or error"},
		{[]string{"proxy", "--vm", "127.0.0.1:1", "--log-format", "xml"}, "want json, console or auto"},
		{[]string{"proxy", "--vm", "127.0.0.1:1", "--cache-bytes", "lots"}, "--cache-bytes: want a number of bytes"},
		{[]string{"proxy", "--vm", "127.0.0.1:1", "--ddm", "maybe"}, `unexpected argument "maybe"`},
		{[]string{"proxy", "--vm", "127.0.0.1:1", "--bogus"}, "not defined: --bogus"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, out, errOut := runCapture(c.args...)
			if code != exitUsage || !strings.Contains(errOut, c.want) || out != "" {
				t.Errorf("exit %d, stderr %q, stdout %q; want exit %d and %q", code, errOut, out, exitUsage, c.want)
			}
		})
	}
}

// TestHelpCommand checks that "jdwpaccel help CMD" prints CMD's help,
// and that help shows flags as --flag, the essentials first.
func TestHelpCommand(t *testing.T) {
	for _, cmd := range []string{"proxy", "far", "demo", "journal"} {
		code, out, _ := runCapture("help", cmd)
		_, want, _ := runCapture(cmd, "--help")
		if code != exitOK || out != want || !strings.Contains(out, "Usage: jdwpaccel "+cmd) {
			t.Errorf("jdwpaccel help %s: exit %d\n%s\nwant what %s --help prints:\n%s", cmd, code, out, cmd, want)
		}
	}
	_, out, _ := runCapture("proxy", "--help")
	if m := regexp.MustCompile(`(?m)^  -[a-z]`).FindString(out); m != "" {
		t.Errorf("proxy --help shows a one-dash flag:\n%s", out)
	}
	idx := func(flag string) int {
		if loc := regexp.MustCompile(`\n  --` + flag + `[ \n]`).FindStringIndex(out); loc != nil {
			return loc[0]
		}
		return -1
	}
	for _, f := range []string{"vm", "listen", "adb-server", "write-behind"} {
		if idx(f) < 0 {
			t.Fatalf("proxy --help lacks --%s:\n%s", f, out)
		}
	}
	if !(idx("vm") < idx("listen") && idx("listen") < idx("adb-server") && idx("adb-server") < idx("write-behind")) {
		t.Errorf("proxy --help: want --vm, then --listen, then the rest alphabetically:\n%s", out)
	}
	if !strings.Contains(out, "(default 64MiB)") {
		t.Errorf("proxy --help: the cache size is not shown with its unit:\n%s", out)
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "12": 12, "12B": 12, "1KiB": 1024, "1k": 1024, "3 MiB": 3 << 20, "2gib": 2 << 30, "5kB": 5000, "-4096": -4096} {
		if got, err := parseBytes(in); err != nil || got != want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "1TiB", "1.5MiB", "9999999999GiB", "0x10"} {
		if got, err := parseBytes(in); err == nil {
			t.Errorf("parseBytes(%q) = %d, want an error", in, got)
		}
	}
	for n, want := range map[int64]string{0: "0", 1000: "1000", 4096: "4KiB", 64 << 20: "64MiB", 3 << 30: "3GiB"} {
		if got := formatBytes(n); got != want {
			t.Errorf("formatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
