package plan

import (
	"fmt"
	"math"

	"github.com/stormsim/stormsim/expect"
	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
)

// HeadroomPercent is the margin provisioned above the simulated peak: the
// store memory and ops/s to provision are the peak × (100+30)/100, rounded
// up. plan.md states it.
const HeadroomPercent = 30

// Provision adds HeadroomPercent to a simulated peak, rounded up to a whole
// unit: ceil(peak × 1.3).
func Provision(peak float64) float64 {
	return math.Ceil(peak * (100 + HeadroomPercent) / 100)
}

// ProvisionBytes is Provision in integer arithmetic, exact for any size:
// ceil(peak × 130 / 100).
func ProvisionBytes(peak int64) int64 {
	const num, den = 100 + HeadroomPercent, 100
	return peak/den*num + (peak%den*num+den-1)/den
}

// Verdict is one row judged against the goals.
type Verdict struct {
	Pass bool
	// Failed are the goals that failed, in the goals' order.
	Failed []expect.Result
}

// FirstFailed is the first failed goal as "metric: got X, goal ≤ Y (N×)",
// rounded (Figure), "" when every one held.
func (v Verdict) FirstFailed() string {
	if len(v.Failed) == 0 {
		return ""
	}
	return misses(v.Failed[:1])[0].String()
}

// Judge checks one row against goals (or any thresholds), as `stormsim
// run` checks an expect table.
func Judge(row *Row, scenarioName string, checks []scenario.Check) Verdict {
	r := &report.Report{Scenario: scenarioName, Designs: []report.Design{row.Report}}
	r.Designs[0].Name = row.Design
	failed := expect.Failed(expect.Evaluate(r, checks))
	return Verdict{Pass: len(failed) == 0, Failed: failed}
}

// Sizing is what the store held and did at one load, and what to provision
// for it.
type Sizing struct {
	Load float64 `json:"load"`
	// PeakBytes and PeakOpsPerS are the simulated store's peaks
	// (report.Totals.StorePeakBytes, StorePeakOpsPerS).
	PeakBytes   int64   `json:"store_peak_bytes"`
	PeakOpsPerS float64 `json:"store_peak_ops_per_s"`
	// Bytes and OpsPerS are the peaks plus HeadroomPercent, rounded up.
	Bytes   int64   `json:"provision_bytes"`
	OpsPerS float64 `json:"provision_ops_per_s"`
}

func sizing(load float64, t *report.Totals) *Sizing {
	return &Sizing{Load: load, PeakBytes: t.StorePeakBytes, PeakOpsPerS: t.StorePeakOpsPerS,
		Bytes: ProvisionBytes(t.StorePeakBytes), OpsPerS: Provision(t.StorePeakOpsPerS)}
}

// Failure is where a design first failed: the lowest load at which a
// threshold failed, and the first threshold that failed there.
type Failure struct {
	Design string  `json:"design"`
	Group  string  `json:"group,omitempty"`
	Load   float64 `json:"load"`
	Check  string  `json:"check"`
}

// Candidate is one design at one combination of the other axes (a group):
// a way to deploy, to be sized along the load axis.
type Candidate struct {
	Design string `json:"design"`
	// Group is the values of the other axes, "" when only load is swept.
	Group    string `json:"group,omitempty"`
	Replicas int    `json:"replicas"`
	// MaxLoad is the largest load L on the grid such that the design meets
	// every threshold at every grid load ≤ L; nil when it fails at the
	// lowest. AtMax sizes the store there.
	MaxLoad *float64 `json:"max_load"`
	AtMax   *Sizing  `json:"at_max_load"`
	// MeetsTarget says MaxLoad ≥ the target; AtTarget sizes the store at
	// the target whether or not it meets it.
	MeetsTarget bool    `json:"meets_target"`
	AtTarget    *Sizing `json:"at_target"`
	// FirstFailure is the lowest load where a goal failed; nil when the
	// design passes at every load.
	FirstFailure *Failure `json:"first_failure"`
	// RecoveryP99MS is the recovery latency at p99 at the target (nil
	// without samples): what breaks a tie in cost.
	RecoveryP99MS *float64 `json:"recovery_latency_ms_p99_at_target"`
	// Misses are the goals missed at the target, the binding one (missed
	// by the largest factor) first; empty when every goal held there.
	Misses []Miss `json:"misses_at_target"`
}

// Binding says which goal keeps the candidate from the target, and by how
// much: the goal missed by most at the target, or, when it meets every
// goal there but failed one at a smaller load, that failure. "" when it
// meets the target.
func (c *Candidate) Binding(load func(float64) string) string {
	switch {
	case c.MeetsTarget:
		return ""
	case len(c.Misses) > 1:
		return fmt.Sprintf("%s; %d more", c.Misses[0], len(c.Misses)-1)
	case len(c.Misses) > 0:
		return c.Misses[0].String()
	case c.FirstFailure != nil:
		return c.FirstFailureText(load)
	}
	return "not on the grid"
}

