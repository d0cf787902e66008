package web

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// browserCheck drives the page at url in headless Chromium: the thread
// table fills and then changes, the heap map and histogram draw, and the
// accelerator figures show. It saves a screenshot as name in
// $JDWPACCEL_SCREENSHOT_DIR when that is set. With stack, clicking the
// thread with DDM ID 1 must show at least 3 frames.
func browserCheck(t *testing.T, url, name string, stack bool) {
	t.Helper()
	b := startBrowser(t)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	p, err := b.open(ctx, url, 1280, 900)
	if err != nil {
		t.Fatal(err)
	}

	// The table fills.
	var first []string
	const rowsJS = `Array.from(document.querySelectorAll("#threads tbody tr")).map(tr => tr.innerText)`
	if err := p.waitFor(ctx, `document.querySelectorAll("#threads tbody tr").length > 2 && `+rowsJS, 15*time.Second, &first); err != nil {
		t.Fatalf("thread table never filled: %v", err)
	}
	t.Logf("first observation: %d thread rows, e.g. %q", len(first), first[0])

	// And then changes, live, without a reload: the rows differ from the
	// first observation and the page counted highlighted changes.
	var updates0 int
	if err := p.eval(ctx, `Number(document.body.dataset.updates)`, &updates0); err != nil {
		t.Fatal(err)
	}
	firstJSON := jsString(t, first)
	var second []string
	cond := `Number(document.body.dataset.threadChanges) > 0 && Number(document.body.dataset.updates) > ` + itoa(updates0) +
		` && JSON.stringify(` + rowsJS + `) !== ` + firstJSON + ` && ` + rowsJS
	if err := p.waitFor(ctx, cond, 15*time.Second, &second); err != nil {
		t.Fatalf("thread table did not change: %v", err)
	}
	if len(second) == 0 {
		t.Fatal("second observation has no rows")
	}

	// The heap map rendered: cells drawn and more than a few colours on the
	// canvas.
	var heap struct {
		Cells  int `json:"cells"`
		Colors int `json:"colors"`
		Stats  int `json:"stats"`
		Bars   int `json:"bars"`
	}
	heapJS := `(() => {
  const cv = document.getElementById("heapmap");
  const n = Number(cv.dataset.cells);
  if (!n) return null;
  const d = cv.getContext("2d").getImageData(0, 0, cv.width, cv.height).data;
  const seen = new Set();
  for (let i = 0; i < d.length; i += 4) seen.add((d[i] << 16) | (d[i+1] << 8) | d[i+2]);
  return {cells: n, colors: seen.size, stats: document.querySelectorAll("#heapstats tbody tr").length,
          bars: document.querySelectorAll("#histo rect").length};
})()`
	if err := p.waitFor(ctx, heapJS, 15*time.Second, &heap); err != nil {
		t.Fatalf("heap map never drew: %v", err)
	}
	if heap.Cells < 100 || heap.Colors < 4 || heap.Stats < 3 || heap.Bars < 3 {
		t.Fatalf("heap picture too thin: %+v", heap)
	}
	t.Logf("heap: %+v", heap)

	// Accelerator figures and the latency chart.
	var ratio string
	if err := p.waitFor(ctx, `document.querySelector("#spark polyline") && document.getElementById("a-ratio").textContent.includes("%") && document.getElementById("a-ratio").textContent`, 10*time.Second, &ratio); err != nil {
		t.Fatalf("accelerator figures missing: %v", err)
	}

	// Clicking a thread shows its stack.
	if stack {
		var frames int
		if err := p.eval(ctx, `document.querySelector('#threads tbody tr[data-key="1"]').click(), true`, nil); err != nil {
			t.Fatal(err)
		}
		if err := p.waitFor(ctx, `!document.getElementById("stackbox").hidden && document.querySelectorAll("#stack li").length`, 10*time.Second, &frames); err != nil || frames < 3 {
			t.Fatalf("no stack after clicking the main thread (%d frames): %v", frames, err)
		}
	}

	// Let the highlight animations settle so the picture is calm.
	if err := p.waitFor(ctx, `new Promise(r => setTimeout(() => r(true), 1700))`, 5*time.Second, nil); err != nil {
		t.Fatal(err)
	}
	// The whole page, not just the first screenful.
	var height int
	if err := p.eval(ctx, `document.documentElement.scrollHeight`, &height); err != nil {
		t.Fatal(err)
	}
	if _, err := p.b.call(ctx, p.session, "Emulation.setDeviceMetricsOverride", map[string]any{"width": 1280, "height": min(max(height, 900), 3000), "deviceScaleFactor": 1, "mobile": false}); err != nil {
		t.Fatal(err)
	}
	shot, err := p.screenshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	colors := map[uint32]bool{}
	bnd := img.Bounds()
	for y := bnd.Min.Y; y < bnd.Max.Y; y += 2 {
		for x := bnd.Min.X; x < bnd.Max.X; x += 2 {
			r, g, b, _ := img.At(x, y).RGBA()
			colors[r>>8<<16|g>>8<<8|b>>8] = true
		}
	}
	if bnd.Dx() != 1280 || len(colors) < 50 {
		t.Fatalf("screenshot %v with %d colours: looks blank", bnd, len(colors))
	}
	if dir := os.Getenv("JDWPACCEL_SCREENSHOT_DIR"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, name)
		if err := os.WriteFile(out, shot, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot saved to %s", out)
	}
}

func jsString(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	// The page compares JSON.stringify(rows) with this string literal.
	b, err = json.Marshal(string(b))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestBrowserFakeSource shows the page fed by FakeSource in a real browser.
func TestBrowserFakeSource(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test in -short mode")
	}
	src := NewFakeSource(7)
	h := NewHandler(src, prometheus.NewRegistry(), zerolog.Nop(), WithInterval(250*time.Millisecond))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close) // after the browser's cleanup, which ends its event stream
	t.Cleanup(h.Close)
	browserCheck(t, srv.URL+"/", "screenshot-fake.png", true)
}

// TestScreenshotFlag takes the picture the way a user would, with headless
// Chromium's --screenshot, which captures the page right after it loads:
// the server's embedded first snapshot must already show the data (the
// heap map's colours here), not "connecting…".
func TestScreenshotFlag(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test in -short mode")
	}
	bin := findChromium(t)
	src := NewManualFakeSource(7)
	src.Advance(3)
	h := NewHandler(src, prometheus.NewRegistry(), zerolog.Nop())
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	t.Cleanup(h.Close)
	dir := t.TempDir()
	out := filepath.Join(dir, "shot.png")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
		"--hide-scrollbars", "--user-data-dir="+filepath.Join(dir, "profile"), "--window-size=1280,1100",
		"--screenshot="+out, srv.URL+"/")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", bin, err, tail(string(b), 3000))
	}
	shot, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	// DDMS's data-object blue and class-object green fill the heap map.
	var blue, green int
	bnd := img.Bounds()
	for y := bnd.Min.Y; y < bnd.Max.Y; y++ {
		for x := bnd.Min.X; x < bnd.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			switch {
			case r>>8 == 0 && g>>8 == 0 && b>>8 == 255:
				blue++
			case r>>8 == 0 && g>>8 == 255 && b>>8 == 0:
				green++
			}
		}
	}
	if blue < 200 || green < 200 {
		t.Fatalf("the screenshot shows no heap map (%d blue, %d green pixels): the page was not rendered at load", blue, green)
	}
	if d := os.Getenv("JDWPACCEL_SCREENSHOT_DIR"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "screenshot-flag.png"), shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
