package agree

import (
	"fmt"
	"math"

	"github.com/stormsim/stormsim/report"
)

// The request workload's rows (workload.kind = "requests"): a design that
// has a requests block is compared on what that workload measures, not on
// the session rows, which it does not fill:
//
//   - goodput_after_ratio: the mean goodput from the end of the last
//     trigger until arrivals stop, over its level in the BaselineWindowS
//     seconds before the trigger (report.GoodputAround). Its standard
//     error is Poisson's on both counts, by the delta method, in each
//     engine, as if the two were independent samples (they share their
//     arrivals, so it overstates the noise). The default tolerance, 0.2,
//     is a fifth of the pre-trigger level: a stuck design sits near 0 and
//     a recovered one near 1, so it still tells them apart, and it leaves
//     room for that noise at tens of requests a second (2 SE is about
//     0.13 at 17 requests/s over 2 seeds of 60 s).
//   - goodput_recovered_s: stuck (never recovered before arrivals stop) or
//     recovered must be the same in both engines, at every seed; when both
//     recovered, the seconds compare as recovery_s does (max(5 s, 0.5 ×
//     sim)): the recovery is read on 1 s steps through a SmoothS window
//     and a RecoveredHoldS hold, so a few seconds either way is the
//     granularity of the rule, not a difference of the model.
//   - wasted_work_fraction: the workers' time spent on attempts whose
//     client had left, over all their time; binomial over the attempts
//     served (about completed ÷ (1 − fraction)); tolerance max(0.05, 0.2 ×
//     sim).
//   - requests_completed_fraction: the requests answered while their
//     client waited, over the requests; binomial; tolerance max(0.02, 0.1
//     × sim).
var requestDefaults = map[string]float64{
	"goodput_after_ratio":             0.2,
	"goodput_recovered_s":             5,
	"goodput_recovered_s_rel":         0.5,
	"wasted_work_fraction":            0.05,
	"wasted_work_fraction_rel":        0.2,
	"requests_completed_fraction":     0.02,
	"requests_completed_fraction_rel": 0.1,
}

func init() {
	for k, v := range requestDefaults {
		Defaults[k] = v
	}
}

// requestMetrics are the rows of a request-workload design, in order.
var requestMetrics = []string{"goodput_after_ratio", "goodput_recovered_s", "wasted_work_fraction", "requests_completed_fraction"}

// isRequestRow reports whether metric is a request-workload row.
func isRequestRow(metric string) bool {
	for _, m := range requestMetrics {
		if m == metric {
			return true
		}
	}
	return false
}

// run is one engine's run of a design: its row and its report's faults.
type run struct {
	d      *report.Design
	faults []report.Fault
}

// runsOf are design name's runs in reps, one per report that holds it.
func runsOf(reps []*report.Report, name string) []run {
	var out []run
	for _, r := range reps {
		if d := r.Design(name); d != nil {
			out = append(out, run{d, r.Faults})
		}
	}
	return out
}

// requestRows are the request workload's rows of a design, over the runs
// of each engine (one each, or one per seed).
func requestRows(name string, sims, lives []run, tol map[string]float64) []Row {
	return []Row{
		goodputAfter(name, sims, lives, tol),
		goodputRecovered(name, sims, lives, tol),
		wastedWork(name, sims, lives, tol),
		completedFraction(name, sims, lives, tol),
	}
}

// lastTrigger is the counts around the last fault of r that has a goodput
// recovery, summed into c; false when it has none.
func lastTrigger(r run, c *report.GoodputCounts) bool {
	rs := r.d.RecoveryAfterFaultS
	for i := len(rs) - 1; i >= 0; i-- {
		if rs[i].Goodput == nil || rs[i].Fault >= len(r.faults) {
			continue
		}
		g, ok := report.GoodputAround(&r.d.Series, r.faults[rs[i].Fault])
		if !ok {
			return false
		}
		c.Pre, c.After, c.PreS, c.AfterS = c.Pre+g.Pre, c.After+g.After, c.PreS+g.PreS, c.AfterS+g.AfterS
		return true
	}
	return false
}

// afterRatio is the pooled goodput_after_ratio of runs and its standard
// error; nil without a trigger or without goodput before it.
func afterRatio(runs []run) (*float64, float64) {
	var c report.GoodputCounts
	for _, r := range runs {
		if !lastTrigger(r, &c) {
			return nil, 0
		}
	}
	if c.Pre == 0 || len(runs) == 0 {
		return nil, 0
	}
	v := (float64(c.After) / c.AfterS) / (float64(c.Pre) / c.PreS)
	se := v * math.Sqrt(1/float64(c.Pre))
	if c.After > 0 {
		se = v * math.Sqrt(1/float64(c.After)+1/float64(c.Pre))
	}
	return &v, se
}

func goodputAfter(name string, sims, lives []run, tol map[string]float64) Row {
	row := Row{Design: name, Metric: "goodput_after_ratio", Tolerance: tol["goodput_after_ratio"], N: int64(len(lives))}
	sv, sse := afterRatio(sims)
	lv, lse := afterRatio(lives)
	row.Sim, row.Live = sv, lv
	switch {
	case sv == nil && lv == nil:
		row.Verdict, row.Note = NotCompared, "no trigger with goodput before it in either engine"
	case sv == nil || lv == nil:
		row.Verdict, row.Note = Disagree, "no goodput around the trigger in "+missing(sv, lv)
	default:
		se := math.Hypot(sse, lse)
		row.Diff, row.StdErr = ptr(*lv-*sv), ptr(se)
		row.Verdict = Classify(math.Abs(*lv-*sv), se, row.Tolerance)
	}
	return row
}

