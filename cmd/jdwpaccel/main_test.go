package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func runCapture(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(context.Background(), args, &env{stdout: &o, stderr: &e})
	return code, o.String(), e.String()
}

func TestUsageAndExitCodes(t *testing.T) {
	cases := []struct {
		args     []string
		code     int
		inOutput string
	}{
		{nil, exitUsage, "Usage: jdwpaccel"},
		{[]string{"help"}, exitOK, "proxy"},
		{[]string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{[]string{"proxy"}, exitUsage, "--vm HOST:PORT is required"},
		{[]string{"proxy", "-h"}, exitOK, "Examples:"},
		{[]string{"proxy", "--vm", "nonsense"}, exitUsage, "bad --vm"},
		{[]string{"proxy", "--vm", "127.0.0.1:1", "--bogus"}, exitUsage, "flag provided but not defined"},
		{[]string{"proxy", "--vm", "127.0.0.1:1", "--listen", "0.0.0.0:0"}, exitUsage, "pass --allow-remote"},
		{[]string{"proxy", "--vm", "127.0.0.1:1", "--listen", ":8700"}, exitUsage, "pass --allow-remote"},
		{[]string{"proxy", "--vm", "127.0.0.1:1", "--metrics-addr", "0.0.0.0:0"}, exitUsage, "pass --allow-remote"},
		{[]string{"proxy", "--vm", "127.0.0.1:1", "--log-level", "loud"}, exitUsage, "bad --log-level"},
		{[]string{"version"}, exitOK, "jdwpaccel "},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, out, errOut := runCapture(c.args...)
			if code != c.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, c.code, out, errOut)
			}
			if !strings.Contains(out+errOut, c.inOutput) {
				t.Errorf("output lacks %q\nstdout: %s\nstderr: %s", c.inOutput, out, errOut)
			}
		})
	}
}

func TestAllowRemoteWarns(t *testing.T) {
	addr, logs := startProxy(t, "127.0.0.1:1", "--allow-remote", "--listen", "0.0.0.0:0")
	if !strings.HasPrefix(addr, "0.0.0.0:") && !strings.HasPrefix(addr, "[::]:") {
		t.Errorf("listening on %s, want all interfaces", addr)
	}
	if !strings.Contains(logs.String(), `"level":"warn"`) || !strings.Contains(logs.String(), "non-loopback") {
		t.Errorf("no warning about the non-loopback listener:\n%s", logs)
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8700": true, "localhost:1": true, "[::1]:2": true, "127.1.2.3:0": true,
		":8700": false, "0.0.0.0:1": false, "10.0.0.1:5": false, "example.com:1": false, "garbage": false,
	} {
		if got := isLoopback(addr); got != want {
			t.Errorf("isLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

// TestFakeVMCommand: "jdwpaccel fakevm" says where it listens and which
// threads it starts with, and logs what it served when it stops.
func TestFakeVMCommand(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // serve nothing: stop at once
	var o, e bytes.Buffer
	code := run(ctx, []string{"fakevm", "--listen", "127.0.0.1:0", "--threads", "2", "--churn", "0", "--gc", "0"}, &env{stdout: &o, stderr: &e})
	if code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, e.String())
	}
	if !strings.Contains(o.String(), "with 3 threads (main, ") {
		t.Errorf("stdout %q does not list main and 2 more threads", o.String())
	}
	if !strings.Contains(e.String(), "fake VM served") || !strings.Contains(e.String(), `"connections":0`) {
		t.Errorf("stderr %q lacks the served counters", e.String())
	}
}
