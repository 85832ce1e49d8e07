package plots

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/stormsim/stormsim/report"
)

// ChartNames are the charts Render draws, in the order the page shows them.
var ChartNames = []string{"replay-latency", "lost-events", "rate-404", "reconnect-storm", "designs", "store"}

// Axis labels shared by the charts.
const (
	timeLabel    = "time since start (s)"
	latencyLabel = "latency (ms, log scale)"
	cdfLabel     = "completed within latency (%)"
)

// Charts returns the data of every chart of r, in ChartNames order. It
// fails, naming the design and field, when r cannot be drawn: series of
// unequal length, a step that is not positive, a histogram that does not
// fit a log axis.
func Charts(r *report.Report) ([]Chart, error) {
	if err := check(r); err != nil {
		return nil, err
	}
	es := entries(r, "", func(s Style) Pen { return s.pen() })
	m := markers(r.Faults, "")
	xmax := timeSpan(m, r)
	stored := storedEntries(r, es)
	return []Chart{
		replayChart(r),
		timeChart("lost-events", title(r, "lost events"), es, m, xmax, lostPanel),
		timeChart("rate-404", title(r, "HTTP 404 responses"), es, m, xmax, rate404Panel),
		timeChart("reconnect-storm", title(r, "reconnect storm"), es, m, xmax, reconnectPanel),
		designsChart(r),
		timeChart("store", storeTitle(r, len(stored)), stored, m, xmax, storeOpsPanel, storeBytesPanel),
	}, nil
}

func title(r *report.Report, what string) string {
	return fmt.Sprintf("%s (seed %d): %s", r.Scenario, r.Seed, what)
}

func storeTitle(r *report.Report, n int) string {
	if n == 0 {
		return title(r, "event store (no design keeps events)")
	}
	return title(r, "event store")
}

// entry is one design as drawn on a chart: its data, its legend text and
// its pen.
type entry struct {
	d     *report.Design
	label string
	pen   Pen
}

// entries lists the designs of r in report order; suffix is appended to
// each label (" (A)" in overlays) and pen picks the pen from the style.
func entries(r *report.Report, suffix string, pen func(Style) Pen) []entry {
	es := make([]entry, len(r.Designs))
	for i := range r.Designs {
		d := &r.Designs[i]
		es[i] = entry{d: d, label: d.Name + suffix, pen: pen(StyleOf(d.Name))}
	}
	return es
}

// storedEntries keeps the designs that keep events in a store.
func storedEntries(r *report.Report, es []entry) []entry {
	var out []entry
	for _, e := range es {
		if e.d.Events != "none" {
			out = append(out, e)
		}
	}
	return out
}

// markers turns the fault schedule into chart markers; suffix is appended to
// each label.
func markers(fs []report.Fault, suffix string) []Marker {
	ms := make([]Marker, len(fs))
	for i, f := range fs {
		label := f.Label
		if label == "" {
			label = f.Kind
		}
		ms[i] = Marker{Label: label + suffix, At: f.AtS, Until: f.UntilS}
	}
	return ms
}

// timeSpan is the end of the time axis: the run, its series and its faults
// all fit.
func timeSpan(ms []Marker, rs ...*report.Report) float64 {
	span := 0.0
	for _, r := range rs {
		span = math.Max(span, r.DurationS)
		for _, d := range r.Designs {
			span = math.Max(span, float64(len(d.Series.EventsLost))*d.Series.StepS)
		}
	}
	for _, m := range ms {
		span = math.Max(span, math.Max(m.At, m.Until))
	}
	if span <= 0 {
		return 1
	}
	return span
}

// panelSpec is one panel of a time chart: its title, Y label and how a
// series becomes points.
type panelSpec struct {
	title, ylabel string
	bytes         bool
	points        func(s *report.Series) []Point
}

var (
	lostPanel = panelSpec{ylabel: "events lost since start (cumulative count)",
		points: func(s *report.Series) []Point { return cumulative(s.EventsLost, s.StepS) }}
	rate404Panel = panelSpec{ylabel: "HTTP 404 responses per second (1/s)",
		points: func(s *report.Series) []Point { return perSecond(s.HTTP404, s.StepS) }}
	reconnectPanel = panelSpec{ylabel: "reconnect attempts per second (1/s)",
		points: func(s *report.Series) []Point { return perSecond(s.Reconnects, s.StepS) }}
	storeOpsPanel = panelSpec{title: "store operations", ylabel: "store operations per second (ops/s)",
		points: func(s *report.Series) []Point { return perSecond(s.StoreOps, s.StepS) }}
	storeBytesPanel = panelSpec{title: "store size", ylabel: "bytes held in the store", bytes: true,
		points: func(s *report.Series) []Point { return values(s.StoreBytes, s.StepS) }}
)

