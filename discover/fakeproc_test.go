package discover

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeSock is one line of a fake /proc/net/tcp{,6}.
type fakeSock struct {
	local, remote string // netip.AddrPort syntax
	state         int
	inode         uint64
}

// procEntry is one process of a fake /proc.
type procEntry struct {
	pid       int
	state     string // "S", or "Z" for a zombie
	start     uint64
	args, env []string
	fds       []string // link targets of /proc/PID/fd/N
}

// procAddr prints ap as the kernel does in /proc/net/tcp{,6}: the address
// as 32-bit words in host byte order, then the port.
func procAddr(ap netip.AddrPort) string {
	a := ap.Addr().AsSlice()
	var b strings.Builder
	for i := 0; i < len(a); i += 4 {
		fmt.Fprintf(&b, "%08X", binary.NativeEndian.Uint32(a[i:]))
	}
	fmt.Fprintf(&b, ":%04X", ap.Port())
	return b.String()
}

// writeFakeNet writes root/net/tcp and root/net/tcp6.
func writeFakeNet(t *testing.T, root string, socks ...fakeSock) {
	t.Helper()
	files := map[string]*strings.Builder{"tcp": {}, "tcp6": {}}
	for _, b := range files {
		b.WriteString("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n")
	}
	for i, s := range socks {
		l, r := netip.MustParseAddrPort(s.local), netip.MustParseAddrPort(s.remote)
		f := "tcp"
		if l.Addr().Is6() {
			f = "tcp6"
		}
		fmt.Fprintf(files[f], "%4d: %s %s %02X 00000000:00000000 00:00000000 00000000  1000        0 %d 1 0000000000000000 100 0 0 10 0\n",
			i, procAddr(l), procAddr(r), s.state, s.inode)
	}
	for f, b := range files {
		if err := os.WriteFile(filepath.Join(root, "net", f), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// writeFakeProc (re)writes root/PID.
func writeFakeProc(t *testing.T, root string, p procEntry) {
	t.Helper()
	dir := filepath.Join(root, strconv.Itoa(p.pid))
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "fd"), 0o755); err != nil {
		t.Fatal(err)
	}
	// All 52 fields of a current kernel; field 22 is starttime.
	stat := fmt.Sprintf("%d (java (x) y) %s 1 %d %d 0 -1 4194560 1000 0 0 0 50 30 0 0 20 0 25 0 %d 4000000000 30000 18446744073709551615 1 1 0 0 0 0 0 0 16800975 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
		p.pid, p.state, p.pid, p.pid, p.start)
	nul := func(l []string) []byte {
		var b []byte
		for _, s := range l {
			b = append(append(b, s...), 0)
		}
		return b
	}
	for name, data := range map[string][]byte{"stat": []byte(stat), "cmdline": nul(p.args), "environ": nul(p.env)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o444); err != nil {
			t.Fatal(err)
		}
	}
	for i, target := range p.fds {
		if err := os.Symlink(target, filepath.Join(dir, "fd", strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
}

// stepScan runs s and returns a function that lets it scan once more and
// returns what it reports then.
func stepScan(t *testing.T, s *Scan) func() string {
	ctx, cancel := context.WithCancel(context.Background())
	scanned := make(chan string)
	resume := make(chan struct{})
	var last string
	s.Interval = time.Millisecond
	s.onScan = func() {
		select {
		case scanned <- last:
		case <-ctx.Done():
			return
		}
		select {
		case <-resume:
		case <-ctx.Done():
		}
	}
	done := make(chan error, 1)
	go func() {
		done <- s.Run(ctx, func(vms []VM) {
			var b strings.Builder
			for _, vm := range vms {
				fmt.Fprintf(&b, "%s %s %q pid=%d %s suspend=%v busy=%v\n", vm.Key, vm.Kind, vm.Name, vm.PID, vm.Addr, vm.SuspendOnStart, vm.Busy)
			}
			last = b.String()
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	first := true
	return func() string {
		if !first {
			resume <- struct{}{}
		}
		first = false
		select {
		case r := <-scanned:
			return r
		case <-time.After(10 * time.Second):
			t.Fatal("no scan")
			return ""
		}
	}
}

// A scan of a fake /proc: which listeners are JVMs with a JDWP socket
// agent, their names, addresses and states, across scans.
func TestScanFakeProc(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "net"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"self", "sys"} { // not processes
		if err := os.Mkdir(filepath.Join(root, f), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const (
		listen = tcpListen
		estab  = tcpEstablished
	)
	jvm100 := procEntry{pid: 100, state: "S", start: 1000,
		args: []string{"java", "-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=*:5005", "-cp", "/a:/b", "com.x.Main"},
		env:  []string{"PATH=/bin"},
		fds:  []string{"/dev/null", "pipe:[77]", "socket:[999]", "socket:[1001]", "socket:[1009]"}}
	procs := []procEntry{
		jvm100,
		// Not a JVM.
		{pid: 200, state: "S", start: 2000, args: []string{"python3", "-m", "http.server", "8000"}, fds: []string{"socket:[2001]"}},
		// The agent in JAVA_TOOL_OPTIONS, an ephemeral port, IPv6.
		{pid: 300, state: "S", start: 3000, args: []string{"/usr/bin/java", "-jar", "/opt/app/server.jar"},
			env: []string{"HOME=/root", "JAVA_TOOL_OPTIONS=-Xmx1g -agentlib:jdwp=transport=dt_socket,server=y,address=0", "LANG=C"},
			fds: []string{"socket:[4001]"}},
		// Two listeners, the JDWP one named by address= and v4-mapped in
		// tcp6; a debugger connected to it.
		{pid: 400, state: "S", start: 4000, args: []string{"java", "-Xrunjdwp:transport=dt_socket,server=y,suspend=y,address=127.0.0.1:8003", "Main"},
			fds: []string{"socket:[5002]", "socket:[5001]", "socket:[5003]"}},
		// A zombie.
		{pid: 500, state: "Z", start: 5000, args: []string{"java", "-agentlib:jdwp=transport=dt_socket,server=y", "Main"}, fds: []string{"socket:[6001]"}},
		// Two listeners and address= names neither.
		{pid: 600, state: "S", start: 6000, args: []string{"java", "-agentlib:jdwp=transport=dt_socket,server=y,address=9999", "Main"},
			fds: []string{"socket:[7001]", "socket:[7002]"}},
		// A client-mode agent.
		{pid: 700, state: "S", start: 7000, args: []string{"java", "-agentlib:jdwp=transport=dt_socket,server=n,address=ide:8009", "Main"}, fds: []string{"socket:[8001]"}},
	}
	for _, p := range procs {
		writeFakeProc(t, root, p)
	}
	socks := []fakeSock{
		{"0.0.0.0:5005", "0.0.0.0:0", listen, 1001},
		{"127.0.0.1:9000", "0.0.0.0:0", listen, 1009}, // not a scanned port
		{"127.0.0.1:8000", "0.0.0.0:0", listen, 2001},
		{"127.0.0.1:8001", "0.0.0.0:0", listen, 3001}, // no process of ours
		{"[::]:8002", "[::]:0", listen, 4001},
		{"[::ffff:127.0.0.1]:8003", "[::]:0", listen, 5001},
		{"127.0.0.1:8004", "0.0.0.0:0", listen, 5002},
		{"127.0.0.1:8003", "127.0.0.1:40000", estab, 5003},
		{"127.0.0.1:8005", "0.0.0.0:0", listen, 6001},
		{"127.0.0.1:8006", "0.0.0.0:0", listen, 7001},
		{"127.0.0.1:8007", "0.0.0.0:0", listen, 7002},
		{"127.0.0.1:8009", "0.0.0.0:0", listen, 8001},
	}
	writeFakeNet(t, root, socks...)

	s := &Scan{Ports: PortsOf(5005, 8000, 8001, 8002, 8003, 8004, 8005, 8006, 8007, 8008, 8009), procRoot: root}
	next := stepScan(t, s)
	check := func(what, got, want string) {
		t.Helper()
		if got != want {
			t.Fatalf("%s:\n%s\nwant:\n%s", what, got, want)
		}
	}
	check("first scan", next(), `local:100 scan "com.x.Main" pid=100 127.0.0.1:5005 suspend=false busy=false
local:300 scan "server.jar" pid=300 [::1]:8002 suspend=true busy=false
local:400 scan "Main" pid=400 127.0.0.1:8003 suspend=true busy=true
`)

	// A debugger takes 100's only connection (HotSpot stops listening);
	// 300 exits.
	if err := os.RemoveAll(filepath.Join(root, "300")); err != nil {
		t.Fatal(err)
	}
	writeFakeNet(t, root, append(append([]fakeSock{}, socks[1:4]...), socks[5:]...)...)
	check("100 busy, 300 gone", next(), `local:100 scan "com.x.Main" pid=100 127.0.0.1:5005 suspend=false busy=true
local:400 scan "Main" pid=400 127.0.0.1:8003 suspend=true busy=true
`)

	// 100 listens again, on a new socket.
	jvm100.fds = append(jvm100.fds, "socket:[1002]")
	writeFakeProc(t, root, jvm100)
	socks[0].inode = 1002
	writeFakeNet(t, root, socks...)
	check("100 free", next(), `local:100 scan "com.x.Main" pid=100 127.0.0.1:5005 suspend=false busy=false
local:400 scan "Main" pid=400 127.0.0.1:8003 suspend=true busy=true
`)

	// 100 exits and its PID is reused by another program on 5005; 400
	// becomes a zombie.
	writeFakeProc(t, root, procEntry{pid: 100, state: "S", start: 1500, args: []string{"nc", "-l", "5005"}, fds: []string{"socket:[1002]"}})
	p400 := procs[3]
	p400.state = "Z"
	writeFakeProc(t, root, p400)
	check("100 reused, 400 a zombie", next(), "")
}
