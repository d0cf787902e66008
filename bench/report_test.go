package bench

import (
	"bytes"
	"encoding/xml"
	"io"
	"strconv"
	"strings"
	"testing"
)

// svgText is one <text> element of a chart.
type svgText struct {
	x, y   float64
	anchor string
	s      string
}

// parseSVG returns a chart's size, its texts and how many elements of each
// name it has.
func parseSVG(t *testing.T, data []byte) (w, h float64, texts []svgText, count map[string]int) {
	t.Helper()
	count = map[string]int{}
	dec := xml.NewDecoder(bytes.NewReader(data))
	attr := func(se xml.StartElement, name string) string {
		for _, a := range se.Attr {
			if a.Name.Local == name {
				return a.Value
			}
		}
		return ""
	}
	num := func(s string) float64 { f, _ := strconv.ParseFloat(s, 64); return f }
	var cur *svgText
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("chart is not XML: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			count[el.Name.Local]++
			switch el.Name.Local {
			case "svg":
				w, h = num(attr(el, "width")), num(attr(el, "height"))
			case "text":
				cur = &svgText{x: num(attr(el, "x")), y: num(attr(el, "y")), anchor: attr(el, "text-anchor")}
				if tr := attr(el, "transform"); tr != "" {
					cur.x, cur.y = -1, -1 // rotated: checked by its presence only
				}
			}
		case xml.CharData:
			if cur != nil {
				cur.s += string(el)
			}
		case xml.EndElement:
			if el.Name.Local == "text" && cur != nil {
				texts = append(texts, *cur)
				cur = nil
			}
		}
	}
	return w, h, texts, count
}

// TestSVGLayout: every label lies inside the picture (at about 7 px per
// character), both axes of both rows (step time, time to first stop) have
// titles, every cell has a marker in each, and the legend sits below the
// plots, not over the data.
func TestSVGLayout(t *testing.T) {
	var rep Report
	for _, wl := range []string{"Deep/idea-like", "Shallow/idea-like"} {
		for _, rtt := range []float64{0, 1, 10, 30, 100} {
			for mi, m := range []string{"direct", "proxy", "speculate"} {
				med := (5 + 85*rtt) / float64(1+4*mi)
				rep.Cells = append(rep.Cells, Cell{Workload: wl, Mode: m, RTTMS: rtt, MedianMS: med, MinMS: med * 0.9, MaxMS: med * 1.3, Noise: mi == 1,
					FirstStopMS: 300 + 20*med})
			}
		}
	}
	var buf bytes.Buffer
	if err := rep.WriteSVG(&buf); err != nil {
		t.Fatal(err)
	}
	w, h, texts, count := parseSVG(t, buf.Bytes())
	plotBottom := 2*(svgTop+svgPlotH) + svgBelow
	var xTitle, yTitle, firstTitle, legend int
	for _, tx := range texts {
		if tx.x < 0 {
			if strings.Contains(tx.s, "step time") {
				yTitle++
			}
			if strings.Contains(tx.s, "first stop") {
				firstTitle++
			}
			continue
		}
		width := 7 * float64(len(tx.s))
		left := tx.x
		switch tx.anchor {
		case "end":
			left -= width
		case "middle":
			left -= width / 2
		}
		if left < 0 || tx.y-11 < 0 || tx.y > h || (tx.anchor == "end" && tx.x > w) {
			t.Errorf("label %q at (%.0f, %.0f) anchored %q is clipped by the %.0fx%.0f picture", tx.s, tx.x, tx.y, tx.anchor, w, h)
		}
		if tx.s == "link RTT (ms)" {
			xTitle++
		}
		for _, m := range []string{"direct", "proxy", "speculate"} {
			if tx.s == m {
				legend++
				if tx.y <= plotBottom+svgBelow {
					t.Errorf("legend entry %q at y %.0f overlaps the plots (bottom %.0f)", m, tx.y, plotBottom)
				}
			}
		}
	}
	if xTitle != 4 || yTitle != 2 || firstTitle != 2 {
		t.Errorf("axis titles: %d x, %d y of step time, %d of first stop, want 4, 2, 2", xTitle, yTitle, firstTitle)
	}
	if legend != 3 {
		t.Errorf("%d legend entries, want 3", legend)
	}
	// One marker per cell and row, plus one per legend entry: circles for
	// the first mode, squares (rect, besides the background and the four
	// plot frames) for the second, triangles for the third.
	if count["circle"] != 20+1 || count["rect"] != 20+1+1+4 || count["polygon"] != 20+1 {
		t.Errorf("markers: %d circles, %d rects, %d polygons", count["circle"], count["rect"], count["polygon"])
	}
	if !strings.Contains(buf.String(), `fill="white" stroke="#7f7f7f"`) {
		t.Error("noise cells are not drawn hollow")
	}
}

// TestRoundsReportEverySession: with rounds, the table says so, and the
// decisions java-debug made from timing are listed for every round's
// session, not only for the pooled cell's first.
func TestRoundsReportEverySession(t *testing.T) {
	jd := func(ms int, async bool) *JavaDebugCell { return &JavaDebugCell{LatencyMS: ms, Async: async} }
	r := &Report{Rounds: 2,
		Cells: []Cell{{Workload: "Deep/java-debug", Mode: "speculate", RTTMS: 30, Rounds: 2, JavaDebug: jd(31, true), DigestsMatch: true}},
		RoundCells: []Cell{
			{Workload: "Deep/java-debug", Mode: "speculate", RTTMS: 30, Round: 1, JavaDebug: jd(31, true)},
			{Workload: "Deep/java-debug", Mode: "speculate", RTTMS: 30, Round: 2, JavaDebug: jd(1, false)},
		},
	}
	var b strings.Builder
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"2 rounds", "speculate 30ms (round 1): measured 31 ms, async", "speculate 30ms (round 2): measured 1 ms, sync"} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
}
