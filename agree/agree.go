// Package agree compares a simulator report with a live report of the same
// scenario and seed, design by design, and judges each row against the
// scenario's tolerances ([scenario.NAME.agreement]) and its standard error:
// agree (|diff| + 2·SE within the tolerance), disagree (|diff| − 2·SE beyond
// it) or inconclusive (the sample is too small to tell; never a pass):
//
//	a := agree.Compare(simReport, liveReport, agree.TolerancesOf(sc))
//	os.WriteFile("agreement.md", a.Markdown(), 0o644)
//	if a.Failed > 0 { return &agree.Disagreement{A: a} } // exit 98: a row disagrees
package agree

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
)

// ExitCode is the exit status of a run whose engines disagree.
const ExitCode = 98

// Verdicts of a row.
const (
	Agree        = "agree"        // |diff| + 2·SE ≤ tolerance
	Disagree     = "disagree"     // |diff| − 2·SE > tolerance
	Inconclusive = "inconclusive" // neither: the sample is too small to tell
	// NotCompared is a row with nothing to compare: no sample in either
	// engine, or a live figure stormsim cannot measure. It is counted
	// apart, never as an agreement.
	NotCompared = "not compared"
)

// Defaults are the tolerances a scenario does not set. A row's tolerance
// is max(abs, rel·|sim|): the key names the absolute part, KEY_rel the
// relative one. Fractions are absolute (lost_fraction, drops_resumed),
// per-100 figures in their own unit; replay latency and the store's peak
// compare as live ÷ sim against a factor.
var Defaults = map[string]float64{
	"lost_fraction": 0.01, "lost_fraction_rel": 0.2,
	"http_404_per_100": 2, "http_404_per_100_rel": 0.2,
	"drops_resumed": 0.03, "drops_resumed_rel": 0.1,
	"reissued_per_100": 2, "reissued_per_100_rel": 0.2,
	"failed_per_100": 2, "failed_per_100_rel": 0.25,
	"reconnects_per_call": 0.05, "reconnects_per_call_rel": 0.25,
	"http_503_per_100": 2, "http_503_per_100_rel": 0.25,
	"recovery_s": 5, "recovery_s_rel": 0.5,
	"replay_latency_factor": 2, "store_peak_factor": 1.25,
}

// TolerancesOf is the defaults overlaid with sc's agreement table.
func TolerancesOf(sc *scenario.Scenario) map[string]float64 {
	t := map[string]float64{}
	for k, v := range Defaults {
		t[k] = v
	}
	for k, v := range sc.Agreement {
		t[k] = v
	}
	return t
}

// Row compares one metric of one design.
type Row struct {
	Design string   `json:"design"`
	Metric string   `json:"metric"`
	Sim    *float64 `json:"sim"`
	Live   *float64 `json:"live"`
	Diff   *float64 `json:"diff"` // live − sim; live ÷ sim for latencies and the store's peak
	// Tolerance is max(abs, rel·|sim|) in the metric's unit, or the factor
	// of a ratio row.
	Tolerance float64 `json:"tolerance"`
	// N is the live sample the figure rests on (events, session requests,
	// drops, calls, replays, or runs for the store's peak); StdErr the
	// standard error of the difference in the metric's unit, or of
	// ln(live ÷ sim) for a ratio row.
	N       int64    `json:"n"`
	StdErr  *float64 `json:"std_err"`
	Verdict string   `json:"verdict"`
	Note    string   `json:"note,omitempty"`
}

// Agreement is the comparison of two reports.
type Agreement struct {
	Scenario string `json:"scenario"`
	Seed     uint64 `json:"seed"`
	// Repeats is how many runs of each engine were pooled (--seeds), on
	// seeds Seed, Seed+1, …; 0 or 1 for one.
	Repeats int   `json:"repeats,omitempty"`
	Rows    []Row `json:"rows"`
	Agreed  int   `json:"agreed"`
	// Failed counts the rows that disagree.
	Failed       int `json:"failed"`
	Inconclusive int `json:"inconclusive"`
	NotCompared  int `json:"not_compared"`
}

