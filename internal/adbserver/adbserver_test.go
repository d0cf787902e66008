package adbserver

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

func TestStartStop(t *testing.T) {
	if _, err := exec.LookPath("adb"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("adb not found and CI=true (apt-get install adb)")
		}
		t.Skip("adb not found")
	}
	s, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("adb", "-P", strconv.Itoa(s.Port), "devices")
	cmd.Env = Env()
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "List of devices attached") {
		t.Fatalf("adb devices: %v: %s\nserver: %s", err, out, s.Output())
	}
	// The client found the server on its port, not one it started.
	if strings.Contains(string(out), "daemon") {
		t.Errorf("the client started a server of its own: %s", out)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop: %v: %s", err, s.Output())
	}
	select {
	case <-s.Exited():
	default:
		t.Fatal("Stop returned before the server exited")
	}
}
