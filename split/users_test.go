package split

import (
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/relay"
)

func TestReadUsersFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", "# who may debug\nalice:0123456789abcdef-alice\n\nbob.smith@example:0123456789abcdef:bob  \r\n", 0o600)
	var u Users
	if err := ReadUsersFile(good, &u); err != nil {
		t.Fatal(err)
	}
	for tok, want := range map[string]string{"0123456789abcdef-alice": "alice", "0123456789abcdef:bob": "bob.smith@example"} {
		if name, ok := u.Lookup([]byte(tok)); !ok || name != want {
			t.Errorf("Lookup(%q) = %q, %v; want %q", tok, name, ok, want)
		}
	}
	for _, tok := range []string{"", "0123456789abcdef-alic", "0123456789abcdef-alice ", "alice:0123456789abcdef-alice"} {
		if name, ok := u.Lookup([]byte(tok)); ok {
			t.Errorf("Lookup(%q) = %q: a token nobody has", tok, name)
		}
	}
	if u.Len() != 2 {
		t.Errorf("Len %d, want 2", u.Len())
	}

	bad := map[string]struct {
		content string
		mode    os.FileMode
		want    string
	}{
		"open":       {"alice:0123456789abcdef-alice\n", 0o644, "chmod 600"},
		"no colon":   {"0123456789abcdef-alice\n", 0o600, "name:token"},
		"short":      {"alice:short\n", 0o600, "fewer than 16"},
		"bad name":   {"al ice:0123456789abcdef-alice\n", 0o600, "a user's name"},
		"empty name": {":0123456789abcdef-alice\n", 0o600, "a user's name"},
		"twice":      {"alice:0123456789abcdef-alice\nalice:0123456789abcdef-other\n", 0o600, "listed twice"},
		"same token": {"alice:0123456789abcdef-alice\nbob:0123456789abcdef-alice\n", 0o600, "same token"},
		"nobody":     {"# nobody\n\n", 0o600, "no user"},
		"same cert":  {"a:sha256:" + strings.Repeat("ab", 32) + "\nb:sha256:" + strings.Repeat("AB", 32) + "\n", 0o600, "same certificate"},
	}
	for name, c := range bad {
		p := write(strings.ReplaceAll(name, " ", "_"), c.content, c.mode)
		err := ReadUsersFile(p, new(Users))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want an error saying %q", name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "0123456789abcdef") {
			t.Errorf("%s: the error quotes a token: %v", name, err)
		}
	}
}

// TestFarCertUsers: a user pinned by the fingerprint of their client
// certificate gets in with it and no token, under their name; another
// certificate without a token is refused; a token user gets in over TLS
// whatever certificate they present.
func TestFarCertUsers(t *testing.T) {
	v := newVMSide(t)
	farCert, farDER := selfSigned(t, "far")
	carolCert, carolDER := selfSigned(t, "carol")
	otherCert, _ := selfSigned(t, "other")
	fp := sha256.Sum256(carolDER)
	var colons []string
	for _, b := range fp {
		colons = append(colons, fmt.Sprintf("%02X", b))
	}
	var users Users
	if err := parseUsers("users", []byte("carol:sha256:"+strings.Join(colons, ":")+"\nalice:0123456789abcdef-alice\n"), &users); err != nil {
		t.Fatal(err)
	}
	if !users.HasCerts() || users.Len() != 2 {
		t.Fatalf("users: certs %v, len %d; want a certificate and a token", users.HasCerts(), users.Len())
	}
	tc := ServerTLS(farCert, nil)
	users.RequestCerts(tc)
	seen := make(chan string, 4)
	f := startFar(t, v, "127.0.0.1:0", FarConfig{TLS: tc, Users: &users, Hooks: func(rs *relay.Session) relay.Hooks {
		seen <- rs.DebuggerInfo().User
		return relay.Hooks{}
	}})
	versionThrough(t, startNear(t, NearConfig{Addr: f.addr, TLS: ClientTLS(farDER, &carolCert)}))
	if got := <-seen; got != "carol" {
		t.Errorf("carol's certificate: user %q", got)
	}
	versionThrough(t, startNear(t, NearConfig{Addr: f.addr, TLS: ClientTLS(farDER, &otherCert), Token: []byte("0123456789abcdef-alice")}))
	if got := <-seen; got != "alice" {
		t.Errorf("alice's token with another certificate: user %q", got)
	}
	for _, c := range []*tls.Certificate{&otherCert, nil} {
		if _, err := Probe(t.Context(), NearConfig{Addr: f.addr, TLS: ClientTLS(farDER, c)}); !errors.Is(err, ErrUnauthorized) {
			t.Errorf("certificate %v without a token: %v, want unauthorized", c != nil, err)
		}
	}
}

