package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
)

func TestCmdLinkUsage(t *testing.T) {
	cases := []struct {
		args     []string
		code     int
		inOutput string
	}{
		{nil, exitUsage, "--to HOST:PORT is required"},
		{[]string{"-h"}, exitOK, "Examples:"},
		{[]string{"--to", "nonsense"}, exitUsage, "bad --to"},
		{[]string{"--to", "127.0.0.1:1", "--bogus"}, exitUsage, "flag provided but not defined"},
		{[]string{"--to", "127.0.0.1:1", "extra"}, exitUsage, "unexpected argument"},
		{[]string{"--to", "127.0.0.1:1", "--listen", "0.0.0.0:0"}, exitUsage, "pass --allow-remote"},
		{[]string{"--to", "127.0.0.1:1", "--listen", ":0"}, exitUsage, "pass --allow-remote"},
		{[]string{"--to", "127.0.0.1:1", "--rtt", "-1ms"}, exitUsage, "negative RTT"},
		{[]string{"--to", "127.0.0.1:1", "--rtt", "soon"}, exitUsage, "invalid value"},
		{[]string{"--to", "127.0.0.1:1", "--bandwidth", "fast"}, exitUsage, "bad rate"},
		{[]string{"--to", "127.0.0.1:1", "--log-level", "loud"}, exitUsage, "bad --log-level"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := cmdLink(context.Background(), &env{stdout: &out, stderr: &errOut}, c.args)
			if code != c.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, c.code, &out, &errOut)
			}
			if !strings.Contains(out.String()+errOut.String(), c.inOutput) {
				t.Errorf("output lacks %q\nstdout: %s\nstderr: %s", c.inOutput, &out, &errOut)
			}
		})
	}
}

func TestParseRate(t *testing.T) {
	for s, want := range map[string]int64{"0": 0, "250000": 250000, "2M": 2e6, "3k": 3000, "512Ki": 512 << 10, "1Gi": 1 << 30} {
		if got, err := parseRate(s); err != nil || got != want {
			t.Errorf("parseRate(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "-1", "M", "1.5M", "9999999999G", "1T"} {
		if _, err := parseRate(s); err == nil {
			t.Errorf("parseRate(%q) succeeded", s)
		}
	}
}

// TestCmdLinkRuns: the command logs its bound address, relays to --to with
// the delay, and exits 0 when its context is cancelled.
func TestCmdLinkRuns(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()

	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- cmdLink(ctx, &env{stdout: io.Discard, stderr: pw},
			[]string{"--to", ln.Addr().String(), "--rtt", "20ms", "--log-format", "json"})
		pw.Close()
	}()
	logs := &jdwptest.Buffer{}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			logs.Write(append(sc.Bytes(), '\n'))
			var rec map[string]any
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec["message"] == "link listening" {
				if l, ok := rec["listen"].(string); ok {
					found <- l
				}
			}
		}
	}()
	var addr string
	select {
	case addr = <-found:
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatalf("link did not log its listen address; log:\n%s", logs)
	}
	if !strings.HasPrefix(addr, "127.0.0.1:") || strings.HasSuffix(addr, ":0") {
		t.Errorf("logged listen address %q, want the bound loopback address", addr)
	}

	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 4)
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); string(got) != "ping" || d < 20*time.Millisecond {
		t.Errorf("echo %q after %v, want %q after at least 20ms", got, d, "ping")
	}

	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("exit %d after cancel, want 0; log:\n%s", code, logs)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("link did not stop after cancel")
	}
}
