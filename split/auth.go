package split

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/jdwpaccel/jdwpaccel/internal/logkey"
)

// MinTokenBytes is the shortest token accepted.
const MinTokenBytes = 16

// ReadTokenFile reads a shared token: the file's content without its
// trailing white space. The file must be readable and writable by its
// owner only (0600 or 0400), since whoever holds the token controls the
// VM.
func ReadTokenFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("token file %s has mode %04o: anyone in its group or on the machine can read it; chmod 600 %s", path, perm, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	tok := bytes.TrimRight(b, " \t\r\n")
	switch {
	case len(tok) < MinTokenBytes:
		return nil, fmt.Errorf("token file %s holds %d bytes, fewer than %d (make one with: head -c 32 /dev/urandom | base64 > %s)", path, len(tok), MinTokenBytes, path)
	case len(tok) > maxToken:
		return nil, fmt.Errorf("token file %s holds %d bytes, more than %d", path, len(tok), maxToken)
	}
	return tok, nil
}

// ReadCertificate reads the first PEM certificate of path, as DER, for
// pinning.
func ReadCertificate(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			return nil, fmt.Errorf("%s holds no PEM certificate", path)
		}
		if blk.Type == "CERTIFICATE" {
			if _, err := x509.ParseCertificate(blk.Bytes); err != nil {
				return nil, fmt.Errorf("%s: %v", path, err)
			}
			return blk.Bytes, nil
		}
	}
}

// errPinMismatch is the pinned-certificate check's failure.
var errPinMismatch = errors.New("split: the peer's certificate is not the pinned one")

// verifyPinned returns a tls.Config.VerifyPeerCertificate accepting only
// the certificate pin (DER) as the peer's leaf.
func verifyPinned(pin []byte) func(raw [][]byte, _ [][]*x509.Certificate) error {
	return func(raw [][]byte, _ [][]*x509.Certificate) error {
		if len(raw) == 0 || !bytes.Equal(raw[0], pin) {
			return errPinMismatch
		}
		return nil
	}
}

// ServerTLS is the far end's TLS configuration: TLS 1.3 only, with the
// certificate cert; with peerPin (DER) not nil, the near end must present
// exactly that client certificate.
func ServerTLS(cert tls.Certificate, peerPin []byte) *tls.Config {
	c := &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cert},
	}
	if peerPin != nil {
		c.ClientAuth = tls.RequireAnyClientCert
		c.VerifyPeerCertificate = verifyPinned(peerPin)
	}
	return c
}

// ClientTLS is the near end's TLS configuration: TLS 1.3 only, accepting
// exactly the far end's certificate farPin (DER), whatever its name or
// issuer (a far end usually has a self-signed certificate); with cert not
// nil, it is presented as the near end's client certificate.
func ClientTLS(farPin []byte, cert *tls.Certificate) *tls.Config {
	c := &tls.Config{
		MinVersion: tls.VersionTLS13,
		// The chain is not verified against any root: the pin below is
		// the whole check, and a stricter one than a CA's.
		InsecureSkipVerify:    true, //nolint:gosec // pinned by VerifyPeerCertificate
		VerifyPeerCertificate: verifyPinned(farPin),
	}
	if cert != nil {
		c.Certificates = []tls.Certificate{*cert}
	}
	return c
}

// ---- Named users (the far end's --users-file) ------------------------------

// LogUser is the log field naming the user whose token (or certificate) a
// near end presented, on the far end; absent for the unnamed token of
// --token-file.
const LogUser = logkey.User

// maxUserName bounds a user's name in a users file.
const maxUserName = 64

// Users is the far end's set of credentials, each with the name of its
// user: tokens ("" for the unnamed token of a single-token file) and TLS
// client certificates pinned by their SHA-256 fingerprint. A near end is
// let in by any one of them. It is built once, before the far end
// serves, and only read afterwards.
type Users struct {
	users []user // tokens
	certs []user // certificate fingerprints
}

type user struct {
	name string
	sum  [sha256.Size]byte // the token's SHA-256 (tokens are compared as digests), or the certificate's
}

// Len is the number of credentials in u (0 for a nil u).
func (u *Users) Len() int {
	if u == nil {
		return 0
	}
	return len(u.users) + len(u.certs)
}

// HasCerts says whether u pins client certificates: the far end then
// needs TLS, and asks near ends for a certificate (RequestCerts).
func (u *Users) HasCerts() bool { return u != nil && len(u.certs) > 0 }

// RequestCerts makes the server TLS configuration c ask near ends for a
// client certificate, without requiring one (a near end may present a
// token instead) or checking it against any root: the far end checks
// its fingerprint after the handshake.
func (u *Users) RequestCerts(c *tls.Config) {
	if u.HasCerts() && c.ClientAuth == tls.NoClientCert {
		c.ClientAuth = tls.RequestClientCert
	}
}

// AddCert pins the certificate whose DER has the SHA-256 fingerprint fp
// for the user name.
func (u *Users) AddCert(name string, fp [sha256.Size]byte) error {
	for _, o := range u.certs {
		if o.sum == fp {
			return fmt.Errorf("users %q and %q have the same certificate", o.name, name)
		}
	}
	u.certs = append(u.certs, user{name: name, sum: fp})
	return nil
}

// authenticate returns the user a near end is: the one whose pinned
// certificate it presented in the TLS handshake of conn, else the one
// whose token tok is. ok is false when it is neither.
func (u *Users) authenticate(conn net.Conn, tok []byte) (name string, ok bool) {
	if tc, isTLS := conn.(*tls.Conn); isTLS && len(u.certs) > 0 {
		if peer := tc.ConnectionState().PeerCertificates; len(peer) > 0 {
			fp := sha256.Sum256(peer[0].Raw)
			for _, o := range u.certs {
				if o.sum == fp { // a fingerprint is no secret: no need for constant time
					return o.name, true
				}
			}
		}
	}
	return u.Lookup(tok)
}

