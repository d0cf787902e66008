package journal

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"
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
	Synthetic int    `json:"synthetic"`
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
	// RoundTripsSaved counts debugger commands that did not wait for a VM
	// round trip of their own: cache hits and belays.
	RoundTripsSaved int            `json:"round_trips_saved"`
	Synthetic       int            `json:"synthetic"` // the proxy's own commands
	Events          int            `json:"events"`
	DDM             int            `json:"ddm"`
	Dropped         uint64         `json:"dropped"`
	Latency         Percentiles    `json:"latency"`
	PerCommand      []CommandStats `json:"per_command"`
}

// ComputeStats summarises the records (typically filtered by Filter).
func ComputeStats(recs []Record) *Stats {
	st := &Stats{}
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
				case ServedBelay:
					st.Belays++
					c.Belays++
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
			case r.View == ViewWire && r.Kind == KindCommand && r.Dir == DirToVM:
				st.Synthetic++
				get(r).Synthetic++
			case r.Kind == KindEvent:
				st.Events++
			case r.Kind == KindDDM:
				st.DDM++
			}
		}
	}
	st.Sessions = len(sessions)
	st.Span = time.Duration(last - first)
	st.RoundTripsSaved = st.CacheHits + st.Belays
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
	fmt.Fprintf(w, "debugger commands %d: forwarded (misses) %d, cache hits %d, belays %d; hit rate %s\n",
		st.Commands, st.Forwarded, st.CacheHits, st.Belays, pct(st.CacheHits+st.Belays, st.Commands))
	fmt.Fprintf(w, "round trips saved %d; speculative commands %d (used %s)\n",
		st.RoundTripsSaved, st.Synthetic, pct(st.RoundTripsSaved, st.Synthetic))
	fmt.Fprintf(w, "events %d, DDM chunks %d\n", st.Events, st.DDM)
	if st.Dropped > 0 {
		fmt.Fprintf(w, "WARNING: the journal DROPPED %d records; counts below are incomplete\n", st.Dropped)
	}
	fmt.Fprintf(w, "latency as the debugger saw it: p50 %s p90 %s p99 %s max %s (n=%d)\n\n",
		dur(st.Latency.P50), dur(st.Latency.P90), dur(st.Latency.P99), dur(st.Latency.Max), st.Latency.N)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "command\tcount\tfwd\thit\tbelay\terr\tspec\tp50\tp90\tp99\tmax\tvm p50\t\n")
	for _, c := range st.PerCommand {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t\n", c.Name, c.Count, c.Forwarded, c.CacheHits, c.Belays, c.Errors, c.Synthetic,
			dur(c.Latency.P50), dur(c.Latency.P90), dur(c.Latency.P99), dur(c.Latency.Max), dur(c.VMLatency.P50))
	}
	return tw.Flush()
}
