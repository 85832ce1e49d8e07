// Package plots draws the charts and the self-contained HTML page of a run
// from its report alone: it reads a *report.Report, never an engine, so the
// charts of an old run can be redrawn from its report.json at any time.
//
// Every chart is built in two steps. Charts turns a report into plain data
// (lines with their points, bars, fault markers and the style of each
// design), which the tests check without looking at pixels; the renderer
// then draws that data with gonum.org/v1/plot as PNG and SVG, 1200×700
// pixels each. The charts are:
//
//   - replay-latency: CDF of replay latency (solid, the design's style) and
//     recovery latency (thin dashed, same colour), log x axis in ms;
//   - lost-events: cumulative lost events over time;
//   - rate-404: HTTP 404 responses per second over time;
//   - reconnect-storm: reconnect attempts per second over time;
//   - designs: % of events lost, rate_404 and p99 replay latency per design;
//   - store: store operations per second and store size over time, for the
//     designs that keep events.
//
// Each design keeps one colour (Okabe–Ito, colour-blind safe) and one dash
// pattern on every chart and in every run; see StyleOf. Time charts mark
// each fault of the schedule: a shaded band while it lasts, or a vertical
// line when it is instant.
//
// Usage:
//
//	r, err := report.Read("results/deploy-restart/latest")
//	if err != nil {
//		return err
//	}
//	files, err := plots.Render(r) // "replay-latency.png", ..., "report.html"
//	if err != nil {
//		return err
//	}
//	for name, data := range files {
//		// write data to name
//	}
//
// Overlay draws the time charts and replay latency of two runs on the same
// axes (run A solid, run B dashed) to compare them.
//
// Rendering is deterministic: the same report gives the same bytes.
package plots