// Summary is the line every report of an agreement starts with:
// "N agree, M disagree, K inconclusive".
func (a *Agreement) Summary() string {
	s := fmt.Sprintf("%d agree, %d disagree, %d inconclusive", a.Agreed, a.Failed, a.Inconclusive)
	if a.NotCompared > 0 {
		s += fmt.Sprintf(" (%d not compared)", a.NotCompared)
	}
	return s
}

// Classify is a row's verdict from its difference, standard error and
// tolerance, all in one unit.
func Classify(absDiff, se, tol float64) string {
	switch {
	case absDiff+2*se <= tol+1e-12:
		return Agree
	case absDiff-2*se > tol:
		return Disagree
	}
	return Inconclusive
}

func ratio(n, d int64) *float64 {
	if d <= 0 {
		return nil
	}
	v := float64(n) / float64(d)
	return &v
}

func ptr(v float64) *float64 { return &v }

// fraction is one metric that is a count over a sample: its value, its
// sample and how its standard error is estimated.
type fraction struct {
	name  string
	scale float64 // 1, or 100 for per-100 figures
	// poisson: the count is not bounded by the sample (reconnects per
	// call), so its standard error is Poisson's, sqrt(count)/n, rather than
	// the binomial sqrt(p(1−p)/n).
	poisson bool
	get     func(t *report.Totals) (n, d int64)
}

var fractions = []fraction{
	{"lost_fraction", 1, false, func(t *report.Totals) (int64, int64) { return t.EventsLost, t.EventsExpected }},
	{"http_404_per_100", 100, false, func(t *report.Totals) (int64, int64) { return t.HTTP404, t.SessionRequests }},
	{"drops_resumed", 1, false, func(t *report.Totals) (int64, int64) { return t.Resumes, t.Drops }},
	{"reissued_per_100", 100, false, func(t *report.Totals) (int64, int64) { return t.CallsReissued, t.Calls }},
	{"failed_per_100", 100, false, func(t *report.Totals) (int64, int64) { return t.CallsFailed, t.Calls }},
	{"reconnects_per_call", 1, true, func(t *report.Totals) (int64, int64) { return t.Reconnects, t.Calls }},
	{"http_503_per_100", 100, false, func(t *report.Totals) (int64, int64) { return t.HTTP503, t.Requests }},
}

// Metrics are the rows of every design, in order.
var Metrics = func() []string {
	var m []string
	for _, f := range fractions {
		m = append(m, f.name)
	}
	return append(m, "recovery_s", "replay_p50_ms", "replay_p90_ms", "store_peak_mib")
}()

// Compare lines up every design both reports hold.
func Compare(sim, live *report.Report, tol map[string]float64) *Agreement {
	a := &Agreement{Scenario: live.Scenario, Seed: live.Seed, Rows: []Row{}}
	for _, ld := range live.Designs {
		sd := sim.Design(ld.Name)
		if sd == nil {
			a.add(Row{Design: ld.Name, Metric: "design", Verdict: Disagree, Note: "missing in the simulator's report"})
			continue
		}
		if sd.Requests != nil || ld.Requests != nil { // the request workload (requests.go)
			for _, r := range requestRows(ld.Name, []run{{sd, sim.Faults}}, []run{{&ld, live.Faults}}, tol) {
				a.add(r)
			}
			continue
		}
		for _, f := range fractions {
			a.add(compareFraction(f, sd, &ld, tol))
		}
		a.add(compareRecovery(ld.Name, []run{{sd, sim.Faults}}, []run{{&ld, live.Faults}}, tol))
		for _, q := range []struct {
			name string
			p    float64
			sim  *float64
			liv  *float64
		}{
			{"replay_p50_ms", 0.5, sd.ReplayLatencyMS.P50, ld.ReplayLatencyMS.P50},
			{"replay_p90_ms", 0.9, sd.ReplayLatencyMS.P90, ld.ReplayLatencyMS.P90},
		} {
			row := Row{Design: ld.Name, Metric: q.name, Sim: q.sim, Live: q.liv, Tolerance: tol["replay_latency_factor"], N: ld.ReplayLatencyMS.Count}
			switch {
			case q.sim != nil && q.liv != nil && *q.sim > 0 && *q.liv > 0:
				r := *q.liv / *q.sim
				row.Diff = ptr(r)
				// The standard error of ln(live ÷ sim), from each engine's
				// order-statistic interval in its histogram.
				se := math.Hypot(quantileSE(&sd.ReplayLatencyMS, q.p), quantileSE(&ld.ReplayLatencyMS, q.p))
				row.StdErr = ptr(se)
				row.Verdict = Classify(math.Abs(math.Log(r)), se, math.Log(row.Tolerance))
			case q.sim == nil && q.liv == nil:
				row.Verdict, row.Note = NotCompared, "no replays in either engine"
			default:
				row.Verdict, row.Note = Disagree, "no replays in "+missing(q.sim, q.liv)
			}
			a.add(row)
		}
		a.add(storePeak(sd, &ld, tol["store_peak_factor"], 0, 1))
	}
	for _, sd := range sim.Designs {
		if live.Design(sd.Name) == nil {
			a.add(Row{Design: sd.Name, Metric: "design", Verdict: Disagree, Note: "missing in the live report"})
		}
	}
	return a
}

