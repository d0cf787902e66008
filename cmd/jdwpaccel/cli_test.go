package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/journal"
)

// servedAddrs reads the addresses of the HTTP servers ("monitor",
// "metrics") from a proxy's JSON log.
func servedAddrs(t *testing.T, logs *jdwptest.Buffer) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, line := range strings.Split(logs.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["message"] == "serving HTTP" {
			what, _ := rec["what"].(string)
			addr, _ := rec["addr"].(string)
			out[what] = addr
		}
	}
	return out
}

// httpDo sends one request to addr with the given Host and Origin (none
// when empty) and returns the response's status and headers.
func httpDo(t *testing.T, method, addr, path, host, origin, body string) (int, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body) //nolint:errcheck // only the status matters
	return resp.StatusCode, resp.Header
}

// TestHTTPServersRefuseOtherSites checks both HTTP servers of the proxy
// (the page and API, and --metrics-addr) against DNS rebinding and
// cross-site requests: another Host is refused, a rebinding POST to the VM
// selection is refused, and every response forbids framing.
func TestHTTPServersRefuseOtherSites(t *testing.T) {
	_, logs := startProxy(t, "scan:1", "--vm-port-base", "0", "--metrics-addr", "localhost:0")
	addrs := servedAddrs(t, logs)
	mon, met := addrs["monitor"], addrs["metrics"]
	if mon == "" || met == "" {
		t.Fatalf("servers %v: want monitor and metrics; log:\n%s", addrs, logs)
	}
	port := mon[strings.LastIndex(mon, ":"):]

	for _, c := range []struct {
		name, addr, path string
	}{
		{"page", mon, "/"},
		{"API", mon, "/api/v1/snapshot"},
		{"discovery API", mon, "/api/v1/discover/vms"},
		{"metrics on the page server", mon, "/metrics"},
		{"metrics server", met, "/metrics"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if code, _ := httpDo(t, http.MethodGet, c.addr, c.path, "", "", ""); code != http.StatusOK {
				t.Errorf("GET %s with its own Host: %d, want 200", c.path, code)
			}
			if code, _ := httpDo(t, http.MethodGet, c.addr, c.path, "localhost"+port, "", ""); code != http.StatusOK {
				t.Errorf("GET %s with Host localhost: %d, want 200", c.path, code)
			}
			code, h := httpDo(t, http.MethodGet, c.addr, c.path, "evil.example", "", "")
			if code != http.StatusMisdirectedRequest && code != http.StatusForbidden {
				t.Errorf("GET %s with Host evil.example: %d, want 421 or 403", c.path, code)
			}
			if h.Get("X-Frame-Options") != "DENY" || !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
				t.Errorf("GET %s: X-Frame-Options %q, Content-Security-Policy %q; want DENY and frame-ancestors 'none'",
					c.path, h.Get("X-Frame-Options"), h.Get("Content-Security-Policy"))
			}
		})
	}

	const sel = "/api/v1/discover/select"
	t.Run("rebinding POST", func(t *testing.T) {
		// A page of evil.example whose name now resolves to 127.0.0.1:
		// its Origin matches its Host, which is not ours.
		code, _ := httpDo(t, http.MethodPost, mon, sel, "evil.example"+port, "http://evil.example"+port, `{"vm":""}`)
		if code == http.StatusOK {
			t.Errorf("POST %s from a rebound page: %d, want it refused", sel, code)
		}
	})
	t.Run("cross-site POST", func(t *testing.T) {
		code, _ := httpDo(t, http.MethodPost, mon, sel, "", "http://evil.example", `{"vm":""}`)
		if code != http.StatusForbidden {
			t.Errorf("POST %s with Origin evil.example: %d, want 403", sel, code)
		}
	})
	t.Run("same-site POST", func(t *testing.T) {
		code, _ := httpDo(t, http.MethodPost, mon, sel, "", "http://"+mon, `{"vm":""}`)
		if code != http.StatusOK {
			t.Errorf("POST %s from the page: %d, want 200", sel, code)
		}
	})
}

