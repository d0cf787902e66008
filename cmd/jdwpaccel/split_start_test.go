package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/split"
)

// runToExit runs jdwpaccel with args, which must stop by itself, and
// returns its exit code and its JSON log records.
func runToExit(t *testing.T, args ...string) (int, []map[string]any, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var buf jdwptest.Buffer
	args = append([]string{args[0], "--http-addr", "", "--log-format", "json"}, args[1:]...)
	code := run(ctx, args, &env{stdout: io.Discard, stderr: &buf})
	if ctx.Err() != nil {
		t.Fatalf("%v: still running after 20s; log:\n%s", args, buf.String())
	}
	var recs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil {
			recs = append(recs, rec)
		}
	}
	return code, recs, buf.String()
}

// TestNearEndStopsWhenRefusedAtStart: a near end whose far end refuses its
// token (none, or a wrong one) or speaks another protocol version stops at
// start with exit 1 and one error line saying what to do, instead of
// inviting debuggers that would all be refused.
func TestNearEndStopsWhenRefusedAtStart(t *testing.T) {
	dir := t.TempDir()
	token, wrong := filepath.Join(dir, "token"), filepath.Join(dir, "wrong")
	os.WriteFile(token, []byte("correct horse battery staple\n"), 0o600)
	os.WriteFile(wrong, []byte("incorrect horse battery staple\n"), 0o600)
	far := startFarEnd(t, "127.0.0.1:1", "--token-file", token)

	// A far end of the next protocol version (a fake).
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
			split.ReadHello(c) //nolint:errcheck // answered whatever it says
			c.Write(split.AppendReply(nil, split.Reply{Version: split.ProtocolVersion + 1, Status: split.StatusVersionSkew, Software: "v-next", Message: "skew"}))
			c.Close()
		}
	}()

	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no token", []string{"proxy", "--far", far.addr}, "wants a token and this end has none: give it the far end's token file with --token-file"},
		{"wrong token", []string{"proxy", "--far", far.addr, "--token-file", wrong}, "refused the token"},
		{"version skew", []string{"proxy", "--far", ln.Addr().String()}, "run the same jdwpaccel version on both ends"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, recs, raw := runToExit(t, append(c.args, "--listen", "127.0.0.1:0")...)
			if code != exitError {
				t.Errorf("exit %d, want %d", code, exitError)
			}
			var errs []string
			for _, rec := range recs {
				if rec["level"] == "error" {
					e, _ := rec["error"].(string)
					errs = append(errs, e)
				}
				if rec["message"] == nearListening {
					t.Errorf("the near end invited debuggers: %v", rec)
				}
			}
			if len(errs) != 1 || !strings.Contains(errs[0], c.want) {
				t.Errorf("error lines %q, want one saying %q; log:\n%s", errs, c.want, raw)
			}
		})
	}
}
