package discover

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

const procNetTCP = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:46CB 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 26502 1 0000000056c14bf4 100 0 0 10 0
   5: 0100007F:B806 0100007F:46CB 01 00000000:00000000 00:00000000 00000000     0        0 28819 1 0000000039ee7e8d 20 4 30 11 -1
   6: garbage
`

const procNetTCP6 = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:1F40 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0000000000000000 100 0 0 10 0
   1: 00000000000000000000000001000000:1F41 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4243 1 0000000000000000 100 0 0 10 0
   2: 0000000000000000FFFF00000100007F:1F42 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4244 1 0000000000000000 100 0 0 10 0
`

func TestParseProcNetTCP(t *testing.T) {
	var got []sockEntry
	bad := parseProcNetTCP([]byte(procNetTCP), func(e sockEntry) { got = append(got, e) })
	if bad != 1 || len(got) != 2 {
		t.Fatalf("bad %d, got %+v", bad, got)
	}
	want0 := sockEntry{local: netip.MustParseAddrPort("127.0.0.1:18123"), remote: netip.MustParseAddrPort("0.0.0.0:0"), state: tcpListen, inode: 26502}
	if got[0] != want0 {
		t.Errorf("got %+v, want %+v", got[0], want0)
	}
	if got[1].state != tcpEstablished || got[1].local.Port() != 0xB806 || got[1].remote.Port() != 18123 {
		t.Errorf("got %+v", got[1])
	}
	got = nil
	if bad := parseProcNetTCP([]byte(procNetTCP6), func(e sockEntry) { got = append(got, e) }); bad != 0 || len(got) != 3 {
		t.Fatalf("bad %d, got %+v", bad, got)
	}
	// These little-endian words are what x86 and ARM Linux print.
	for i, want := range []string{"[::]:8000", "[::1]:8001", "127.0.0.1:8002"} {
		if got[i].local.String() != want {
			t.Errorf("tcp6 line %d: %s, want %s", i, got[i].local, want)
		}
	}
	if dialAddr(got[0].local) != "[::1]:8000" || dialAddr(netip.MustParseAddrPort("0.0.0.0:5")) != "127.0.0.1:5" {
		t.Error("dialAddr of an unspecified address")
	}
}

func TestParseStatStartTime(t *testing.T) {
	stat := "4242 (java (x) y) S 1 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 19 0 987654 1000 100"
	got, err := parseStatStartTime([]byte(stat))
	if err != nil || got != 987654 {
		t.Fatalf("%d, %v", got, err)
	}
	zombie := strings.Replace(stat, ") S ", ") Z ", 1)
	if _, err := parseStatStartTime([]byte(zombie)); !errors.Is(err, errZombie) {
		t.Fatalf("zombie: %v", err)
	}
	if _, err := parseStatStartTime([]byte("1 (x) S 1")); err == nil {
		t.Fatal("short stat accepted")
	}
}

func TestParseJavaCommand(t *testing.T) {
	cases := []struct {
		args, env []string
		ok        bool
		want      jdwpAgent
	}{
		{[]string{"java", "-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=*:5005", "-cp", "a:b", "com.x.Main", "arg"}, nil,
			true, jdwpAgent{suspend: false, port: 5005, name: "com.x.Main"}},
		{[]string{"java", "-Xrunjdwp:transport=dt_socket,server=y,address=8000", "-jar", "/opt/app/server.jar"}, nil,
			true, jdwpAgent{suspend: true, port: 8000, name: "server.jar"}},
		{[]string{"/usr/bin/java", "--add-opens", "java.base/java.lang=ALL-UNNAMED", "-m", "mod/com.x.Main"}, []string{"PATH=/bin", "JAVA_TOOL_OPTIONS=-Xmx1g -agentlib:jdwp=transport=dt_socket,server=y,suspend=y,address=localhost:0"},
			true, jdwpAgent{suspend: true, port: 0, name: "mod/com.x.Main"}},
		{[]string{"java", "-agentpath:/jdk/lib/libjdwp.so=transport=dt_socket,server=y,address=127.0.0.1:5006", "Main"}, nil,
			true, jdwpAgent{suspend: true, port: 5006, name: "Main"}},
		// Not listening: client mode, or shared memory, or no agent.
		{[]string{"java", "-agentlib:jdwp=transport=dt_socket,server=n,address=ide:5005", "Main"}, nil, false, jdwpAgent{}},
		{[]string{"java", "-agentlib:jdwp=transport=dt_shmem,server=y", "Main"}, nil, false, jdwpAgent{}},
		{[]string{"java", "-agentlib:jdwpx=server=y", "Main"}, nil, false, jdwpAgent{}},
		{[]string{"python3", "-m", "http.server", "8000"}, nil, false, jdwpAgent{}},
		{nil, nil, false, jdwpAgent{}},
	}
	for _, c := range cases {
		got, ok := parseJavaCommand(c.args, c.env)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("%q %q: %+v %v, want %+v %v", c.args, c.env, got, ok, c.want, c.ok)
		}
	}
}

func TestParsePorts(t *testing.T) {
	ps, err := ParsePorts(DefaultScanPorts)
	if err != nil || ps.Len() != 42 || !ps.Contains(5005) || !ps.Contains(8040) || ps.Contains(8041) {
		t.Fatalf("%v %v", ps, err)
	}
	if ps.String() != "5005,8000-8040" {
		t.Errorf("String: %s", ps)
	}
	for _, bad := range []string{"", "0", "70000", "9-1", "a", "1-99999", "1-10000"} {
		if _, err := ParsePorts(bad); err == nil {
			t.Errorf("ParsePorts(%q) accepted", bad)
		}
	}
}

func TestParseSpec(t *testing.T) {
	for spec, want := range map[string]string{
		"127.0.0.1:5005":           "discover.Static{Addr:\"127.0.0.1:5005\"}",
		"tcp:[::1]:5005":           "discover.Static{Addr:\"[::1]:5005\"}",
		"scan":                     "scan 5005,8000-8040",
		"scan:9000-9002":           "scan 9000-9002",
		"adb":                      "adb \"\" 0",
		"adb:":                     "adb \"\" 0",
		"adb:emulator-5554":        "adb \"emulator-5554\" 0",
		"adb:emulator-5554:1234":   "adb \"emulator-5554\" 1234",
		"adb:192.168.1.5:5555":     "adb \"192.168.1.5:5555\" 0",
		"adb:192.168.1.5:5555:777": "adb \"192.168.1.5:5555\" 777",
	} {
		src, err := ParseSpec(spec, SpecOptions{})
		if err != nil {
			t.Errorf("%s: %v", spec, err)
			continue
		}
		var got string
		switch s := src.(type) {
		case *Scan:
			got = "scan " + s.Ports.String()
		case *ADB:
			got = fmt.Sprintf("adb %q %d", s.Serial, s.PID)
		default:
			got = fmt.Sprintf("%#v", s)
		}
		if got != want {
			t.Errorf("%s: %s, want %s", spec, got, want)
		}
	}
	for _, bad := range []string{"", "nonsense", "host:0", "scan:x", "adb:ser:abc", "adb::5"} {
		if _, err := ParseSpec(bad, SpecOptions{}); err == nil {
			t.Errorf("ParseSpec(%q) accepted", bad)
		}
	}
}
