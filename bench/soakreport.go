package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

const mib = 1 << 20

// WriteTable writes the samples as an aligned table and a closing line
// with the largest RSS against the cache bound.
func (r *SoakReport) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "elapsed s\tRSS MiB\tGo heap MiB\tgoroutines\tcache MiB\tcache entries\tsteps\tsessions\tmedian step ms\t")
	for _, s := range r.Samples {
		fmt.Fprintf(tw, "%.0f\t%.1f\t%.1f\t%d\t%.2f\t%d\t%d\t%d\t%.1f\t\n", s.ElapsedS, float64(s.RSSBytes)/mib, float64(s.HeapBytes)/mib,
			s.Goroutines, float64(s.CacheBytes)/mib, s.CacheEntries, s.Steps, s.Sessions, s.MedianStepMS)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%s through jdwpaccel (speculation on) at %g ms RTT for %.0f s: %d steps in %d sessions.\n"+
		"max RSS %.1f MiB (the whole process: bench harness, link and proxy) vs --cache-bytes %.1f MiB per session.\n",
		r.Workload, r.RTTMS, r.DurationS, r.Steps, r.Sessions, float64(r.MaxRSSBytes)/mib, float64(r.CacheLimit)/mib)
	if err != nil || r.RSSBound == 0 {
		return err
	}
	verdict := "within"
	if r.OverBound() {
		verdict = "OVER"
	}
	_, err = fmt.Fprintf(w, "max RSS %s the bound of %.1f MiB promised for one session (README, \"Memory\").\n", verdict, float64(r.RSSBound)/mib)
	return err
}

// WriteJSON writes the report as indented JSON.
func (r *SoakReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteSVG draws three charts over time, one above the other: memory (RSS,
// Go heap and cache, in MiB), goroutines, and the median step time.
func (r *SoakReport) WriteSVG(w io.Writer) error {
	const (
		width, left, right = 720.0, 70.0, 20.0
		chartH, gap, top   = 150.0, 60.0, 30.0
	)
	type series struct {
		name, color string
		v           func(SoakSample) float64
		stepsOnly   bool // only samples after which steps were timed
	}
	charts := []struct {
		title, unit string
		series      []series
	}{
		{"memory", "MiB", []series{
			{"RSS", "#d62728", func(s SoakSample) float64 { return float64(s.RSSBytes) / mib }, false},
			{"Go heap", "#ff7f0e", func(s SoakSample) float64 { return float64(s.HeapBytes) / mib }, false},
			{"cache", "#1f77b4", func(s SoakSample) float64 { return float64(s.CacheBytes) / mib }, false},
		}},
		{"goroutines", "count", []series{
			{"goroutines", "#2ca02c", func(s SoakSample) float64 { return float64(s.Goroutines) }, false},
		}},
		{"median step time", "ms", []series{
			{"step", "#9467bd", func(s SoakSample) float64 { return s.MedianStepMS }, true},
		}},
	}
	height := top + float64(len(charts))*(chartH+gap)
	plotW := width - left - right
	maxT := max(r.DurationS, 1)
	for _, s := range r.Samples {
		maxT = max(maxT, s.ElapsedS)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="11">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="18" font-size="13" font-weight="bold">soak: %s at %g ms RTT, %.0f s; max RSS %.1f MiB, cache bound %.0f MiB</text>`+"\n",
		left, r.Workload, r.RTTMS, r.DurationS, float64(r.MaxRSSBytes)/mib, float64(r.CacheLimit)/mib)
	for ci, c := range charts {
		y0 := top + float64(ci)*(chartH+gap) + 20
		hi := 0.0
		for _, s := range r.Samples {
			for _, se := range c.series {
				hi = max(hi, se.v(s))
			}
		}
		hi = niceCeil(hi)
		px := func(t float64) float64 { return left + plotW*t/maxT }
		py := func(v float64) float64 { return y0 + chartH - chartH*v/hi }
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" font-weight="bold">%s</text>`+"\n", left, y0-6, c.title)
		for i := 0; i <= 4; i++ {
			v := hi * float64(i) / 4
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e5e5e5"/>`+"\n", left, py(v), left+plotW, py(v))
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%g</text>`+"\n", left-5, py(v)+4, v)
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="black"/>`+"\n", left, y0, plotW, chartH)
		fmt.Fprintf(&b, `<text transform="translate(16 %.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", y0+chartH/2, c.unit)
		for i := 0; i <= 4; i++ {
			t := maxT * float64(i) / 4
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%.0f</text>`+"\n", px(t), y0+chartH+14, t)
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">elapsed (s)</text>`+"\n", left+plotW/2, y0+chartH+30)
		lx := left + plotW - 10
		for si := len(c.series) - 1; si >= 0; si-- {
			se := c.series[si]
			var pts []string
			for _, s := range r.Samples {
				if se.stepsOnly && s.MedianStepMS == 0 {
					continue
				}
				x, y := px(s.ElapsedS), py(se.v(s))
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"/>`+"\n", x, y, se.color)
			}
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", se.color, strings.Join(pts, " "))
			// The legend goes above the plot, right-aligned, off the data.
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end" fill="%s">%s</text>`+"\n", lx, y0-6, se.color, se.name)
			lx -= 10 + 7*float64(len(se.name))
		}
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten (1 for v <= 0).
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}
