package plan

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
)

// The defaults, under the scenario's goals table, under --goal: a goal
// replaces the one of the same metric and direction in its place, a new
// one joins at the end, and every goal holds for every design.
func TestGoalsLayers(t *testing.T) {
	t.Parallel()
	table := []scenario.Check{{Metric: "rate_404", Op: "max", Bound: 0.05}, {Metric: "storm_height", Op: "max", Bound: 40}}
	flags := []scenario.Check{{Metric: "recovery_latency_ms_p99", Op: "max", Bound: 3000}, {Metric: "rate_404", Op: "max", Bound: 0.02, Design: "x"}}
	want := []scenario.Check{
		{Metric: "lost_fraction", Op: "max", Bound: 0.001},
		{Metric: "rate_404", Op: "max", Bound: 0.02},                                  // the table's, then --goal's, with no design
		{Metric: "calls_failed", Op: "max", Bound: 0},                                 // the default
		{Metric: "recovery_latency_ms_p99", Op: "max", Bound: 3000, AllowEmpty: true}, // --goal's, empty still allowed
		{Metric: "goodput_recovered_s", Op: "max", Bound: 60, AllowEmpty: true},       // the default
		{Metric: "storm_height", Op: "max", Bound: 40},                                // the table's own
	}
	if diff := cmp.Diff(want, Goals(table, flags)); diff != "" {
		t.Errorf("goals (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(DefaultGoals, Goals()); diff != "" {
		t.Errorf("no layers (-want +got):\n%s", diff)
	}
}

// Figures are rounded for people: lost fractions as a percentage to three
// significant digits, milliseconds and counts whole, the rest to three
// significant digits (the old first-failure column printed
// 0.03978619653529123).
func TestFigure(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		metric string
		v      float64
		want   string
	}{
		{"lost_fraction", 0.03978619653529123, "3.98%"},
		{"lost_fraction", 0.001, "0.1%"},
		{"lost_fraction", 0.0005, "0.05%"},
		{"rate_404", 0.14586933978568958, "0.146"},
		{"rate_404", 0.01, "0.01"},
		{"recovery_latency_ms_p99", 120667.655, "120668"},
		{"recovery_latency_ms_p99", 5.4, "5"},
		{"calls_failed", 6, "6"},
		{"storm_height", 12.3456, "12.3"},
	} {
		if got := Figure(c.metric, c.v); got != c.want {
			t.Errorf("Figure(%s, %v) = %s, want %s", c.metric, c.v, got, c.want)
		}
	}
}

// When no design meets the goals at the target, each candidate names the
// goal that binds there (missed by the largest factor, a bound of 0 after
// the factors) and by how much, rounded.
func TestBindingGoal(t *testing.T) {
	t.Parallel()
	tot := func(lostN, failed int64, rate float64) []report.Totals {
		return []report.Totals{{EventsExpected: 100000, EventsLost: lostN, CallsFailed: failed, Rate404: rate}}
	}
	res := synthetic([]float64{10}, map[string][]report.Totals{
		"a": tot(3979, 0, 0.02),  // lost 39.8× its goal, 404s 2×
		"b": tot(0, 6, 0.146),    // 404s 14.6×, then 6 failed calls over a goal of 0
		"c": tot(0, 6, 0),        // failed calls alone
		"d": tot(50, 0, 0.00001), // meets every goal
	}, []string{"a", "b", "c", "d"}, nil)
	rec := Recommend(res, Goals(), 10)
	text := func(l float64) string { return "" }
	want := map[string]string{
		"a": "lost_fraction: got 3.98%, goal ≤ 0.1% (39.8×); 1 more",
		"b": "rate_404: got 0.146, goal ≤ 0.01 (14.6×); 1 more",
		"c": "calls_failed: got 6, goal ≤ 0",
		"d": "",
	}
	for _, c := range rec.Candidates {
		if got := c.Binding(text); got != want[c.Design] {
			t.Errorf("%s binds %q, want %q", c.Design, got, want[c.Design])
		}
	}
	if b := rec.Best(); b == nil || b.Design != "d" {
		t.Errorf("cheapest %+v, want d", b)
	}
	if m := rec.Candidates[1].Misses; len(m) != 2 || m[1].Metric != "calls_failed" || m[1].Factor != nil {
		t.Errorf("b's misses: %+v, want rate_404 then calls_failed with no factor", m)
	}
}

// A tie in cost goes to the lower recovery latency at p99 at the target,
// whatever the design order.
func TestCheapestTieByRecovery(t *testing.T) {
	t.Parallel()
	res := synthetic([]float64{10}, map[string][]report.Totals{"a": {{}}, "b": {{}}}, []string{"a", "b"}, nil)
	p99 := func(v float64) *float64 { return &v }
	res.Rows[0].Report.RecoveryLatencyMS.P99 = p99(9000)
	res.Rows[1].Report.RecoveryLatencyMS.P99 = p99(2000)
	rec := Recommend(res, Goals(), 10)
	if b := rec.Best(); b == nil || b.Design != "b" {
		t.Errorf("cheapest %+v, want b (recovery p99 2000 ms against 9000)", b)
	}
}

// The recovery goal: a request-workload design stuck after its trigger
// (goodput_recovered_s +Inf) misses it and binds there, with an infinite
// value that JSON can hold; a session-workload design, without goodput,
// meets it.
func TestRecoveredGoal(t *testing.T) {
	t.Parallel()
	never := report.Design{Name: "stuck", Requests: &report.RequestTotals{},
		RecoveryAfterFaultS: []report.FaultRecovery{{Goodput: &report.GoodputRecovery{PrePerS: 100}}}}
	m := misses(Judge(&Row{Design: "stuck", Report: never}, "s", Goals()).Failed)
	if len(m) != 1 || m[0].Metric != "goodput_recovered_s" || !m[0].Infinite || m[0].Got != nil {
		t.Fatalf("stuck design: missed %+v, want goodput_recovered_s only, infinite", m)
	}
	if got := m[0].String(); got != "goodput_recovered_s: got ∞, goal ≤ 60" {
		t.Errorf("String() = %q", got)
	}
	if _, err := json.Marshal(m); err != nil {
		t.Errorf("the misses do not marshal: %v", err)
	}
	sessions := report.Design{Name: "sessions"}
	if v := Judge(&Row{Design: "sessions", Report: sessions}, "s", Goals()); len(v.Failed) != 0 {
		t.Errorf("session design: failed %+v, want none", v.Failed)
	}
}
