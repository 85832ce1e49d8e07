package agree

import (
	"math"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
)

// rep is a report of one design "d" with the counts the rows read; p50
// also sets the replay histogram to count samples at p50 ms.
func rep(engine string, lost, expected, n404, sreq, resumes, drops, reissued, calls int64, p50 *float64) *report.Report {
	d := report.Design{Name: "d", Totals: report.Totals{EventsLost: lost, EventsExpected: expected, HTTP404: n404, SessionRequests: sreq,
		Resumes: resumes, Drops: drops, CallsReissued: reissued, Calls: calls}}
	d.ReplayLatencyMS = replays(p50, 400)
	return &report.Report{Scenario: "s", Engine: engine, Designs: []report.Design{d}}
}

// replays is a latency block of n samples all at v ms (none when v is nil).
func replays(v *float64, n int64) report.Latency {
	l := report.Summarise(nil)
	if v == nil {
		return l
	}
	s := make([]float64, n)
	for i := range s {
		s[i] = *v
	}
	return report.Summarise(s)
}

func f(v float64) *float64 { return &v }

func rowOf(a *Agreement, metric string) Row {
	for _, r := range a.Rows {
		if r.Metric == metric {
			return r
		}
	}
	return Row{}
}

// Acceptance: a hand-built pair, 0% simulated against 4.9% live on 5,000
// events, disagrees; a pair whose standard error is larger than its
// tolerance is inconclusive, never a pass.
func TestToleranceRules(t *testing.T) {
	sim := rep("sim", 0, 5000, 0, 1000, 0, 0, 0, 100, nil)
	live := rep("live", 245, 5000, 0, 1000, 0, 0, 0, 100, nil)
	r := rowOf(Compare(sim, live, Defaults), "lost_fraction")
	if r.Verdict != Disagree || r.N != 5000 || math.Abs(*r.Diff-0.049) > 1e-12 {
		t.Errorf("0%% against 4.9%% on n = 5,000: %+v", r)
	}
	// The same pair under the old absolute ±0.05 would have passed.
	if r.Tolerance >= 0.049 {
		t.Errorf("tolerance %g lets 4.9%% through", r.Tolerance)
	}
	// 30% against 40% resumed on 10 drops each: SE ≈ 0.21, above its
	// tolerance of 0.03.
	small := Compare(rep("sim", 0, 10, 0, 10, 3, 10, 0, 10, nil), rep("live", 0, 10, 0, 10, 4, 10, 0, 10, nil), Defaults)
	r = rowOf(small, "drops_resumed")
	if r.StdErr == nil || *r.StdErr <= r.Tolerance || r.Verdict != Inconclusive {
		t.Errorf("SE above the tolerance: %+v", r)
	}
	if small.Inconclusive == 0 || small.Agreed+small.Failed+small.Inconclusive+small.NotCompared != len(small.Rows) {
		t.Errorf("counts %s over %d rows", small.Summary(), len(small.Rows))
	}
	// The same miss on 10,000 drops each disagrees; no miss at all agrees.
	big := Compare(rep("sim", 0, 10, 0, 10, 3000, 10000, 0, 10, nil), rep("live", 0, 10, 0, 10, 4000, 10000, 0, 10, nil), Defaults)
	if r := rowOf(big, "drops_resumed"); r.Verdict != Disagree {
		t.Errorf("resumed 0.4 against 0.3 on 10,000 drops: %+v", r)
	}
	same := Compare(rep("sim", 0, 10, 0, 10, 3000, 10000, 0, 10, nil), rep("live", 0, 10, 0, 10, 3010, 10000, 0, 10, nil), Defaults)
	if r := rowOf(same, "drops_resumed"); r.Verdict != Agree {
		t.Errorf("resumed 0.301 against 0.300 on 10,000 drops: %+v", r)
	}
	// The relative part: 60% against 70% lost is within 20% of 0.6 only
	// when the sample says so.
	rel := Compare(rep("sim", 60000, 100000, 0, 1, 0, 0, 0, 1, nil), rep("live", 70000, 100000, 0, 1, 0, 0, 0, 1, nil), Defaults)
	if r := rowOf(rel, "lost_fraction"); math.Abs(r.Tolerance-0.12) > 1e-12 || r.Verdict != Agree {
		t.Errorf("0.7 against 0.6 with rel 0.2: %+v", r)
	}
	for _, c := range []struct {
		d, se, tol float64
		want       string
	}{
		{0.01, 0.01, 0.03, Agree}, {0.045, 0.01, 0.03, Inconclusive}, {0.049, 0.01, 0.03, Inconclusive}, {0.051, 0.01, 0.03, Disagree},
		{0, 0.02, 0.03, Inconclusive}, {0.2, 0.05, 0.03, Disagree},
	} {
		if got := Classify(c.d, c.se, c.tol); got != c.want {
			t.Errorf("Classify(%g, %g, %g) = %s, want %s", c.d, c.se, c.tol, got, c.want)
		}
	}
}

