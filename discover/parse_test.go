package discover

import (
	"fmt"
	"testing"
)

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
