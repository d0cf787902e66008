package discover

import (
	"strings"
	"testing"
)

// TestProcessNameOf checks what discovery takes for a process name from
// the output of cat /proc/PID/cmdline: the first argument of a command
// line, never the error text of a shell or of cat.
func TestProcessNameOf(t *testing.T) {
	for out, want := range map[string]string{
		"com.example.app\x00":                                  "com.example.app",
		"com.example.app:remote\x00\x00\x00":                   "com.example.app:remote",
		"/system/bin/app_process64\x00-Xzygote\x00":            "/system/bin/app_process64",
		"system_server\n":                                      "system_server",
		"/system/bin/sh: cat: inaccessible or not found\n":     "",
		"cat: /proc/4001/cmdline: No such file or directory\n": "",
		"cat: /proc/4001/cmdline: Permission denied\r\n":       "",
		"":                       "",
		"\x00":                   "",
		"a\x01b\x00":             "",
		strings.Repeat("a", 300): "",
	} {
		if got := processNameOf([]byte(out)); got != want {
			t.Errorf("processNameOf(%q) = %q, want %q", out, got, want)
		}
	}
}
