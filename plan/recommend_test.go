package plan

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
)

// synthetic builds a result by hand: one load axis, designs with the given
// totals per load (in load order).
func synthetic(loads []float64, rows map[string][]report.Totals, designs []string, replicas map[string]int) *Result {
	sc := &scenario.Scenario{Name: "synthetic"}
	g := &Grid{Axes: []Axis{{Key: "workload.clients", Kind: Int, Values: loads}}, Designs: designs}
	res := &Result{Grid: g}
	for li, l := range loads {
		g.Points = append(g.Points, Point{Values: []float64{l}, Set: []string{fmt.Sprintf("workload.clients=%g", l)}, Scenario: sc})
		for _, d := range designs {
			n := replicas[d]
			if n == 0 {
				n = 3
			}
			res.Rows = append(res.Rows, Row{Point: li, Design: d, Replicas: n, Report: report.Design{Name: d, Totals: rows[d][li]}})
		}
	}
	return res
}

func lost(n ...int64) []report.Totals {
	var ts []report.Totals
	for _, x := range n {
		ts = append(ts, report.Totals{EventsExpected: 1000, EventsLost: x, StorePeakBytes: 1000 * (x + 1), StorePeakOpsPerS: 10})
	}
	return ts
}

// Prefix semantics: a design that fails at a load is reported failing at
// every larger load, even where its own row passes again.
func TestPrefixSemantics(t *testing.T) {
	t.Parallel()
	loads := []float64{100, 200, 400, 800, 1600}
	res := synthetic(loads, map[string][]report.Totals{
		"a": lost(0, 0, 5, 0, 0), // fails at 400 only
		"b": lost(0, 0, 0, 0, 0), // always passes
		"c": lost(3, 0, 0, 0, 0), // fails at the lowest load
	}, []string{"a", "b", "c"}, nil)
	checks := []scenario.Check{{Metric: "events_lost", Op: "max", Bound: 0}}
	rec := Recommend(res, checks, 1600)
	byName := map[string]*Candidate{}
	for i := range rec.Candidates {
		byName[rec.Candidates[i].Design] = &rec.Candidates[i]
	}
	a, b, c := byName["a"], byName["b"], byName["c"]
	if a.MaxLoad == nil || *a.MaxLoad != 200 || a.MeetsTarget || a.Meets(800) || !a.Meets(200) {
		t.Errorf("a: max load %v, meets target %v, meets 800 %v", a.MaxLoad, a.MeetsTarget, a.Meets(800))
	}
	if a.FirstFailure == nil || a.FirstFailure.Load != 400 || a.FirstFailure.Check != "events_lost: got 5, goal ≤ 0" {
		t.Errorf("a: first failure %+v", a.FirstFailure)
	}
	if b.MaxLoad == nil || *b.MaxLoad != 1600 || !b.MeetsTarget || b.FirstFailure != nil {
		t.Errorf("b: max load %v, meets %v, first failure %+v", b.MaxLoad, b.MeetsTarget, b.FirstFailure)
	}
	if c.MaxLoad != nil || c.AtMax != nil || c.Meets(100) {
		t.Errorf("c: max load %v, want none", c.MaxLoad)
	}
	if rec.Best() == nil || rec.Best().Design != "b" {
		t.Errorf("cheapest: %+v, want b", rec.Best())
	}
	if f := rec.FirstFailure; f == nil || f.Design != "c" || f.Load != 100 {
		t.Errorf("first failure overall: %+v, want c at 100", f)
	}
	// The rows: pass is the row's own verdict, meets the prefix.
	var pass, meets []bool
	for i := range res.Rows {
		if res.Rows[i].Design == "a" {
			pass, meets = append(pass, rec.Verdicts[i].Pass), append(meets, rec.Meets[i])
		}
	}
	if diff := cmp.Diff([]bool{true, true, false, true, true}, pass); diff != "" {
		t.Errorf("a: pass (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]bool{true, true, false, false, false}, meets); diff != "" {
		t.Errorf("a: meets (-want +got):\n%s", diff)
	}
	// No design meets a target where all fail: the overall first failure
	// names the lowest load and the threshold.
	rec = Recommend(res, []scenario.Check{{Metric: "events_lost", Op: "max", Bound: -1}}, 1600)
	if rec.Best() != nil || rec.FirstFailure == nil || rec.FirstFailure.Load != 100 || rec.FirstFailure.Design != "a" {
		t.Errorf("none meets: best %+v, first failure %+v", rec.Best(), rec.FirstFailure)
	}
}

// The cheapest design at the target: least provisioned store memory, then
// fewest replicas, then fewest store ops/s, then the design order.
func TestCheapest(t *testing.T) {
	t.Parallel()
	tot := func(bytes int64, ops float64) []report.Totals {
		return []report.Totals{{StorePeakBytes: bytes, StorePeakOpsPerS: ops}, {StorePeakBytes: bytes, StorePeakOpsPerS: ops}}
	}
	for _, c := range []struct {
		name     string
		rows     map[string][]report.Totals
		replicas map[string]int
		want     string
	}{
		// Least memory wins, whatever the ops.
		{"memory", map[string][]report.Totals{"a": tot(2000, 1), "b": tot(1000, 500)}, nil, "b"},
		// Memory that rounds to the same provisioned size ties; then replicas.
		{"replicas", map[string][]report.Totals{"a": tot(1000, 1), "b": tot(1000, 1)}, map[string]int{"a": 4, "b": 2}, "b"},
		// Then ops/s.
		{"ops", map[string][]report.Totals{"a": tot(1000, 300), "b": tot(1000, 200)}, nil, "b"},
		// A full tie keeps the design order.
		{"tie", map[string][]report.Totals{"a": tot(1000, 200), "b": tot(1000, 200)}, nil, "a"},
	} {
		res := synthetic([]float64{10, 20}, c.rows, []string{"a", "b"}, c.replicas)
		rec := Recommend(res, nil, 20)
		if rec.Best() == nil || rec.Best().Design != c.want {
			t.Errorf("%s: cheapest %+v, want %s", c.name, rec.Best(), c.want)
		}
	}
}

// Provisioning adds 30% to the simulated peak and rounds up.
func TestProvision(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		peak, want int64
	}{{0, 0}, {1, 2}, {10, 13}, {100, 130}, {101, 132}, {55614080, 72298304}, {math.MaxInt64 / 200, (math.MaxInt64/200*13 + 9) / 10}} {
		if got := ProvisionBytes(c.peak); got != c.want {
			t.Errorf("ProvisionBytes(%d) = %d, want %d", c.peak, got, c.want)
		}
	}
	if got := Provision(80582); got != 104757 {
		t.Errorf("Provision(80582) = %g, want 104757", got)
	}
}

