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
	"strconv"
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

// WriteTable writes the matrix as an aligned text table: per cell the
// median step time with its 95% confidence interval, the range, p95, and
// the speedup over the direct cell with its interval. A speedup whose cell's
// interval overlaps the direct cell's is printed as "~" plus the ratio: it
// is noise, not a result.
func (r *Report) WriteTable(w io.Writer) error {
	if r.Bandwidth > 0 {
		fmt.Fprintf(w, "link bandwidth: %d bytes/s per direction\n", r.Bandwidth)
	}
	if r.Rounds > 1 {
		fmt.Fprintf(w, "%d rounds, the modes in turn; each cell pools its rounds' steps (first stop and link bytes: medians over rounds)\n", r.Rounds)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tmode\tRTT ms\tstops\tmedian step ms\t95% CI\tmin-max\tp95 ms\tspeedup\t95% CI\tfirst stop ms\tspeedup\thit ratio\twasted spec\tpushed B/stop\tlink KB up/down\tdigests\t")
	noisy := false
	for _, c := range r.Cells {
		speed, speedCI, hit, waste, firstSpeed, pushed := "-", "-", "-", "-", "-", "-"
		if c.PushedBytesPerStop > 0 {
			pushed = fmt.Sprintf("%.0f", c.PushedBytesPerStop)
		}
		if c.FirstStopSpeedup > 0 {
			firstSpeed = fmt.Sprintf("%.2fx", c.FirstStopSpeedup)
		}
		if c.Speedup > 0 {
			speed = fmt.Sprintf("%.2fx", c.Speedup)
			if c.Noise {
				speed, noisy = "~"+speed, true
			}
			if c.SpeedupCI != [2]float64{} {
				speedCI = fmt.Sprintf("%.2f-%.2f", c.SpeedupCI[0], c.SpeedupCI[1])
			}
		}
		if a := c.Stats; a != nil {
			if h, m := a.Hits+a.Belays, a.Misses; h+m > 0 {
				hit = fmt.Sprintf("%.0f%%", 100*float64(h)/float64(h+m))
			}
			if a.SpecSent > 0 {
				waste = fmt.Sprintf("%.0f%%", 100*float64(a.SpecWasted)/float64(a.SpecSent))
			}
		}
		ok := "ok"
		if !c.DigestsMatch {
			ok = "MISMATCH"
		}
		fmt.Fprintf(tw, "%s\t%s\t%g\t%d\t%.1f\t%s-%s\t%s-%s\t%.1f\t%s\t%s\t%.1f\t%s\t%s\t%s\t%s\t%.1f/%.1f\t%s\t\n",
			c.Workload, c.Mode, c.RTTMS, c.Stops, c.MedianMS, ms1(c.MedianCI[0]), ms1(c.MedianCI[1]), ms1(c.MinMS), ms1(c.MaxMS),
			c.P95MS, speed, speedCI, c.FirstStopMS, firstSpeed, hit, waste, pushed, float64(c.LinkBytesUp)/1000, float64(c.LinkBytesDown)/1000, ok)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := r.writeFirstStops(w); err != nil {
		return err
	}
	if err := r.writeJavaDebug(w); err != nil {
		return err
	}
	if len(r.Slopes) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "workload\tmode\tserial round trips/step\tintercept ms\tserial round trips to first stop\tintercept ms\tthe same minus VM run\t")
		for _, s := range r.Slopes {
			fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t\n", s.Workload, s.Mode, s.RoundTrips, s.InterceptMS,
				s.FirstStopRoundTrips, s.FirstStopInterceptMS, s.FirstStopWaitRoundTrips)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if noisy {
		_, err := fmt.Fprintln(w, "\n~: noise. The 95% confidence intervals of this cell's median and the direct cell's overlap,\nso the difference is within the measurement's noise, not a speedup (or slowdown); measure more steps.")
		return err
	}
	return nil
}

// writeFirstStops writes the time to the first stop per cell: as measured,
// how much of it the VM ran, minus the VM's own start-up (VMStartupMS) and
// minus the cell's own VM run, with the speedups over direct, and the
// link's bytes up to it; then, for
// workloads whose driver reports them, the classes loaded and the size of
// the AllClassesWithGeneric reply that lists them.
func (r *Report) writeFirstStops(w io.Writer) error {
	fmt.Fprintln(w, "\ntime to the first stop (minus the VM's own start-up: its median run before the first stop at 0 ms):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tmode\tRTT ms\tfirst stop ms\tspeedup\tVM ran ms\tminus start-up ms\tspeedup\tminus VM run ms\tspeedup\tlink B to VM\tlink B from VM\t")
	speed := func(v float64) string {
		if v <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.2fx", v)
	}
	for _, c := range r.Cells {
		net := "-"
		if c.FirstStopNetMS > 0 {
			net = ms1(c.FirstStopNetMS)
		}
		fmt.Fprintf(tw, "%s\t%s\t%g\t%.1f\t%s\t%.1f\t%s\t%s\t%.1f\t%s\t%d\t%d\t\n", c.Workload, c.Mode, c.RTTMS, c.FirstStopMS,
			speed(c.FirstStopSpeedup), c.VMRunMS, net, speed(c.FirstStopNetSpeedup), c.FirstStopWaitMS, speed(c.FirstStopWaitSpeedup),
			c.FirstStopUpBytes, c.FirstStopDownBytes)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, c := range r.Cells {
		if c.LoadedClasses > 0 && !seen[c.Workload] {
			seen[c.Workload] = true
			fmt.Fprintf(w, "%s: %d classes loaded; the AllClassesWithGeneric reply listing them is %d bytes\n",
				c.Workload, c.LoadedClasses, c.AllClassesReplyBytes)
		}
	}
	return nil
}

// ms1 formats a time in ms with one decimal.
func ms1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// SVG layout, in pixels.
const (
	svgPanelW   = 440.0 // one workload's panel
	svgLeft     = 84.0  // y-axis title and tick labels
	svgRight    = 18.0
	svgTop      = 40.0  // panel title above the plot
	svgPlotH    = 240.0 // the plot area's height
	svgBelow    = 46.0  // x tick labels and the x-axis title
	svgLegendH  = 60.0  // the legend, below every panel
	svgMarkerR  = 3.5
	svgDodge    = 5.0 // horizontal offset between modes at one RTT
	svgMinLabel = 16.0
)

var svgColors = []string{"#d62728", "#7f7f7f", "#2ca02c", "#1f77b4", "#9467bd", "#ff7f0e"}

// svgMarker draws mode mi's marker at (x, y): circle, square, triangle,
// diamond, then again; hollow marks a cell within the direct cell's noise.
func svgMarker(b *strings.Builder, mi int, x, y float64, col string, hollow bool) {
	fill := col
	if hollow {
		fill = "white"
	}
	r := svgMarkerR
	style := fmt.Sprintf(`fill="%s" stroke="%s" stroke-width="1.5"`, fill, col)
	switch mi % 4 {
	case 0:
		fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="%.1f" %s/>`+"\n", x, y, r, style)
	case 1:
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" %s/>`+"\n", x-r, y-r, 2*r, 2*r, style)
	case 2:
		fmt.Fprintf(b, `<polygon points="%.1f,%.1f %.1f,%.1f %.1f,%.1f" %s/>`+"\n", x, y-r-1, x-r-1, y+r, x+r+1, y+r, style)
	default:
		fmt.Fprintf(b, `<polygon points="%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f" %s/>`+"\n", x, y-r-1, x+r+1, y, x, y+r+1, x-r-1, y, style)
	}
}

// svgTime labels a step time: "5 ms", "100 ms", "2 s".
func svgTime(ms float64) string {
	if ms >= 1000 {
		return fmt.Sprintf("%g s", ms/1000)
	}
	return fmt.Sprintf("%g ms", ms)
}

// svgRow is one row of panels: a figure of each cell against RTT.
type svgRow struct {
	title string
	// value returns the cell's point and the bar around it (lo, hi; 0
	// for none); a point <= 0 is not drawn.
	value func(c Cell) (v, lo, hi float64)
	// hollow marks a point within the direct cell's noise.
	hollow bool
}

var svgRows = []svgRow{
	{title: "median step time (log scale)", hollow: true, value: func(c Cell) (float64, float64, float64) { return c.MedianMS, c.MinMS, c.MaxMS }},
	{title: "time to first stop (log scale)", value: func(c Cell) (float64, float64, float64) { return c.FirstStopMS, 0, 0 }},
}

// WriteSVG draws, one panel per workload and one line per mode, median step
// time against RTT (first row) and time to the first stop (second row): a
// log scale of time against log(1+RTT), so that 0 and 1 ms stay apart. Each
// step-time point has a bar from the cell's fastest to its slowest step; a
// hollow marker is a cell within the direct cell's noise. The legend sits
// below the panels, off the data.
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
	rowH := svgTop + svgPlotH + svgBelow
	width := svgPanelW * float64(max(1, len(workloads)))
	height := rowH*float64(len(svgRows)) + svgLegendH
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="11">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	for ri, row := range svgRows {
		for i, wl := range workloads {
			var cells []Cell
			for _, c := range r.Cells {
				if c.Workload == wl {
					cells = append(cells, c)
				}
			}
			svgPanel(&b, float64(i)*svgPanelW, float64(ri)*rowH, wl, row, cells, modes)
		}
	}
	// The legend, below the panels.
	ly := rowH*float64(len(svgRows)) + 16
	x := svgLeft
	for mi, m := range modes {
		col := svgColors[mi%len(svgColors)]
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/>`+"\n", x, ly, x+22, ly, col)
		svgMarker(&b, mi, x+11, ly, col, false)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", x+28, ly+4, html.EscapeString(m))
		x += 40 + 7*float64(len(m))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#555">bars: fastest to slowest measured step;</text>`+"\n", svgLeft, ly+20)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#555">hollow marker: within the noise of direct</text>`+"\n", svgLeft, ly+36)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// svgPanel draws one workload's panel of one row at (x0, y0).
func svgPanel(b *strings.Builder, x0, y0 float64, wl string, row svgRow, cells []Cell, modes []string) {
	plotW := svgPanelW - svgLeft - svgRight
	var rtts []float64
	minMS, maxMS := math.Inf(1), 0.0
	for _, c := range cells {
		if !slices.Contains(rtts, c.RTTMS) {
			rtts = append(rtts, c.RTTMS)
		}
		v, lo, hi := row.value(c)
		for _, x := range []float64{lo, v, hi} {
			if x > 0 {
				minMS, maxMS = min(minMS, x), max(maxMS, x)
			}
		}
	}
	slices.Sort(rtts)
	if maxMS == 0 {
		minMS, maxMS = 1, 10
	}
	// A decade boundary right at a point would put its marker on the frame.
	lo, hi := math.Floor(math.Log10(max(minMS*0.8, 0.01))), math.Ceil(math.Log10(maxMS*1.25))
	if hi <= lo {
		hi = lo + 1
	}
	maxX := math.Log10(1 + max(rtts[len(rtts)-1], 1))
	left, right := x0+svgLeft, x0+svgLeft+plotW
	top, bottom := y0+svgTop, y0+svgTop+svgPlotH
	px := func(rtt float64) float64 { return left + 10 + (plotW-20)*math.Log10(1+rtt)/maxX }
	py := func(ms float64) float64 {
		return bottom - svgPlotH*(math.Log10(max(ms, 0.01))-lo)/(hi-lo)
	}
	fmt.Fprintf(b, `<text x="%.0f" y="%.0f" font-size="13" font-weight="bold">%s</text>`+"\n", left, y0+20, html.EscapeString(wl))
	// Decade grid lines and labels.
	for e := lo; e <= hi; e++ {
		y := py(math.Pow(10, e))
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e5e5e5"/>`+"\n", left, y, right, y)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-5, y+4, svgTime(math.Pow(10, e)))
	}
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="black"/>`+"\n", left, top, right-left, bottom-top)
	// RTT ticks, skipping labels that would collide.
	lastLabel := math.Inf(-1)
	for _, rtt := range rtts {
		x := px(rtt)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", x, bottom, x, bottom+4)
		if x-lastLabel >= svgMinLabel {
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%g</text>`+"\n", x, bottom+16, rtt)
			lastLabel = x
		}
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">link RTT (ms)</text>`+"\n", (left+right)/2, bottom+36)
	fmt.Fprintf(b, `<text transform="translate(%.1f %.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", x0+16, (top+bottom)/2, html.EscapeString(row.title))
	for mi, m := range modes {
		col := svgColors[mi%len(svgColors)]
		dx := (float64(mi) - float64(len(modes)-1)/2) * svgDodge
		var pts []string
		for _, c := range cells {
			if v, _, _ := row.value(c); c.Mode == m && v > 0 {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(c.RTTMS)+dx, py(v)))
			}
		}
		if len(pts) > 1 {
			fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", col, strings.Join(pts, " "))
		}
		for _, c := range cells {
			v, vlo, vhi := row.value(c)
			if c.Mode != m || v <= 0 {
				continue
			}
			x := px(c.RTTMS) + dx
			if vlo > 0 && vhi > 0 {
				fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1"/>`+"\n", x, py(vlo), x, py(vhi), col)
			}
			svgMarker(b, mi, x, py(v), col, row.hollow && c.Noise)
			if vlo <= 0 {
				fmt.Fprintf(b, `<title>%s %s at %g ms RTT: time to first stop %.1f ms</title>`+"\n",
					html.EscapeString(wl), html.EscapeString(m), c.RTTMS, v)
				continue
			}
			fmt.Fprintf(b, `<title>%s %s at %g ms RTT: median step %.1f ms (min %.1f, max %.1f)</title>`+"\n",
				html.EscapeString(wl), html.EscapeString(m), c.RTTMS, v, vlo, vhi)
		}
	}
}

// writeJavaDebug lists, for the java-debug cells, what java-debug measured
// at attach and decided from it: a proxy must not change that decision.
func (r *Report) writeJavaDebug(w io.Writer) error {
	header := false
	cells := r.Cells
	if len(r.RoundCells) > 0 {
		cells = r.RoundCells // every session's decision, not a pooled cell's first
	}
	for _, c := range cells {
		if c.JavaDebug == nil {
			continue
		}
		if !header {
			if _, err := fmt.Fprintln(w, "\njava-debug and vscode-like at attach (EventRequest.Set timed; async above 15 ms, toString and sizes left out above 10 ms):"); err != nil {
				return err
			}
			header = true
		}
		mode := "sync"
		if c.JavaDebug.Async {
			mode = "async"
		}
		round := ""
		if c.Round > 0 {
			round = fmt.Sprintf(" (round %d)", c.Round)
		}
		if _, err := fmt.Fprintf(w, "  %s %s %gms%s: measured %d ms, %s\n", c.Workload, c.Mode, c.RTTMS, round, c.JavaDebug.LatencyMS, mode); err != nil {
			return err
		}
	}
	return nil
}
