package push

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/bench/link"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/speculator"
	"github.com/rs/zerolog"
)

// TestSplitWriteBehindDeadThreadRealVM is the speculator's
// TestWriteBehindDeadThreadRealVM in split mode (the near end writes
// behind, with the far end's pushed replies): plain JDI enables a step
// request on a thread that has ended since it last stopped, and must get
// the VM's refusal (IllegalThreadStateException) through both ends as it
// does directly, and go on.
func TestSplitWriteBehindDeadThreadRealVM(t *testing.T) {
	if testing.Short() {
		t.Skip("starts JVMs")
	}
	jdwptest.JavaBuild(t) // skips without a JDK (fails under CI=true)
	dir := t.TempDir()
	const srcDir = "../speculator/testdata/deadstep"
	src, err := filepath.Glob(srcDir + "/*.java")
	if err != nil || len(src) != 2 {
		t.Fatalf("sources: %v %v", src, err)
	}
	if out, err := exec.Command("javac", append([]string{"-g", "-d", dir}, src...)...).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	data, err := os.ReadFile(srcDir + "/DeadStep.java")
	if err != nil {
		t.Fatal(err)
	}
	var shortLine, mainLine int
	for n, l := range strings.Split(string(data), "\n") {
		switch {
		case strings.Contains(l, "// @bp-short"):
			shortLine = n + 1
		case strings.Contains(l, "// @bp-main"):
			mainLine = n + 1
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := func(t *testing.T, split bool) (string, *speculator.Speculator) {
		vm, err := javavm.Start(ctx, &javavm.Build{Classes: dir}, "DeadStep", javavm.VMOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer vm.Stop()
		addr := vm.Addr()
		var near *speculator.Speculator
		if split {
			far := speculator.New(speculator.Config{}, zerolog.Nop(), nil)
			near = speculator.New(speculator.Config{WriteBehind: true}, zerolog.Nop(), nil)
			farAddr := serve(t, relay.Config{DialVM: relay.DialTCP(addr), NewHooks: FarHooks(far, Config{})})
			lk, err := link.Listen(ctx, "127.0.0.1:0", farAddr, link.Config{RTT: 2 * time.Millisecond}, zerolog.Nop())
			if err != nil {
				t.Fatal(err)
			}
			defer lk.Close()
			addr = serve(t, relay.Config{DialVM: relay.DialTCP(lk.Addr().String()), NewHooks: NearHooks(near, Config{})})
		}
		_, port, _ := net.SplitHostPort(addr)
		out, err := exec.CommandContext(ctx, "java", "-cp", dir, "DeadStepDbg", port, fmt.Sprint(shortLine), fmt.Sprint(mainLine)).CombinedOutput()
		if err != nil {
			t.Fatalf("debugger: %v\n%s", err, out)
		}
		return string(out), near
	}
	direct, _ := run(t, false)
	if !strings.Contains(direct, "step on the ended thread: java.lang.IllegalThreadStateException\n") || !strings.HasSuffix(direct, "OK\n") {
		t.Fatalf("directly, the VM did not refuse the step on the ended thread, or the session did not go on:\n%s", direct)
	}
	split, near := run(t, true)
	if split != direct {
		t.Errorf("in split mode:\n%s\ndirectly:\n%s", split, direct)
	}
	st := near.Stats()
	t.Logf("near end: written behind %d, failures %d", st.WrittenBehind, st.WriteBehindFailures)
	if st.WrittenBehind == 0 || st.WriteBehindFailures != 0 {
		t.Errorf("written behind %d (want some), failures %d (want none)", st.WrittenBehind, st.WriteBehindFailures)
	}
}
