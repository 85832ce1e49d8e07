package plan

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/stormsim/stormsim/expect"
	"github.com/stormsim/stormsim/scenario"
)

// DefaultGoals are the service goals a plan judges every design by, unless
// the scenario's [scenario.NAME.goals] table or --goal sets the same metric
// and direction: at most 0.1% of events lost, at most 1% of session requests
// answered 404, no call failed, a recovery latency at p99 of at most
// 10 s, and, for the request workload, goodput recovered within 60 s of
// the end of each trigger (goodput_recovered_s: +Inf when it stays stuck).
// A design with nothing to recover meets the latency goal, and a run of
// the session workload, which has no goodput, the recovery goal.
//
// A goal is any metric the report holds, bounded as in an expect table, so
// a new one (such as recovery after a trigger) joins with one line here.
var DefaultGoals = []scenario.Check{
	{Metric: "lost_fraction", Op: "max", Bound: 0.001},
	{Metric: "rate_404", Op: "max", Bound: 0.01},
	{Metric: "calls_failed", Op: "max", Bound: 0},
	{Metric: "recovery_latency_ms_p99", Op: "max", Bound: 10_000, AllowEmpty: true},
	{Metric: "goodput_recovered_s", Op: "max", Bound: 60, AllowEmpty: true},
}

// Goals resolves the goals a plan judges by: DefaultGoals, then each layer
// in order (the scenario's goals table, then --goal), a goal replacing the
// one of the same metric and direction (keeping its place, and whether it
// may be empty) or joining at the end. Goals hold for every design.
func Goals(layers ...[]scenario.Check) []scenario.Check {
	out := slices.Clone(DefaultGoals)
	for _, l := range layers {
		for _, c := range l {
			c.Design = ""
			i := slices.IndexFunc(out, func(o scenario.Check) bool { return o.Metric == c.Metric && o.Op == c.Op })
			if i < 0 {
				out = append(out, c)
				continue
			}
			c.AllowEmpty = c.AllowEmpty || out[i].AllowEmpty
			out[i] = c
		}
	}
	return out
}

// Miss is a goal a design missed at one load, and by how much.
type Miss struct {
	Metric string   `json:"metric"`
	Op     string   `json:"op"`
	Bound  float64  `json:"bound"`
	Got    *float64 `json:"got"` // nil: the run has no value for it
	// Factor is how many times over the goal the value is (got / bound
	// for a _max goal, bound / got for a _min goal); +Inf (null in JSON)
	// when the bound is 0 or there is no value.
	Factor *float64 `json:"factor"`
	// Infinite says the value is +Inf, which JSON cannot hold (Got is
	// then null): a trigger the design never recovered from.
	Infinite bool `json:"infinite,omitempty"`
}

// misses turns failed results into misses in binding order: those with a
// factor, the largest first, then those over a bound of 0, then those with
// no value; ties keep the goals' order.
func misses(failed []expect.Result) []Miss {
	out := make([]Miss, 0, len(failed))
	for _, r := range failed {
		m := Miss{Metric: r.Metric, Op: r.Op, Bound: r.Bound, Got: r.Got}
		if f := factor(r); !math.IsInf(f, 0) {
			m.Factor = &f
		}
		if r.Got != nil && math.IsInf(*r.Got, 0) {
			m.Got, m.Infinite = nil, true
		}
		out = append(out, m)
	}
	rank := func(m Miss) (int, float64) {
		switch {
		case m.Infinite:
			return 0, math.Inf(-1)
		case m.Factor != nil:
			return 0, -*m.Factor
		case m.Got != nil:
			return 1, 0
		}
		return 2, 0
	}
	slices.SortStableFunc(out, func(a, b Miss) int {
		ca, fa := rank(a)
		cb, fb := rank(b)
		if ca != cb {
			return ca - cb
		}
		return cmp.Compare(fa, fb)
	})
	return out
}

func factor(r expect.Result) float64 {
	if r.Got == nil {
		return math.Inf(1)
	}
	num, den := *r.Got, r.Bound
	if r.Op == "min" {
		num, den = r.Bound, *r.Got
	}
	if den <= 0 {
		return math.Inf(1)
	}
	return num / den
}

// String is "rate_404: got 0.146, goal ≤ 0.01 (14.6×)".
func (m Miss) String() string {
	got := "n/a"
	switch {
	case m.Infinite:
		got = "∞"
	case m.Got != nil:
		got = Figure(m.Metric, *m.Got)
	}
	s := fmt.Sprintf("%s: got %s, goal %s %s", m.Metric, got, relation(m.Op), Figure(m.Metric, m.Bound))
	if f := m.Factor; f != nil {
		prec := 1
		if *f >= 100 {
			prec = 0
		}
		s += " (" + strconv.FormatFloat(*f, 'f', prec, 64) + "×)"
	}
	return s
}

// relation is a goal's direction as a sign: ≤ for _max, ≥ for _min.
func relation(op string) string {
	if op == "min" {
		return "≥"
	}
	return "≤"
}

// Figure rounds a metric's value for people, as the run's table does: a
// fraction of events as a percentage, milliseconds and counts whole, and
// anything else to three significant digits. The files keep exact values.
func Figure(metric string, v float64) string {
	switch {
	case math.IsInf(v, 0) || math.IsNaN(v):
		return strconv.FormatFloat(v, 'f', -1, 64)
	case metric == "lost_fraction":
		return sig3(100*v) + "%"
	case strings.Contains(metric, "_ms_") || v == math.Trunc(v) || math.Abs(v) >= 1000:
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	}
	return sig3(v)
}

func sig3(v float64) string {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 3, 64), 64)
	return strconv.FormatFloat(r, 'f', -1, 64)
}