// TestHelpGoesToStdout checks that every command's --help (and -h) prints
// its usage on stdout and exits 0, with nothing on stderr.
func TestHelpGoesToStdout(t *testing.T) {
	for _, c := range subcommands() {
		cmd := []string{c.name}
		if c.name == "journal" {
			cmd = []string{"journal", "show"}
		}
		for _, h := range []string{"--help", "-h"} {
			args := append(cmd[:len(cmd):len(cmd)], h)
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				code, out, errOut := runCapture(args...)
				if code != exitOK || !strings.Contains(out, "Usage: jdwpaccel "+c.name) || errOut != "" {
					t.Errorf("exit %d, want 0 with the usage on stdout and nothing on stderr\nstdout: %s\nstderr: %s", code, out, errOut)
				}
			})
		}
	}
}

// TestVersionFlag checks that --version, -version and -v print what
// "jdwpaccel version" prints, and that "version --help" is a usage.
func TestVersionFlag(t *testing.T) {
	code, want, _ := runCapture("version")
	if code != exitOK || !strings.HasPrefix(want, "jdwpaccel ") {
		t.Fatalf("jdwpaccel version: exit %d, %q", code, want)
	}
	for _, f := range []string{"--version", "-version", "-v"} {
		if code, out, errOut := runCapture(f); code != exitOK || out != want {
			t.Errorf("jdwpaccel %s: exit %d, stdout %q, stderr %q; want exit 0 and %q", f, code, out, errOut, want)
		}
	}
	code, out, _ := runCapture("version", "--help")
	if code != exitOK || !strings.Contains(out, "Usage: jdwpaccel version") || !strings.Contains(out, "Print the version") {
		t.Errorf("jdwpaccel version --help: exit %d, stdout %q; want a usage saying what it prints", code, out)
	}
}

// TestWrongFlagIsShort checks that a wrong flag prints the error and a
// pointer to --help, not the whole usage, and exits 2.
func TestWrongFlagIsShort(t *testing.T) {
	for _, args := range [][]string{
		{"proxy", "--vm", "127.0.0.1:1", "--bogus"},
		{"vms", "--bogus"},
		{"select", "--bogus", "x"},
		{"journal", "stats", "--bogus", "j.jsonl"},
		{"version", "--bogus"},
		{"link", "--bogus"},
		{"proxy", "--vm", "127.0.0.1:1", "--max-packet-size", "big"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, out, errOut := runCapture(args...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d", code, exitUsage)
			}
			lines := strings.Split(strings.TrimSpace(errOut), "\n")
			if len(lines) > 2 || !strings.Contains(errOut, args[0]) || !strings.Contains(lines[len(lines)-1], "--help") || out != "" {
				t.Errorf("want the error and one line pointing at --help on stderr, nothing on stdout\nstdout: %s\nstderr: %s", out, errOut)
			}
		})
	}
	code, _, errOut := runCapture("--bogus")
	if code != exitUsage || strings.Count(errOut, "\n") > 2 {
		t.Errorf("jdwpaccel --bogus: exit %d, stderr:\n%s\nwant exit 2 and two lines", code, errOut)
	}
}

// TestJournalUnknownExtensionIsUsageError checks that --journal with an
// extension that names no format is a usage error (exit 2) that creates
// no file.
func TestJournalUnknownExtensionIsUsageError(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"--journal", dir + "/x.txt"},
		{"--journal", dir + "/a.jsonl", "--journal", dir + "/x.txt"},
		{"--journal", dir + "/a.jsonl", "--journal", dir + "/a.jsonl"},
		{"--journal", dir + "/a.jsonl", "--journal", dir + "/b.pcapng", "--journal-format", "jsonl"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			// Bounded: a proxy that accepted the flags would run until cancelled.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var errBuf bytes.Buffer
			code := run(ctx, append([]string{"proxy", "--vm", "127.0.0.1:1", "--listen", "127.0.0.1:0", "--http-addr", ""}, args...), &env{stdout: io.Discard, stderr: &errBuf})
			errOut := errBuf.String()
			if ctx.Err() != nil {
				t.Errorf("the proxy accepted the flags and ran")
			}
			if code != exitUsage {
				t.Errorf("exit %d, want %d (usage error); stderr:\n%s", code, exitUsage, errOut)
			}
			if files, _ := filepath.Glob(dir + "/*"); len(files) > 0 {
				t.Errorf("files created: %v", files)
			}
		})
	}
}