// AddToken adds the token tok for the user name ("" for the unnamed user
// of a single-token file). A token already held is an error: two users
// with one token could not be told apart.
func (u *Users) AddToken(name string, tok []byte) error {
	sum := sha256.Sum256(tok)
	for _, o := range u.users {
		if o.sum == sum {
			return fmt.Errorf("users %q and %q have the same token", o.name, name)
		}
		if name != "" && o.name == name {
			return fmt.Errorf("user %q is listed twice", name)
		}
	}
	u.users = append(u.users, user{name: name, sum: sum})
	return nil
}

// Lookup returns the name of the user whose token tok is. It compares tok
// with every token, in constant time and without stopping at a match, so
// that neither which user matched nor how much of a token did leaks
// through timing (only the number of users does). ok is false when tok
// is nobody's.
func (u *Users) Lookup(tok []byte) (name string, ok bool) {
	got := sha256.Sum256(tok)
	found := -1
	for i, o := range u.users {
		if subtle.ConstantTimeCompare(got[:], o.sum[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return "", false
	}
	return u.users[found].name, true
}

// certPrefix marks a certificate fingerprint in a users file.
const certPrefix = "sha256:"

// ReadUsersFile reads a users file: one credential per line,
// "name:token" or "name:sha256:HEX"; empty lines and lines starting with
// # are skipped. A name is 1 to 64 of the characters A-Z a-z 0-9 . _ @ -;
// a token is the rest of the line (without trailing white space), 16 to
// 1024 bytes, unique in the file; "sha256:" and 64 hex digits (colons
// between pairs allowed, as openssl prints them) is instead the SHA-256
// fingerprint of the user's TLS client certificate (DER), which the near
// end presents with --tls-cert. A user may have several lines (a token
// and a certificate), but a token only one user. Like a token file, the file must be readable and writable
// by its owner only (0600 or 0400). The users are added to u.
func ReadUsersFile(path string, u *Users) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("users file %s has mode %04o: anyone in its group or on the machine can read its tokens; chmod 600 %s", path, perm, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return parseUsers(path, b, u)
}

// parseUsers adds the users of a users file's content b to u; path names
// the file in errors, which never quote a token.
func parseUsers(path string, b []byte, u *Users) error {
	n := 0
	for i, line := range bytes.Split(b, []byte("\n")) {
		line = bytes.TrimRight(line, " \t\r")
		if len(bytes.TrimSpace(line)) == 0 || line[0] == '#' {
			continue
		}
		name, tok, found := bytes.Cut(line, []byte(":"))
		if !found {
			return fmt.Errorf("%s:%d: want name:token or name:sha256:FINGERPRINT", path, i+1)
		}
		if !validUserName(name) {
			return fmt.Errorf("%s:%d: a user's name is 1 to %d of A-Z a-z 0-9 . _ @ -", path, i+1, maxUserName)
		}
		if fp, isCert := parseFingerprint(tok); isCert {
			if err := u.AddCert(string(name), fp); err != nil {
				return fmt.Errorf("%s:%d: %v", path, i+1, err)
			}
			n++
			continue
		}
		switch {
		case len(tok) < MinTokenBytes:
			return fmt.Errorf("%s:%d: the token of %q has %d bytes, fewer than %d (make one with: head -c 32 /dev/urandom | base64)", path, i+1, name, len(tok), MinTokenBytes)
		case len(tok) > maxToken:
			return fmt.Errorf("%s:%d: the token of %q has %d bytes, more than %d", path, i+1, name, len(tok), maxToken)
		}
		if err := u.AddToken(string(name), tok); err != nil {
			return fmt.Errorf("%s:%d: %v", path, i+1, err)
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("users file %s lists no user (want lines name:token)", path)
	}
	return nil
}

// parseFingerprint reads "sha256:" and 64 hex digits, with or without a
// colon between each pair.
func parseFingerprint(b []byte) (fp [sha256.Size]byte, ok bool) {
	s, found := bytes.CutPrefix(b, []byte(certPrefix))
	if !found {
		return fp, false
	}
	h := bytes.ReplaceAll(s, []byte(":"), nil)
	if len(h) != 2*sha256.Size {
		return fp, false
	}
	if _, err := hex.Decode(fp[:], h); err != nil {
		return fp, false
	}
	return fp, true
}

func validUserName(b []byte) bool {
	if len(b) == 0 || len(b) > maxUserName {
		return false
	}
	for _, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '@', c == '-':
		default:
			return false
		}
	}
	return true
}

// An Auditor records who reached the far end (package audit's Log). The
// far end calls Refused for each refused connection it logs (so at the
// logs' rate: once per remote host per minute, with the number of
// refusals not recorded since); accepted sessions are recorded by the
// auditor's own session hooks, which find the user in
// relay.Session.DebuggerInfo().User.
type Auditor interface {
	Refused(from, reason string, suppressed int)
}

// farUsers is cfg's users with its Token as the unnamed user.
func farUsers(cfg FarConfig) *Users {
	u := &Users{}
	if cfg.Users != nil {
		u.users = append(u.users, cfg.Users.users...)
		u.certs = append(u.certs, cfg.Users.certs...)
	}
	if len(cfg.Token) > 0 {
		u.AddToken("", cfg.Token) //nolint:errcheck // a token also in Users names its user
	}
	return u
}
