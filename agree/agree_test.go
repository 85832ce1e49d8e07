package agree

import (
	"math"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
)

func rep(engine string, lost, expected, n404, sreq, resumes, drops, reissued, calls int64, p50 *float64) *report.Report {
	d := report.Design{Name: "d", Totals: report.Totals{EventsLost: lost, EventsExpected: expected, HTTP404: n404, SessionRequests: sreq,
		Resumes: resumes, Drops: drops, CallsReissued: reissued, Calls: calls}}
	d.ReplayLatencyMS.P50, d.ReplayLatencyMS.P90 = p50, p50
	if p50 != nil {
		d.ReplayLatencyMS.Count = 10
	}
	return &report.Report{Scenario: "s", Engine: engine, Designs: []report.Design{d}}
}

func f(v float64) *float64 { return &v }

func TestCompare(t *testing.T) {
	sim := rep("sim", 100, 1000, 50, 1000, 40, 50, 10, 100, f(1000))
	// Within every tolerance.
	a := Compare(sim, rep("live", 120, 1000, 90, 1000, 38, 50, 13, 100, f(1900)), Defaults)
	if a.Failed != 0 || len(a.Rows) != 7 {
		t.Fatalf("%d rows, %d failed:\n%s", len(a.Rows), a.Failed, a.Markdown())
	}
	if r := a.Rows[0]; r.Metric != "lost_fraction" || *r.Diff < 0.0199 || *r.Diff > 0.0201 || r.N != 1000 {
		t.Errorf("lost_fraction row: %+v", r)
	}
	// Each metric outside its tolerance fails on its own row.
	a = Compare(sim, rep("live", 200, 1000, 50, 1000, 40, 50, 10, 100, f(1000)), Defaults)
	if a.Failed != 1 || a.Rows[0].Pass {
		t.Errorf("lost 0.2 against 0.1: %d failed", a.Failed)
	}
	a = Compare(sim, rep("live", 100, 1000, 50, 1000, 40, 50, 10, 100, f(2100)), Defaults)
	if a.Failed != 2 { // p50 and p90
		t.Errorf("latency ×2.1: %d failed", a.Failed)
	}
	a = Compare(sim, rep("live", 100, 1000, 50, 1000, 40, 50, 10, 100, f(400)), Defaults)
	if a.Failed != 2 {
		t.Errorf("latency ×0.4: %d failed", a.Failed)
	}
	// A scenario's tolerance replaces the default.
	sc := &scenario.Scenario{Agreement: map[string]float64{"lost_fraction": 0.2}}
	a = Compare(sim, rep("live", 250, 1000, 50, 1000, 40, 50, 10, 100, f(1000)), TolerancesOf(sc))
	if a.Failed != 0 {
		t.Errorf("lost 0.25 against 0.1 within 0.2: %d failed", a.Failed)
	}
	// No replays in one engine only is a disagreement; in neither, not.
	a = Compare(sim, rep("live", 100, 1000, 50, 1000, 40, 50, 10, 100, nil), Defaults)
	if a.Failed != 2 || !strings.Contains(a.Rows[4].Note, "live run") {
		t.Errorf("no live replays: %d failed, %+v", a.Failed, a.Rows[4])
	}
	a = Compare(rep("sim", 0, 10, 0, 0, 0, 0, 0, 1, nil), rep("live", 0, 10, 0, 0, 0, 0, 0, 1, nil), Defaults)
	if a.Failed != 0 {
		t.Errorf("nothing to compare should agree: %s", a.Markdown())
	}
	// A small sample that misses by less than its noise is inconclusive, not
	// a failure; the same miss on a large sample fails.
	small := Compare(rep("sim", 0, 10, 1, 10, 3, 10, 1, 10, nil), rep("live", 0, 10, 1, 10, 4, 10, 1, 10, nil), Defaults)
	if small.Failed != 0 || small.Inconclusive != 1 || !small.Rows[2].Inconclusive {
		t.Errorf("resumed 0.4 against 0.3 on 10 drops: %d failed, %d inconclusive", small.Failed, small.Inconclusive)
	}
	big := Compare(rep("sim", 0, 10, 1, 10, 3000, 10000, 1, 10, nil), rep("live", 0, 10, 1, 10, 4000, 10000, 1, 10, nil), Defaults)
	if big.Failed != 1 || big.Inconclusive != 0 {
		t.Errorf("resumed 0.4 against 0.3 on 10,000 drops: %d failed, %d inconclusive", big.Failed, big.Inconclusive)
	}
	// A design in one report only is a failing row, not a silent skip.
	other := rep("live", 100, 1000, 50, 1000, 40, 50, 10, 100, f(1000))
	other.Designs[0].Name = "e"
	if a := Compare(sim, other, Defaults); a.Failed != 2 {
		t.Errorf("designs d (sim) and e (live): %d failed, want 2:\n%s", a.Failed, a.Markdown())
	}
	// The store's peak: live ÷ sim within a factor of 1.25; a live store
	// stormsim cannot measure passes with a note; one empty store fails.
	peak := func(simMiB, liveMiB float64, unknown bool) Row {
		s, l := rep("sim", 0, 10, 0, 0, 0, 0, 0, 1, nil), rep("live", 0, 10, 0, 0, 0, 0, 0, 1, nil)
		s.Designs[0].Totals.StorePeakBytes = int64(simMiB * (1 << 20))
		l.Designs[0].Totals.StorePeakBytes = int64(liveMiB * (1 << 20))
		if unknown {
			l.Designs[0].Unknown = []string{"store_peak_bytes"}
		}
		rows := Compare(s, l, Defaults).Rows
		return rows[len(rows)-1]
	}
	for _, c := range []struct {
		sim, live float64
		unknown   bool
		pass      bool
		note      string
	}{
		{100, 120, false, true, ""}, {100, 81, false, true, ""}, {100, 130, false, false, ""}, {100, 79, false, false, ""},
		{100, 0, true, true, "not measured live"}, {0, 0, false, true, "no store in either engine"},
		{0, 5, false, false, "an empty store in the simulator"}, {5, 0, false, false, "an empty store in the live run"},
	} {
		r := peak(c.sim, c.live, c.unknown)
		if r.Metric != "store_peak_mib" || r.Pass != c.pass || r.Note != c.note {
			t.Errorf("store peak %g MiB sim, %g live (unknown %v): %+v", c.sim, c.live, c.unknown, r)
		}
	}
	var e error = &Disagreement{A: Compare(sim, rep("live", 900, 1000, 50, 1000, 40, 50, 10, 100, f(1000)), Defaults)}
	if c, ok := e.(interface{ ExitCode() int }); !ok || c.ExitCode() != 98 || !strings.Contains(e.Error(), "d/lost_fraction") {
		t.Errorf("disagreement error: %v", e)
	}
}

