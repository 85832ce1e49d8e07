// Package agree compares a simulator report with a live report of the same
// scenario and seed, design by design, and says where the model disagrees
// with the real thing by more than the scenario's tolerances
// ([scenario.NAME.agreement]):
//
//	a := agree.Compare(simReport, liveReport, agree.TolerancesOf(sc))
//	os.WriteFile("agreement.md", a.Markdown(), 0o644)
//	if a.Failed > 0 { return &agree.Disagreement{A: a} } // exit 98
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

// Defaults are the tolerances a scenario does not set: ±0.05 absolute on
// the fractions and rate_404, ±5 re-issues per 100 calls, a factor of 2 on
// replay latency, a factor of 1.25 on the store's peak size.
var Defaults = map[string]float64{
	"lost_fraction": 0.05, "rate_404": 0.05, "resumed_fraction": 0.05,
	"reissued_per_100": 5, "replay_latency_factor": 2, "store_peak_factor": 1.25,
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
	Design    string   `json:"design"`
	Metric    string   `json:"metric"`
	Sim       *float64 `json:"sim"`
	Live      *float64 `json:"live"`
	Diff      *float64 `json:"diff"` // live − sim; live ÷ sim for latencies
	Tolerance float64  `json:"tolerance"`
	// N is the live sample the figure rests on (events, session requests,
	// drops, calls or replays); StdErr the standard error of the live
	// fraction, sqrt(p(1−p)/N), in the metric's unit.
	N      int64    `json:"n"`
	StdErr *float64 `json:"std_err"`
	Pass   bool     `json:"pass"`
	// Inconclusive: the row is outside its tolerance, but its sample is
	// too small to judge it (one standard error is more than a third of the
	// tolerance, and the excess is under two); it does not fail.
	Inconclusive bool   `json:"inconclusive,omitempty"`
	Note         string `json:"note,omitempty"`
}

// Agreement is the comparison of two reports.
type Agreement struct {
	Scenario string `json:"scenario"`
	Seed     uint64 `json:"seed"`
	// Repeats is how many runs of each engine were pooled (--repeat), on
	// seeds Seed, Seed+1, …; 0 or 1 for one.
	Repeats int   `json:"repeats,omitempty"`
	Rows    []Row `json:"rows"`
	Failed  int   `json:"failed"`
	// Inconclusive counts rows whose sample was too small to judge.
	Inconclusive int `json:"inconclusive"`
}

func ratio(n, d int64) *float64 {
	if d <= 0 {
		return nil
	}
	v := float64(n) / float64(d)
	return &v
}

func ptr(v float64) *float64 { return &v }

// fraction is one fraction metric: its value and its sample.
type fraction struct {
	name  string
	scale float64 // 1, or 100 for per-100 figures
	get   func(t *report.Totals) (n, d int64)
}

var fractions = []fraction{
	{"lost_fraction", 1, func(t *report.Totals) (int64, int64) { return t.EventsLost, t.EventsExpected }},
	{"rate_404", 1, func(t *report.Totals) (int64, int64) { return t.HTTP404, t.SessionRequests }},
	{"resumed_fraction", 1, func(t *report.Totals) (int64, int64) { return t.Resumes, t.Drops }},
	{"reissued_per_100", 100, func(t *report.Totals) (int64, int64) { return t.CallsReissued, t.Calls }},
}

// Compare lines up every design both reports hold.
func Compare(sim, live *report.Report, tol map[string]float64) *Agreement {
	a := &Agreement{Scenario: live.Scenario, Seed: live.Seed, Rows: []Row{}}
	for _, ld := range live.Designs {
		sd := sim.Design(ld.Name)
		if sd == nil {
			a.add(Row{Design: ld.Name, Metric: "design", Note: "missing in the simulator's report"})
			continue
		}
		for _, f := range fractions {
			sn, sdn := f.get(&sd.Totals)
			ln, ldn := f.get(&ld.Totals)
			row := Row{Design: ld.Name, Metric: f.name, Tolerance: tol[f.name], N: ldn}
			if sv, lv := ratio(sn, sdn), ratio(ln, ldn); sv != nil && lv != nil {
				s, l := *sv*f.scale, *lv*f.scale
				row.Sim, row.Live, row.Diff = ptr(s), ptr(l), ptr(l-s)
				// The standard error of the difference, from the pooled
				// fraction and both samples.
				p := float64(sn+ln) / float64(sdn+ldn)
				se := f.scale * math.Sqrt(p*(1-p)*(1/float64(sdn)+1/float64(ldn)))
				row.StdErr = ptr(se)
				row.Pass = math.Abs(l-s) <= row.Tolerance+1e-12
				if !row.Pass && se > row.Tolerance/3 && math.Abs(l-s)-row.Tolerance < 2*se {
					row.Pass, row.Inconclusive = true, true
					row.Note = fmt.Sprintf("inconclusive: n too small, ±1 SE %.3f is over a third of the tolerance", se)
				}
			} else {
				row.Sim, row.Live = scaled(sv, f.scale), scaled(lv, f.scale)
				row.Pass = sv == nil && lv == nil
				row.Note = "no sample in " + missing(sv, lv)
				if row.Pass {
					row.Note = "no sample in either engine"
				}
			}
			a.add(row)
		}
		for _, q := range []struct {
			name     string
			sim, liv *float64
		}{
			{"replay_p50_ms", sd.ReplayLatencyMS.P50, ld.ReplayLatencyMS.P50},
			{"replay_p90_ms", sd.ReplayLatencyMS.P90, ld.ReplayLatencyMS.P90},
		} {
			row := Row{Design: ld.Name, Metric: q.name, Sim: q.sim, Live: q.liv, Tolerance: tol["replay_latency_factor"], N: ld.ReplayLatencyMS.Count}
			switch {
			case q.sim != nil && q.liv != nil && *q.sim > 0:
				r := *q.liv / *q.sim
				row.Diff = ptr(r)
				row.Pass = r <= row.Tolerance && r >= 1/row.Tolerance
			case q.sim == nil && q.liv == nil:
				row.Pass, row.Note = true, "no replays in either engine"
			default:
				row.Note = "no replays in " + missing(q.sim, q.liv)
			}
			a.add(row)
		}
		a.add(storePeak(sd, &ld, tol["store_peak_factor"]))
	}
	for _, sd := range sim.Designs {
		if live.Design(sd.Name) == nil {
			a.add(Row{Design: sd.Name, Metric: "design", Note: "missing in the live report"})
		}
	}
	return a
}