func TestCompare(t *testing.T) {
	sim := rep("sim", 1000, 10000, 500, 10000, 400, 500, 100, 1000, f(1000))
	a := Compare(sim, rep("live", 1010, 10000, 510, 10000, 402, 500, 102, 1000, f(1100)), Defaults)
	if a.Failed != 0 || len(a.Rows) != len(Metrics) {
		t.Fatalf("%d rows, %s:\n%s", len(a.Rows), a.Summary(), a.Markdown())
	}
	for i, m := range Metrics {
		if a.Rows[i].Metric != m {
			t.Errorf("row %d is %s, want %s", i, a.Rows[i].Metric, m)
		}
	}
	// Each metric far outside its tolerance disagrees on its own row.
	if r := rowOf(Compare(sim, rep("live", 2000, 10000, 500, 10000, 400, 500, 100, 1000, f(1000)), Defaults), "lost_fraction"); r.Verdict != Disagree {
		t.Errorf("lost 0.2 against 0.1: %+v", r)
	}
	for _, v := range []float64{2600, 380} {
		a := Compare(sim, rep("live", 1000, 10000, 500, 10000, 400, 500, 100, 1000, f(v)), Defaults)
		if rowOf(a, "replay_p50_ms").Verdict != Disagree || rowOf(a, "replay_p90_ms").Verdict != Disagree {
			t.Errorf("latency %g against 1000 ms: %s\n%s", v, a.Summary(), a.Markdown())
		}
	}
	// A scenario's tolerance replaces the default.
	sc := &scenario.Scenario{Agreement: map[string]float64{"lost_fraction": 0.2}}
	if r := rowOf(Compare(sim, rep("live", 2500, 10000, 500, 10000, 400, 500, 100, 1000, f(1000)), TolerancesOf(sc)), "lost_fraction"); r.Verdict != Agree {
		t.Errorf("lost 0.25 against 0.1 within 0.2: %+v", r)
	}
	// No replays in one engine only is a disagreement; in neither, not
	// compared (and not counted as an agreement).
	a = Compare(sim, rep("live", 1000, 10000, 500, 10000, 400, 500, 100, 1000, nil), Defaults)
	if r := rowOf(a, "replay_p50_ms"); r.Verdict != Disagree || !strings.Contains(r.Note, "live run") {
		t.Errorf("no live replays: %+v", r)
	}
	a = Compare(rep("sim", 0, 10, 0, 0, 0, 0, 0, 1, nil), rep("live", 0, 10, 0, 0, 0, 0, 0, 1, nil), Defaults)
	if a.Failed != 0 || a.NotCompared == 0 || rowOf(a, "replay_p50_ms").Verdict != NotCompared {
		t.Errorf("nothing to compare: %s\n%s", a.Summary(), a.Markdown())
	}
	// A design in one report only is a disagreeing row, not a silent skip.
	other := rep("live", 100, 1000, 50, 1000, 40, 50, 10, 100, f(1000))
	other.Designs[0].Name = "e"
	if a := Compare(sim, other, Defaults); a.Failed != 2 {
		t.Errorf("designs d (sim) and e (live): %d disagree, want 2:\n%s", a.Failed, a.Markdown())
	}
	var e error = &Disagreement{A: Compare(sim, rep("live", 9000, 10000, 500, 10000, 400, 500, 100, 1000, f(1000)), Defaults)}
	if c, ok := e.(interface{ ExitCode() int }); !ok || c.ExitCode() != 98 || !strings.Contains(e.Error(), "d/lost_fraction") ||
		!strings.Contains(e.Error(), "disagree,") {
		t.Errorf("disagreement error: %v", e)
	}
}

