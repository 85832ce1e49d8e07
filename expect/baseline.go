package expect

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/stormsim/stormsim/report"
)

// BaselineKind marks a baseline file.
const BaselineKind = "stormsim-baseline"

// Baseline is a run reduced to what comparisons need: every metric of every
// design, with the scenario, the engine and the machine architecture. It is
// small enough to commit (results/baseline/<scenario>.json).
type Baseline struct {
	Kind         string `json:"kind"`
	Schema       int    `json:"schema"`
	Scenario     string `json:"scenario"`
	ScenarioHash string `json:"scenario_hash"`
	Engine       string `json:"engine"`
	Seed         uint64 `json:"seed"`
	Arch         string `json:"arch"`
	// Seeds are the seeds of a run over several (a live nightly run with
	// seeds = N); Metrics then hold the means and Values each seed's value.
	Seeds   []uint64     `json:"seeds,omitempty"`
	Designs []DesignBase `json:"designs"`
}

// DesignBase holds one design's metrics; a nil value has none.
type DesignBase struct {
	Name    string              `json:"name"`
	Metrics map[string]*float64 `json:"metrics"`
	// Values holds, for a run over several seeds, each metric's value at
	// each seed (in Baseline.Seeds order; null where it had none).
	Values map[string][]*float64 `json:"values,omitempty"`
}

// FromReport reduces a report to a baseline, recording this machine's
// architecture.
func FromReport(r *report.Report) *Baseline {
	b := &Baseline{Kind: BaselineKind, Schema: r.Schema, Scenario: r.Scenario, ScenarioHash: r.ScenarioHash,
		Engine: r.Engine, Seed: r.Seed, Arch: runtime.GOARCH}
	for i := range r.Designs {
		d := &r.Designs[i]
		db := DesignBase{Name: d.Name, Metrics: map[string]*float64{}}
		for _, m := range report.MetricNames() {
			v, _ := d.Metric(m)
			if v != nil && (math.IsInf(*v, 0) || math.IsNaN(*v)) {
				v = nil // JSON has no infinity; a nil current value still counts as worse
			}
			db.Metrics[m] = v
		}
		if overLive(r) {
			overSeeds(&db, r.OverSeeds)
		}
		b.Designs = append(b.Designs, db)
	}
	if overLive(r) {
		b.Seeds = r.OverSeeds.Seeds
	}
	return b
}

// overLive says whether a report's baseline holds its seeds: a live run
// over several. A simulated run is deterministic, so its baseline stays the
// first seed's values, compared exactly; the spread between seeds is not
// noise between two runs of the same seeds.
func overLive(r *report.Report) bool {
	return r.Engine == "live" && r.OverSeeds != nil && len(r.OverSeeds.Seeds) > 1
}

// JSON encodes b with sorted keys, so the same run gives the same bytes.
func (b *Baseline) JSON() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", " ")
	if err := enc.Encode(b); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ReadRun loads a run to compare: a baseline file, a report.json, or a run
