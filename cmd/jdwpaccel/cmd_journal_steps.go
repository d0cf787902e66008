package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"slices"

	"github.com/jdwpaccel/jdwpaccel/journal"
)

// cmdJournalSteps is "jdwpaccel journal steps": the critical path of every
// step (journal.ComputeSteps).
func cmdJournalSteps(e *env, args []string) int {
	fs := flag.NewFlagSet("journal steps", flag.ContinueOnError)
	jsonOut := fs.Bool("json", false, "print the steps and their critical paths as JSON")
	brief := fs.Bool("brief", false, "print only the table of steps, not each step's critical path")
	sessions := fs.String("session", "", "keep these session `NUMBERS` (comma-separated)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), journalUsage+"\nFlags of steps:\n")
		printFlags(fs)
	}
	var paths []string
	if code, ok := parseWith(fs, e, func() (err error) {
		paths, err = parseInterleaved(fs, args)
		return err
	}); !ok {
		return code
	}
	if len(paths) == 0 {
		return usageFailure(e, fs.Name(), errors.New("give at least one journal file"))
	}
	keep, err := journal.ParseThreads(*sessions)
	if err != nil {
		return usageFailure(e, fs.Name(), fmt.Errorf("bad --session %q", *sessions))
	}
	recs, err := journal.ReadFiles(paths...)
	if err != nil {
		fmt.Fprintf(e.stderr, "jdwpaccel journal steps: %v\n", err)
		if len(recs) == 0 {
			return exitError
		}
		fmt.Fprintf(e.stderr, "jdwpaccel journal steps: using the %d records read before the error\n", len(recs))
	}
	rep := journal.ComputeSteps(recs)
	if len(keep) > 0 {
		rep.Sessions = slices.DeleteFunc(rep.Sessions, func(s journal.SessionSteps) bool { return !slices.Contains(keep, s.Session) })
	}
	if *jsonOut {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return exitError
		}
		return exitOK
	}
	if err := rep.WriteText(e.stdout, *brief); err != nil {
		return exitError
	}
	return exitOK
}
