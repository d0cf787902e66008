package journal

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// Percentiles summarise a latency distribution.
type Percentiles struct {
	N   int           `json:"n"`
	P50 time.Duration `json:"p50_ns"`
	P90 time.Duration `json:"p90_ns"`
	P99 time.Duration `json:"p99_ns"`
	Max time.Duration `json:"max_ns"`
}

func percentiles(v []time.Duration) Percentiles {
	if len(v) == 0 {
		return Percentiles{}
	}
	slices.Sort(v)
	at := func(q float64) time.Duration {
		i := int(q*float64(len(v))+0.999999) - 1 // nearest rank
		return v[max(0, min(i, len(v)-1))]
	}
	return Percentiles{N: len(v), P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: v[len(v)-1]}
}

// CommandStats are the counts and latencies of one command.
type CommandStats struct {
	Name      string `json:"name"`
	Set       uint8  `json:"set"`
	Cmd       uint8  `json:"cmd"`
	Count     int    `json:"count"` // sent by the debugger
	Forwarded int    `json:"forwarded"`
	CacheHits int    `json:"cache_hits"`
	Belays    int    `json:"belays"`
	Errors    int    `json:"errors"` // replies with an error code
	// Synthetic counts the proxy's own commands of this kind; SpecUsed
	// those whose reply served the debugger (see Stats.SpeculativeUsed).
	Synthetic int `json:"synthetic"`
	SpecUsed  int `json:"speculative_used"`
	// Latency is as the debugger experienced it (command to reply, through
	// the proxy), over all its replies; VMLatency is the VM's round trip
	// for forwarded commands.
	Latency   Percentiles `json:"latency"`
	VMLatency Percentiles `json:"vm_latency"`

	lat, vmLat []time.Duration
}

// Stats summarise a journal.
type Stats struct {
	Sessions  int           `json:"sessions"`
	Packets   int           `json:"packets"`
	Span      time.Duration `json:"span_ns"` // first to last record
	Commands  int           `json:"commands"`
	Forwarded int           `json:"forwarded"` // misses: went to the VM
	CacheHits int           `json:"cache_hits"`
	Belays    int           `json:"belays"`
	// WrittenBehind counts state-setting commands answered at once
	// (write-behind); their copies to the VM are not speculation.
	WrittenBehind int `json:"written_behind"`
	// RoundTripsSaved counts debugger commands that did not wait for a VM
	// round trip of their own: cache hits and belays.
	RoundTripsSaved int `json:"round_trips_saved"`
	// Synthetic counts the proxy's own commands: Speculative ones, OwnDDM,
	// WriteBehindCopies and the moments' Suspend and Resume.
	Synthetic int `json:"synthetic"`
	// OwnDDM counts the DDM commands of the proxy's own (its DDM monitor);
	// WriteBehindCopies the written-behind debugger commands it sent on
	// to the VM as its own.
	OwnDDM            int `json:"own_ddm"`
	WriteBehindCopies int `json:"write_behind_copies"`
	// Moments counts the proxy's own VirtualMachine.Suspend, each with its
	// Resume around reads of running state (speculator/moment.go): neither
	// is speculative.
	Moments int `json:"moments,omitempty"`
	// Speculative counts the proxy's own commands other than DDM: what the
	// speculator sent. SpeculativeUsed counts those whose reply served at
	// least one debugger command: a later cache hit or belay in the same
	// session on the same command and parameters, credited to the latest
	// such speculative command. (Without raw bytes in the journal the
	// parameters are unknown and commands match by kind alone.) A reply
	// kept in the cache can serve many commands, so RoundTripsSaved may
	// exceed SpeculativeUsed; a hit may also come from a forwarded reply
	// the cache kept, which no speculative command is credited for.
	Speculative     int `json:"speculative"`
	SpeculativeUsed int `json:"speculative_used"`
	// Split mode's pushed replies (push/PROTOCOL.md), on either end:
	// PushBundles counts the bundles, PushedRecords their records as
	// their headers say (none counted for a bundle whose bytes the journal
	// did not keep), PushedBytes their packets' bytes, and PushUsage the
	// near end's usage reports. They are not the debugger's, nor
	// speculative commands.
	PushBundles   int            `json:"push_bundles,omitempty"`
	PushedRecords int            `json:"pushed_records,omitempty"`
	PushedBytes   int            `json:"pushed_bytes,omitempty"`
	PushUsage     int            `json:"push_usage_reports,omitempty"`
	Events        int            `json:"events"`
	DDM           int            `json:"ddm"`
	Dropped       uint64         `json:"dropped"`
	Latency       Percentiles    `json:"latency"`
	PerCommand    []CommandStats `json:"per_command"`
}

