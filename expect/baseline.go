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
	Kind         string       `json:"kind"`
	Schema       int          `json:"schema"`
	Scenario     string       `json:"scenario"`
	ScenarioHash string       `json:"scenario_hash"`
	Engine       string       `json:"engine"`
	Seed         uint64       `json:"seed"`
	Arch         string       `json:"arch"`
	Designs      []DesignBase `json:"designs"`
}

// DesignBase holds one design's metrics; a nil value has none.
type DesignBase struct {
	Name    string              `json:"name"`
	Metrics map[string]*float64 `json:"metrics"`
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
		b.Designs = append(b.Designs, db)
	}
	return b
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
// falls (-1), or is neither (0: it describes the load, not the outcome).
func Direction(metric string) int {
	switch metric {
	case "calls_completed", "events_delivered":
		return -1
	case "calls", "events_expected", "requests", "session_requests", "resumes", "events_replayed", "drops":
		return 0
	}
	return +1
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

// Change is one metric of one design that moved the wrong way.
type Change struct {
	Design, Metric string
	Base, Cur      *float64
	Tolerance      float64
}

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
		rel = fmt.Sprintf(" (%s%s%s)", sign, human(d), rel)
	}
	return fmt.Sprintf("%s/%s: %s -> %s%s, tolerance %g%%", c.Design, c.Metric, f(c.Base), f(c.Cur), rel, 100*c.Tolerance)
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
	Missing     []string // designs of the run with no baseline: nothing holds them
}

// ErrMismatch is returned when two runs cannot be compared.
var ErrMismatch = errors.New("compare: runs do not match")

// Compare finds the metrics of cur that got worse than in base beyond tol.
func Compare(base, cur *Baseline, tol Tolerances) (*Comparison, error) {
	if base.Scenario != cur.Scenario {
		return nil, fmt.Errorf("%w: the baseline is for scenario %q, the run is %q", ErrMismatch, base.Scenario, cur.Scenario)
	}
	c := &Comparison{Scenario: cur.Scenario}
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
			dir := Direction(m)
			if dir == 0 || !report.IsMetric(m) {
				continue
			}
			b, cv := bd.Metrics[m], cd.Metrics[m]
			t := tol.of(m)
			switch {
			case b == nil:
				continue // nothing to hold it to
			case cv == nil:
				c.Regressions = append(c.Regressions, Change{Design: bd.Name, Metric: m, Base: b, Cur: cv, Tolerance: t})
			case worse(*b, *cv, dir, t):
				c.Regressions = append(c.Regressions, Change{Design: bd.Name, Metric: m, Base: b, Cur: cv, Tolerance: t})
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

func worse(b, c float64, dir int, tol float64) bool {
	slack := tol * math.Abs(b)
	if dir > 0 {
		return c > b+slack
	}
	return c < b-slack
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
