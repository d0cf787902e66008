package discover

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

// TestLocalListener reads a fake /proc: a port in LISTEN state is found,
// a port with only an established connection is not; no /proc is unknown.
func TestLocalListener(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "net"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFakeNet(t, root,
		fakeSock{local: "127.0.0.1:5005", remote: "0.0.0.0:0", state: tcpListen, inode: 1},
		fakeSock{local: "[::]:8000", remote: "[::]:0", state: tcpListen, inode: 2},
		fakeSock{local: "127.0.0.1:5006", remote: "127.0.0.1:40000", state: tcpEstablished, inode: 3},
	)
	for port, want := range map[uint16]bool{5005: true, 8000: true, 5006: false, 9999: false} {
		if got, known := localListener(root, port); got != want || !known {
			t.Errorf("port %d: listening %v known %v, want %v and known", port, got, known, want)
		}
	}
	if _, known := localListener(t.TempDir(), 5005); known {
		t.Error("an empty /proc is known")
	}
}

// TestLocalListenerReal checks the real /proc with a listener of the test.
func TestLocalListenerReal(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	listening, known := LocalListener(port)
	if !known {
		t.Skip("no /proc/net/tcp here")
	}
	if !listening {
		t.Errorf("port %d of this test's listener: not found listening", port)
	}
}