// Split mode's push packets (push/PROTOCOL.md): vendor command set 225,
// bundles (command 1) and usage reports (command 2); in a bundle of
// version 2 or 3 (its body's first byte; their headers are the same) the
// record count is at pushRecordsAt in its packet.
const (
	pushSet       = 225
	pushBundle    = 1
	pushRecordsAt = jdwp.HeaderSize + 22
)

// specKey is what a speculative command is matched by: its session, its
// command and its parameters (the body), as the cache keys replies.
type specKey struct {
	session  uint64
	set, cmd uint8
	params   string
}

func specKeyOf(r *Record) specKey {
	k := specKey{session: r.Session, set: r.Set, cmd: r.Cmd}
	if len(r.Bytes) >= jdwp.HeaderSize {
		k.params = string(r.Bytes[jdwp.HeaderSize:])
	}
	return k
}

// specUse is a speculative command, and whether its reply served the
// debugger.
type specUse struct {
	c    *CommandStats
	used bool
}

// ComputeStats summarises the records (typically filtered by Filter).
func ComputeStats(recs []Record) *Stats {
	st := &Stats{}
	spec := map[specKey]*specUse{} // the latest speculative command of each key
	moment := map[uint64]bool{}    // sessions with a moment open (the proxy's own Suspend sent, its Resume not yet)
	by := map[[2]uint8]*CommandStats{}
	get := func(r *Record) *CommandStats {
		k := [2]uint8{r.Set, r.Cmd}
		c, ok := by[k]
		if !ok {
			c = &CommandStats{Name: r.Name, Set: r.Set, Cmd: r.Cmd}
			if c.Name == "" {
				c.Name = fmt.Sprintf("%d/%d", r.Set, r.Cmd)
			}
			by[k] = c
		}
		return c
	}
	sessions := map[uint64]bool{}
	var all []time.Duration
	var first, last int64
	seen := false
	for i := range recs {
		r := &recs[i]
		if r.Type == TypeHeader || (r.Type == TypeSessionStart && r.Continued) {
			continue
		}
		if !seen || r.T < first {
			first = r.T
		}
		last = max(last, r.T)
		seen = true
		switch r.Type {
		case TypeDropped:
			st.Dropped += r.DroppedCount
		case TypeSessionStart:
			sessions[r.Session] = true
		case TypePacket:
			sessions[r.Session] = true
			st.Packets++
			switch {
			case r.IsCommandFromDebugger():
				c := get(r)
				st.Commands++
				c.Count++
				switch r.Served {
				case ServedCacheHit:
					st.CacheHits++
					c.CacheHits++
					st.creditSpeculation(spec, r)
				case ServedBelay:
					st.Belays++
					c.Belays++
					st.creditSpeculation(spec, r)
				case ServedWriteBehind:
					st.WrittenBehind++
				default:
					st.Forwarded++
					c.Forwarded++
				}
			case r.IsReplyToDebugger():
				c := get(r)
				if r.Error != 0 {
					c.Errors++
				}
				if r.LatencyNs > 0 {
					c.lat = append(c.lat, time.Duration(r.LatencyNs))
					all = append(all, time.Duration(r.LatencyNs))
				}
				if r.VMLatencyNs > 0 {
					c.vmLat = append(c.vmLat, time.Duration(r.VMLatencyNs))
				}
			case r.View == ViewWire && r.Set == pushSet && r.Kind == KindVMCommand && r.Cmd == pushBundle:
				st.PushBundles++
				st.PushedBytes += r.Len
				if len(r.Bytes) >= pushRecordsAt+4 && (r.Bytes[jdwp.HeaderSize] == 2 || r.Bytes[jdwp.HeaderSize] == 3) {
					st.PushedRecords += int(binary.BigEndian.Uint32(r.Bytes[pushRecordsAt:]))
				}
			case r.View == ViewWire && r.Set == pushSet && r.Kind == KindCommand:
				st.PushUsage++
			case r.View == ViewWire && r.Kind == KindCommand && r.Dir == DirToVM:
				c := get(r)
				st.Synthetic++
				c.Synthetic++
				switch {
				case r.Set == uint8(jdwp.SetDDM):
					st.OwnDDM++
				case r.Set == uint8(jdwp.SetVirtualMachine) && r.Cmd == jdwp.CmdVirtualMachineSuspend.Cmd:
					st.Moments++
					moment[r.Session] = true
				case moment[r.Session] && r.Set == uint8(jdwp.SetVirtualMachine) && r.Cmd == jdwp.CmdVirtualMachineResume.Cmd:
					moment[r.Session] = false // the moment's end (nothing is written behind within one)
				case writtenBehind(r):
					st.WriteBehindCopies++
				default:
					st.Speculative++
					spec[specKeyOf(r)] = &specUse{c: c}
				}
			case r.Kind == KindEvent:
				st.Events++
			case r.Kind == KindDDM:
				st.DDM++
			}
		}
	}
	st.Sessions = len(sessions)
	st.Span = time.Duration(last - first)
	st.RoundTripsSaved = st.CacheHits + st.Belays + st.WrittenBehind
	st.Latency = percentiles(all)
	for _, c := range by {
		c.Latency = percentiles(c.lat)
		c.VMLatency = percentiles(c.vmLat)
		c.lat, c.vmLat = nil, nil
		st.PerCommand = append(st.PerCommand, *c)
	}
	slices.SortFunc(st.PerCommand, func(a, b CommandStats) int {
		if c := cmp.Compare(b.Count+b.Synthetic, a.Count+a.Synthetic); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return st
}

// creditSpeculation marks the speculative command that served the
// debugger command r, if any, as used.
func (st *Stats) creditSpeculation(spec map[specKey]*specUse, r *Record) {
	u, ok := spec[specKeyOf(r)]
	if !ok || u.used {
		return
	}
	u.used = true
	u.c.SpecUsed++
	st.SpeculativeUsed++
}

func pct(n, of int) string {
	if of == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(of))
}

func dur(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%.0fµs", float64(d)/1e3)
	case d < time.Second:
		return fmt.Sprintf("%.2fms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}

// WriteText renders the statistics as a human-readable report.
func (st *Stats) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "sessions %d, packets %d, span %s\n", st.Sessions, st.Packets, dur(st.Span))
	fmt.Fprintf(w, "debugger commands %d: forwarded (misses) %d, cache hits %d, belays %d, written behind %d; hit rate %s\n",
		st.Commands, st.Forwarded, st.CacheHits, st.Belays, st.WrittenBehind, pct(st.CacheHits+st.Belays, st.Commands))
	fmt.Fprintf(w, "round trips saved %d (cache hits, belays and written-behind commands)\n", st.RoundTripsSaved)
	fmt.Fprintf(w, "speculative commands %d, used %d (%s)", st.Speculative, st.SpeculativeUsed, pct(st.SpeculativeUsed, st.Speculative))
	if st.WriteBehindCopies > 0 {
		fmt.Fprintf(w, "; written-behind commands sent on to the VM %d", st.WriteBehindCopies)
	}
	if st.OwnDDM > 0 {
		fmt.Fprintf(w, "; the proxy's own DDM commands %d", st.OwnDDM)
	}
	if st.Moments > 0 {
		fmt.Fprintf(w, "; moments (a Suspend and a Resume of the proxy's own around reads of running state) %d", st.Moments)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "events %d, DDM chunks %d\n", st.Events, st.DDM)
	if st.PushBundles+st.PushUsage > 0 {
		fmt.Fprintf(w, "pushed replies (split mode): %d bundles, %d records, %d bytes; %d usage reports\n",
			st.PushBundles, st.PushedRecords, st.PushedBytes, st.PushUsage)
	}
	if st.Dropped > 0 {
		fmt.Fprintf(w, "WARNING: the journal DROPPED %d records; counts below are incomplete\n", st.Dropped)
	}
	fmt.Fprintf(w, "latency as the debugger saw it: p50 %s p90 %s p99 %s max %s (n=%d)\n\n",
		dur(st.Latency.P50), dur(st.Latency.P90), dur(st.Latency.P99), dur(st.Latency.Max), st.Latency.N)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "command\tcount\tfwd\thit\tbelay\terr\tspec\tused\tp50\tp90\tp99\tmax\tvm p50\t\n")
	for _, c := range st.PerCommand {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t\n", c.Name, c.Count, c.Forwarded, c.CacheHits, c.Belays, c.Errors, c.Synthetic, c.SpecUsed,
			dur(c.Latency.P50), dur(c.Latency.P90), dur(c.Latency.P99), dur(c.Latency.Max), dur(c.VMLatency.P50))
	}
	return tw.Flush()
}

// writtenBehind reports whether a command of the proxy's own is the copy
// of a written-behind debugger command: the speculator sends read-only
// commands only, so a state-setting one is a write-behind.
func writtenBehind(r *Record) bool {
	c := jdwp.Cmd{Set: jdwp.CommandSet(r.Set), Cmd: r.Cmd}
	return c == jdwp.CmdEventRequestSet || c == jdwp.CmdEventRequestClear ||
		c == jdwp.CmdVirtualMachineResume || c == jdwp.CmdThreadReferenceResume
}
