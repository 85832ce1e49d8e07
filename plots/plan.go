package plots

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"slices"
)

// PlanChartNames are the charts of a capacity plan (stormsim plan), each
// drawn against the load axis with one line per design.
var PlanChartNames = []string{"store-memory", "store-ops", "replay-p99", "lost-fraction"}

// PlanData is what the plan charts draw: the grid's results, already
// reduced to numbers, so plots needs neither the planner nor the engine.
type PlanData struct {
	// Title names the scenario and seed, e.g. "deploy-restart (seed 42)".
	Title string
	// LoadLabel names the load axis (the first swept key).
	LoadLabel string
	// LoadLog draws the load axis on a log scale (every load must be > 0).
	LoadLog bool
	// LoadTicks label the load axis at the grid's loads; nil ticks it at
	// round values.
	LoadTicks []Tick
	// Designs are the designs in legend order.
	Designs []string
	// Panels are one per combination of the other swept keys; a single
	// panel when only the load is swept.
	Panels []PlanPanel
}

// PlanPanel is one combination of the other swept keys.
type PlanPanel struct {
	// Title is that combination ("store.redis_ttl=60s"), "" for one panel.
	Title  string
	Points []PlanPoint
	// MemoryLimits are the store memory limits known at each load (the
	// memory store's cap × replicas), drawn on store-memory.
	MemoryLimits []PlanLimit
	// OpsLimits are the store operation ceilings known at each load (the
	// Redis model's append ceiling), drawn on store-ops.
	OpsLimits []PlanLimit
}

// PlanPoint is one design at one load.
type PlanPoint struct {
	Design       string
	Load         float64
	StoreBytes   float64 // report.Totals.StorePeakBytes
	StoreOpsPerS float64 // report.Totals.StorePeakOpsPerS
	// ReplayP99MS is nil when the design replayed nothing at that load.
	ReplayP99MS  *float64
	LostFraction float64 // events_lost / events_expected
}

// PlanLimit is a store limit: a horizontal line at Value across the load
// axis, or, when it changes with the load, a line through Points.
type PlanLimit struct {
	Label  string
	Value  float64
	Points []Point // X is the load, Y the limit; nil for a horizontal line
}

// Limit lines are grey and dashed, unlike any design.
var limitPen = Pen{Color: color.RGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xFF}, Dashes: []float64{12, 3, 3, 3}, Width: 1.6}

// PlanCharts returns the data of the four plan charts, in PlanChartNames
// order (each split into pages "<name>-2", ... when there are more than
// MaxPlanPanels panels). The memory and ops/s charts use a log Y axis (designs differ by
// orders of magnitude there) and draw only the designs that use a store;
// a point at 0 on a log axis is left out. It fails on data it cannot draw.
func PlanCharts(d *PlanData) ([]Chart, error) {
	if d == nil || len(d.Panels) == 0 {
		return nil, errors.New("plots: a plan with no panels")
	}
	var loads []float64
	for _, p := range d.Panels {
		for _, pt := range p.Points {
			if !finite(pt.Load) || !finite(pt.StoreBytes) || !finite(pt.StoreOpsPerS) || !finite(pt.LostFraction) {
				return nil, fmt.Errorf("plots: plan point %s at %g is not finite", pt.Design, pt.Load)
			}
			if d.LoadLog && pt.Load <= 0 {
				return nil, fmt.Errorf("plots: plan load %g cannot go on a log axis", pt.Load)
			}
			loads = append(loads, pt.Load)
		}
	}
	if len(loads) == 0 {
		return nil, errors.New("plots: a plan with no points")
	}
	xmin, xmax := slices.Min(loads), slices.Max(loads)
	if d.LoadLog {
		xmin, xmax = xmin/1.15, xmax*1.15
	} else {
		pad := (xmax - xmin) * 0.04
		if pad == 0 {
			pad = math.Max(math.Abs(xmax)*0.1, 1)
		}
		xmin, xmax = xmin-pad, xmax+pad
	}
	usesStore := func(design string) bool {
		for _, p := range d.Panels {
			for _, pt := range p.Points {
				if pt.Design == design && (pt.StoreBytes > 0 || pt.StoreOpsPerS > 0) {
					return true
				}
			}
		}
		return false
	}
	all, stored := d.Designs, []string{}
	for _, n := range d.Designs {
		if usesStore(n) {
			stored = append(stored, n)
		}
	}
	specs := []planSpec{
		{"store-memory", "store peak memory vs load", "store peak memory (log scale)", stored, true, true,
			func(p PlanPoint) (float64, bool) { return p.StoreBytes, true },
			func(p PlanPanel) []PlanLimit { return p.MemoryLimits }},
		{"store-ops", "store peak operations per second vs load", "store peak ops/s (appends + reads, log scale)", stored, true, false,
			func(p PlanPoint) (float64, bool) { return p.StoreOpsPerS, true },
			func(p PlanPanel) []PlanLimit { return p.OpsLimits }},
		{"replay-p99", "p99 replay latency vs load", "replay latency p99 (ms)", all, false, false,
			func(p PlanPoint) (float64, bool) {
				if p.ReplayP99MS == nil {
					return 0, false
				}
				return *p.ReplayP99MS, true
			}, nil},
		{"lost-fraction", "events lost vs load", "events lost (% of expected)", all, false, false,
			func(p PlanPoint) (float64, bool) { return 100 * p.LostFraction, true }, nil},
	}
	// Up to MaxPlanPanels panels per chart; more go to further pages,
	// "<name>-2" and so on, so that each panel stays readable.
	pages := (len(d.Panels) + MaxPlanPanels - 1) / MaxPlanPanels
	var charts []Chart
	for _, s := range specs {
		for page := range pages {
			panels := d.Panels[page*MaxPlanPanels : min((page+1)*MaxPlanPanels, len(d.Panels))]
			charts = append(charts, s.chart(d, panels, page, pages, xmin, xmax))
		}
	}
	return charts, nil
}

