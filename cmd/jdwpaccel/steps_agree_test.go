package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/internal/jdbtest"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/journal"
	"github.com/jdwpaccel/jdwpaccel/web"
)

// TestStepsPageAgreesWithJournal runs jdb's transcript script through the
// proxy, with a journal and the page: the page's step count and "journal
// steps" count the same steps (one definition: a resume through the next
// stop at a location). jdb's breakpoint is set before its class loads, so
// the VM suspends at the class's CLASS_PREPARE on the way to the first
// breakpoint, and jdb resumes it: a suspension that is no stop, which used
// to split a step in the journal and not on the page.
func TestStepsPageAgreesWithJournal(t *testing.T) {
	b := jdwptest.JavaBuild(t)
	path := filepath.Join(t.TempDir(), "j.jsonl")
	addr, logs, stop := startProxyStop(t, jdwptest.StartJava(t, b, javavm.Transcript).Addr(), "--journal", path)
	defer stop()
	base := monitorURL(t, logs)
	out, err := jdbtest.Run(testCtx(t), b, addr, jdbtest.TranscriptScript(t))
	if err != nil {
		t.Fatalf("%v\nproxy log:\n%s", err, logs)
	}
	if !strings.Contains(out, "Breakpoint hit:") {
		t.Fatalf("jdb never stopped:\n%s", out)
	}
	var sn web.Snapshot
	jdwptest.Eventually(t, "the session's end on the page", func() (bool, string) {
		getJSON(t, base+"/api/v1/snapshot", &sn)
		return len(sn.VMs) == 1 && strings.Contains(sn.VMs[0].ThreadsNote, "ended"), sn.VMs[0].ThreadsNote
	})
	stop() // the journal is complete once the proxy has exited
	code, js, errOut := runCapture("journal", "steps", "--json", path)
	if code != exitOK {
		t.Fatalf("journal steps: exit %d: %s", code, errOut)
	}
	var rep journal.StepsReport
	if err := json.Unmarshal([]byte(js), &rep); err != nil || len(rep.Sessions) != 1 {
		t.Fatalf("journal steps --json: %v\n%s", err, js)
	}
	stops := 0
	for _, st := range rep.Sessions[0].Steps {
		if st.Index > 0 && st.Stop != "" {
			stops++
		}
	}
	t.Logf("page: %d steps; journal: %d steps with a stop", sn.Accel.Steps, stops)
	if stops < 4 {
		t.Fatalf("journal steps found %d stops; want jdb's breakpoint, step, next and cont:\n%s", stops, js)
	}
	if int(sn.Accel.Steps) != stops {
		t.Errorf("the page counts %d steps, journal steps %d:\n%s", sn.Accel.Steps, stops, js)
	}
	// jdb's suspensions at class prepares and thread starts, and its
	// resumes after them, are inside the first step, which ends at the
	// breakpoint: a resume that ran to such a suspension and one that ran
	// to the breakpoint on its path.
	st := rep.Sessions[0].Steps[1]
	var toPrepare, toStop bool
	for _, l := range st.Path {
		toPrepare = toPrepare || strings.HasPrefix(l.Name, "VirtualMachine.Resume → CLASS_PREPARE") || l.Name == "VirtualMachine.Resume → THREAD_START"
		toStop = toStop || l.Name == "VirtualMachine.Resume → BREAKPOINT"
	}
	if st.Stop != "BREAKPOINT" || !toPrepare || !toStop {
		t.Errorf("first step: stop %q; want the breakpoint, reached through the class prepare:\n%s", st.Stop, js)
	}
}
