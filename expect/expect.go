// Package expect judges a run against its scenario's thresholds
// ([scenario.NAME.expect] in scenarios.toml) and compares a run with a
// baseline. Both read a report.Report only.
//
//	results := expect.Evaluate(r, sc.Expect)
//	for _, res := range expect.Failed(results) {
//		fmt.Println(res) // deploy-restart/redis-shared/events_lost: got 12, want ≤ 0
//	}
package expect

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
)

// Result is one threshold checked against one design.
type Result struct {
	Scenario string
	Design   string
	Metric   string
	Op       string // "max" or "min"
	Bound    float64
	Got      *float64 // nil: the metric has no value in this run
	Pass     bool
}

// Name is "scenario/design/metric_op", the check's stable identity.
func (r Result) Name() string {
	return r.Scenario + "/" + r.Design + "/" + r.Metric + "_" + r.Op
}

// String is the line CI prints: "scenario/design/metric: got X, want ≤ Y".
func (r Result) String() string {
	rel := "≤"
	if r.Op == "min" {
		rel = "≥"
	}
	got := "n/a"
	if r.Got != nil {
		got = num(*r.Got)
	}
	return fmt.Sprintf("%s/%s/%s: got %s, want %s %s", r.Scenario, r.Design, r.Metric, got, rel, num(r.Bound))
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// Evaluate checks every threshold against every design it applies to that
// the report holds, and the Defaults. A metric with no value fails ("n/a")
// unless the check allows it to be empty. A report over several seeds
// (OverSeeds) is judged on each metric's mean over them.
func Evaluate(r *report.Report, checks []scenario.Check) []Result {
	checks = append(slices.Clone(checks), Defaults(r, checks)...)
	var out []Result
	for _, d := range r.Designs {
		metric := d.Metric
		if r.OverSeeds != nil {
			metric = func(m string) (*float64, bool) {
				if d.IsUnknown(m) && report.IsMetric(m) {
					return nil, true
				}
				return r.OverSeeds.Mean(d.Name, m)
			}
		}
		for _, c := range checks {
			if c.Design != "" && c.Design != d.Name {
				continue
			}
			res := Result{Scenario: r.Scenario, Design: d.Name, Metric: c.Metric, Op: c.Op, Bound: c.Bound}
			v, ok := metric(c.Metric)
			switch {
			case !ok:
				res.Pass = false
			case v == nil:
				res.Pass = c.AllowEmpty
			case c.Op == "max":
				res.Got, res.Pass = v, *v <= c.Bound
			default:
				res.Got, res.Pass = v, *v >= c.Bound
			}
			out = append(out, res)
		}
	}
	return out
}

// Defaults are the thresholds every run has unless its expect table bounds
// the metric itself: events_leaked ≤ 0 for each design of a live report
// whose isolation probes ran. Where the metric is unknown (the simulator,
// or a live run without probes) the default does not apply.
func Defaults(r *report.Report, checks []scenario.Check) []scenario.Check {
	if r.Engine != "live" {
		return nil
	}
	var out []scenario.Check
	for _, d := range r.Designs {
		if d.IsUnknown("events_leaked") || slices.ContainsFunc(checks, func(c scenario.Check) bool {
			return c.Metric == "events_leaked" && (c.Design == "" || c.Design == d.Name)
		}) {
			continue
		}
		out = append(out, scenario.Check{Design: d.Name, Metric: "events_leaked", Op: "max", Bound: 0})
	}
	return out
}

// Failed returns the results that did not pass.
func Failed(rs []Result) []Result {
	var f []Result
	for _, r := range rs {
		if !r.Pass {
			f = append(f, r)
		}
	}
	return f
}

// Breach is the error of a run whose thresholds failed; it exits 99, as k6
// does.
type Breach struct{ Failed []Result }

func (b *Breach) Error() string {
	s := fmt.Sprintf("stormsim: %d threshold(s) failed:", len(b.Failed))
	for _, r := range b.Failed {
		s += "\n  " + r.String()
	}
	return s
}

// ExitCode is 99.
func (b *Breach) ExitCode() int { return 99 }