// compareFraction is one count-over-sample row of a design.
func compareFraction(f fraction, sd, ld *report.Design, tol map[string]float64) Row {
	sn, sdn := f.get(&sd.Totals)
	ln, ldn := f.get(&ld.Totals)
	row := Row{Design: ld.Name, Metric: f.name, N: ldn}
	sv, lv := ratio(sn, sdn), ratio(ln, ldn)
	if sv != nil {
		row.Tolerance = math.Max(tol[f.name], tol[f.name+"_rel"]*math.Abs(*sv*f.scale))
	} else {
		row.Tolerance = tol[f.name]
	}
	if f.name == "lost_fraction" && ld.IsUnknown("lost_fraction") {
		row.Sim, row.Verdict, row.Note = scaled(sv, f.scale), NotCompared, "not measured live"
		return row
	}
	if sv == nil || lv == nil {
		row.Sim, row.Live = scaled(sv, f.scale), scaled(lv, f.scale)
		if sv == nil && lv == nil {
			row.Verdict, row.Note = NotCompared, "no sample in either engine"
		} else {
			row.Verdict, row.Note = Disagree, "no sample in "+missing(sv, lv)
		}
		return row
	}
	s, l := *sv*f.scale, *lv*f.scale
	row.Sim, row.Live, row.Diff = ptr(s), ptr(l), ptr(l-s)
	var se float64
	if f.poisson {
		// Poisson: sqrt(count)/n in each engine. Reconnects come in storms,
		// so this understates the noise rather than overstates it.
		se = f.scale * math.Sqrt(float64(sn)/float64(sdn*sdn)+float64(ln)/float64(ldn*ldn))
	} else {
		// The standard error of the difference, from the pooled fraction
		// and both samples.
		p := float64(sn+ln) / float64(sdn+ldn)
		se = f.scale * math.Sqrt(p*(1-p)*(1/float64(sdn)+1/float64(ldn)))
	}
	row.StdErr = ptr(se)
	row.Verdict = Classify(math.Abs(l-s), se, row.Tolerance)
	return row
}

