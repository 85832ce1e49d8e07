package expect

import (
	"slices"
	"testing"

	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
)

func fixture() *report.Report {
	p99 := 250.0
	return &report.Report{Schema: report.Schema, Scenario: "s", Engine: "sim", Designs: []report.Design{
		{Name: "a", Totals: report.Totals{EventsLost: 3, EventsExpected: 100, HTTP404: 0}, ReplayLatencyMS: report.Latency{Count: 4, P99: &p99}},
		{Name: "b", Totals: report.Totals{EventsLost: 0, EventsExpected: 100, HTTP404: 7}},
	}}
}

func TestEvaluate(t *testing.T) {
	t.Parallel()
	r := fixture()
	cases := []struct {
		check scenario.Check
		pass  map[string]bool // per design
		line  string          // the failing line of design a or b
	}{
		// A bound for every design.
		{scenario.Check{Metric: "events_lost", Op: "max", Bound: 0}, map[string]bool{"a": false, "b": true}, "s/a/events_lost: got 3, want ≤ 0"},
		// A bound for one design only.
		{scenario.Check{Design: "b", Metric: "http_404", Op: "min", Bound: 1}, map[string]bool{"b": true}, ""},
		// A quantile with no samples is n/a and fails...
		{scenario.Check{Metric: "replay_latency_ms_p99", Op: "max", Bound: 500}, map[string]bool{"a": true, "b": false}, "s/b/replay_latency_ms_p99: got n/a, want ≤ 500"},
		// ...unless it may be empty.
		{scenario.Check{Metric: "replay_latency_ms_p99", Op: "max", Bound: 500, AllowEmpty: true}, map[string]bool{"a": true, "b": true}, ""},
		// Derived metrics.
		{scenario.Check{Metric: "lost_fraction", Op: "max", Bound: 0.02}, map[string]bool{"a": false, "b": true}, "s/a/lost_fraction: got 0.03, want ≤ 0.02"},
	}
	for _, c := range cases {
		res := Evaluate(r, []scenario.Check{c.check})
		if len(res) != len(c.pass) {
			t.Fatalf("%+v: %d results, want %d", c.check, len(res), len(c.pass))
		}
		for _, x := range res {
			if x.Pass != c.pass[x.Design] {
				t.Errorf("%+v on %s: pass %v", c.check, x.Design, x.Pass)
			}
			if !x.Pass && x.String() != c.line {
				t.Errorf("line %q, want %q", x.String(), c.line)
			}
		}
	}
}

func TestCompare(t *testing.T) {
	t.Parallel()
	base := FromReport(fixture())
	same, err := Compare(base, FromReport(fixture()), DefaultTolerances("sim"))
	if err != nil || len(same.Regressions) != 0 {
		t.Fatalf("identical: %v %+v", err, same)
	}
	worse := fixture()
	worse.Designs[1].Totals.EventsLost = 1         // exact tolerance: any rise
	worse.Designs[0].Totals.Reconnects = 1         // from 0: a rise beyond 5%
	worse.Designs[0].Totals.EventsDelivered = -1   // lower is worse
	worse.Designs[1].Totals.SessionRequests = 1000 // load, not outcome: ignored
	c, err := Compare(base, FromReport(worse), DefaultTolerances("sim"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, r := range c.Regressions {
		got[r.Design+"/"+r.Metric] = true
	}
	for _, w := range []string{"b/events_lost", "a/reconnects", "a/events_delivered"} {
		if !got[w] {
			t.Errorf("missing regression %s in %v", w, got)
		}
	}
	if got["b/session_requests"] {
		t.Error("session_requests is load, not a regression")
	}
	other := FromReport(fixture())
	other.Scenario = "t"
	if _, err := Compare(base, other, nil); err == nil {
		t.Error("another scenario was compared")
	}
	other = FromReport(fixture())
	other.Arch = "riscv64"
	if c, _ := Compare(base, other, DefaultTolerances("sim")); len(c.Notes) == 0 {
		t.Error("a cross-architecture comparison says nothing")
	}
}

// events_leaked ≤ 0 is a default threshold of a live report's designs whose
// probes ran; it does not apply where the metric is unknown (the
// simulator, a live run without probes), and a bound in the expect table
// replaces it.
func TestDefaultLeakThreshold(t *testing.T) {
	t.Parallel()
	live := &report.Report{Scenario: "s", Engine: "live", Designs: []report.Design{
		{Name: "leaks", Totals: report.Totals{EventsLeaked: 4}},
		{Name: "tight"},
		{Name: "unprobed", Totals: report.Totals{EventsLeaked: 9}, Unknown: []string{"events_leaked"}},
	}}
	sim := &report.Report{Scenario: "s", Engine: "sim", Designs: []report.Design{{Name: "leaks", Unknown: []string{"events_leaked"}}}}
	var lines []string
	for _, r := range Failed(Evaluate(live, nil)) {
		lines = append(lines, r.String())
	}
	if want := []string{"s/leaks/events_leaked: got 4, want ≤ 0"}; !slices.Equal(lines, want) {
		t.Errorf("live, no expect table: failed %q, want %q", lines, want)
	}
	if res := Evaluate(live, nil); len(res) != 2 {
		t.Errorf("live: %d checks, want the default on the two probed designs only: %v", len(res), res)
	}
	if res := Evaluate(sim, nil); len(res) != 0 {
		t.Errorf("sim: %v, want no default threshold", res)
	}
	// The expect table's own bound replaces the default, for every design
	// or for one.
	if f := Failed(Evaluate(live, []scenario.Check{{Metric: "events_leaked", Op: "max", Bound: 5}})); len(f) != 1 || f[0].Design != "unprobed" {
		t.Errorf("events_leaked_max = 5: failed %v, want only the unprobed design's n/a", f)
	}
	if f := Failed(Evaluate(live, []scenario.Check{{Design: "leaks", Metric: "events_leaked", Op: "max", Bound: 5}})); len(f) != 0 {
		t.Errorf("leaks.events_leaked_max = 5: failed %v, want none", f)
	}
}