// maxIndex is the index of a candidate's max load on the load axis, -1 for
// none.
func maxIndex(res *Result, c *Candidate) int {
	if c.MaxLoad == nil {
		return -1
	}
	for i, v := range res.Grid.Axes[0].Values {
		if v == *c.MaxLoad {
			return i
		}
	}
	return -2
}

// checkPrefix: once a candidate does not meet the thresholds at a load, it
// does not meet them at any larger load; its max load and first failure
// agree with the rows.
func checkPrefix(t *testing.T, res *Result, rec *Recommendation, what string) {
	t.Helper()
	loads := res.Grid.Axes[0].Values
	nd := len(res.Grid.Designs)
	for ci, c := range rec.Candidates {
		k, di := ci/nd, ci%nd
		failed := false
		for li, l := range loads {
			ri := (k*len(loads)+li)*nd + di
			if failed && rec.Meets[ri] {
				t.Fatalf("%s: %s meets at %g after failing at a smaller load", what, c.Design, l)
			}
			if !rec.Meets[ri] {
				failed = true
			}
			if rec.Meets[ri] != c.Meets(l) {
				t.Fatalf("%s: %s at %g: row meets %v, candidate %v", what, c.Design, l, rec.Meets[ri], c.Meets(l))
			}
		}
		if c.FirstFailure != nil && c.MaxLoad != nil && *c.MaxLoad >= c.FirstFailure.Load {
			t.Fatalf("%s: %s max load %g is not below its first failure at %g", what, c.Design, *c.MaxLoad, c.FirstFailure.Load)
		}
	}
}

