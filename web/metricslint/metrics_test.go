package metricslint

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/ddmtap"
	"github.com/jdwpaccel/jdwpaccel/discover"
	"github.com/jdwpaccel/jdwpaccel/internal/journaltest"
	"github.com/jdwpaccel/jdwpaccel/journal"
	"github.com/jdwpaccel/jdwpaccel/push"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/speculator"
	"github.com/jdwpaccel/jdwpaccel/split"
	"github.com/jdwpaccel/jdwpaccel/tunnel"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"
)

// allMetrics registers every jdwpaccel metric the tree defines, as the
// command would, into a fresh registry. Add new constructors here (and to
// METRICS.md): TestMetricsDocumented fails until both are done.
func allMetrics(t *testing.T) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewRegistry()
	relay.NewMetrics(reg)
	ddmtap.NewMetrics(reg)
	speculator.NewMetrics(reg)
	split.NewMetrics(reg)
	push.NewMetrics(reg)
	tunnel.NewMetrics(reg)
	j, err := journaltest.New(t, io.Discard, journal.Options{Registerer: reg, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	_, err = discover.NewManager(discover.Config{
		Source:     discover.Static{Addr: "127.0.0.1:1"},
		Serve:      func(context.Context, discover.VM, discover.DialFunc, net.Listener) error { return nil },
		Registerer: reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	// cmd/jdwpaccel's newRegistry adds this one.
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "jdwpaccel", Name: "build_info", Help: "Always 1; the labels say which build is running.",
		ConstLabels: prometheus.Labels{"version": "test", "revision": "test"},
	}, func() float64 { return 1 }))
	return reg
}

// TestMetricsLint runs promlint over every jdwpaccel metric.
func TestMetricsLint(t *testing.T) {
	reg := allMetrics(t)
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "jdwpaccel_") {
			t.Errorf("%s: not under jdwpaccel_", mf.GetName())
		}
		if len(mf.GetHelp()) < 10 {
			t.Errorf("%s: HELP %q too short", mf.GetName(), mf.GetHelp())
		}
	}
}

// TestMetricsDocumented checks METRICS.md against the registry: every
// metric is documented with its type and labels, and nothing documented is
// missing.
func TestMetricsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../METRICS.md")
	if err != nil {
		t.Fatal(err)
	}
	// Table rows: | `name` | type | labels | help | meaning |
	row := regexp.MustCompile("(?m)^\\| `(jdwpaccel_[a-z0-9_]+)` \\| (counter|gauge|histogram|summary) \\| ([^|]*) \\|")
	documented := map[string][2]string{}
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		documented[m[1]] = [2]string{m[2], strings.TrimSpace(m[3])}
	}
	mfs, err := allMetrics(t).Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, mf := range mfs {
		name := mf.GetName()
		seen[name] = true
		d, ok := documented[name]
		if !ok {
			t.Errorf("%s is not in METRICS.md", name)
			continue
		}
		if typ := strings.ToLower(mf.GetType().String()); d[0] != typ {
			t.Errorf("%s: METRICS.md says %s, it is a %s", name, d[0], typ)
		}
		var labels []string
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if !slices.Contains(labels, l.GetName()) {
					labels = append(labels, l.GetName())
				}
			}
		}
		slices.Sort(labels)
		var docLabels []string
		for _, l := range strings.Split(d[1], ",") {
			if l = strings.Trim(strings.TrimSpace(l), "`"); l != "" && l != "—" {
				docLabels = append(docLabels, l)
			}
		}
		slices.Sort(docLabels)
		if !slices.Equal(labels, docLabels) {
			t.Errorf("%s: labels %v, METRICS.md says %v", name, labels, docLabels)
		}
	}
	for name := range documented {
		if !seen[name] {
			t.Errorf("METRICS.md documents %s, which no constructor registers", name)
		}
	}
}

// TestDashboard checks that the Grafana dashboard is valid JSON and queries
// only metrics that exist.
func TestDashboard(t *testing.T) {
	b, err := os.ReadFile("../../grafana/jdwpaccel-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	mfs, err := allMetrics(t).Gather()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, mf := range mfs {
		have[mf.GetName()] = true
	}
	name := regexp.MustCompile(`jdwpaccel_[a-z0-9_]+`)
	queries := 0
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			queries++
			for _, n := range name.FindAllString(tg.Expr, -1) {
				base := n
				for _, suf := range []string{"_bucket", "_count", "_sum"} {
					if s, ok := strings.CutSuffix(n, suf); ok && have[s] {
						base = s
					}
				}
				if !have[base] {
					t.Errorf("panel %q queries %s, which does not exist", p.Title, n)
				}
			}
		}
	}
	if queries < 10 {
		t.Fatalf("only %d queries", queries)
	}
}