// The rows for failed calls, reconnects, 404s and resumed drops are in
// agreement.md, each with its sample size and standard error.
func TestNewRows(t *testing.T) {
	s := rep("sim", 0, 1000, 30, 2000, 40, 50, 10, 400, f(100))
	l := rep("live", 0, 1000, 34, 2100, 41, 52, 11, 410, f(100))
	s.Designs[0].Totals.CallsFailed, l.Designs[0].Totals.CallsFailed = 12, 60
	s.Designs[0].Totals.Reconnects, l.Designs[0].Totals.Reconnects = 200, 205
	a := Compare(s, l, Defaults)
	md := string(a.Markdown())
	for _, c := range []struct {
		metric string
		n      int64
		want   string
	}{
		{"failed_per_100", 410, Disagree}, // 3 against 14.6 of 100 calls
		{"reconnects_per_call", 410, ""},
		{"http_404_per_100", 2100, ""},
		{"drops_resumed", 52, ""},
	} {
		r := rowOf(a, c.metric)
		if r.N != c.n || r.StdErr == nil || *r.StdErr <= 0 || (c.want != "" && r.Verdict != c.want) {
			t.Errorf("%s: %+v", c.metric, r)
		}
		if !strings.Contains(md, "| d | "+c.metric+" | ") {
			t.Errorf("agreement.md has no %s row:\n%s", c.metric, md)
		}
	}
	if r := rowOf(a, "reconnects_per_call"); math.Abs(*r.StdErr-math.Sqrt(200.0/400/400+205.0/410/410)) > 1e-12 {
		t.Errorf("reconnects_per_call SE: %+v", r)
	}
	if !strings.Contains(md, "**"+a.Summary()+".**") || !strings.HasPrefix(a.Summary(), "") || a.Failed != 1 {
		t.Errorf("summary %q:\n%s", a.Summary(), md)
	}
}

// A replay percentile's standard error shrinks with its sample: 400
// replays spread over a decade agree within a factor of 2 of a simulator
// 20% off, 4 replays do not let the row agree.
func TestReplaySE(t *testing.T) {
	spread := func(n int, scale float64) report.Latency {
		s := make([]float64, n)
		for i := range s {
			s[i] = scale * math.Pow(10, float64(i)/float64(n))
		}
		return report.Summarise(s)
	}
	for _, c := range []struct {
		n    int
		want string
	}{{400, Agree}, {4, Inconclusive}} {
		s, l := rep("sim", 0, 1, 0, 1, 0, 0, 0, 1, nil), rep("live", 0, 1, 0, 1, 0, 0, 0, 1, nil)
		s.Designs[0].ReplayLatencyMS, l.Designs[0].ReplayLatencyMS = spread(c.n, 100), spread(c.n, 120)
		r := rowOf(Compare(s, l, Defaults), "replay_p50_ms")
		if r.Verdict != c.want || r.StdErr == nil {
			t.Errorf("%d replays: %+v", c.n, r)
		}
	}
}

// The store's peak: live ÷ sim within a factor of 1.25; a live store
// stormsim cannot measure is not compared; one empty store disagrees; the
// memory store's row says it is an identity in bytes per event.
func TestStorePeak(t *testing.T) {
	peak := func(simMiB, liveMiB float64, unknown bool, events string) Row {
		s, l := rep("sim", 0, 10, 0, 0, 0, 0, 0, 1, nil), rep("live", 0, 10, 0, 0, 0, 0, 0, 1, nil)
		s.Designs[0].Totals.StorePeakBytes = int64(simMiB * (1 << 20))
		l.Designs[0].Totals.StorePeakBytes = int64(liveMiB * (1 << 20))
		l.Designs[0].Events = events
		if unknown {
			l.Designs[0].Unknown = []string{"store_peak_bytes"}
		}
		return rowOf(Compare(s, l, Defaults), "store_peak_mib")
	}
	for _, c := range []struct {
		sim, live float64
		unknown   bool
		verdict   string
		note      string
	}{
		{100, 120, false, Agree, "one run"}, {100, 81, false, Agree, "one run"}, {100, 130, false, Disagree, "one run"}, {100, 79, false, Disagree, "one run"},
		{100, 0, true, NotCompared, "not measured live"}, {0, 0, false, NotCompared, "no store in either engine"},
		{0, 5, false, Disagree, "an empty store in the simulator"}, {5, 0, false, Disagree, "an empty store in the live run"},
	} {
		r := peak(c.sim, c.live, c.unknown, "redis")
		if r.Verdict != c.verdict || !strings.Contains(r.Note, c.note) {
			t.Errorf("store peak %g MiB sim, %g live (unknown %v): %+v", c.sim, c.live, c.unknown, r)
		}
	}
	if r := peak(100, 110, false, "memory"); !strings.Contains(r.Note, "identity") {
		t.Errorf("memory store row: %+v", r)
	}
}

