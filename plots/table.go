package plots

import (
	"fmt"
	"strconv"

	"github.com/stormsim/stormsim/report"
)

// The design table of report.html shows the same cells as summary.md. The
// report package does not export its table, so it is rebuilt here with the
// same formatting; a test compares the two cell by cell.

// tableHead is the header of the design table.
var tableHead = []string{"design", "lb", "profile", "calls", "done", "failed", "reissued", "events", "lost", "lost%", "replayed", "unproduced", "404s", "rate_404", "resumes", "reconnects", "replay p50 ms", "replay p99 ms", "recovery p50 ms", "store peak"}

// tableRow is one design's row, formatted as summary.md formats it.
func tableRow(d *report.Design) []string {
	t := d.Totals
	n := func(v int64) string { return strconv.FormatInt(v, 10) }
	return []string{
		d.Name, d.LB, d.Profile,
		n(t.Calls), n(t.CallsCompleted), n(t.CallsFailed), n(t.CallsReissued),
		n(t.EventsExpected), n(t.EventsLost), pct(t.EventsLost, t.EventsExpected),
		n(t.EventsReplayed), n(t.EventsUnproduced),
		n(t.HTTP404), strconv.FormatFloat(t.Rate404, 'f', 3, 64),
		n(t.Resumes), n(t.Reconnects),
		fmtOpt(d.ReplayLatencyMS.P50), fmtOpt(d.ReplayLatencyMS.P99), fmtOpt(d.RecoveryLatencyMS.P50),
		humanBytes(t.StorePeakBytes),
	}
}

// fmtOpt rounds a latency to whole milliseconds; nil is "n/a".
func fmtOpt(v *float64) string {
	if v == nil {
		return "n/a"
	}
	return strconv.FormatFloat(*v, 'f', 0, 64)
}

// pct is n/d in percent with one decimal.
func pct(n, d int64) string {
	if d == 0 {
		return "0.0%"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(d))
}

// humanBytes is a size in B, KiB, MiB or GiB; 0 is "-".
func humanBytes(b int64) string {
	switch {
	case b == 0:
		return "-"
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}
