package split

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
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

// tokenOK compares a presented token with the expected one in constant
// time (of their hashes, so that not even the length leaks).
func tokenOK(got, want []byte) bool {
	g, w := sha256.Sum256(got), sha256.Sum256(want)
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
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
