package speculator

import (
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
)

// TestWriteBehindRealVM steps real JDI through the proxy with write-behind
// on, behind a 6 ms link, against a real JVM: every stop must show what a
// direct session shows, commands must have been written behind, and the
// VM must have confirmed every one (a failure would have ended the
// session and the driver with it).
func TestWriteBehindRealVM(t *testing.T) {
	if testing.Short() {
		t.Skip("real JVM")
	}
	b := realBuild(t)
	cases := []struct {
		name string
		opts javavm.DriverOptions
	}{
		{"deep-idea-5bp", javavm.DriverOptions{Debuggee: javavm.Deep, Profile: javavm.ProfileIdeaLike, Steps: 8, Breakpoints: 5}},
		{"deep-vscode", javavm.DriverOptions{Debuggee: javavm.Deep, Profile: javavm.ProfileVSCodeLike, Steps: 6}},
		{"newclasses-idea-into", javavm.DriverOptions{Debuggee: javavm.NewClasses, Profile: javavm.ProfileIdeaLike, Steps: 6}},
		{"hotswap-idea", javavm.DriverOptions{Debuggee: javavm.HotSwap, Profile: javavm.ProfileIdeaLike, Steps: 8}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.opts.Warmup = 1
			tc.opts.Dump = true
			direct, _, err := runDriver(t, b, tc.opts, -1, Config{})
			if err != nil {
				t.Fatal(err)
			}
			prox, sp, err := runDriver(t, b, tc.opts, 6*time.Millisecond, Config{WriteBehind: true})
			if err != nil {
				t.Fatal(err)
			}
			st := sp.Stats()
			t.Logf("written behind %d, failures %d; hits %d belays %d", st.WrittenBehind, st.WriteBehindFailures, st.Hits, st.Belays)
			if len(direct.Stops) != len(prox.Stops) {
				t.Fatalf("direct %d stops, proxied %d", len(direct.Stops), len(prox.Stops))
			}
			for i := range direct.Stops {
				if direct.Stops[i].Digest != prox.Stops[i].Digest {
					t.Errorf("stop %d: digest differs:\n%s", i, lineDiff(direct.Stops[i].Text, prox.Stops[i].Text))
				}
			}
			if st.WriteBehindFailures != 0 {
				t.Errorf("%d written-behind commands failed at the VM", st.WriteBehindFailures)
			}
			// Each step from the third on: Clear, Set and Resume.
			if min := int64(3 * (tc.opts.Steps - 3)); st.WrittenBehind < min {
				t.Errorf("written behind %d, want at least %d", st.WrittenBehind, min)
			}
		})
	}
}
