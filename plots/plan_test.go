package plots

import (
	"bytes"
	"fmt"
	"image/png"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// planFixture: two panels (a TTL swept besides the load), three designs of
// which one keeps no store, a memory cap on the first panel and an ops
// ceiling on the second.
func planFixture() *PlanData {
	p99 := func(v float64) *float64 { return &v }
	d := &PlanData{Title: "demo (seed 1)", LoadLabel: "workload.clients", LoadLog: true,
		Designs:   []string{"stateless", "memory-sticky", "redis-shared"},
		LoadTicks: []Tick{{100, "100"}, {400, "400"}, {1600, "1600"}}}
	for k, title := range []string{"store.redis_ttl=60s", "store.redis_ttl=120s"} {
		p := PlanPanel{Title: title}
		for _, load := range []float64{100, 400, 1600} {
			p.Points = append(p.Points,
				PlanPoint{Design: "stateless", Load: load, LostFraction: 0.001},
				PlanPoint{Design: "memory-sticky", Load: load, StoreBytes: load * 1000, StoreOpsPerS: load * 5, ReplayP99MS: p99(20), LostFraction: load / 1e5},
				PlanPoint{Design: "redis-shared", Load: load, StoreBytes: load * 3000 * float64(k+1), StoreOpsPerS: load * 6, ReplayP99MS: p99(load)},
			)
		}
		if k == 0 {
			p.MemoryLimits = []PlanLimit{{Label: "memory store cap × 3 replicas = 30.0 MiB", Value: 30 << 20}}
		} else {
			p.OpsLimits = []PlanLimit{{Label: "Redis model's append ceiling = 80000 ops/s", Value: 80000}}
		}
		d.Panels = append(d.Panels, p)
	}
	return d
}

// The four charts, one panel per value of the other axis, one line per
// design with a point at every load, and the limits where they are known.
func TestPlanCharts(t *testing.T) {
	t.Parallel()
	charts, err := PlanCharts(planFixture())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	byName := map[string]Chart{}
	for _, c := range charts {
		names = append(names, c.Name)
		byName[c.Name] = c
	}
	if diff := cmp.Diff(PlanChartNames, names); diff != "" {
		t.Fatalf("chart names (-want +got):\n%s", diff)
	}
	for _, c := range charts {
		if len(c.Panels) != 2 || c.Panels[0].Title != "store.redis_ttl=60s" || c.Cols != 2 {
			t.Errorf("%s: %d panels, first %q, %d columns", c.Name, len(c.Panels), c.Panels[0].Title, c.Cols)
		}
		for _, p := range c.Panels {
			if !p.XLog || p.XMin >= 100 || p.XMax <= 1600 || p.XLabel != "workload.clients" || len(p.XTicks) != 3 {
				t.Errorf("%s: x axis log %v, %g..%g, %q, ticks %v", c.Name, p.XLog, p.XMin, p.XMax, p.XLabel, p.XTicks)
			}
		}
	}
	points := func(c, design string, panel int) []Point {
		for _, l := range byName[c].Panels[panel].Lines {
			if l.Design == design {
				return l.Points
			}
		}
		return nil
	}
	// Memory and ops/s: only the designs with a store, on a log Y axis.
	mem := byName["store-memory"]
	if !mem.Panels[0].YLog || !mem.Panels[0].YBytes {
		t.Errorf("store-memory: log %v, bytes %v", mem.Panels[0].YLog, mem.Panels[0].YBytes)
	}
	if points("store-memory", "stateless", 0) != nil || points("store-ops", "stateless", 0) != nil {
		t.Errorf("stateless keeps no store but has a store line")
	}
	if diff := cmp.Diff([]Point{{100, 600000}, {400, 2400000}, {1600, 9600000}}, points("store-memory", "redis-shared", 1)); diff != "" {
		t.Errorf("redis-shared memory, panel 2 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]Point{{100, 500}, {400, 2000}, {1600, 8000}}, points("store-ops", "memory-sticky", 0)); diff != "" {
		t.Errorf("memory-sticky ops (-want +got):\n%s", diff)
	}
	// The cap is a horizontal line on the first panel only, in the legend
	// once; the ops/s ceiling on the second only.
	limit := func(c string, panel int) *Line {
		for _, l := range byName[c].Panels[panel].Lines {
			if l.Design == "" {
				return &l
			}
		}
		return nil
	}
	if l := limit("store-memory", 0); l == nil || len(l.Points) != 2 || l.Points[0].Y != 30<<20 || l.Points[1].Y != 30<<20 {
		t.Errorf("memory cap line: %+v", l)
	}
	if l := limit("store-memory", 1); l != nil {
		t.Errorf("panel 2 has no cap, got %+v", l)
	}
	if l := limit("store-ops", 1); l == nil || l.Points[0].Y != 80000 || !strings.Contains(l.Label, "80000 ops/s") {
		t.Errorf("ops ceiling: %+v", l)
	}
	if l := limit("store-ops", 0); l != nil {
		t.Errorf("panel 1 has no ops ceiling, got %+v", l)
	}
	var legend []string
	for _, k := range mem.Legend {
		legend = append(legend, k.Label)
	}
	if diff := cmp.Diff([]string{"memory-sticky", "redis-shared", "memory store cap × 3 replicas = 30.0 MiB"}, legend); diff != "" {
		t.Errorf("store-memory legend (-want +got):\n%s", diff)
	}
	// p99: a design with no replays is marked and has no points.
	if points("replay-p99", "stateless", 0) != nil || byName["replay-p99"].Legend[0].Label != "stateless (no replays)" {
		t.Errorf("replay-p99: stateless %v, legend %v", points("replay-p99", "stateless", 0), byName["replay-p99"].Legend[0])
	}
	// Lost: every design, in percent.
	if diff := cmp.Diff([]Point{{100, 0.1}, {400, 0.4}, {1600, 1.6}}, points("lost-fraction", "memory-sticky", 0)); diff != "" {
		t.Errorf("memory-sticky lost %% (-want +got):\n%s", diff)
	}
}

// The plan charts render as 1200×700 PNG and SVG, the same bytes each time.
func TestRenderPlan(t *testing.T) {
	t.Parallel()
	a, err := RenderPlan(planFixture())
	if err != nil {
		t.Fatal(err)
	}
	b, err := RenderPlan(planFixture())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range PlanChartNames {
		cfg, err := png.DecodeConfig(bytes.NewReader(a[n+".png"]))
		if err != nil || cfg.Width != Width || cfg.Height != Height {
			t.Errorf("%s.png: %dx%d, %v", n, cfg.Width, cfg.Height, err)
		}
		if !bytes.Contains(a[n+".svg"], []byte(`width="1200" height="700"`)) {
			t.Errorf("%s.svg does not declare 1200×700", n)
		}
		if !bytes.Equal(a[n+".png"], b[n+".png"]) || !bytes.Equal(a[n+".svg"], b[n+".svg"]) {
			t.Errorf("%s: two renders differ", n)
		}
	}
	if len(a) != 2*len(PlanChartNames) {
		t.Errorf("%d files", len(a))
	}
}

// Data that cannot be drawn is an error, not a panic.
func TestPlanChartsReject(t *testing.T) {
	t.Parallel()
	if _, err := PlanCharts(nil); err == nil {
		t.Error("nil data drew")
	}
	d := planFixture()
	d.Panels[0].Points[0].Load = 0
	if _, err := PlanCharts(d); err == nil || !strings.Contains(err.Error(), "log axis") {
		t.Errorf("a zero load on a log axis: %v", err)
	}
}

// Log ticks: sizes at powers of two labelled in binary units, numbers at
// 1, 2, 5 × powers of ten.
func TestLogTicks(t *testing.T) {
	t.Parallel()
	var got []string
	for _, tk := range (logTicks{bytes: true}).Ticks(600<<10, 5<<30) {
		if tk.Label != "" {
			got = append(got, tk.Label)
		}
	}
	if diff := cmp.Diff([]string{"1 MiB", "4 MiB", "16 MiB", "64 MiB", "256 MiB", "1 GiB", "4 GiB"}, got); diff != "" {
		t.Errorf("size ticks (-want +got):\n%s", diff)
	}
	got = nil
	for _, tk := range (logTicks{}).Ticks(3000, 130000) {
		if tk.Label != "" {
			got = append(got, tk.Label)
		}
	}
	if diff := cmp.Diff([]string{"5k", "10k", "20k", "50k", "100k"}, got); diff != "" {
		t.Errorf("number ticks (-want +got):\n%s", diff)
	}
}

// More panels than one chart holds go to further pages.
func TestPlanChartPages(t *testing.T) {
	t.Parallel()
	d := planFixture()
	for len(d.Panels) < MaxPlanPanels+2 {
		p := d.Panels[0]
		p.Title = fmt.Sprintf("panel %d", len(d.Panels))
		d.Panels = append(d.Panels, p)
	}
	charts, err := PlanCharts(d)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range charts {
		names = append(names, fmt.Sprintf("%s:%d", c.Name, len(c.Panels)))
	}
	want := []string{"store-memory:9", "store-memory-2:2", "store-ops:9", "store-ops-2:2", "replay-p99:9", "replay-p99-2:2", "lost-fraction:9", "lost-fraction-2:2"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("pages (-want +got):\n%s", diff)
	}
	if !strings.HasSuffix(charts[1].Title, "(2 of 2)") || charts[0].Cols != 3 {
		t.Errorf("page title %q, %d columns", charts[1].Title, charts[0].Cols)
	}
}
