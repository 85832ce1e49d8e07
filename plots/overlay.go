package plots

import (
	"fmt"
	"slices"

	"github.com/stormsim/stormsim/report"
)

// OverlayChartNames are the charts Overlay draws.
var OverlayChartNames = []string{"replay-latency", "lost-events", "rate-404", "reconnect-storm", "store"}

// OverlayCharts returns the data of the overlay charts of runs a and b, in
// OverlayChartNames order. The same design from both runs shares its
// colour: run A is solid, run B dashed. A design in only one run is drawn
// for that run alone. Replay latency shows replay only, without recovery,
// so that each design has two lines, not four.
func OverlayCharts(a, b *report.Report) ([]Chart, error) {
	if err := check(a); err != nil {
		return nil, fmt.Errorf("run A: %w", err)
	}
	if err := check(b); err != nil {
		return nil, fmt.Errorf("run B: %w", err)
	}
	es := pairs(
		entries(a, " (A)", func(s Style) Pen { return Pen{Color: s.Color, Width: widthMain} }),
		entries(b, " (B)", func(s Style) Pen { return s.secondary(widthMain) }),
	)
	ms := overlayMarkers(a, b)
	xmax := timeSpan(ms, a, b)
	var stored []entry
	for _, e := range es {
		if e.d.Events != "none" {
			stored = append(stored, e)
		}
	}
	name := fmt.Sprintf("A: %s (seed %d) vs B: %s (seed %d)", a.Scenario, a.Seed, b.Scenario, b.Seed)
	t := func(what string) string { return name + ": " + what }
	return []Chart{
		latencyChart(t("replay latency"), es, false),
		timeChart("lost-events", t("lost events"), es, ms, xmax, lostPanel),
		timeChart("rate-404", t("HTTP 404 responses"), es, ms, xmax, rate404Panel),
		timeChart("reconnect-storm", t("reconnect storm"), es, ms, xmax, reconnectPanel),
		timeChart("store", t("event store"), stored, ms, xmax, storeOpsPanel, storeBytesPanel),
	}, nil
}

// pairs puts each design of run A next to the same design of run B; the
// designs only B has come last, in B's order.
func pairs(a, b []entry) []entry {
	var out []entry
	used := make([]bool, len(b))
	for _, ea := range a {
		out = append(out, ea)
		for j, eb := range b {
			if !used[j] && eb.d.Name == ea.d.Name {
				out = append(out, eb)
				used[j] = true
				break
			}
		}
	}
	for j, eb := range b {
		if !used[j] {
			out = append(out, eb)
		}
	}
	return out
}

// overlayMarkers marks the faults once when both runs share the schedule,
// else each run's faults, labelled with their run.
func overlayMarkers(a, b *report.Report) []Marker {
	if slices.Equal(a.Faults, b.Faults) {
		return markers(a.Faults, "")
	}
	return append(markers(a.Faults, " (A)"), markers(b.Faults, " (B)")...)
}