// MaxPlanPanels is the most panels one plan chart holds.
const MaxPlanPanels = 9

// planSpec is one plan chart: what it draws for which designs, and the
// limits it marks.
type planSpec struct {
	name, what, ylabel string
	designs            []string
	ylog, bytes        bool
	// value is a point's Y; ok false leaves the point out.
	value  func(PlanPoint) (float64, bool)
	limits func(PlanPanel) []PlanLimit // nil: none
}

// chart draws page (of pages) of the chart, with these panels.
func (s planSpec) chart(d *PlanData, panels []PlanPanel, page, pages int, xmin, xmax float64) Chart {
	cols := 1
	switch n := len(panels); {
	case n >= 5:
		cols = 3
	case n >= 2:
		cols = 2
	}
	c := Chart{Name: s.name, Title: d.Title + ": " + s.what, Cols: cols}
	if page > 0 {
		c.Name = fmt.Sprintf("%s-%d", s.name, page+1)
	}
	if pages > 1 {
		c.Title += fmt.Sprintf(" (%d of %d)", page+1, pages)
	}
	if len(s.designs) == 0 {
		c.Title += " (no design keeps a store)"
	}
	seen := map[string]bool{}
	for _, pp := range panels {
		p := Panel{Title: pp.Title, XLabel: d.LoadLabel, YLabel: s.ylabel, XLog: d.LoadLog, XMin: xmin, XMax: xmax,
			XTicks: d.LoadTicks, YLog: s.ylog, YBytes: s.bytes}
		for _, n := range s.designs {
			l := Line{Design: n, Label: n, Pen: StyleOf(n).pen(), Marks: true}
			for _, pt := range pp.Points {
				if pt.Design != n {
					continue
				}
				if v, ok := s.value(pt); ok && (!s.ylog || v > 0) {
					l.Points = append(l.Points, Point{X: pt.Load, Y: v})
				}
			}
			slices.SortStableFunc(l.Points, func(a, b Point) int { return cmpFloat(a.X, b.X) })
			p.Lines = append(p.Lines, l)
		}
		if s.limits != nil {
			for _, lim := range s.limits(pp) {
				src := lim.Points
				if src == nil {
					src = []Point{{xmin, lim.Value}, {xmax, lim.Value}}
				}
				var pts []Point
				for _, pt := range src {
					if !s.ylog || pt.Y > 0 {
						pts = append(pts, pt)
					}
				}
				p.Lines = append(p.Lines, Line{Label: lim.Label, Pen: limitPen, Points: pts})
				if !seen[lim.Label] {
					seen[lim.Label] = true
					c.Legend = append(c.Legend, Key{Label: lim.Label, Pen: limitPen})
				}
			}
		}
		c.Panels = append(c.Panels, p)
	}
	// Panels share their Y range, so that they compare at a glance.
	var lines []Line
	for _, p := range c.Panels {
		lines = append(lines, p.Lines...)
	}
	for i := range c.Panels {
		if s.ylog {
			c.Panels[i].YMin, c.Panels[i].YMax = logRange(lines)
		} else {
			c.Panels[i].YMax = niceTop(maxY(lines))
		}
	}
	var keys []Key
	for _, n := range s.designs {
		label := n
		if s.name == "replay-p99" && !hasPoints(c.Panels, n) {
			label += " (no replays)"
		}
		keys = append(keys, Key{Label: label, Pen: StyleOf(n).pen()})
	}
	c.Legend = append(keys, c.Legend...)
	return c
}

func hasPoints(ps []Panel, design string) bool {
	for _, p := range ps {
		for _, l := range p.Lines {
			if l.Design == design && len(l.Points) > 0 {
				return true
			}
		}
	}
	return false
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// RenderPlan draws the plan charts as PNG and SVG, 1200×700: file name →
// bytes ("store-memory.png", ...). The same data gives the same bytes.
func RenderPlan(d *PlanData) (map[string][]byte, error) {
	charts, err := PlanCharts(d)
	if err != nil {
		return nil, err
	}
	return encodeAll(charts)
}