// compareRecovery compares the time the design took to recover after its
// slowest fault (recovery_after_fault_s), live − sim, against
// max(recovery_s, recovery_s_rel·sim), over each engine's runs (one, or
// one per seed): each fault's mean over the runs, then the slowest fault.
// It has no standard error: one run has one recovery per fault.
//
// A fault whose rates were still out of their band when its window closed
// (the next fault, or the end of the run: report.RecoveryWindowS) has a
// recovery censored there: at least the window's length, not "never". An
// engine with such a fault has a lower bound, the mean with the window's
// length in its place. Against a recovery the other engine measured, the
// row disagrees only when even that bound is beyond the tolerance; when it
// is not, the row is inconclusive, since the run cannot say by how much
// the censored recovery exceeds its window. Censored in both engines is an
// agreement, as "never" in both was. n is the live runs' faults, over the
// seeds.
func compareRecovery(name string, sims, lives []run, tol map[string]float64) Row {
	row := Row{Design: name, Metric: "recovery_s", Tolerance: tol["recovery_s"]}
	for _, l := range lives {
		row.N += int64(len(l.d.RecoveryAfterFaultS))
	}
	sv, lv := recoveryOf(sims), recoveryOf(lives)
	if sv.exact() {
		row.Sim = ptr(sv.lo)
	}
	if lv.exact() {
		row.Live = ptr(lv.lo)
	}
	switch {
	case !sv.any && !lv.any:
		row.Verdict, row.Note = NotCompared, "no fault"
	case !sv.any || !lv.any:
		row.Verdict, row.Note = Disagree, "no fault in "+absent(!sv.any)
	case sv.censored && lv.censored:
		row.Verdict, row.Note = Agree, "never recovered in either engine"
	case sv.censored || lv.censored:
		c, v, which := sv, lv, "simulator"
		if lv.censored {
			c, v, which = lv, sv, "live run"
		}
		row.Tolerance = math.Max(tol["recovery_s"], tol["recovery_s_rel"]*sv.lo)
		gap := c.lo - v.lo
		note := fmt.Sprintf("not recovered in the %s within its window: at least %s s against %s s", which, num(&c.lo), num(&v.lo))
		row.Verdict, row.Note = Inconclusive, note+", a gap the tolerance cannot judge"
		if gap > row.Tolerance {
			row.Diff = ptr(gap)
			row.Verdict, row.Note = Disagree, note+", beyond the tolerance"
		}
	default:
		row.Tolerance = math.Max(tol["recovery_s"], tol["recovery_s_rel"]*math.Abs(sv.lo))
		row.Diff, row.StdErr = ptr(lv.lo-sv.lo), ptr(0)
		row.Verdict = Classify(math.Abs(lv.lo-sv.lo), 0, row.Tolerance)
	}
	return row
}

// recovery is one engine's recovery after a design's slowest fault, the
// mean over its runs: lo seconds, or at least lo when censored (a fault of
// a run had not recovered within its window, and counts as the window's
// length). any is false when no run had a fault.
type recovery struct {
	lo            float64
	censored, any bool
}

func (r recovery) exact() bool { return r.any && !r.censored }

// recoveryOf is the runs' recovery: each fault's mean over the runs that
// hold it, a censored one at its window's length (report.RecoveryWindowS),
// then the slowest of the faults.
func recoveryOf(runs []run) recovery {
	var sums []float64
	var ns []int
	var out recovery
	for _, r := range runs {
		win := report.RecoveryWindowS(&r.d.Series, r.faults)
		for i, fr := range r.d.RecoveryAfterFaultS {
			if i == len(sums) {
				sums, ns = append(sums, 0), append(ns, 0)
			}
			v := 0.0
			switch {
			case fr.Seconds != nil:
				v = *fr.Seconds
			case i < len(win):
				v, out.censored = win[i], true
			default:
				out.censored = true
			}
			sums[i] += v
			ns[i]++
		}
	}
	for i := range sums {
		m := sums[i] / float64(ns[i])
		if !out.any || m > out.lo {
			out.lo = m
		}
		out.any = true
	}
	return out
}

// quantileSE is the standard error of ln(quantile p) of l, from its
// histogram: the samples of rank n·p ± sqrt(n·p·(1−p)) (the binomial
// interval of the order statistic), read off the histogram with log-linear
// interpolation inside a bucket; half the log-distance between them.
func quantileSE(l *report.Latency, p float64) float64 {
	h := l.Histogram
	var n int64
	for _, c := range h.Counts {
		n += c
	}
	if n == 0 || len(h.LeMS) != len(h.Counts) {
		return 0
	}
	sd := math.Sqrt(float64(n) * p * (1 - p))
	lo := quantileAt(h, math.Max(float64(n)*p-sd, 0.5), n)
	hi := quantileAt(h, math.Min(float64(n)*p+sd, float64(n)), n)
	if lo <= 0 || hi <= 0 {
		return 0
	}
	return (math.Log(hi) - math.Log(lo)) / 2
}