// recovered is the runs' goodput_recovered_s: the mean over the runs that
// recovered, and how many were stuck.
func recovered(runs []run) (mean *float64, stuck int) {
	var sum float64
	var n int
	for _, r := range runs {
		v, _ := r.d.Metric("goodput_recovered_s")
		switch {
		case v == nil:
		case math.IsInf(*v, 1):
			stuck++
		default:
			sum += *v
			n++
		}
	}
	if n > 0 {
		mean = ptr(sum / float64(n))
	}
	return mean, stuck
}

func goodputRecovered(name string, sims, lives []run, tol map[string]float64) Row {
	row := Row{Design: name, Metric: "goodput_recovered_s", Tolerance: tol["goodput_recovered_s"], N: int64(len(lives))}
	sv, ss := recovered(sims)
	lv, ls := recovered(lives)
	row.Sim, row.Live = sv, lv
	switch {
	case sv == nil && lv == nil && ss == 0 && ls == 0:
		row.Verdict, row.Note = NotCompared, "no trigger"
	case ss != ls:
		row.Verdict, row.Note = Disagree, fmt.Sprintf("stuck at %d of %d runs in the simulator, %d of %d live", ss, len(sims), ls, len(lives))
	case sv == nil && lv == nil:
		row.Verdict, row.Note = Agree, "stuck in both engines"
	case sv == nil || lv == nil:
		row.Verdict, row.Note = Disagree, "no recovery in "+missing(sv, lv)
	default:
		row.Tolerance = math.Max(tol["goodput_recovered_s"], tol["goodput_recovered_s_rel"]*math.Abs(*sv))
		row.Diff, row.StdErr = ptr(*lv-*sv), ptr(0)
		row.Verdict = Classify(math.Abs(*lv-*sv), 0, row.Tolerance)
		if ss > 0 {
			row.Note = fmt.Sprintf("stuck at %d of %d runs in each engine; the seconds are the mean of the others", ss, len(sims))
		}
	}
	return row
}

// pooledTotals sums the runs' request totals; nil when a run has none.
func pooledTotals(runs []run) *report.RequestTotals {
	var t report.RequestTotals
	for _, r := range runs {
		x := r.d.Requests
		if x == nil {
			return nil
		}
		t.Requests += x.Requests
		t.Completed += x.Completed
		t.ServiceS += x.ServiceS
		t.WastedS += x.WastedS
	}
	if len(runs) == 0 {
		return nil
	}
	return &t
}

// binomialRow compares a fraction p of a sample n in each engine.
func binomialRow(row Row, sp, sn, lp, ln float64, tol map[string]float64) Row {
	row.Sim, row.Live, row.Diff = ptr(sp), ptr(lp), ptr(lp-sp)
	row.Tolerance = math.Max(tol[row.Metric], tol[row.Metric+"_rel"]*math.Abs(sp))
	row.N = int64(ln)
	switch {
	case sn <= 0 && ln <= 0:
		row.Verdict, row.Note = NotCompared, "no sample in either engine"
		return row
	case sn <= 0 || ln <= 0:
		row.Verdict, row.Note = Disagree, "no sample in "+absent(sn <= 0)
		return row
	}
	p := (sp*sn + lp*ln) / (sn + ln)
	se := math.Sqrt(p * (1 - p) * (1/sn + 1/ln))
	row.StdErr = ptr(se)
	row.Verdict = Classify(math.Abs(lp-sp), se, row.Tolerance)
	return row
}

func wastedWork(name string, sims, lives []run, tol map[string]float64) Row {
	row := Row{Design: name, Metric: "wasted_work_fraction"}
	st, lt := pooledTotals(sims), pooledTotals(lives)
	if st == nil || lt == nil {
		row.Verdict, row.Note = Disagree, "no requests block in "+absent(st == nil)
		return row
	}
	// The attempts served: the useful ones (about the completions) over
	// the useful fraction of the work.
	served := func(t *report.RequestTotals) float64 {
		f := t.WastedFraction()
		if f >= 1 {
			return float64(t.Completed) + 1
		}
		return float64(t.Completed) / (1 - f)
	}
	return binomialRow(row, st.WastedFraction(), served(st), lt.WastedFraction(), served(lt), tol)
}

func completedFraction(name string, sims, lives []run, tol map[string]float64) Row {
	row := Row{Design: name, Metric: "requests_completed_fraction"}
	st, lt := pooledTotals(sims), pooledTotals(lives)
	if st == nil || lt == nil {
		row.Verdict, row.Note = Disagree, "no requests block in "+absent(st == nil)
		return row
	}
	frac := func(t *report.RequestTotals) float64 {
		if t.Requests == 0 {
			return 0
		}
		return float64(t.Completed) / float64(t.Requests)
	}
	return binomialRow(row, frac(st), float64(st.Requests), frac(lt), float64(lt.Requests), tol)
}

// absent names the engine a figure is missing from: the simulator's when
// inSim, else the live run's.
func absent(inSim bool) string {
	if inSim {
		return "the simulator"
	}
	return "the live run"
}
