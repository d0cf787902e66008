package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
)

// machine describes the machine for the report.
func machine() string {
	model := "unknown CPU"
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	return fmt.Sprintf("%s/%s, %d CPUs, %s, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), model, runtime.Version())
}

// WriteTable writes the matrix as an aligned text table.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tmode\tRTT ms\tmedian step ms\tp95 ms\tspeedup\thit ratio\twasted spec\tdigests\t")
	for _, c := range r.Cells {
		speed, hit, waste := "-", "-", "-"
		if c.Speedup > 0 {
			speed = fmt.Sprintf("%.2fx", c.Speedup)
		}
		if h, m := c.Stats["hits"]+c.Stats["belays"], c.Stats["misses"]; h+m > 0 {
			hit = fmt.Sprintf("%.0f%%", 100*h/(h+m))
		}
		if s := c.Stats["speculative_sent"]; s > 0 {
			waste = fmt.Sprintf("%.0f%%", 100*c.Stats["speculative_wasted"]/s)
		}
		ok := "ok"
		if !c.DigestsMatch {
			ok = "MISMATCH"
		}
		fmt.Fprintf(tw, "%s\t%s\t%g\t%.1f\t%.1f\t%s\t%s\t%s\t%s\t\n", c.Workload, c.Mode, c.RTTMS, c.MedianMS, c.P95MS, speed, hit, waste, ok)
	}
	fmt.Fprintln(tw, "\t\t\t\t\t\t\t\t\t")
	fmt.Fprintln(tw, "workload\tmode\tserial round trips/step\tintercept ms\t\t\t\t\t\t")
	for _, s := range r.Slopes {
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.1f\t\t\t\t\t\t\n", s.Workload, s.Mode, s.RoundTrips, s.InterceptMS)
	}
	return tw.Flush()
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteSVG draws median step time against RTT, one panel per workload and
// one line per mode, on a log scale of step time.
func (r *Report) WriteSVG(w io.Writer) error {
	var workloads, modes []string
	for _, c := range r.Cells {
		if !slices.Contains(workloads, c.Workload) {
			workloads = append(workloads, c.Workload)
		}
		if !slices.Contains(modes, c.Mode) {
			modes = append(modes, c.Mode)
		}
	}
	const pw, ph, pad = 420.0, 300.0, 50.0
	width := pw * float64(max(1, len(workloads)))
	colors := []string{"#d62728", "#7f7f7f", "#2ca02c", "#1f77b4", "#9467bd"}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`+"\n", width, ph+40)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	for i, wl := range workloads {
		x0 := float64(i) * pw
		var cells []Cell
		maxRTT, minMS, maxMS := 1.0, math.Inf(1), 1.0
		for _, c := range r.Cells {
			if c.Workload == wl {
				cells = append(cells, c)
				maxRTT = max(maxRTT, c.RTTMS)
				if c.MedianMS > 0 {
					minMS = min(minMS, c.MedianMS)
					maxMS = max(maxMS, c.MedianMS)
				}
			}
		}
		lo, hi := math.Floor(math.Log10(max(minMS, 0.1))), math.Ceil(math.Log10(maxMS))
		if hi <= lo {
			hi = lo + 1
		}
		px := func(rtt float64) float64 { return x0 + pad + (pw-pad-20)*rtt/maxRTT }
		py := func(ms float64) float64 {
			return ph - pad + 20 - (ph-pad-10)*(math.Log10(max(ms, 0.1))-lo)/(hi-lo)
		}
		fmt.Fprintf(&b, `<text x="%.0f" y="16" font-size="13" font-weight="bold">%s</text>`+"\n", x0+pad, html.EscapeString(wl))
		fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="black"/>`+"\n", px(0), py(math.Pow(10, lo)), px(maxRTT), py(math.Pow(10, lo)))
		fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="black"/>`+"\n", px(0), py(math.Pow(10, lo)), px(0), py(math.Pow(10, hi)))
		for e := lo; e <= hi; e++ {
			fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="end">%g ms</text>`+"\n", px(0)-4, py(math.Pow(10, e))+4, math.Pow(10, e))
		}
		for _, c := range cells {
			if c.Mode == modes[0] {
				fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">%g</text>`+"\n", px(c.RTTMS), py(math.Pow(10, lo))+14, c.RTTMS)
			}
		}
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">RTT (ms)</text>`+"\n", px(maxRTT/2), ph+30)
		for mi, m := range modes {
			var pts []string
			for _, c := range cells {
				if c.Mode == m {
					pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(c.RTTMS), py(c.MedianMS)))
				}
			}
			col := colors[mi%len(colors)]
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", col, strings.Join(pts, " "))
			fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" fill="%s">%s</text>`+"\n", x0+pad+10, 34+14*float64(mi), col, html.EscapeString(m))
		}
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
