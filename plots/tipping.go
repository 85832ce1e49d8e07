package plots

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// TippingChartName is the chart of a tipping-load search (stormsim plan
// --tipping).
const TippingChartName = "tipping"

// TippingData is what the tipping chart draws: every probe of every
// design, already reduced to numbers.
type TippingData struct {
	// Title names the scenario and seeds, e.g. "metastable (seeds 42-46)".
	Title string
	// LoadLabel names the load key.
	LoadLabel string
	// Designs are the designs in legend order.
	Designs []string
	Points  []TippingPoint
	// GoalS is the recovery goal in seconds, drawn as a limit line.
	GoalS float64
	// Frequency is the share of seeds a probe needs to count as
	// recovered, drawn as a limit line on the lower panel.
	Frequency float64
}

// TippingPoint is one design at one probed load.
type TippingPoint struct {
	Design string
	Load   float64
	// MedianS is the median recovery time over the seeds: +Inf when at
	// least half stuck (drawn on the "stuck" line at the top), NaN when
	// no seed had a value (left out).
	MedianS float64
	// Frequency is the share of seeds that met the goal, in [0, 1].
	Frequency float64
}

// TippingChart is the chart's data: above, the median recovery time
// against load (a stuck median drawn on a grey line at the top); below,
// the share of seeds that met the goal, with the goal and the frequency
// threshold as grey dashed lines.
func TippingChart(d *TippingData) (Chart, error) {
	if d == nil || len(d.Points) == 0 {
		return Chart{}, errors.New("plots: a tipping search with no probes")
	}
	var loads []float64
	top := d.GoalS
	for _, p := range d.Points {
		if !finite(p.Load) || !finite(p.Frequency) || math.IsInf(p.MedianS, -1) {
			return Chart{}, fmt.Errorf("plots: tipping probe %s at %g is not finite", p.Design, p.Load)
		}
		loads = append(loads, p.Load)
		if finite(p.MedianS) {
			top = math.Max(top, p.MedianS)
		}
	}
	stuck := math.Max(top*1.2, 1)
	xmin, xmax := slices.Min(loads), slices.Max(loads)
	pad := math.Max((xmax-xmin)*0.04, 1e-9)
	xmin, xmax = xmin-pad, xmax+pad
	rec := Panel{Title: "median recovery time over the seeds", XLabel: d.LoadLabel, YLabel: "goodput recovered after (s)", XMin: xmin, XMax: xmax, YMax: stuck * 1.05}
	freq := Panel{Title: "seeds that met the recovery goal", XLabel: d.LoadLabel, YLabel: "seeds meeting the goal (%)", XMin: xmin, XMax: xmax, YMax: 105, YPercent: true}
	for _, n := range d.Designs {
		lr := Line{Design: n, Label: n, Pen: StyleOf(n).pen(), Marks: true}
		lf := lr
		for _, p := range d.Points {
			if p.Design != n {
				continue
			}
			switch {
			case math.IsInf(p.MedianS, 1):
				lr.Points = append(lr.Points, Point{X: p.Load, Y: stuck})
			case finite(p.MedianS):
				lr.Points = append(lr.Points, Point{X: p.Load, Y: p.MedianS})
			}
			lf.Points = append(lf.Points, Point{X: p.Load, Y: 100 * p.Frequency})
		}
		slices.SortStableFunc(lr.Points, func(a, b Point) int { return cmpFloat(a.X, b.X) })
		slices.SortStableFunc(lf.Points, func(a, b Point) int { return cmpFloat(a.X, b.X) })
		rec.Lines, freq.Lines = append(rec.Lines, lr), append(freq.Lines, lf)
	}
	stuckLabel := "stuck: never recovered (median ∞)"
	goalLabel := fmt.Sprintf("recovery goal %g s", d.GoalS)
	threshold := fmt.Sprintf("recovered when ≥ %g%% of seeds meet the goal", 100*d.Frequency)
	stuckPen := limitPen
	stuckPen.Dashes = []float64{2, 2}
	rec.Lines = append(rec.Lines,
		Line{Label: goalLabel, Pen: limitPen, Points: []Point{{xmin, d.GoalS}, {xmax, d.GoalS}}},
		Line{Label: stuckLabel, Pen: stuckPen, Points: []Point{{xmin, stuck}, {xmax, stuck}}})
	freq.Lines = append(freq.Lines, Line{Label: threshold, Pen: limitPen, Points: []Point{{xmin, 100 * d.Frequency}, {xmax, 100 * d.Frequency}}})
	c := Chart{Name: TippingChartName, Title: d.Title + ": recovery against load", Cols: 1, Panels: []Panel{rec, freq}}
	for _, n := range d.Designs {
		c.Legend = append(c.Legend, Key{Label: n, Pen: StyleOf(n).pen()})
	}
	c.Legend = append(c.Legend, Key{Label: goalLabel, Pen: limitPen}, Key{Label: stuckLabel, Pen: stuckPen}, Key{Label: threshold, Pen: limitPen})
	return c, nil
}

// RenderTipping draws the tipping chart as PNG and SVG, 1200×700:
// "tipping.png" and "tipping.svg". The same data gives the same bytes.
func RenderTipping(d *TippingData) (map[string][]byte, error) {
	c, err := TippingChart(d)
	if err != nil {
		return nil, err
	}
	return encodeAll([]Chart{c})
}