// timeChart draws one line per entry on each panel, over the fault markers.
func timeChart(name, title string, es []entry, ms []Marker, xmax float64, specs ...panelSpec) Chart {
	c := Chart{Name: name, Title: title, Cols: 1, Legend: keys(es)}
	for _, spec := range specs {
		p := Panel{Title: spec.title, XLabel: timeLabel, YLabel: spec.ylabel, XMax: xmax, YBytes: spec.bytes, Faults: ms}
		if len(specs) == 1 {
			p.Title = ""
		}
		for _, e := range es {
			p.Lines = append(p.Lines, Line{Design: e.d.Name, Label: e.label, Pen: e.pen, Points: spec.points(&e.d.Series)})
		}
		c.Panels = append(c.Panels, p)
	}
	return c
}

func keys(es []entry) []Key {
	ks := make([]Key, len(es))
	for i, e := range es {
		ks[i] = Key{Label: e.label, Pen: e.pen}
	}
	return ks
}

// values puts step i at i*step seconds, as series.csv does.
func values(v []int64, step float64) []Point {
	ps := make([]Point, len(v))
	for i, x := range v {
		ps[i] = Point{X: float64(i) * step, Y: float64(x)}
	}
	return ps
}

// perSecond turns per-step counts into rates.
func perSecond(v []int64, step float64) []Point {
	ps := values(v, step)
	for i := range ps {
		ps[i].Y /= step
	}
	return ps
}

// cumulative turns per-step counts into running totals.
func cumulative(v []int64, step float64) []Point {
	ps := values(v, step)
	for i := 1; i < len(ps); i++ {
		ps[i].Y += ps[i-1].Y
	}
	return ps
}

// replayChart draws, per design, the CDF of replay latency (the design's
// pen) and of recovery latency (thin dashed, same colour).
func replayChart(r *report.Report) Chart {
	return latencyChart(title(r, "replay latency"), entries(r, "", func(s Style) Pen { return s.pen() }), true)
}

// latencyChart draws one replay-latency CDF per entry and, when recovery is
// set, its recovery-latency CDF thin and dashed in the same colour. An entry
// with no replays stays in the legend, marked "(no replays)".
func latencyChart(title string, es []entry, recovery bool) Chart {
	c := Chart{Name: "replay-latency", Title: title, Cols: 1}
	p := Panel{XLabel: latencyLabel, YLabel: cdfLabel, XLog: true, YMax: 100, YPercent: true}
	anyRecovery := false
	for _, e := range es {
		replay := cdf(e.d.ReplayLatencyMS.Histogram)
		label := e.label
		if e.d.ReplayLatencyMS.Count == 0 || replay == nil {
			label += " (no replays)"
		}
		c.Legend = append(c.Legend, Key{Label: label, Pen: e.pen})
		p.Lines = append(p.Lines, Line{Design: e.d.Name, Label: label, Pen: e.pen, Points: replay})
		if !recovery {
			continue
		}
		if rec := cdf(e.d.RecoveryLatencyMS.Histogram); rec != nil {
			anyRecovery = true
			pen := StyleOf(e.d.Name).secondary(widthSecondary)
			p.Lines = append(p.Lines, Line{Design: e.d.Name, Label: e.label + " recovery", Pen: pen, Points: rec})
		}
	}
	if anyRecovery {
		c.Legend = append(c.Legend, Key{Label: "thin dashed: recovery latency", Pen: Pen{Color: keyColor, Dashes: secondaryDashes, Width: widthSecondary}})
	}
	p.XMin, p.XMax = latencyRange(p.Lines)
	c.Panels = []Panel{p}
	return c
}

