package jdbtest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
)

// TranscriptScript is the jdb script of the transcript tests: it stops at
// javavm.Transcript's breakpoint, looks at the stack, locals and objects
// there, steps, and runs on to jdb's exit.
func TranscriptScript(t testing.TB) []string {
	t.Helper()
	line, err := javavm.BreakpointLine(javavm.Transcript)
	if err != nil {
		t.Fatal(err)
	}
	return []string{
		fmt.Sprintf("stop at Transcript:%d", line),
		"run", "where", "locals", "print name", "print this.numbers[0]", "dump node",
		"step", "next", "locals", "print arr[0]", "print word",
		"cont", "locals", "clear", "exit",
	}
}

// Direct runs script against a fresh javavm.Transcript debuggee of b,
// directly, and returns the transcript.
func Direct(ctx context.Context, t testing.TB, b *javavm.Build, script []string) string {
	t.Helper()
	direct, err := Run(ctx, b, jdwptest.StartJava(t, b, javavm.Transcript).Addr(), script)
	if err != nil {
		t.Fatal(err)
	}
	return direct
}

// Same fails t unless the transcript got through via (say, "the proxy")
// equals the direct one and shows a breakpoint hit, a completed step and a
// local of TranscriptScript.
func Same(t testing.TB, direct, got, via string) {
	t.Helper()
	if direct != got {
		t.Fatalf("jdb transcript through %s differs:\n--- direct\n%s\n--- through %s\n%s", via, direct, via, got)
	}
	for _, want := range []string{"Breakpoint hit:", "Step completed:", "arr[0] = 1"} {
		if !strings.Contains(got, want) {
			t.Errorf("transcript lacks %q:\n%s", want, got)
		}
	}
}