// quantileAt is the sample of rank k (1-based, fractional) in histogram h
// of n samples, interpolated log-linearly within its bucket.
func quantileAt(h report.Histogram, k float64, n int64) float64 {
	var below int64
	for i, c := range h.Counts {
		if c == 0 || float64(below+c) < k {
			below += c
			continue
		}
		hi := h.LeMS[i]
		lo := hi / math.Pow(10, 0.1)
		if i > 0 {
			lo = h.LeMS[i-1]
		}
		f := (k - float64(below)) / float64(c)
		return math.Exp(math.Log(lo) + f*(math.Log(hi)-math.Log(lo)))
	}
	return h.LeMS[len(h.LeMS)-1]
}

// CompareRepeats compares runs repeated on successive seeds (sims[i] and
// lives[i] share a seed) on their mean: every design's counts are summed
// over the repeats, so each fraction is the pooled one and its sample the
// pooled n, each replay percentile is the mean of the repeats' (its
// standard error from the pooled histograms), and the store's peak is the
// mean peak, its standard error from the spread of live ÷ sim over the
// seeds.
func CompareRepeats(sims, lives []*report.Report, tol map[string]float64) *Agreement {
	if len(sims) == 1 && len(lives) == 1 {
		return Compare(sims[0], lives[0], tol)
	}
	ps, pl := pool(sims), pool(lives)
	a := Compare(ps, pl, tol)
	a.Repeats = len(lives)
	for i, r := range a.Rows {
		if r.Metric == requestMetrics[0] { // the request rows, over every seed
			copy(a.Rows[i:], requestRows(r.Design, runsOf(sims, r.Design), runsOf(lives, r.Design), tol))
			continue
		}
		if r.Metric == "recovery_s" { // each fault's mean over the seeds
			a.Rows[i] = compareRecovery(r.Design, runsOf(sims, r.Design), runsOf(lives, r.Design), tol)
			continue
		}
		if r.Metric != "store_peak_mib" {
			continue
		}
		var logs []float64
		for k := range min(len(sims), len(lives)) {
			sd, ld := sims[k].Design(r.Design), lives[k].Design(r.Design)
			if sd != nil && ld != nil && sd.Totals.StorePeakBytes > 0 && ld.Totals.StorePeakBytes > 0 {
				logs = append(logs, math.Log(float64(ld.Totals.StorePeakBytes)/float64(sd.Totals.StorePeakBytes)))
			}
		}
		if len(logs) < 2 {
			continue
		}
		m := *mean(logs)
		ss := 0.0
		for _, x := range logs {
			ss += (x - m) * (x - m)
		}
		se := math.Sqrt(ss/float64(len(logs)-1)) / math.Sqrt(float64(len(logs)))
		sd, ld := ps.Design(r.Design), pl.Design(r.Design)
		a.Rows[i] = storePeak(sd, ld, tol["store_peak_factor"], se, int64(len(logs)))
	}
	a.recount()
	return a
}