// Repeats compare on the pooled counts: two live runs that lose 0.02 and
// 0.10 of equal samples pool to 0.06, with twice the sample, against a
// simulator at 0.05; the replay p50 is the mean of the repeats'.
func TestCompareRepeats(t *testing.T) {
	sims := []*report.Report{rep("sim", 500, 10000, 10, 1000, 50, 100, 0, 100, f(100)), rep("sim", 500, 10000, 10, 1000, 50, 100, 0, 100, f(300))}
	lives := []*report.Report{rep("live", 200, 10000, 10, 1000, 50, 100, 0, 100, f(150)), rep("live", 1000, 10000, 10, 1000, 50, 100, 0, 100, f(250))}
	a := CompareRepeats(sims, lives, Defaults)
	if a.Repeats != 2 {
		t.Errorf("repeats %d", a.Repeats)
	}
	got := map[string]Row{}
	for _, r := range a.Rows {
		got[r.Metric] = r
	}
	lost := got["lost_fraction"]
	if lost.N != 20000 || math.Abs(*lost.Live-0.06) > 1e-12 || math.Abs(*lost.Sim-0.05) > 1e-12 || !lost.Pass {
		t.Errorf("lost_fraction: %+v", lost)
	}
	p50 := got["replay_p50_ms"]
	if *p50.Sim != 200 || *p50.Live != 200 || *p50.Diff != 1 {
		t.Errorf("replay_p50_ms: %+v", p50)
	}
	// The store's peak compares as the mean of the repeats' peaks.
	sims[0].Designs[0].Totals.StorePeakBytes, sims[1].Designs[0].Totals.StorePeakBytes = 100, 300
	lives[0].Designs[0].Totals.StorePeakBytes, lives[1].Designs[0].Totals.StorePeakBytes = 220, 260
	for _, r := range CompareRepeats(sims, lives, Defaults).Rows {
		if r.Metric == "store_peak_mib" && (r.Diff == nil || *r.Diff != 1.2 || !r.Pass) {
			t.Errorf("store_peak_mib over repeats: %+v", r)
		}
	}
	// One run alone is Compare.
	one := CompareRepeats(sims[:1], lives[:1], Defaults)
	if one.Repeats != 0 || len(one.Rows) != len(a.Rows) {
		t.Errorf("one repeat: %+v", one)
	}
}