// CompareRepeats compares runs repeated on successive seeds (sims[i] and
// lives[i] share a seed) on their mean: every design's counts are summed
// over the repeats, so each fraction is the pooled one and its sample the
// pooled n, and each replay percentile is the mean of the repeats'.
func CompareRepeats(sims, lives []*report.Report, tol map[string]float64) *Agreement {
	if len(sims) == 1 && len(lives) == 1 {
		return Compare(sims[0], lives[0], tol)
	}
	a := Compare(pool(sims), pool(lives), tol)
	a.Repeats = len(lives)
	return a
}

// pool sums the reports' designs into one report, the first's otherwise:
// the totals the agreement rows read are added up, and each replay
// percentile is the mean over the reports that have one.
func pool(reps []*report.Report) *report.Report {
	out := *reps[0]
	out.Designs = nil
	for _, d0 := range reps[0].Designs {
		d := d0
		d.Totals = report.Totals{}
		var p50, p90 []float64
		d.ReplayLatencyMS.Count = 0
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
			d.Totals.Calls += t.Calls
			d.Totals.StorePeakBytes += t.StorePeakBytes
			d.ReplayLatencyMS.Count += x.ReplayLatencyMS.Count
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
// replicas and Redis held.
func storePeak(sd, ld *report.Design, tol float64) Row {
	mib := func(b int64) *float64 { return ptr(float64(b) / (1 << 20)) }
	row := Row{Design: ld.Name, Metric: "store_peak_mib", Tolerance: tol, Sim: mib(sd.Totals.StorePeakBytes), Live: mib(ld.Totals.StorePeakBytes)}
	switch s, l := sd.Totals.StorePeakBytes, ld.Totals.StorePeakBytes; {
	case ld.IsUnknown("store_peak_bytes"):
		row.Live, row.Pass, row.Note = nil, true, "not measured live"
	case s == 0 && l == 0:
		row.Pass, row.Note = true, "no store in either engine"
	case s == 0:
		row.Note = "an empty store in the simulator"
	case l == 0:
		row.Note = "an empty store in the live run"
	default:
		r := float64(l) / float64(s)
		row.Diff = ptr(r)
		row.Pass = r <= tol && r >= 1/tol
	}
	return row
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
	if !r.Pass {
		a.Failed++
	}
	if r.Inconclusive {
		a.Inconclusive++
	}
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

// Markdown is agreement.md: one row per design and metric.
func (a *Agreement) Markdown() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Agreement: %s, seed %d\n\n", a.Scenario, a.Seed)
	if a.Repeats > 1 {
		fmt.Fprintf(&b, "Each engine ran %d times, on seeds %d to %d; the rows compare the pooled counts (n is the pooled live sample) and the mean replay percentiles.\n\n", a.Repeats, a.Seed, a.Seed+uint64(a.Repeats)-1)
	}
	fmt.Fprintf(&b, "The simulator and the live engine ran the same scenario and seed. Fractions compare as live − sim against an absolute tolerance; replay latency as live ÷ sim against a factor. n is the live sample behind the figure, and ±1 SE the standard error of the difference, sqrt(p(1−p)(1/n_sim + 1/n_live)) with p pooled; a row outside its tolerance whose ±1 SE is over a third of the tolerance, and whose excess over the tolerance is under 2 SE, is reported inconclusive (its sample is too small to judge), not failed.\n\n")
	fmt.Fprintf(&b, "%d of %d rows outside their tolerance; %d inconclusive.\n\n", a.Failed, len(a.Rows), a.Inconclusive)
	b.WriteString("| design | metric | sim | live | diff | tolerance | n | ±1 SE | agrees |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range a.Rows {
		ok := "yes"
		if !r.Pass {
			ok = "**no**"
		}
		if r.Note != "" {
			ok += " (" + r.Note + ")"
		}
		tol := "±" + strconv.FormatFloat(r.Tolerance, 'f', -1, 64)
		if r.Metric == "replay_p50_ms" || r.Metric == "replay_p90_ms" || r.Metric == "store_peak_mib" {
			tol = "×" + strconv.FormatFloat(r.Tolerance, 'f', -1, 64)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %d | %s | %s |\n", r.Design, r.Metric, num(r.Sim), num(r.Live), num(r.Diff), tol, r.N, num(r.StdErr), ok)
	}
	return b.Bytes()
}

// Disagreement is the error of a run whose engines disagree; it exits 98.
type Disagreement struct{ A *Agreement }

func (d *Disagreement) Error() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "agreement: %d row(s) outside tolerance", d.A.Failed)
	for _, r := range d.A.Rows {
		if !r.Pass {
			fmt.Fprintf(&b, "\n  %s/%s: sim %s, live %s, tolerance %g", r.Design, r.Metric, num(r.Sim), num(r.Live), r.Tolerance)
		}
	}
	return b.String()
}

// ExitCode makes the CLI exit 98.
func (d *Disagreement) ExitCode() int { return ExitCode }
