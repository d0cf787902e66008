package speculator

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// TestDiagnose: while a Diag is installed the sessions' trace points reach
// it, and its report counts each outcome by rule and serial; after stop
// they reach nothing.
func TestDiagnose(t *testing.T) {
	d, stop := Diagnose()
	s := &spec{kind: 3}
	traceSpec(s, outcomeSent, 2)
	traceSpec(s, outcomeSent, 2)
	traceSpec(s, outcomeUsed, 2)
	traceSpec(s, outcomeWasted, 999)
	traceMiss(jdwp.CmdIDSizes, 4, "never asked")
	stop()
	traceMiss(jdwp.CmdIDSizes, 4, "never asked") // not counted
	var b strings.Builder
	if _, err := d.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	want := map[string]bool{
		"serial   2 sent: 2":   true,
		"serial 999 wasted: 1": true,
		"miss serial   4 " + jdwp.CmdIDSizes.String() + ": 1":                             true,
		"near k3  sent at   0 wasted: 1":                                                  true,
		"miss at serial   4 " + fmt.Sprintf("%-40v", jdwp.CmdIDSizes) + " never asked: 1": true,
	}
	found := 0
	for _, l := range lines {
		if want[l] {
			found++
		}
		if strings.Contains(l, " k3 ") && strings.HasSuffix(l, " used: 1") {
			found++
		}
	}
	if found != len(want)+2 || len(lines) != 11 { // two "k3 ... used: 1" lines: by command and by end
		t.Fatalf("report:\n%s", b.String())
	}
}