// pool sums the reports' designs into one report, the first's otherwise:
// the totals the agreement rows read and the replay histograms are added
// up, and each replay percentile is the mean over the reports that have
// one.
func pool(reps []*report.Report) *report.Report {
	out := *reps[0]
	out.Designs = nil
	for _, d0 := range reps[0].Designs {
		d := d0
		d.Totals = report.Totals{}
		var p50, p90 []float64
		d.ReplayLatencyMS.Count = 0
		d.ReplayLatencyMS.Histogram = report.Histogram{LeMS: d0.ReplayLatencyMS.Histogram.LeMS, Counts: make([]int64, len(d0.ReplayLatencyMS.Histogram.Counts))}
		have := int64(0) // the reports that hold the design
		for _, r := range reps {
			x := r.Design(d0.Name)
			if x == nil {
				continue
			}
			have++
			t := &x.Totals
			d.Totals.EventsLost += t.EventsLost
			d.Totals.EventsExpected += t.EventsExpected
			d.Totals.HTTP404 += t.HTTP404
			d.Totals.SessionRequests += t.SessionRequests
			d.Totals.Resumes += t.Resumes
			d.Totals.Drops += t.Drops
			d.Totals.CallsReissued += t.CallsReissued
			d.Totals.CallsFailed += t.CallsFailed
			d.Totals.Reconnects += t.Reconnects
			d.Totals.Calls += t.Calls
			d.Totals.HTTP503 += t.HTTP503
			d.Totals.Requests += t.Requests
			d.Totals.StorePeakBytes += t.StorePeakBytes
			d.ReplayLatencyMS.Count += x.ReplayLatencyMS.Count
			if c := x.ReplayLatencyMS.Histogram.Counts; len(c) == len(d.ReplayLatencyMS.Histogram.Counts) {
				for i := range c {
					d.ReplayLatencyMS.Histogram.Counts[i] += c[i]
				}
			}
			if v := x.ReplayLatencyMS.P50; v != nil {
				p50 = append(p50, *v)
			}
			if v := x.ReplayLatencyMS.P90; v != nil {
				p90 = append(p90, *v)
			}
		}
		d.ReplayLatencyMS.P50, d.ReplayLatencyMS.P90 = mean(p50), mean(p90)
		d.Totals.StorePeakBytes /= have // the mean peak
		out.Designs = append(out.Designs, d)
	}
	return &out
}

