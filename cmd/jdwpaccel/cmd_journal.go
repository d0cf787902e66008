package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jdwpaccel/jdwpaccel/journal"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

const journalUsage = `Usage: jdwpaccel journal show  [flags] PATH...
       jdwpaccel journal stats [flags] PATH...
       jdwpaccel journal steps [flags] PATH...

Read JSON Lines journals written by "jdwpaccel proxy --journal PATH.jsonl".
Give rotated files oldest first: PATH.2 PATH.1 PATH.

  show   print the records, decoded, one per line: seconds since the
         journal's start, session, direction, kind, ID, command, length,
         how it was served (forwarded, cache_hit, belay, synthetic, write_behind), latency
  stats  commands per type, hits / misses / belays, round trips saved,
         speculative commands sent and used, latency percentiles per command
  steps  for every step (resume, stop event, the work at the stop, next
         resume) of each session: its serial round trips, the critical path
         (the longest chain of waits for the VM, one after another) and the
         command that caused each round trip

Examples:
  jdwpaccel journal show j.jsonl --set ThreadReference,StackFrame --since 2s
  jdwpaccel journal show j.jsonl --thread 0x1a2b --hex
  jdwpaccel journal show j.jsonl --view wire --served synthetic
  jdwpaccel journal stats j.jsonl.1 j.jsonl
  jdwpaccel journal stats --json j.jsonl
  jdwpaccel journal steps j.jsonl
  jdwpaccel journal steps --brief --session 2 j.jsonl
`

// journalFlags are the filters common to show and stats.
type journalFlags struct {
	view, sets, names, threads, served string
	sessions                           string
	since, until                       time.Duration
	hex, jsonOut                       bool
}

func (jf *journalFlags) register(fs *flag.FlagSet, show bool) {
	def := "debugger"
	if !show {
		def = "all"
	}
	fs.StringVar(&jf.view, "view", def, "which packets: `debugger|wire|all` (debugger: the conversation the debugger had; wire: what went to the VM)")
	fs.StringVar(&jf.sets, "set", "", "keep these command sets, `NAMES`: ThreadReference,StackFrame or numbers")
	fs.StringVar(&jf.names, "cmd", "", "keep commands whose name contains one of `NAMES` (comma-separated, e.g. Frames,GetValues)")
	fs.StringVar(&jf.threads, "thread", "", "keep packets about these thread `IDS` (comma-separated, decimal or 0x hex)")
	fs.StringVar(&jf.served, "served", "", "keep packets served `WAYS`: forwarded,cache_hit,belay,synthetic,write_behind")
	fs.StringVar(&jf.sessions, "session", "", "keep these session `NUMBERS` (comma-separated)")
	fs.DurationVar(&jf.since, "since", 0, "keep records at or after this `DURATION` since the journal's start")
	fs.DurationVar(&jf.until, "until", 0, "keep records at or before this `DURATION` since the journal's start")
	if show {
		fs.BoolVar(&jf.hex, "hex", false, "dump each packet's kept bytes in hex")
	} else {
		fs.BoolVar(&jf.jsonOut, "json", false, "print the statistics as JSON")
	}
}

func (jf *journalFlags) filter() (*journal.Filter, error) {
	f := &journal.Filter{Since: jf.since, Until: jf.until}
	switch jf.view {
	case "debugger", "wire":
		f.View = jf.view
	case "all":
		f.View = "all"
	default:
		return nil, fmt.Errorf("bad --view %q (want debugger, wire or all)", jf.view)
	}
	var err error
	if f.Sets, err = journal.ParseSets(jf.sets); err != nil {
		return nil, err
	}
	if f.Threads, err = journal.ParseThreads(jf.threads); err != nil {
		return nil, err
	}
	if jf.sessions != "" {
		ids, err := journal.ParseThreads(jf.sessions)
		if err != nil {
			return nil, fmt.Errorf("bad --session %q", jf.sessions)
		}
		f.Sessions = ids
	}
	for _, n := range strings.Split(jf.names, ",") {
		if n = strings.TrimSpace(n); n != "" {
			f.Names = append(f.Names, n)
		}
	}
	for _, s := range strings.Split(jf.served, ",") {
		switch s = strings.TrimSpace(s); s {
		case "":
		case journal.ServedForwarded, journal.ServedCacheHit, journal.ServedBelay, journal.ServedSynthetic, journal.ServedWriteBehind:
			f.Served = append(f.Served, s)
		default:
			return nil, fmt.Errorf("bad --served %q (want forwarded, cache_hit, belay, synthetic or write_behind)", s)
		}
	}
	return f, nil
}

