package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/journal"
)

// stepsJournal is a journal of one session at 10 ms RTT: the attach (one
// command), a step to a BREAKPOINT with two serial commands and a cache
// hit, and a last step cut short.
const stepsJournal = `{"type":"header","schema":1,"version":"test","start":"2026-01-01T00:00:00.000000000Z","format":"jsonl","raw_limit":4096}
{"type":"session_start","session":1,"t":0,"debugger":"127.0.0.1:1","vm":"127.0.0.1:2"}
{"type":"packet","session":1,"t":1000000,"view":"both","dir":"to_vm","kind":"command","id":1,"name":"VirtualMachine.IDSizes","set":1,"cmd":7,"len":11,"served":"forwarded"}
{"type":"packet","session":1,"t":11000000,"view":"both","dir":"to_debugger","kind":"reply","id":1,"name":"VirtualMachine.IDSizes","set":1,"cmd":7,"len":31,"served":"forwarded","latency_ns":10000000,"vm_latency_ns":10000000}
{"type":"packet","session":1,"t":20000000,"view":"both","dir":"to_vm","kind":"command","id":3,"name":"VirtualMachine.Resume","set":1,"cmd":9,"len":11,"served":"forwarded"}
{"type":"packet","session":1,"t":30000000,"view":"both","dir":"to_debugger","kind":"reply","id":3,"name":"VirtualMachine.Resume","set":1,"cmd":9,"len":11,"served":"forwarded","latency_ns":10000000,"vm_latency_ns":10000000}
{"type":"packet","session":1,"t":30500000,"view":"both","dir":"to_debugger","kind":"event","id":9,"name":"Event.Composite","set":64,"cmd":100,"len":54,"served":"forwarded","thread":1,"events":["BREAKPOINT"]}
{"type":"packet","session":1,"t":31000000,"view":"both","dir":"to_vm","kind":"command","id":5,"name":"VirtualMachine.AllThreads","set":1,"cmd":4,"len":11,"served":"forwarded"}
{"type":"packet","session":1,"t":41000000,"view":"both","dir":"to_debugger","kind":"reply","id":5,"name":"VirtualMachine.AllThreads","set":1,"cmd":4,"len":63,"served":"forwarded","latency_ns":10000000,"vm_latency_ns":10000000}
{"type":"packet","session":1,"t":41200000,"view":"debugger","dir":"to_vm","kind":"command","id":7,"name":"ThreadReference.Name","set":11,"cmd":1,"len":19,"served":"cache_hit","thread":1}
{"type":"packet","session":1,"t":41300000,"view":"debugger","dir":"to_debugger","kind":"reply","id":7,"name":"ThreadReference.Name","set":11,"cmd":1,"len":19,"served":"cache_hit","latency_ns":100000,"thread":1}
{"type":"packet","session":1,"t":42000000,"view":"both","dir":"to_vm","kind":"command","id":9,"name":"ThreadReference.Frames","set":11,"cmd":6,"len":27,"served":"forwarded","thread":1}
{"type":"packet","session":1,"t":52000000,"view":"both","dir":"to_debugger","kind":"reply","id":9,"name":"ThreadReference.Frames","set":11,"cmd":6,"len":48,"served":"forwarded","latency_ns":10000000,"vm_latency_ns":10000000,"thread":1}
{"type":"packet","session":1,"t":60000000,"view":"both","dir":"to_vm","kind":"command","id":11,"name":"VirtualMachine.Resume","set":1,"cmd":9,"len":11,"served":"forwarded"}
{"type":"session_end","session":1,"t":65000000,"packets":13}
`

// TestJournalSteps runs "jdwpaccel journal steps" on a small journal: the
// table, each step's critical path, --brief, --json, --session, and a bad
// flag.
func TestJournalSteps(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	if err := os.WriteFile(path, []byte(stepsJournal), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCapture("journal", "steps", path)
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	for _, want := range []string{"RTT estimate 10.00ms", "BREAKPOINT", "step 1: 3 serial round trips in 40.0 ms",
		"resume     VirtualMachine.Resume → BREAKPOINT", "ThreadReference.Frames", "2*", "session ended before the next resume"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "forwarded  ThreadReference.Name") {
		t.Errorf("a cache hit is on the critical path:\n%s", out)
	}
	code, brief, _ := runCapture("journal", "steps", "--brief", path)
	if code != exitOK || strings.Contains(brief, "step 1:") || !strings.Contains(brief, "BREAKPOINT") {
		t.Errorf("--brief: exit %d\n%s", code, brief)
	}
	code, js, _ := runCapture("journal", "steps", path, "--json")
	var rep journal.StepsReport
	if err := json.Unmarshal([]byte(js), &rep); code != exitOK || err != nil || len(rep.Sessions) != 1 || len(rep.Sessions[0].Steps) != 3 ||
		rep.Sessions[0].Steps[1].RoundTrips != 3 || rep.Sessions[0].Steps[1].CacheHits != 1 {
		t.Errorf("--json: exit %d, %v\n%s", code, err, js)
	}
	if code, out, _ := runCapture("journal", "steps", "--session", "2", path); code != exitOK || strings.Contains(out, "session 1") {
		t.Errorf("--session 2: exit %d\n%s", code, out)
	}
	if code, _, errOut := runCapture("journal", "steps", "--bogus", path); code != exitUsage || !strings.Contains(errOut, "--help") {
		t.Errorf("--bogus: exit %d, stderr %s", code, errOut)
	}
	if code, _, _ := runCapture("journal", "steps"); code != exitUsage {
		t.Errorf("no file: exit %d, want %d", code, exitUsage)
	}
}