// TestSeveralJournals runs one session with --journal given three times,
// one file per format: each file is written, none replaces another.
func TestSeveralJournals(t *testing.T) {
	dir := t.TempDir()
	jsonl, trace, pcap := dir+"/s.jsonl", dir+"/s.perfetto.json", dir+"/s.pcapng"
	t.Run("session", func(t *testing.T) {
		vm := newHotspotLike(t, jdwp.AppendReply(nil, 1, 0, []byte{0, 0, 0, 1}))
		addr, logs := startProxy(t, vm.ln.Addr().String(), "--journal", jsonl, "--journal", trace, "--journal", pcap)
		dbg, err := jdwptest.Attach(addr)
		if err != nil {
			t.Fatalf("%v\n%s", err, logs)
		}
		defer dbg.Close()
		if _, err := dbg.Call(jdwp.CmdVirtualMachineVersion, nil); err != nil { // the VM's canned reply has ID 1, the first command's
			t.Fatalf("no reply: %v\n%s", err, logs)
		}
		dbg.Close()
		<-vm.received
	}) // the proxy has shut down: the journal is closed
	recs, err := journal.ReadFiles(jsonl)
	if err != nil {
		t.Fatal(err)
	}
	cmds := 0
	for _, r := range recs {
		if r.IsCommandFromDebugger() && r.Name == "VirtualMachine.Version" {
			cmds++
		}
	}
	if cmds != 1 {
		t.Errorf("%s: %d Version commands, want 1: %v", jsonl, cmds, recs)
	}
	b, err := os.ReadFile(trace)
	var events []map[string]any
	if err != nil || json.Unmarshal(b, &events) != nil || !strings.Contains(string(b), "VirtualMachine.Version") {
		t.Errorf("%s: %v; want a trace with the Version command:\n%s", trace, err, b)
	}
	b, err = os.ReadFile(pcap)
	if err != nil || len(b) < 4 || string(b[:4]) != "\x0a\x0d\x0d\x0a" || !bytes.Contains(b, []byte("JDWP-Handshake")) {
		t.Errorf("%s: %v; want a pcapng with the session", pcap, err)
	}
}

// TestRemoteMetricsMessage checks that a non-loopback --metrics-addr is
// refused with a message about exposing metrics, not about VM control.
func TestRemoteMetricsMessage(t *testing.T) {
	code, _, errOut := runCapture("proxy", "--vm", "127.0.0.1:1", "--metrics-addr", "0.0.0.0:9464")
	if code != exitUsage || !strings.Contains(errOut, "metrics") || !strings.Contains(errOut, "--allow-remote") || strings.Contains(errOut, "control of the VM") {
		t.Errorf("exit %d, stderr %q; want exit 2 and a message about exposing metrics", code, errOut)
	}
}

// TestReadmeDocumentsEveryProxyFlag checks the README's flag table
// against the real flag set of "jdwpaccel proxy".
func TestReadmeDocumentsEveryProxyFlag(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(readme), "### Flags of `jdwpaccel proxy`")
	table, _, _ = strings.Cut(table, "\n## ")
	var pf proxyFlags
	fs := flag.NewFlagSet("proxy", flag.ContinueOnError)
	pf.register(fs)
	fs.VisitAll(func(f *flag.Flag) {
		if !regexp.MustCompile("`--" + regexp.QuoteMeta(f.Name) + "[` ,=]").MatchString(table) {
			t.Errorf("the README's flag table lacks --%s (%s)", f.Name, f.Usage)
		}
	})
}

// TestReadmeDocumentsEveryFarFlag checks the README's flag table of
// "jdwpaccel far" against its real flag set.
func TestReadmeDocumentsEveryFarFlag(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(readme), "### Flags of `jdwpaccel far`")
	if !ok {
		t.Fatal("the README has no flag table of jdwpaccel far")
	}
	table, _, _ = strings.Cut(table, "\n## ")
	var pf proxyFlags
	fs := flag.NewFlagSet("far", flag.ContinueOnError)
	pf.registerFar(fs)
	fs.VisitAll(func(f *flag.Flag) {
		if !regexp.MustCompile("`--" + regexp.QuoteMeta(f.Name) + "[` ,=]").MatchString(table) {
			t.Errorf("the README's far flag table lacks --%s (%s)", f.Name, f.Usage)
		}
	})
}
