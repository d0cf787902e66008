package discover

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/internal/adbwire"
)

func FuzzADBResponse(f *testing.F) {
	f.Add([]byte("OKAY"))
	f.Add([]byte("FAIL0011device not found"))
	f.Add([]byte("FAILzzzz"))
	f.Add([]byte("OKAY000a1234\n5678\n"))
	f.Add([]byte("FAIL"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		err := readStatus(r, "req")
		var ae *ADBError
		if err == nil {
			if !bytes.HasPrefix(b, []byte("OKAY")) {
				t.Fatalf("OKAY accepted from %q", b)
			}
			if msg, err := adbwire.ReadMessage(r); err == nil {
				parsePIDList(msg) //nolint:errcheck
				parseDevices(msg) //nolint:errcheck
			}
		} else if errors.As(err, &ae) && !bytes.HasPrefix(b, []byte("FAIL")) {
			t.Fatalf("FAIL accepted from %q", b)
		}
	})
}

func FuzzParsePIDList(f *testing.F) {
	f.Add([]byte("123\n456\n"))
	f.Add([]byte(""))
	f.Add([]byte("-1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		pids, err := parsePIDList(b)
		for _, p := range pids {
			if p <= 0 {
				t.Fatalf("bad pid %d accepted", p)
			}
		}
		if err != nil && pids != nil {
			t.Fatal("pids and an error")
		}
	})
}

func FuzzParseDevices(f *testing.F) {
	f.Add([]byte("emulator-5554\tdevice\n0123\tunauthorized\n"))
	f.Add([]byte("x\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ds, err := parseDevices(b)
		for _, d := range ds {
			if d.Serial == "" {
				t.Fatal("empty serial accepted")
			}
		}
		_ = err
	})
}

func FuzzParseJavaCommand(f *testing.F) {
	f.Add("java\x00-agentlib:jdwp=transport=dt_socket,server=y,address=*:5005\x00-jar\x00x.jar", "JAVA_TOOL_OPTIONS=-Xrunjdwp:server=y")
	f.Add("-Xrunjdwp\x00-m", "")
	f.Fuzz(func(t *testing.T, args, env string) {
		a, ok := parseJavaCommand(strings.Split(args, "\x00"), strings.Split(env, "\x00"))
		if ok && (a.port < 0 || a.port > 65535) {
			t.Fatalf("port %d", a.port)
		}
		parseADBSpec(args) //nolint:errcheck
		ParsePorts(env)    //nolint:errcheck
	})
}