// Repeats compare on the pooled counts: two live runs that lose 0.04 and
// 0.07 of equal samples pool to 0.055, with twice the sample, against a
// simulator at 0.05; the replay p50 is the mean of the repeats'; the
// store's peak is the mean peak with the spread over seeds as its error.
func TestCompareRepeats(t *testing.T) {
	sims := []*report.Report{rep("sim", 500, 10000, 10, 1000, 50, 100, 0, 100, f(100)), rep("sim", 500, 10000, 10, 1000, 50, 100, 0, 100, f(300))}
	lives := []*report.Report{rep("live", 400, 10000, 10, 1000, 50, 100, 0, 100, f(150)), rep("live", 700, 10000, 10, 1000, 50, 100, 0, 100, f(250))}
	a := CompareRepeats(sims, lives, Defaults)
	if a.Repeats != 2 {
		t.Errorf("repeats %d", a.Repeats)
	}
	lost := rowOf(a, "lost_fraction")
	if lost.N != 20000 || math.Abs(*lost.Live-0.055) > 1e-12 || math.Abs(*lost.Sim-0.05) > 1e-12 || lost.Verdict != Agree {
		t.Errorf("lost_fraction: %+v", lost)
	}
	p50 := rowOf(a, "replay_p50_ms")
	if *p50.Sim != 200 || *p50.Live != 200 || *p50.Diff != 1 || p50.N != 800 {
		t.Errorf("replay_p50_ms: %+v", p50)
	}
	sims[0].Designs[0].Totals.StorePeakBytes, sims[1].Designs[0].Totals.StorePeakBytes = 100, 300
	lives[0].Designs[0].Totals.StorePeakBytes, lives[1].Designs[0].Totals.StorePeakBytes = 110, 290
	r := rowOf(CompareRepeats(sims, lives, Defaults), "store_peak_mib")
	want := math.Abs(math.Log(1.1)-math.Log(290.0/300)) / 2 // sd of two values / sqrt(2)
	if r.Diff == nil || math.Abs(*r.Diff-1) > 1e-12 || r.N != 2 || r.StdErr == nil || math.Abs(*r.StdErr-want) > 1e-12 || r.Verdict != Agree {
		t.Errorf("store_peak_mib over repeats: %+v (SE want %g)", r, want)
	}
	one := CompareRepeats(sims[:1], lives[:1], Defaults)
	if one.Repeats != 0 || len(one.Rows) != len(a.Rows) {
		t.Errorf("one repeat: %+v", one)
	}
}

// The admission rows: 503s per 100 requests and the recovery after the
// slowest fault, with their tolerances, and pooled over seeds.
func TestAdmissionRows(t *testing.T) {
	mk := func(engine string, n503, reqs int64, rec ...*float64) *report.Report {
		r := rep(engine, 0, 1000, 0, 1000, 0, 0, 0, 100, nil)
		r.Designs[0].Totals.HTTP503, r.Designs[0].Totals.Requests = n503, reqs
		r.Designs[0].Series = report.Series{StepS: 1, Reconnects: make([]int64, 40*(len(rec)+1)), HTTP404: make([]int64, 40*(len(rec)+1))}
		for i, s := range rec { // a fault every 40 s: each recovers within 40 s or is censored there
			r.Faults = append(r.Faults, report.Fault{Kind: "restart", AtS: float64(40 * (i + 1))})
			r.Designs[0].RecoveryAfterFaultS = append(r.Designs[0].RecoveryAfterFaultS, report.FaultRecovery{Fault: i, Seconds: s})
		}
		return r
	}
	cases := []struct {
		name       string
		sim, live  *report.Report
		metric     string
		want, note string
	}{
		// 30 against 31 per 100 on 20,000 requests: within max(2, 0.25·30)
		{"503 agree", mk("sim", 6000, 20000), mk("live", 6200, 20000), "http_503_per_100", Agree, ""},
		// none live where the simulator refuses a third: the live side lacks admission
		{"503 disagree", mk("sim", 6000, 20000), mk("live", 0, 20000), "http_503_per_100", Disagree, ""},
		// 12 s against 15 s: within max(5, 0.5·12)
		{"recovery agree", mk("sim", 0, 1, f(12)), mk("live", 0, 1, f(15)), "recovery_s", Agree, ""},
		// 12 s against 30 s: beyond it
		{"recovery disagree", mk("sim", 0, 1, f(12)), mk("live", 0, 1, f(30)), "recovery_s", Disagree, ""},
		// the slowest fault counts
		{"slowest fault", mk("sim", 0, 1, f(2), f(40)), mk("live", 0, 1, f(3), f(10)), "recovery_s", Disagree, ""},
		// one engine never recovered
		{"never", mk("sim", 0, 1, f(12)), mk("live", 0, 1, nil), "recovery_s", Disagree, "not recovered in the live run within its window: at least 40.000 s against 12.000 s, beyond the tolerance"},
		{"never in either", mk("sim", 0, 1, nil), mk("live", 0, 1, nil), "recovery_s", Agree, "never recovered in either engine"},
		{"no fault", mk("sim", 0, 1), mk("live", 0, 1), "recovery_s", NotCompared, "no fault"},
	}
	for _, c := range cases {
		r := rowOf(Compare(c.sim, c.live, Defaults), c.metric)
		if r.Verdict != c.want || r.Note != c.note {
			t.Errorf("%s: %+v, want %s %q", c.name, r, c.want, c.note)
		}
	}
	// Pooled over two seeds: each fault's mean recovery.
	a := CompareRepeats([]*report.Report{mk("sim", 0, 1, f(10)), mk("sim", 0, 1, f(20))}, []*report.Report{mk("live", 0, 1, f(14)), mk("live", 0, 1, f(22))}, Defaults)
	if r := rowOf(a, "recovery_s"); r.Sim == nil || *r.Sim != 15 || *r.Live != 18 {
		t.Errorf("pooled recovery: %+v, want sim 15, live 18", r)
	}
}

