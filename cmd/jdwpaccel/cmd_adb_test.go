package main

import (
	"strings"
	"testing"
)

func TestADBAndFakeDeviceUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"adb", "-h"}, exitOK, "Use existing manually managed server"},
		{[]string{"fakedevice", "-h"}, exitOK, "adb connect"},
		{[]string{"adb", "--listen", "127.0.0.1:5038", "--upstream", "127.0.0.1:5038"}, exitUsage, "the front's own --listen"},
		{[]string{"adb", "--upstream", "nonsense"}, exitUsage, "bad --upstream"},
		{[]string{"adb", "--listen", "0.0.0.0:0"}, exitUsage, "--allow-remote"},
		{[]string{"fakedevice", "--process", "noaddress"}, exitUsage, "want NAME=HOST:PORT"},
		{[]string{"fakedevice", "--process", "a=127.0.0.1:1", "--prop", "x"}, exitUsage, "want KEY=VALUE"},
		{[]string{"fakedevice", "--listen", "0.0.0.0:0", "--process", "a=127.0.0.1:1"}, exitUsage, "not a loopback address"},
	} {
		code, stdout, stderr := runCapture(c.args...)
		if code != c.code || !strings.Contains(stdout+stderr, c.want) {
			t.Errorf("jdwpaccel %s: exit %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", strings.Join(c.args, " "), code, c.code, c.want, stdout, stderr)
		}
	}
}
