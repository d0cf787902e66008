package jdbtest

import (
	"strings"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
)

func TestNormalize(t *testing.T) {
	in := "Initializing jdb ...\n> \nVM Started: > No frames\n\nmain[1] main[1] Deferring x.\n" +
		"  [1] T.loop (T.java:24)\n arr = instance of int[4] (id=416)\n  (java.lang.Thread)367  main  running\nmain[1] "
	want := "Initializing jdb ...\nVM Started: No frames\nDeferring x.\n  [1] T.loop (T.java:24)\n arr = instance of int[4] (id=#)\n  (java.lang.Thread)#  main  running\n"
	if got := Normalize(in); got != want {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
}

func TestCountPrompts(t *testing.T) {
	for in, want := range map[string]int{
		"":                                    0,
		"> ":                                  1,
		"main[1] ":                            1,
		"x\nmain[1] main[1] ":                 2,
		" arr[0] = 1\nmain[1] ":               1,
		"29   numbers[0] = x;\n\nmain[1] ":    1,
		"VM Started: > No frames\n\nmain[1] ": 2,
	} {
		if got := countPrompts([]byte(in)); got != want {
			t.Errorf("countPrompts(%q) = %d, want %d", in, got, want)
		}
	}
}

func FuzzNormalize(f *testing.F) {
	f.Add("Initializing jdb ...\n> \nmain[1] x = 3\n (id=12)\n")
	f.Add("main[1] main[1] > > \r\n")
	f.Fuzz(func(t *testing.T, s string) {
		n := Normalize(s)
		if Normalize(n) != n {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, n, Normalize(n))
		}
		_ = countPrompts([]byte(s))
	})
}

func TestTranscript(t *testing.T) {
	b := jdwptest.JavaBuild(t)
	script := TranscriptScript(t)
	var got [2]string
	for i := range got {
		got[i] = Direct(t.Context(), t, b, script)
	}
	if got[0] != got[1] {
		t.Fatalf("transcripts differ:\n--- run 1\n%s\n--- run 2\n%s", got[0], got[1])
	}
	for _, want := range []string{
		"Breakpoint hit:", "Step completed:", "x = 4", "word = \"alpha\"",
		"name = \"transcript\"", "arr[0] = 1", "word = \"word-4\"", "[1] Transcript.loop (Transcript.java:",
	} {
		if !strings.Contains(got[0], want) {
			t.Errorf("transcript lacks %q:\n%s", want, got[0])
		}
	}
	if strings.Contains(got[0], "main[1]") || strings.Contains(got[0], "(id=4") {
		t.Errorf("transcript not normalised:\n%s", got[0])
	}
	t.Logf("transcript:\n%s", got[0])
}