// A recovery censored by its window (the next fault came first) is at
// least the window's length, not "never": against a recovery measured in
// the other engine it disagrees only when even that bound is beyond the
// tolerance, and is inconclusive otherwise. The windows are live-smoke's
// under make agree: faults at 8, 16 and 24 s in a 40 s series, so fault 0
// has 8 s to recover in.
func TestRecoveryCensored(t *testing.T) {
	mk := func(engine string, rec ...*float64) *report.Report {
		r := rep(engine, 0, 1000, 0, 1000, 0, 0, 0, 100, nil)
		r.Designs[0].Series = report.Series{StepS: 1, Reconnects: make([]int64, 40), HTTP404: make([]int64, 40)}
		for i, at := range []float64{8, 16, 24} {
			r.Faults = append(r.Faults, report.Fault{Kind: "restart", AtS: at})
			fr := report.FaultRecovery{Fault: i, Seconds: f(0)}
			if i < len(rec) {
				fr.Seconds = rec[i]
			}
			r.Designs[0].RecoveryAfterFaultS = append(r.Designs[0].RecoveryAfterFaultS, fr)
		}
		return r
	}
	reps := func(rs ...*report.Report) []*report.Report { return rs }
	cases := []struct {
		name      string
		sim, live []*report.Report
		want      string
		diff      *float64
	}{
		// memory-sticky as it read: 6 and 7 s simulated, no recovery within
		// 8 s live at either seed; at least 8 against 6.5 is 1.5 s apart at
		// least, within max(5, 0.5 × 6.5), and maybe far more
		{"edge", reps(mk("sim", f(6)), mk("sim", f(7))), reps(mk("live", nil), mk("live", nil)), Inconclusive, nil},
		// redis-events as it read: the simulator censored at one seed
		{"edge, sim censored", reps(mk("sim", nil), mk("sim", f(7))), reps(mk("live", f(7)), mk("live", f(7))), Inconclusive, nil},
		// a bound below the measured value tells nothing either
		{"bound below", reps(mk("sim", f(6)), mk("sim", f(7))), reps(mk("live", nil), mk("live", f(3))), Inconclusive, nil},
		// the simulator recovers at once, the live run not within 8 s at
		// either seed: at least 8 s apart, beyond 5 s
		{"far", reps(mk("sim", f(0)), mk("sim", f(0))), reps(mk("live", nil), mk("live", nil)), Disagree, f(8)},
		// and the other way round: at least 8 against 1 s, beyond max(5, 0.5 × 8)
		{"far, sim censored", reps(mk("sim", nil)), reps(mk("live", f(1))), Disagree, f(7)},
		// a later fault's longer window: at least 16 s against 2 s
		{"last window", reps(mk("sim", f(0), f(0), f(2))), reps(mk("live", f(0), f(0), nil)), Disagree, f(14)},
		{"both censored", reps(mk("sim", nil)), reps(mk("live", nil)), Agree, nil},
		{"both measured", reps(mk("sim", f(6))), reps(mk("live", f(7))), Agree, f(1)},
	}
	for _, c := range cases {
		r := rowOf(CompareRepeats(c.sim, c.live, Defaults), "recovery_s")
		if r.Verdict != c.want || (r.Diff == nil) != (c.diff == nil) || (r.Diff != nil && math.Abs(*r.Diff-*c.diff) > 1e-9) {
			t.Errorf("%s: %+v (diff %v), want %s, diff %v", c.name, r, deref(r.Diff), c.want, deref(c.diff))
		}
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