// parseInterleaved parses flags that may come before or after the
// positional arguments, and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func cmdJournal(_ context.Context, e *env, args []string) int {
	if len(args) == 0 {
		return usageFailure(e, "journal", errors.New("say show, stats or steps"))
	}
	sub := args[0]
	switch sub {
	case "show", "stats":
	case "steps":
		return cmdJournalSteps(e, args[1:])
	case "help", "-h", "-help", "--help":
		fmt.Fprint(e.stdout, journalUsage)
		return exitOK
	default:
		return usageFailure(e, "journal", fmt.Errorf("unknown subcommand %q", sub))
	}
	var jf journalFlags
	fs := flag.NewFlagSet("journal "+sub, flag.ContinueOnError)
	jf.register(fs, sub == "show")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), journalUsage+"\nFlags:\n")
		printFlags(fs)
	}
	var paths []string
	if code, ok := parseWith(fs, e, func() (err error) {
		paths, err = parseInterleaved(fs, args[1:])
		return err
	}); !ok {
		return code
	}
	if len(paths) == 0 {
		return usageFailure(e, fs.Name(), errors.New("give at least one journal file"))
	}
	filter, err := jf.filter()
	if err != nil {
		return usageFailure(e, fs.Name(), err)
	}
	recs, err := journal.ReadFiles(paths...)
	if err != nil {
		fmt.Fprintf(e.stderr, "jdwpaccel journal %s: %v\n", sub, err)
		if len(recs) == 0 {
			return exitError
		}
		fmt.Fprintf(e.stderr, "jdwpaccel journal %s: using the %d records read before the error\n", sub, len(recs))
	}
	sel := filter.Apply(recs)
	if sub == "show" {
		return journalShow(e.stdout, recs, sel, jf.hex)
	}
	st := journal.ComputeStats(sel)
	if jf.jsonOut {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(st); err != nil {
			return exitError
		}
		return exitOK
	}
	if err := st.WriteText(e.stdout); err != nil {
		return exitError
	}
	return exitOK
}

func journalShow(out io.Writer, all, sel []journal.Record, hex bool) int {
	w := bufio.NewWriter(out)
	for i := range all {
		if all[i].Type == journal.TypeHeader {
			fmt.Fprintln(w, journal.FormatRecord(&all[i], journal.FormatOptions{}))
			break
		}
	}
	fmt.Fprintln(w, journal.ShowLegend)
	for i := range sel {
		fmt.Fprintln(w, journal.FormatRecord(&sel[i], journal.FormatOptions{Hex: hex}))
	}
	if err := w.Flush(); err != nil {
		return exitError
	}
	return exitOK
}

// openJournal opens the journal the proxy's flags ask for: nil without
// --journal. Bad file names and formats are usage errors, found before any
// file is created.
func (pf *proxyFlags) openJournal(log zerolog.Logger, reg prometheus.Registerer) (*journal.Journal, error) {
	if len(pf.journalList) == 0 {
		return nil, nil
	}
	var format journal.Format
	if pf.journalFmt != "" {
		if len(pf.journalList) > 1 {
			return nil, usageError{errors.New("--journal-format names the format of a single --journal; with several, each file's extension says its format")}
		}
		f, err := journal.ParseFormat(pf.journalFmt)
		if err != nil {
			return nil, usageError{err}
		}
		format = f
	}
	files := make([]journal.File, len(pf.journalList))
	for i, p := range pf.journalList {
		files[i] = journal.File{Path: p, Format: format}
	}
	v, _ := version()
	j, err := journal.OpenFiles(journal.Options{
		MaxBytes: pf.journalMax, RawLimit: pf.journalRaw, QueueSize: pf.journalQ,
		Version: v, Logger: log.With().Str(relay.LogComponent, "journal").Logger(), Registerer: reg,
	}, files...)
	switch {
	case errors.Is(err, journal.ErrUnknownFormat), errors.Is(err, journal.ErrSameFile):
		return nil, usageError{fmt.Errorf("--journal: %w", err)}
	case err != nil:
		return nil, fmt.Errorf("opening the journal: %w", err)
	}
	return j, nil
}
