package javavm

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"
)

// nodeKey matches the key of a node of BigApp's HashMap, three levels down.
var nodeKey = regexp.MustCompile(`(?m)^orders\.table\[\d+\]\.key = "order-\d+"$`)

// TestBigApp runs the BigApp workload directly against a real VM: over
// 15,000 classes are loaded by its first stop, its 40 pool threads are in
// the threads view, and the variables are shown three levels deep (one for
// vscode-like, as VS Code's Variables view opened once), the
// HashMap's table and nodes included.
func TestBigApp(t *testing.T) {
	b := testBuild(t)
	for _, profile := range []string{ProfileIdeaLike, ProfileVSCodeLike} {
		t.Run(profile, func(t *testing.T) {
			vm := startVM(t, b, BigApp)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			held := 0
			res, err := RunDriver(ctx, b, DriverOptions{
				Addr: vm.Addr(), Profile: profile, Debuggee: BigApp, Steps: 1, Dump: true,
				Breakpoints: MaxBreakpoints(BigApp), AfterFirstStop: func() { held++ },
			})
			if err != nil {
				t.Fatalf("%v\nVM output:\n%s", err, vm.Output())
			}
			if held != 1 {
				t.Errorf("AfterFirstStop called %d times, want 1", held)
			}
			if n := res.Summary.LoadedClasses; n < 15000 {
				t.Errorf("%d classes loaded, want at least 15,000", n)
			}
			// Each class costs at least 1+8+4+4+4 bytes beyond its signature.
			if got, least := res.Summary.AllClassesReplyBytes, int64(21*res.Summary.LoadedClasses); got < least {
				t.Errorf("AllClassesWithGeneric reply of %d bytes for %d classes, want more than %d", got, res.Summary.LoadedClasses, least)
			}
			if res.Summary.VMRunMS <= 0 || res.Summary.VMRunMS > res.Summary.FirstStopMS {
				t.Errorf("VM ran %.1f ms of a first stop of %.1f ms", res.Summary.VMRunMS, res.Summary.FirstStopMS)
			}
			text := res.Stops[0].Text
			// firstStopHas reports each of wants the first stop's text lacks.
			firstStopHas := func(wants ...string) {
				t.Helper()
				for _, want := range wants {
					if !strings.Contains(text, want) {
						t.Errorf("first stop lacks %q:\n%s", want, text)
					}
				}
			}
			t.Logf("first stop %.0f ms, VM ran %.0f ms, %d classes, AllClassesWithGeneric reply %d bytes",
				res.Summary.FirstStopMS, res.Summary.VMRunMS, res.Summary.LoadedClasses, res.Summary.AllClassesReplyBytes)
			if got := strings.Count(text, "thread app-pool-"); got != 40 {
				t.Errorf("%d pool threads in the threads view, want 40:\n%s", got, text)
			}
			if profile == ProfileVSCodeLike {
				// java-debug's view: one level; the map as its entries
				// (entrySet().toArray(), with size() invoked) when the
				// attach measured 10 ms or less, else as its fields; the
				// array's elements; this's fields.
				wants := []string{"local orders = instance of java.util.HashMap size=12", "orders[11] = instance of java.util.HashMap$Node"}
				if res.Summary.JavaDebugLatencyMS == nil {
					t.Fatalf("vscode-like did not say what its attach measured: %+v", res.Summary)
				} else if *res.Summary.JavaDebugLatencyMS > 10 {
					wants = []string{"local orders = instance of java.util.HashMap\n", "orders.table = java.util.HashMap$Node[] len=16"}
				}
				firstStopHas(append(wants,
					"local counts = int[] len=10",
					"counts[9] = int 3",
					"recent[0] = instance of BigApp$Order",
					"this.store = instance of Store",
				)...)
				if strings.Contains(text, "].detail") || strings.Contains(text, "this.store.") {
					t.Errorf("first stop goes deeper than one level:\n%s", text)
				}
				return
			}
			firstStopHas(
				"local orders = instance of java.util.HashMap",
				"orders.table = java.util.HashMap$Node[] len=16",
				"local counts = int[] len=10",
				"counts[9] = int 3",
				"recent[0].detail = instance of Payload",
				"this.store.shelves[1] = instance of Payload",
			)
			// Three levels: the map, its table, a node's fields.
			if !nodeKey.MatchString(text) {
				t.Errorf("first stop lacks a HashMap node's key:\n%s", text)
			}
			if strings.Contains(text, "].key.") || strings.Contains(text, "recent[0].detail.child.") {
				t.Errorf("first stop goes deeper than three levels:\n%s", text)
			}
		})
	}
}
