package journal

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// pcapBlocks walks a pcapng file and returns its block types, failing on
// any inconsistent length.
func pcapBlocks(t *testing.T, b []byte) []uint32 {
	t.Helper()
	var types []uint32
	for off := 0; off < len(b); {
		if len(b)-off < 12 {
			t.Fatalf("trailing %d bytes at %d", len(b)-off, off)
		}
		typ := binary.LittleEndian.Uint32(b[off:])
		n := int(binary.LittleEndian.Uint32(b[off+4:]))
		if n%4 != 0 || n < 12 || off+n > len(b) || binary.LittleEndian.Uint32(b[off+n-4:]) != uint32(n) {
			t.Fatalf("block at %d: bad length %d", off, n)
		}
		types = append(types, typ)
		off += n
	}
	return types
}

func TestPcapngStructure(t *testing.T) {
	out := session(t, Options{Format: FormatPcapng}, true, script)
	types := pcapBlocks(t, out)
	if len(types) < 2 || types[0] != 0x0A0D0D0A || types[1] != 1 {
		t.Fatalf("blocks %x: want a section header then an interface", types[:min(len(types), 3)])
	}
	epb := 0
	for _, ty := range types[2:] {
		if ty != 6 {
			t.Fatalf("unexpected block type %#x", ty)
		}
		epb++
	}
	// 3 SYN segments, 2 handshakes, 17 debugger-view packets (8 commands,
	// 8 replies, 1 event), 3 FIN segments.
	if epb != 3+2+17+3 {
		t.Errorf("%d packets, want %d", epb, 3+2+17+3)
	}
}

func TestChecksum(t *testing.T) {
	// The example of RFC 1071 section 3: words 0001 f203 f4f5 f6f7.
	b := []byte{0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7}
	if got := checksum(0, b); got != ^uint16(0xddf2) {
		t.Errorf("checksum = %#x, want %#x", got, ^uint16(0xddf2))
	}
}

// TestTsharkDecodesPcapng has Wireshark's own JDWP dissector read the
// debugger view. It skips without tshark, unless CI=true.
func TestTsharkDecodesPcapng(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tshark is not installed (apt-get install tshark)")
		}
		t.Skip("tshark not installed")
	}
	// Truncate big packets too, so that the rewritten length is checked.
	big := func(d *debugger) {
		script(d)
		d.call(jdwp.CmdArrayReferenceGetValues, make([]byte, 100_000)) // echoed: 2 segments each way
	}
	out := session(t, Options{Format: FormatPcapng, RawLimit: 200_000}, true, big)
	path := filepath.Join(t.TempDir(), "j.pcapng")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(tshark, "-r", path, "-Y", "jdwp", "-T", "fields", "-E", "separator=;",
		"-e", "jdwp.id", "-e", "jdwp.flags", "-e", "jdwp.commandset", "-e", "jdwp.command", "-e", "jdwp.errorcode", "-e", "jdwp.type", "-e", "jdwp.length")
	got, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark: %v\n%s", err, got)
	}
	lines := strings.Split(strings.TrimSpace(string(got)), "\n")
	var handshakes, commands, replies int
	for _, l := range lines {
		f := strings.Split(l, ";")
		if len(f) != 7 {
			t.Fatalf("tshark line %q", l)
		}
		switch {
		case f[5] == "JDWP-Handshake":
			handshakes++
		case f[1] == "0x00" || f[1] == "0":
			commands++
			if id, _ := strconv.Atoi(f[0]); id >= synthBase || id == 0 && f[2] != "64" {
				t.Errorf("command with id %s in the debugger view", f[0])
			}
		case f[1] == "0x80" || f[1] == "128":
			replies++
		default:
			t.Errorf("tshark line %q: unexpected flags", l)
		}
	}
	// 9 commands (with the event) and 9 replies, 2 handshakes.
	if handshakes != 2 || commands != 10 || replies != 9 {
		t.Errorf("tshark saw %d handshakes, %d commands, %d replies; want 2, 10 (9 and the event), 9\n%s", handshakes, commands, replies, got)
	}
	// No malformed packets, analysis warnings or bad checksums.
	cmd = exec.Command(tshark, "-r", path, "-o", "tcp.check_checksum:TRUE", "-o", "ip.check_checksum:TRUE",
		"-Y", "_ws.malformed || _ws.expert.severity >= warning || tcp.analysis.flags || tcp.checksum.status != 1 || ip.checksum.status != 1")
	bad, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	if s := strings.TrimSpace(string(bad)); s != "" {
		t.Errorf("tshark flags problems:\n%s", s)
	}
}
