package plots

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stormsim/stormsim/report"
)

// fixture is testdata/fixture.json: six designs, two faults (an instant kill
// at 20 s and a partition from 30 s to 45 s), 30 steps of 2 s, and two
// designs without replays (stateless with zero counts, nostore with an
// empty histogram).
func fixture(t testing.TB) *report.Report {
	t.Helper()
	r, err := report.Read("testdata/fixture.json")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func chartsOf(t testing.TB, r *report.Report) map[string]Chart {
	t.Helper()
	cs, err := Charts(r)
	if err != nil {
		t.Fatal(err)
	}
	m := make(map[string]Chart, len(cs))
	for _, c := range cs {
		m[c.Name] = c
	}
	return m
}

func TestChartsNames(t *testing.T) {
	t.Parallel()
	cs, err := Charts(fixture(t))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cs {
		got = append(got, c.Name)
	}
	if diff := cmp.Diff(ChartNames, got); diff != "" {
		t.Errorf("chart names (-want +got):\n%s", diff)
	}
}

// Every design has its line on every time chart, with one point per step of
// its series, placed at i*step_s, with the value the chart promises.
func TestTimeChartsHaveEveryPoint(t *testing.T) {
	t.Parallel()
	r := fixture(t)
	charts := chartsOf(t, r)
	rate := func(v []int64, step float64) []Point {
		var ps []Point
		for i, x := range v {
			ps = append(ps, Point{float64(i) * step, float64(x) / step})
		}
		return ps
	}
	for _, tc := range []struct {
		chart  string
		panel  int
		stored bool // only designs that keep events
		want   func(s *report.Series) []Point
	}{
		// Lost events add up step after step.
		{"lost-events", 0, false, func(s *report.Series) []Point {
			var ps []Point
			sum := 0.0
			for i, x := range s.EventsLost {
				sum += float64(x)
				ps = append(ps, Point{float64(i) * s.StepS, sum})
			}
			return ps
		}},
		// 404s per step become 404s per second.
		{"rate-404", 0, false, func(s *report.Series) []Point { return rate(s.HTTP404, s.StepS) }},
		// Reconnects per step become reconnects per second.
		{"reconnect-storm", 0, false, func(s *report.Series) []Point { return rate(s.Reconnects, s.StepS) }},
		// Store operations per step become operations per second.
		{"store", 0, true, func(s *report.Series) []Point { return rate(s.StoreOps, s.StepS) }},
		// Store bytes are drawn as they are.
		{"store", 1, true, func(s *report.Series) []Point {
			var ps []Point
			for i, x := range s.StoreBytes {
				ps = append(ps, Point{float64(i) * s.StepS, float64(x)})
			}
			return ps
		}},
	} {
		p := charts[tc.chart].Panels[tc.panel]
		var names []string
		for _, d := range r.Designs {
			if tc.stored && d.Events == "none" {
				continue
			}
			names = append(names, d.Name)
			l := lineOf(p, d.Name)
			if l == nil {
				t.Errorf("%s panel %d: no line for %s", tc.chart, tc.panel, d.Name)
				continue
			}
			if len(l.Points) != len(d.Series.EventsLost) {
				t.Errorf("%s panel %d: %s has %d points, series has %d", tc.chart, tc.panel, d.Name, len(l.Points), len(d.Series.EventsLost))
			}
			if diff := cmp.Diff(tc.want(&d.Series), l.Points); diff != "" {
				t.Errorf("%s panel %d: %s points (-want +got):\n%s", tc.chart, tc.panel, d.Name, diff)
			}
			if diff := cmp.Diff(StyleOf(d.Name).pen(), l.Pen); diff != "" {
				t.Errorf("%s panel %d: %s pen (-want +got):\n%s", tc.chart, tc.panel, d.Name, diff)
			}
		}
		var got []string
		for _, l := range p.Lines {
			got = append(got, l.Design)
		}
		if diff := cmp.Diff(names, got); diff != "" {
			t.Errorf("%s panel %d: designs (-want +got):\n%s", tc.chart, tc.panel, diff)
		}
		var keys []string
		for _, k := range charts[tc.chart].Legend {
			keys = append(keys, k.Label)
		}
		if diff := cmp.Diff(names, keys); diff != "" {
			t.Errorf("%s: legend (-want +got):\n%s", tc.chart, diff)
		}
	}
}

// The store chart leaves out the designs that keep no events.
func TestStoreChartOnlyStoredDesigns(t *testing.T) {
	t.Parallel()
	c := chartsOf(t, fixture(t))["store"]
	for _, p := range c.Panels {
		for _, name := range []string{"stateless", "nostore"} {
			if lineOf(p, name) != nil {
				t.Errorf("store panel %q has a line for %s, which keeps no events", p.Title, name)
			}
		}
	}
}

func lineOf(p Panel, design string) *Line {
	for i := range p.Lines {
		if p.Lines[i].Design == design {
			return &p.Lines[i]
		}
	}
	return nil
}

// Every time panel marks both faults at their times: the instant kill as a
// line at 20 s, the partition as a band from 30 s to 45 s.
func TestFaultMarkers(t *testing.T) {
	t.Parallel()
	want := []Marker{
		{Label: "kill replica-1", At: 20, Until: 20},
		{Label: "partition replica-2", At: 30, Until: 45},
	}
	charts := chartsOf(t, fixture(t))
	for _, name := range []string{"lost-events", "rate-404", "reconnect-storm", "store"} {
		for i, p := range charts[name].Panels {
			if diff := cmp.Diff(want, p.Faults); diff != "" {
				t.Errorf("%s panel %d: faults (-want +got):\n%s", name, i, diff)
			}
			if p.XMin > 20 || p.XMax < 60 {
				t.Errorf("%s panel %d: x axis [%g, %g] does not hold the run (0-60 s)", name, i, p.XMin, p.XMax)
			}
		}
	}
	if got := []bool{want[0].Band(), want[1].Band()}; !cmp.Equal(got, []bool{false, true}) {
		t.Errorf("Band() = %v, want [false true]", got)
	}
	// A fault whose end is before its start is instant, not a band.
	if (Marker{At: 10, Until: 5}).Band() {
		t.Error("Marker{At: 10, Until: 5}.Band() = true, want false")
	}
	for _, name := range []string{"replay-latency", "designs"} {
		for _, p := range charts[name].Panels {
			if len(p.Faults) != 0 {
				t.Errorf("%s: has fault markers on a non-time axis", name)
			}
		}
	}
}

// Titles name the scenario and the seed.
func TestTitles(t *testing.T) {
	t.Parallel()
	for name, c := range chartsOf(t, fixture(t)) {
		if !strings.HasPrefix(c.Title, "fixture-storm (seed 42): ") {
			t.Errorf("%s: title %q does not start with the scenario and seed", name, c.Title)
		}
		for i, p := range c.Panels {
			if p.YLabel == "" {
				t.Errorf("%s panel %d: no Y label", name, i)
			}
			if len(p.Bars) == 0 && p.XLabel == "" {
				t.Errorf("%s panel %d: no X label", name, i)
			}
		}
	}
}

// A design with no replays is in the replay-latency legend, marked so,
// never left out; the others are there by name.
func TestReplayLegend(t *testing.T) {
	t.Parallel()
	r := fixture(t)
	c := chartsOf(t, r)["replay-latency"]
	var want []string
	for _, d := range r.Designs {
		label := d.Name
		if d.ReplayLatencyMS.Count == 0 {
			label += " (no replays)"
		}
		want = append(want, label)
	}
	want = append(want, "thin dashed: recovery latency")
	var got []string
	for _, k := range c.Legend {
		got = append(got, k.Label)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("legend (-want +got):\n%s", diff)
	}
	for _, name := range []string{"stateless (no replays)", "nostore (no replays)"} {
		if !contains(got, name) {
			t.Errorf("legend lacks %q", name)
		}
	}
	p := c.Panels[0]
	if !p.XLog || p.XMin <= 0 {
		t.Errorf("replay latency X axis: log %v from %g, want a log axis from > 0", p.XLog, p.XMin)
	}
	for _, d := range r.Designs {
		var replay, recovery *Line
		for i := range p.Lines {
			l := &p.Lines[i]
			switch {
			case l.Design == d.Name && strings.HasSuffix(l.Label, " recovery"):
				recovery = l
			case l.Design == d.Name:
				replay = l
			}
		}
		if replay == nil {
			t.Errorf("%s: no replay line", d.Name)
			continue
		}
		if (d.ReplayLatencyMS.Count == 0) != (len(replay.Points) == 0) {
			t.Errorf("%s: %d replays but %d points", d.Name, d.ReplayLatencyMS.Count, len(replay.Points))
		}
		if diff := cmp.Diff(cdf(d.ReplayLatencyMS.Histogram), replay.Points); diff != "" {
			t.Errorf("%s: replay points (-want +got):\n%s", d.Name, diff)
		}
		if recovery == nil {
			t.Errorf("%s: no recovery line", d.Name)
			continue
		}
		st := StyleOf(d.Name)
		if recovery.Pen.Color != st.Color || recovery.Pen.Dashes == nil || recovery.Pen.Width >= replay.Pen.Width {
			t.Errorf("%s: recovery pen %+v, want the design's colour %s, dashed, thinner than %g", d.Name, recovery.Pen, st.Hex(), replay.Pen.Width)
		}
		for _, pt := range append(replay.Points, recovery.Points...) {
			if pt.X < p.XMin || pt.X > p.XMax {
				t.Errorf("%s: point %v outside the X axis [%g, %g]", d.Name, pt, p.XMin, p.XMax)
			}
		}
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func TestCDF(t *testing.T) {
	t.Parallel()
	le := []float64{1, 2, 5, 10}
	for _, tc := range []struct {
		name   string
		counts []int64
		want   []Point
	}{
		// No samples: no line.
		{"empty", []int64{0, 0, 0, 0}, nil},
		// No buckets at all: no line.
		{"no buckets", nil, nil},
		// Samples in the first bucket start at its upper bound.
		{"first bucket", []int64{2, 2, 0, 0}, []Point{{1, 50}, {2, 100}}},
		// Otherwise the line starts at 0 % at the lower bound of the first
		// bucket with samples and stops at the last one.
		{"middle", []int64{0, 1, 0, 3}, []Point{{1, 0}, {2, 25}, {5, 25}, {10, 100}}},
	} {
		h := report.Histogram{LeMS: le[:len(tc.counts)], Counts: tc.counts}
		if diff := cmp.Diff(tc.want, cdf(h)); diff != "" {
			t.Errorf("%s: (-want +got):\n%s", tc.name, diff)
		}
	}
}

// The designs chart shows, per design, % lost, rate_404 and p99 replay
// latency, with n/a (drawn as 0) when there were no replays.
func TestDesignsChart(t *testing.T) {
	t.Parallel()
	r := fixture(t)
	c := chartsOf(t, r)["designs"]
	if len(c.Panels) != 3 || c.Cols != 3 {
		t.Fatalf("designs: %d panels in %d columns, want 3 in 3", len(c.Panels), c.Cols)
	}
	for i, d := range r.Designs {
		lost, rate, p99 := c.Panels[0].Bars[i], c.Panels[1].Bars[i], c.Panels[2].Bars[i]
		wantLost := 100 * float64(d.Totals.EventsLost) / float64(d.Totals.EventsExpected)
		if lost.Design != d.Name || lost.Value != wantLost || lost.Text != fmt.Sprintf("%.1f%%", wantLost) {
			t.Errorf("%s: lost bar %+v, want %g", d.Name, lost, wantLost)
		}
		if rate.Value != d.Totals.Rate404 {
			t.Errorf("%s: rate_404 bar %+v, want %g", d.Name, rate, d.Totals.Rate404)
		}
		switch q := d.ReplayLatencyMS.P99; {
		case q == nil && (p99.Value != 0 || p99.Text != "n/a"):
			t.Errorf("%s: p99 bar %+v, want 0 marked n/a", d.Name, p99)
		case q != nil && p99.Value != *q:
			t.Errorf("%s: p99 bar %+v, want %g", d.Name, p99, *q)
		}
		for _, b := range []Bar{lost, rate, p99} {
			if b.Color != StyleOf(d.Name).Color {
				t.Errorf("%s: bar colour %v, want the design's", d.Name, b.Color)
			}
		}
	}
}

// A loss the run could not know is n/a on the designs chart, not 0%; a
// replica that never came back is a band from its fault to the end.
func TestDesignsChartUnknownAndNeverReady(t *testing.T) {
	t.Parallel()
	r := fixture(t)
	r.Designs[0].Unknown = []string{"events_expected", "events_lost", "lost_fraction"}
	r.Faults = append(r.Faults, report.Fault{Kind: report.KindNeverReady, Label: "replica 1 never ready again", AtS: 25, UntilS: 60, Unscheduled: true})
	c := chartsOf(t, r)
	if b := c["designs"].Panels[0].Bars[0]; b.Text != "n/a" || b.Value != 0 {
		t.Errorf("lost bar of a design whose loss is unknown: %+v, want n/a", b)
	}
	if b := c["designs"].Panels[0].Bars[1]; b.Text == "n/a" {
		t.Errorf("lost bar of a design whose loss is known: %+v", b)
	}
	ms := c["lost-events"].Panels[0].Faults
	if m := ms[len(ms)-1]; m.Label != "replica 1 never ready again" || !m.Band() || m.At != 25 || m.Until != 60 {
		t.Errorf("never-ready marker %+v, want a band from 25 s to 60 s", m)
	}
}

// Reports that cannot be drawn give an error naming the design and field.
func TestChartsRejectBadReports(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		mangle func(r *report.Report)
		want   string
	}{
		// A series shorter than the others.
		{"unequal series", func(r *report.Report) { r.Designs[1].Series.HTTP404 = r.Designs[1].Series.HTTP404[:3] }, "designs[nostore].series.http_404 has 3 points"},
		// A zero step would divide by zero.
		{"zero step", func(r *report.Report) { r.Designs[2].Series.StepS = 0 }, "designs[memory-sticky].series.step_s is 0"},
		// A bucket bound of 0 cannot sit on a log axis.
		{"zero bound", func(r *report.Report) { r.Designs[3].ReplayLatencyMS.Histogram.LeMS[0] = 0 }, "designs[memory-roundrobin].replay_latency_ms.histogram.le_ms[0] is 0"},
		// Bounds and counts must pair up.
		{"histogram lengths", func(r *report.Report) {
			h := &r.Designs[4].RecoveryLatencyMS.Histogram
			h.Counts = h.Counts[:2]
		}, "designs[redis-events].recovery_latency_ms.histogram has 20 bounds and 2 counts"},
	} {
		r := fixture(t)
		tc.mangle(r)
		_, err := Charts(r)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
		if _, err := Render(r); err == nil {
			t.Errorf("%s: Render accepted the report", tc.name)
		}
	}
	if _, err := Render(nil); err == nil {
		t.Error("Render(nil) = nil error")
	}
}

// A report with no designs and no faults still draws, with empty axes.
func TestEmptyReport(t *testing.T) {
	t.Parallel()
	r := &report.Report{Schema: report.Schema, Scenario: "empty", DurationS: 10}
	files, err := Render(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2*len(ChartNames)+1 {
		t.Errorf("%d files, want %d", len(files), 2*len(ChartNames)+1)
	}
}