// cdf turns a histogram into its cumulative distribution in percent. It
// starts at 0 % at the lower bound of the first bucket with samples (the
// first bucket has no lower bound on a log axis, so it starts at its upper
// bound), then has one point per bucket upper bound up to the last bucket
// with samples, where it reaches 100 %. It is nil when the histogram holds
// no sample.
func cdf(h report.Histogram) []Point {
	var total int64
	first, last := -1, -1
	for i, n := range h.Counts {
		total += n
		if n > 0 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if total == 0 {
		return nil
	}
	ps := make([]Point, 0, last-first+2)
	if first > 0 {
		ps = append(ps, Point{X: h.LeMS[first-1], Y: 0})
	}
	var cum int64
	for i := first; i <= last; i++ {
		cum += h.Counts[i]
		ps = append(ps, Point{X: h.LeMS[i], Y: 100 * float64(cum) / float64(total)})
	}
	return ps
}

// latencyRange is the log X range that holds every line: from the smallest
// bucket bound to the largest bound with samples.
func latencyRange(ls []Line) (float64, float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, l := range ls {
		for _, p := range l.Points {
			lo, hi = math.Min(lo, p.X), math.Max(hi, p.X)
		}
	}
	if math.IsInf(lo, 1) {
		return 1, 1000
	}
	if hi <= lo {
		hi = lo * 10
	}
	return lo, hi
}

// designsChart compares the designs at a glance: one bar per design on
// three panels.
func designsChart(r *report.Report) Chart {
	c := Chart{Name: "designs", Title: title(r, "designs at a glance"), Cols: 3}
	lost := Panel{Title: "events lost", YLabel: "% of expected events"}
	rate := Panel{Title: "rate_404", YLabel: "404s per session request"}
	p99 := Panel{Title: "replay latency p99", YLabel: "ms (n/a: no replays)"}
	for _, d := range r.Designs {
		col := StyleOf(d.Name).Color
		lp, lt := 0.0, "n/a" // a loss the run could not know is no bar
		if f, _ := d.Metric("lost_fraction"); f != nil && !d.IsUnknown("events_lost") && !d.IsUnknown("events_expected") {
			if d.Totals.EventsExpected > 0 {
				lp = 100 * float64(d.Totals.EventsLost) / float64(d.Totals.EventsExpected)
			}
			lt = strconv.FormatFloat(lp, 'f', 1, 64) + "%"
		}
		lost.Bars = append(lost.Bars, Bar{Design: d.Name, Value: lp, Text: lt, Color: col})
		rate.Bars = append(rate.Bars, Bar{Design: d.Name, Value: d.Totals.Rate404, Text: strconv.FormatFloat(d.Totals.Rate404, 'f', 3, 64), Color: col})
		v, text := 0.0, "n/a"
		if q := d.ReplayLatencyMS.P99; q != nil {
			v, text = *q, strconv.FormatFloat(*q, 'f', 0, 64)
		}
		p99.Bars = append(p99.Bars, Bar{Design: d.Name, Value: v, Text: text, Color: col})
	}
	c.Panels = []Panel{lost, rate, p99}
	return c
}

// check rejects what cannot be drawn, naming the design and the field.
func check(r *report.Report) error {
	if r == nil {
		return errors.New("plots: no report")
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("plots: "+format, args...)) }
	if !finite(r.DurationS) {
		bad("duration_s is %g", r.DurationS)
	}
	for i, f := range r.Faults {
		if !finite(f.AtS) || !finite(f.UntilS) {
			bad("faults[%d]: at_s %g, until_s %g are not finite", i, f.AtS, f.UntilS)
		}
	}
	for _, d := range r.Designs {
		names, cols := d.Series.Columns()
		for i, c := range cols {
			if len(c) != len(cols[0]) {
				bad("designs[%s].series.%s has %d points, %s has %d", d.Name, names[i], len(c), names[0], len(cols[0]))
			}
		}
		if len(cols[0]) > 0 && !(d.Series.StepS > 0 && finite(d.Series.StepS)) {
			bad("designs[%s].series.step_s is %g, want a positive number of seconds", d.Name, d.Series.StepS)
		}
		errs = append(errs, checkHistogram(d.Name+"].replay_latency_ms", d.ReplayLatencyMS.Histogram)...)
		errs = append(errs, checkHistogram(d.Name+"].recovery_latency_ms", d.RecoveryLatencyMS.Histogram)...)
	}
	return errors.Join(errs...)
}

// checkHistogram checks that a histogram fits a log axis; where is
// "<design>].<field>".
func checkHistogram(where string, h report.Histogram) []error {
	if len(h.LeMS) != len(h.Counts) {
		return []error{fmt.Errorf("plots: designs[%s.histogram has %d bounds and %d counts", where, len(h.LeMS), len(h.Counts))}
	}
	for i, le := range h.LeMS {
		if !(le > 0 && finite(le)) || (i > 0 && le <= h.LeMS[i-1]) {
			return []error{fmt.Errorf("plots: designs[%s.histogram.le_ms[%d] is %g, want positive and increasing", where, i, le)}
		}
		if h.Counts[i] < 0 {
			return []error{fmt.Errorf("plots: designs[%s.histogram.counts[%d] is %d, want >= 0", where, i, h.Counts[i])}
		}
	}
	return nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