// Acceptance 3: on a real simulated grid, tightening a threshold never
// raises a design's recommended maximum load, loosening one never lowers
// it, and a design reported failing at a load is reported failing at every
// larger load. The thresholds are drawn at random (a fixed seed) around the
// values the grid produced, so that they bite somewhere.
func TestRecommendMonotonic(t *testing.T) {
	t.Parallel()
	res := runGrid(t, 0, []string{"client.on_error=fail", "store.memory_cap_bytes=1048576"}, "workload.clients=10..640@7")
	metrics := []string{"events_lost", "lost_fraction", "lost_purged", "store_peak_bytes", "store_peak_ops_per_s",
		"replay_latency_ms_p99", "recovery_latency_ms_p50", "rate_404", "resumes", "reconnects", "storm_height", "calls_failed"}
	designs := append([]string{""}, res.Grid.Designs...)
	rng := rand.New(rand.NewPCG(7, 11))
	value := func(metric string) float64 {
		r := &res.Rows[rng.IntN(len(res.Rows))]
		v, _ := r.Report.Metric(metric)
		if v == nil {
			return 0
		}
		return *v
	}
	randomCheck := func() scenario.Check {
		m := metrics[rng.IntN(len(metrics))]
		op := "max"
		if rng.IntN(3) == 0 {
			op = "min"
		}
		return scenario.Check{Design: designs[rng.IntN(len(designs))], Metric: m, Op: op, Bound: value(m) * (0.5 + rng.Float64()), AllowEmpty: rng.IntN(2) == 0}
	}
	// tighten moves a bound so that fewer values pass; loosen the other way.
	tighten := func(c scenario.Check) scenario.Check {
		step := math.Abs(c.Bound)*rng.Float64() + rng.Float64()
		if c.Op == "max" {
			c.Bound -= step
		} else {
			c.Bound += step
		}
		c.AllowEmpty = c.AllowEmpty && rng.IntN(2) == 0 // refusing empty values tightens too
		return c
	}
	loosen := func(c scenario.Check) scenario.Check {
		step := math.Abs(c.Bound)*rng.Float64() + rng.Float64()
		if c.Op == "max" {
			c.Bound += step
		} else {
			c.Bound -= step
		}
		c.AllowEmpty = c.AllowEmpty || rng.IntN(2) == 0
		return c
	}
	target := res.Grid.Axes[0].Max()
	bites := 0
	for iter := range 400 {
		checks := make([]scenario.Check, 1+rng.IntN(3))
		for i := range checks {
			checks[i] = randomCheck()
		}
		base := Recommend(res, checks, target)
		checkPrefix(t, res, base, fmt.Sprintf("iteration %d", iter))
		i := rng.IntN(len(checks))
		tight := append([]scenario.Check(nil), checks...)
		tight[i] = tighten(tight[i])
		loose := append([]scenario.Check(nil), checks...)
		loose[i] = loosen(loose[i])
		added := append(append([]scenario.Check(nil), checks...), randomCheck())
		for _, v := range []struct {
			name   string
			checks []scenario.Check
			dir    int // -1: may only lower, +1: may only raise
		}{{"tightened", tight, -1}, {"loosened", loose, +1}, {"with a check added", added, -1}} {
			rec := Recommend(res, v.checks, target)
			checkPrefix(t, res, rec, fmt.Sprintf("iteration %d, %s", iter, v.name))
			for ci := range rec.Candidates {
				before, after := maxIndex(res, &base.Candidates[ci]), maxIndex(res, &rec.Candidates[ci])
				if before != after {
					bites++
				}
				if (v.dir < 0 && after > before) || (v.dir > 0 && after < before) {
					t.Fatalf("iteration %d: %s %v → %v moved %s's max load from index %d to %d",
						iter, v.name, checks, v.checks, rec.Candidates[ci].Design, before, after)
				}
				if v.dir < 0 && rec.Candidates[ci].MeetsTarget && !base.Candidates[ci].MeetsTarget {
					t.Fatalf("iteration %d: %s: %s meets the target only after tightening", iter, v.name, rec.Candidates[ci].Design)
				}
			}
		}
	}
	t.Logf("%d changes of max load", bites)
	if bites < 100 {
		t.Errorf("only %d changes of max load over 400 iterations: the thresholds do not bite, the test proves little", bites)
	}
}
