package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/jdktest"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
)

// ddmlibJars is Debian's ddmlib (package libandroid-ddms-java) and what it
// needs.
var ddmlibJars = []string{
	"/usr/share/java/com.android.tools.ddms.ddmlib.jar",
	"/usr/share/java/com.android.tools.common.jar",
	"/usr/share/java/com.android.tools.annotations.jar",
	"/usr/share/java/guava.jar",
	"/usr/share/java/kxml2.jar",
}

// ddmlibClients is a ddmlib client, as Android Studio's device monitor:
// it lists each online device's clients once all are named (DDM HELO).
const ddmlibClients = `
import com.android.ddmlib.*;

public class DdmlibClients {
    public static void main(String[] args) throws Exception {
        // No "selected client" debugger port (8700 by default, which
        // another program may hold): read before init.
        DdmPreferences.setSelectedDebugPort(-1);
        AndroidDebugBridge.initIfNeeded(true);
        AndroidDebugBridge bridge = AndroidDebugBridge.createBridge();
        long deadline = System.currentTimeMillis() + 60000;
        while (System.currentTimeMillis() < deadline) {
            for (IDevice d : bridge.getDevices()) {
                Client[] cs = d.getClients();
                boolean named = d.isOnline() && cs.length > 0;
                StringBuilder sb = new StringBuilder();
                for (Client c : cs) {
                    String name = c.getClientData().getClientDescription();
                    named &= name != null;
                    sb.append(d.getSerialNumber()).append(' ').append(c.getClientData().getPid()).append(' ').append(name).append('\n');
                }
                if (named) {
                    System.out.print(sb);
                    System.out.flush();
                    System.exit(0);
                }
            }
            Thread.sleep(50);
        }
        System.err.println("no named client within 60 s");
        System.exit(1);
    }
}
`

// TestADBFrontDdmlib: Debian's ddmlib, pointed at the front with
// ANDROID_ADB_SERVER_PORT as Android Studio would be, finds the fake
// device's app and its name through the front; the front relayed that
// JDWP stream and its passive DDM tap learnt the name too. Skips without
// ddmlib, except under CI=true (.ci/run installs it).
func TestADBFrontDdmlib(t *testing.T) {
	requireADB(t)
	jdktest.RequireJDK(t)
	for _, j := range ddmlibJars {
		if _, err := os.Stat(j); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("ddmlib is required in CI: %v", err)
			}
			t.Skipf("ddmlib is not installed (apt-get install -y libandroid-ddms-java): %v", err)
		}
	}
	ctx := testCtx(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "DdmlibClients.java"), []byte(ddmlibClients), 0o644); err != nil {
		t.Fatal(err)
	}
	cp := strings.Join(ddmlibJars, string(os.PathListSeparator))
	if out, err := exec.CommandContext(ctx, "javac", "-nowarn", "-cp", cp, "-d", dir, filepath.Join(dir, "DdmlibClients.java")).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}

	_, _, dev, up := startADB(t)
	front, url, logs, _ := startFront(t, up)
	url = strings.TrimSuffix(url, "/")

	jctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(jctx, "java", "-cp", cp+string(os.PathListSeparator)+dir, "DdmlibClients")
	cmd.Env = append(os.Environ(), "ANDROID_ADB_SERVER_PORT="+strconv.Itoa(front))
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("ddmlib: %v\n%s\n%s\nfront log:\n%s", err, out, stderr, logs)
	}
	if want := dev + " 4001 com.example.fake\n"; string(out) != want {
		t.Errorf("ddmlib through the front listed %q, want %q", out, want)
	}
	if !strings.Contains(logs.String(), `"message":"debugger session started"`) {
		t.Errorf("ddmlib's JDWP stream did not run through the relay; log:\n%s", logs)
	}
	jdwptest.Eventually(t, "the passive DDM monitor named the app", func() (bool, string) {
		vms, _ := pageVMs(t, url, false)
		v, ok := vms["adb:"+dev+":4001"]
		return ok && strings.Contains(fmt.Sprint(v), "com.example.fake"), fmt.Sprint(vms)
	})
}