// Recommendation is the plan: every candidate sized, and the cheapest one
// that meets the thresholds at the target load.
type Recommendation struct {
	LoadKey         string  `json:"load_key"`
	Target          float64 `json:"target"`
	HeadroomPercent int     `json:"headroom_percent"`
	// Goals are what every row was judged by (Goals, or any thresholds).
	Goals []scenario.Check `json:"goals"`
	// Verdicts are the rows judged, in Result.Rows order.
	Verdicts []Verdict `json:"-"`
	// Meets says, per row, that its design (in its group) passed at this
	// load and at every smaller one: what the recommendation counts.
	Meets      []bool      `json:"-"`
	Candidates []Candidate `json:"candidates"`
	// Cheapest indexes Candidates: least provisioned store memory at the
	// target, then fewest replicas, then fewest provisioned store ops/s,
	// then the lowest recovery latency at p99, then the scenario's design
	// order. -1 when no candidate meets the goals at the target.
	Cheapest int `json:"-"`
	// FirstFailure is the lowest load where any candidate failed a
	// threshold (the first candidate in order at that load); nil when
	// every row passed.
	FirstFailure *Failure `json:"first_failure"`
}

// Meets says whether the candidate meets the thresholds at load: at it
// and at every smaller load of the grid.
func (c *Candidate) Meets(load float64) bool { return c.MaxLoad != nil && load <= *c.MaxLoad }

// Best is the cheapest candidate, nil when none meets the target.
func (r *Recommendation) Best() *Candidate {
	if r.Cheapest < 0 {
		return nil
	}
	return &r.Candidates[r.Cheapest]
}

// Recommend judges every row of res against checks and sizes each
// candidate (design × group) along the load axis, with prefix semantics: a
// design's maximum load is the largest grid load L such that it passes at
// every grid load ≤ L, so a design that fails at a load is reported failing
// at every larger load. target is a value of the load axis; a target that is
// not on it leaves AtTarget nil and no candidate meeting it.
func Recommend(res *Result, checks []scenario.Check, target float64) *Recommendation {
	g := res.Grid
	name := ""
	if len(g.Points) > 0 && g.Points[0].Scenario != nil {
		name = g.Points[0].Scenario.Name
	}
	rec := &Recommendation{LoadKey: g.Axes[0].Key, Target: target, HeadroomPercent: HeadroomPercent, Goals: checks, Cheapest: -1}
	rec.Verdicts = make([]Verdict, len(res.Rows))
	rec.Meets = make([]bool, len(res.Rows))
	for i := range res.Rows {
		rec.Verdicts[i] = Judge(&res.Rows[i], name, checks)
	}
	loads := g.Axes[0].Values
	nd := len(g.Designs)
	for k := range g.Groups() {
		for di, dn := range g.Designs {
			c := Candidate{Design: dn, Group: g.GroupLabel(k)}
			prefix := true
			for li, load := range loads {
				ri := (k*len(loads)+li)*nd + di
				row, v := &res.Rows[ri], rec.Verdicts[ri]
				if load == target {
					c.Replicas = row.Replicas
					c.AtTarget = sizing(load, &row.Report.Totals)
					c.RecoveryP99MS = row.Report.RecoveryLatencyMS.P99
					c.Misses = misses(v.Failed)
				}
				if !v.Pass {
					if c.FirstFailure == nil {
						c.FirstFailure = &Failure{Design: dn, Group: c.Group, Load: load, Check: v.FirstFailed()}
					}
					prefix = false
				}
				if prefix {
					rec.Meets[ri] = true
					c.MaxLoad = &loads[li]
					c.AtMax = sizing(load, &row.Report.Totals)
				}
			}
			if c.AtTarget == nil { // the target is not on the grid
				c.Replicas = res.Rows[(k*len(loads))*nd+di].Replicas
			}
			c.MeetsTarget = c.AtTarget != nil && c.MaxLoad != nil && *c.MaxLoad >= target
			if f := c.FirstFailure; f != nil && (rec.FirstFailure == nil || f.Load < rec.FirstFailure.Load) {
				rec.FirstFailure = f
			}
			rec.Candidates = append(rec.Candidates, c)
		}
	}
	for i := range rec.Candidates {
		c := &rec.Candidates[i]
		if c.MeetsTarget && (rec.Cheapest < 0 || cheaper(c, &rec.Candidates[rec.Cheapest])) {
			rec.Cheapest = i
		}
	}
	return rec
}

// cheaper orders candidates that meet the target: least provisioned store
// memory, then fewest replicas, then fewest provisioned store ops/s; a tie
// in cost goes to the lower recovery latency at p99 (none counts as 0),
// and a full tie keeps the earlier candidate.
func cheaper(a, b *Candidate) bool {
	if a.AtTarget.Bytes != b.AtTarget.Bytes {
		return a.AtTarget.Bytes < b.AtTarget.Bytes
	}
	if a.Replicas != b.Replicas {
		return a.Replicas < b.Replicas
	}
	if a.AtTarget.OpsPerS != b.AtTarget.OpsPerS {
		return a.AtTarget.OpsPerS < b.AtTarget.OpsPerS
	}
	return orZero(a.RecoveryP99MS) < orZero(b.RecoveryP99MS)
}

func orZero(v *float64) float64 {
	if v == nil {
		return 0
	}
	return *v
}