// refusals is an Auditor that keeps what it was told.
type refusals struct {
	mu    sync.Mutex // guards lines
	lines []string
}

func (r *refusals) Refused(from, reason string, suppressed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, from+" "+reason)
}

func (r *refusals) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.lines...)
}

// TestFarUsers: each named user's sessions carry the user's name in the
// far end's log lines and in the session's Agreed; the unnamed token of
// a single-token file still works, without a name; a token nobody has is
// refused and told to the auditor, at the logs' rate.
func TestFarUsers(t *testing.T) {
	v := newVMSide(t)
	var users Users
	users.AddToken("alice", []byte("0123456789abcdef-alice"))
	users.AddToken("bob", []byte("0123456789abcdef-bob"))
	unnamed := []byte("0123456789abcdef-shared")
	var audit refusals
	seen := make(chan string, 4)
	f := startFar(t, v, "127.0.0.1:0", FarConfig{Users: &users, Token: unnamed, Audit: &audit,
		Hooks: func(rs *relay.Session) relay.Hooks {
			seen <- rs.DebuggerInfo().User
			return relay.Hooks{}
		}})

	for _, c := range []struct{ tok, user string }{{"0123456789abcdef-alice", "alice"}, {"0123456789abcdef-bob", "bob"}, {string(unnamed), ""}} {
		versionThrough(t, startNear(t, NearConfig{Addr: f.addr, Token: []byte(c.tok)}))
		if got := <-seen; got != c.user {
			t.Errorf("session of %q: its Agreed names %q", c.user, got)
		}
	}
	for _, name := range []string{"alice", "bob"} {
		if !strings.Contains(f.log.String(), `"user":"`+name+`"`) {
			t.Errorf("no log line with user %q:\n%s", name, f.log)
		}
	}

	// Two refusals from one host: the first is logged and audited, the
	// second only counted (the next line of that host will say so).
	for range 2 {
		if _, err := Probe(t.Context(), NearConfig{Addr: f.addr, Token: []byte("0123456789abcdef-mallory")}); err == nil {
			t.Fatal("a token nobody has was accepted")
		}
	}
	// The far end counts and audits a refusal before it writes the reply
	// the probe read.
	if got := audit.list(); len(got) != 1 || got[0] != "127.0.0.1 unauthorized" {
		t.Errorf("audited refusals %q; want one, of 127.0.0.1, unauthorized", got)
	}
	if f.count(OutcomeUnauthorized) != 2 {
		t.Errorf("%v refusals counted, want 2", f.count(OutcomeUnauthorized))
	}
}

// FuzzParseUsers: a users file never panics its parser; one it accepts
// lists at least one credential, and each of its token lines is found
// again by Lookup under its name.
func FuzzParseUsers(f *testing.F) {
	f.Add([]byte("# users\nalice:0123456789abcdef-alice\nbob:sha256:" + strings.Repeat("ab", 32) + "\n"))
	f.Add([]byte("a:b\n:x\n\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var u Users
		if err := parseUsers("fuzz", b, &u); err != nil {
			return
		}
		if u.Len() == 0 {
			t.Fatal("accepted with no credential")
		}
		for _, line := range strings.Split(string(b), "\n") {
			line = strings.TrimRight(line, " \t\r")
			name, tok, ok := strings.Cut(line, ":")
			if !ok || strings.HasPrefix(line, "#") || strings.HasPrefix(tok, certPrefix) {
				continue
			}
			if got, found := u.Lookup([]byte(tok)); !found || got != name {
				t.Fatalf("line %q: Lookup = %q, %v", line, got, found)
			}
		}
	})
}