// folder holding one. Anything else is refused with the reason.
func ReadRun(path string) (*Baseline, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, "report.json")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	var head struct {
		Kind   string `json:"kind"`
		Schema int    `json:"schema"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("compare: %s: not a report or baseline: %w", path, err)
	}
	if head.Schema != report.Schema {
		return nil, fmt.Errorf("compare: %s: schema %d is not supported (this stormsim reads schema %d); refresh it with make baseline", path, head.Schema, report.Schema)
	}
	if head.Kind == BaselineKind {
		var b Baseline
		if err := json.Unmarshal(data, &b); err != nil {
			return nil, fmt.Errorf("compare: %s: %w", path, err)
		}
		return &b, nil
	}
	r, err := report.Parse(path, data)
	if err != nil {
		return nil, err
	}
	b := FromReport(r)
	b.Arch = "" // a report does not record where it ran
	return b, nil
}

// Direction says whether a metric is worse when it rises (+1), when it
// falls (-1), or is neither (0: the load, or resumes, events_replayed and
// drops, which move with the storm either way).
func Direction(metric string) int {
	switch metric {
	case "calls_completed", "events_delivered", "requests_completed_fraction", "goodput_after_peak_ratio":
		return -1
	case "calls", "events_expected", "requests", "session_requests", "resumes", "events_replayed", "drops":
		return 0
	}
	return +1
}

// Compared says whether Compare holds a metric to its baseline: every
// metric but the load (calls, events_expected, requests, session_requests),
// which the scenario sets rather than the server earns.
func Compared(metric string) bool {
	switch metric {
	case "calls", "events_expected", "requests", "session_requests":
		return false
	}
	return true
}

// Tolerances are relative tolerances per metric; "*" sets the default.
type Tolerances map[string]float64

// DefaultTolerances are the tolerances for an engine. The simulator is
// deterministic, so lost events and 404s must not rise at all and the rest
// may move 5%; live runs are noisy, and get 10% on everything.
func DefaultTolerances(engine string) Tolerances {
	if engine == "sim" {
		t := Tolerances{"*": 0.05}
		for _, m := range []string{"events_lost", "lost_purged", "lost_unproduced", "lost_abandoned", "lost_other", "lost_fraction", "http_404", "rate_404"} {
			t[m] = 0
		}
		return t
	}
	return Tolerances{"*": 0.10}
}

// ParseTolerances reads "metric=rel,metric=rel" on top of defaults.
func ParseTolerances(s string, base Tolerances) (Tolerances, error) {
	t := Tolerances{}
	for k, v := range base {
		t[k] = v
	}
	if s == "" {
		return t, nil
	}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return nil, fmt.Errorf("--tolerance %q: want metric=relative, for example events_lost=0.1", part)
		}
		if k != "*" && !report.IsMetric(k) {
			return nil, fmt.Errorf("--tolerance %q: %q is not a metric (metrics: %s)", part, k, strings.Join(report.MetricNames(), ", "))
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("--tolerance %q: %q is not a non-negative number", part, v)
		}
		t[k] = f
	}
	return t, nil
}

func (t Tolerances) of(metric string) float64 {
	if v, ok := t[metric]; ok {
		return v
	}
	return t["*"]
}

// Change is one metric of one design that moved beyond its tolerance:
// for the worse (a regression), for the better, or either way for a metric
// that is neither (resumes, events_replayed, drops).
type Change struct {
	Design, Metric string
	Base, Cur      *float64
	Tolerance      float64
	// Kind is KindWorse, KindBetter or KindChanged.
	Kind string
	// Half is the half-width of the 95% interval of the difference of the
	// means, when both runs hold several seeds (0 otherwise): the change is
	// beyond its tolerance by more than that.
	Half float64
}

// Kinds of Change.
const (
	KindWorse   = "worse"
	KindBetter  = "better"
	KindChanged = "changed"
)

func (c Change) String() string {
	f := func(v *float64) string {
		if v == nil {
			return "n/a"
		}
		return human(*v)
	}
	rel := ""
	if c.Base != nil && c.Cur != nil {
		d := *c.Cur - *c.Base
		if *c.Base != 0 {
			rel = fmt.Sprintf(", %+.1f%%", 100*d/math.Abs(*c.Base))
		}
		sign := "+"
		if d < 0 {
			sign = ""
		}
		if c.Half > 0 {
			rel += " ± " + human(c.Half) + " (95%, over the seeds)"
		}
		rel = fmt.Sprintf(" (%s%s%s)", sign, human(d), rel)
	}
	s := fmt.Sprintf("%s/%s: %s -> %s%s, tolerance %g%%", c.Design, c.Metric, f(c.Base), f(c.Cur), rel, 100*c.Tolerance)
	switch c.Kind {
	case KindBetter:
		s += ": better, changed: refresh the baseline"
	case KindChanged:
		s += ": changed: refresh the baseline"
	}
	return s
}

// Comparison is the result of comparing a run with its baseline.
type Comparison struct {
	Scenario string
	Notes    []string // cross-architecture, designs dropped from the run
	// Skipped says why the metrics were not compared at all ("" when they
	// were): a run at another seed than the baseline's is another sample,
	// and its differences are the spread over seeds, not regressions.
	Skipped     string
	Regressions []Change
	// Changed are the metrics that moved beyond tolerance for the better
	// (KindBetter), or either way where neither is better (KindChanged):
	// the baseline no longer describes the run, so it must be refreshed
	// on purpose.
	Changed []Change
	Missing []string // designs of the run with no baseline: nothing holds them
}

// Failing is every change that fails the comparison: the regressions, and
// the other changes unless acceptBetter lets every change that is not for
// the worse pass (the better ones, and resumes, events_replayed and drops
// moving with them).
func (c *Comparison) Failing(acceptBetter bool) []Change {
	out := slices.Clone(c.Regressions)
	if !acceptBetter {
		out = append(out, c.Changed...)
	}
	return out
}

// ErrMismatch is returned when two runs cannot be compared.
var ErrMismatch = errors.New("compare: runs do not match")

// Compare finds the metrics of cur that moved beyond tol from base, in
// either direction. A metric the baseline does not know (null) is not
// compared. When both runs hold a metric's values over several seeds, a
// change must clear its tolerance by more than the 95% interval of the
// difference of the means (Welch's t over the seeds).
func Compare(base, cur *Baseline, tol Tolerances) (*Comparison, error) {
	if base.Scenario != cur.Scenario {
		return nil, fmt.Errorf("%w: the baseline is for scenario %q, the run is %q", ErrMismatch, base.Scenario, cur.Scenario)
	}
	c := &Comparison{Scenario: cur.Scenario}
	if base.Engine != "" && cur.Engine != "" && base.Engine != cur.Engine {
		return nil, fmt.Errorf("%w: the baseline of %s is a %s run, this one is a %s run", ErrMismatch, base.Scenario, base.Engine, cur.Engine)
	}
	if base.Seed != cur.Seed {
		c.Skipped = fmt.Sprintf("the baseline was recorded at seed %d and this run is at seed %d: "+
			"their differences are the spread over seeds, not regressions, so only the thresholds judge this run", base.Seed, cur.Seed)
		c.Notes = append(c.Notes, c.Skipped)
		return c, nil
	}
	curArch := cur.Arch
	if curArch == "" {
		curArch = runtime.GOARCH
	}
	if base.Arch != "" && base.Arch != curArch {
		c.Notes = append(c.Notes, fmt.Sprintf("the baseline was recorded on %s, this run on %s: numbers may differ for that reason alone", base.Arch, curArch))
	}
	if base.ScenarioHash != cur.ScenarioHash {
		c.Notes = append(c.Notes, "the scenario's settings changed since the baseline was recorded")
	}
	if len(base.Seeds) > 1 && len(cur.Seeds) > 1 {
		c.Notes = append(c.Notes, fmt.Sprintf("compared over the seeds: %d in the baseline, %d in this run; a change must clear its tolerance by more than the 95%% interval of the difference of the means", len(base.Seeds), len(cur.Seeds)))
	}
	byName := map[string]DesignBase{}
	for _, d := range cur.Designs {
		byName[d.Name] = d
	}
	for _, bd := range base.Designs {
		cd, ok := byName[bd.Name]
		if !ok {
			c.Notes = append(c.Notes, fmt.Sprintf("design %s is in the baseline but not in the run", bd.Name))
			continue
		}
		metrics := make([]string, 0, len(bd.Metrics))
		for m := range bd.Metrics {
			metrics = append(metrics, m)
		}
		sort.Strings(metrics)
		for _, m := range metrics {
			if !Compared(m) || !report.IsMetric(m) {
				continue
			}
			dir := Direction(m)
			b, cv := bd.Metrics[m], cd.Metrics[m]
			ch := Change{Design: bd.Name, Metric: m, Base: b, Cur: cv, Tolerance: tol.of(m)}
			switch {
			case b == nil:
				continue // unknown in the baseline: nothing to hold it to
			case cv == nil:
				// Known before, unknown now: the run lost the figure.
				ch.Kind = KindWorse
				if dir == 0 {
					ch.Kind = KindChanged
				}
			default:
				d := *cv - *b
				ch.Half = welchHalf(bd.Values[m], cd.Values[m])
				if math.Abs(d)-ch.Half <= ch.Tolerance*math.Abs(*b) {
					continue
				}
				switch {
				case dir == 0:
					ch.Kind = KindChanged
				case (d > 0) == (dir > 0):
					ch.Kind = KindWorse
				default:
					ch.Kind = KindBetter
				}
			}
			if ch.Kind == KindWorse {
				c.Regressions = append(c.Regressions, ch)
			} else {
				c.Changed = append(c.Changed, ch)
			}
		}
	}
	for _, d := range cur.Designs {
		if !slices.ContainsFunc(base.Designs, func(b DesignBase) bool { return b.Name == d.Name }) {
			c.Missing = append(c.Missing, d.Name)
		}
	}
	return c, nil
}

// human formats v for people: integers whole, other numbers to six
// significant digits without an exponent where one can be avoided (the
// floating-point residue of a subtraction, 11078.024999999994, reads
// 11078.025). JSON keeps the exact values.
func human(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 6, 64), 64)
	if a := math.Abs(r); a >= 1e-4 && a < 1e15 {
		return strconv.FormatFloat(r, 'f', -1, 64)
	}
	return strconv.FormatFloat(r, 'g', -1, 64)
}