// storePeak compares the most the event store held (store_peak_bytes, in
// MiB) as live ÷ sim against a factor: the simulator's store model (the
// in-memory store's bytes per event, Redis's nodes) against what the
// replicas and Redis held. se is the standard error of ln(live ÷ sim) over
// runs seeds (0 for one run: a single peak has no spread to estimate).
func storePeak(sd, ld *report.Design, tol, se float64, runs int64) Row {
	mib := func(b int64) *float64 { return ptr(float64(b) / (1 << 20)) }
	row := Row{Design: ld.Name, Metric: "store_peak_mib", Tolerance: tol, N: runs, Sim: mib(sd.Totals.StorePeakBytes), Live: mib(ld.Totals.StorePeakBytes)}
	switch s, l := sd.Totals.StorePeakBytes, ld.Totals.StorePeakBytes; {
	case ld.IsUnknown("store_peak_bytes"):
		row.Live, row.Verdict, row.Note = nil, NotCompared, "not measured live"
	case s == 0 && l == 0:
		row.Verdict, row.Note = NotCompared, "no store in either engine"
	case s == 0:
		row.Verdict, row.Note = Disagree, "an empty store in the simulator"
	case l == 0:
		row.Verdict, row.Note = Disagree, "an empty store in the live run"
	default:
		r := float64(l) / float64(s)
		row.Diff, row.StdErr = ptr(r), ptr(se)
		row.Verdict = Classify(math.Abs(math.Log(r)), se, math.Log(tol))
		if runs <= 1 {
			row.Note = "one run: no spread to estimate its standard error"
		}
		if ld.Events == "memory" && ld.Server == "" {
			// docs/model.md, "Which rows are identities".
			row.Note = join(row.Note, "identity in bytes per event: the live memory store counts each event with the model's own formula, so this row checks how many events were held, not their size")
		}
	}
	return row
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func mean(v []float64) *float64 {
	if len(v) == 0 {
		return nil
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return ptr(s / float64(len(v)))
}

func scaled(v *float64, k float64) *float64 {
	if v == nil {
		return nil
	}
	return ptr(*v * k)
}

func missing(sim, live *float64) string {
	if sim == nil {
		return "the simulator"
	}
	return "the live run"
}

func (a *Agreement) add(r Row) {
	a.Rows = append(a.Rows, r)
	a.count(r)
}

func (a *Agreement) count(r Row) {
	switch r.Verdict {
	case Agree:
		a.Agreed++
	case Disagree:
		a.Failed++
	case Inconclusive:
		a.Inconclusive++
	default:
		a.NotCompared++
	}
}

// recount counts the verdicts afresh.
func (a *Agreement) recount() {
	a.Agreed, a.Failed, a.Inconclusive, a.NotCompared = 0, 0, 0, 0
	for _, r := range a.Rows {
		a.count(r)
	}
}

// InconclusiveShare is the share of the compared rows that are
// inconclusive, 0 when none was compared.
func (a *Agreement) InconclusiveShare() float64 {
	n := a.Agreed + a.Failed + a.Inconclusive
	if n == 0 {
		return 0
	}
	return float64(a.Inconclusive) / float64(n)
}

// JSON is agreement.json.
func (a *Agreement) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

func num(v *float64) string {
	if v == nil {
		return "n/a"
	}
	return strconv.FormatFloat(*v, 'f', 3, 64)
}

// ratioRow reports whether a metric compares as live ÷ sim.
func ratioRow(metric string) bool {
	return metric == "replay_p50_ms" || metric == "replay_p90_ms" || metric == "store_peak_mib"
}

// Markdown is agreement.md: the summary line, then one row per design and
// metric.
func (a *Agreement) Markdown() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Agreement: %s, seed %d\n\n", a.Scenario, a.Seed)
	fmt.Fprintf(&b, "**%s.**\n\n", a.Summary())
	if a.Repeats > 1 {
		fmt.Fprintf(&b, "Each engine ran %d times, on seeds %d to %d; the rows compare the pooled counts (n is the pooled live sample) and the mean replay percentiles.\n\n", a.Repeats, a.Seed, a.Seed+uint64(a.Repeats)-1)
	}
	b.WriteString("The simulator and the live engine ran the same scenario and seed. Counts compare as live − sim against a tolerance of max(abs, rel·|sim|); replay latency and the store's peak as live ÷ sim against a factor (judged on ln(live ÷ sim) against ln(factor)). " +
		"n is the live sample behind the figure; ±1 SE the standard error of the difference: sqrt(p(1−p)(1/n_sim + 1/n_live)) with p pooled for fractions, Poisson's for reconnects per call, " +
		"the order-statistic interval of each engine's histogram for a replay percentile, the spread over the seeds for the store's peak. " +
		"A row **agrees** when |diff| + 2 SE ≤ tolerance, **disagrees** when |diff| − 2 SE > tolerance, and is **inconclusive** otherwise: its sample is too small to tell, and it is not a pass. " +
		"A row with nothing to compare (no sample in either engine, a live store stormsim cannot measure) is not compared.\n\n")
	b.WriteString("| design | metric | sim | live | diff | tolerance | n | ±1 SE | verdict |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range a.Rows {
		v := r.Verdict
		if v == Disagree {
			v = "**" + v + "**"
		}
		if r.Note != "" {
			v += " (" + r.Note + ")"
		}
		tol := "±" + strconv.FormatFloat(r.Tolerance, 'g', 4, 64)
		se := num(r.StdErr)
		if ratioRow(r.Metric) {
			tol = "×" + strconv.FormatFloat(r.Tolerance, 'g', 4, 64)
			if r.StdErr != nil {
				se = "×" + strconv.FormatFloat(math.Exp(*r.StdErr), 'f', 3, 64) // the SE of ln(live ÷ sim), as a factor
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %d | %s | %s |\n", r.Design, r.Metric, num(r.Sim), num(r.Live), num(r.Diff), tol, r.N, se, v)
	}
	return b.Bytes()
}

// Disagreement is the error of a run whose engines disagree; it exits 98.
type Disagreement struct{ A *Agreement }

func (d *Disagreement) Error() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "agreement: %s", d.A.Summary())
	for _, r := range d.A.Rows {
		if r.Verdict == Disagree {
			fmt.Fprintf(&b, "\n  %s/%s: sim %s, live %s, tolerance %g", r.Design, r.Metric, num(r.Sim), num(r.Live), r.Tolerance)
			if r.StdErr != nil {
				fmt.Fprintf(&b, ", ±1 SE %s", num(r.StdErr))
			}
		}
	}
	return b.String()
}

// ExitCode makes the CLI exit 98.
func (d *Disagreement) ExitCode() int { return ExitCode }
