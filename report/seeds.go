package report

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// OverSeeds holds every design's metrics over several seeds of one
// scenario: each seed's value, and their mean, range and 95% interval.
// A claim that holds at one seed may not hold at the next; these say how
// far the seeds spread.
type OverSeeds struct {
	Seeds   []uint64     `json:"seeds"`
	Designs []SeedDesign `json:"designs"`
	// Orderings are the scenario's claims about designs, each with how
	// often it held.
	Orderings []OrderingResult `json:"orderings,omitempty"`
}

// SeedDesign is one design's metrics over the seeds, by metric name.
type SeedDesign struct {
	Name    string               `json:"name"`
	Metrics map[string]SeedStats `json:"metrics"`
}

// SeedStats is one metric over the seeds. Values has one entry per seed,
// in OverSeeds.Seeds order, nil where the metric had no value; the
// summaries are over the values that exist, and nil when none does. The
// interval is the mean's 95% confidence interval (Student's t over the
// seeds), nil with fewer than two values.
type SeedStats struct {
	Values []*float64 `json:"values"`
	N      int        `json:"n"`
	Mean   *float64   `json:"mean"`
	Min    *float64   `json:"min"`
	Max    *float64   `json:"max"`
	CI95Lo *float64   `json:"ci95_lo"`
	CI95Hi *float64   `json:"ci95_hi"`
}

// Over summarises reports of the same scenario at different seeds, design
// by design in the first report's order.
func Over(reps []*Report) *OverSeeds {
	o := &OverSeeds{}
	for _, r := range reps {
		o.Seeds = append(o.Seeds, r.Seed)
	}
	if len(reps) == 0 {
		return o
	}
	for _, d := range reps[0].Designs {
		sd := SeedDesign{Name: d.Name, Metrics: map[string]SeedStats{}}
		for _, m := range MetricNames() {
			var vals []*float64
			for _, r := range reps {
				var v *float64
				if rd := r.Design(d.Name); rd != nil {
					if x, ok := rd.Metric(m); ok && x != nil && !math.IsNaN(*x) && !math.IsInf(*x, 0) {
						v = x
					}
				}
				vals = append(vals, v)
			}
			sd.Metrics[m] = Stats(vals)
		}
		o.Designs = append(o.Designs, sd)
	}
	return o
}

// WithOverSeeds is the first of reps (runs of one scenario at successive
// seeds) with every run's metrics attached as over_seeds; reps[0] itself
// is left as it was.
func WithOverSeeds(reps []*Report) *Report {
	top := *reps[0]
	top.OverSeeds = Over(reps)
	return &top
}

// Stats summarises one metric's values over the seeds.
func Stats(vals []*float64) SeedStats {
	s := SeedStats{Values: vals}
	var xs []float64
	for _, v := range vals {
		if v != nil {
			xs = append(xs, *v)
		}
	}
	s.N = len(xs)
	if s.N == 0 {
		return s
	}
	f := func(x float64) *float64 { return &x }
	lo, hi := xs[0], xs[0]
	for _, x := range xs {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	mean := stat.Mean(xs, nil)
	s.Mean, s.Min, s.Max = f(mean), f(lo), f(hi)
	if s.N > 1 {
		half := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(s.N - 1)}.Quantile(0.975) * stat.StdDev(xs, nil) / math.Sqrt(float64(s.N))
		s.CI95Lo, s.CI95Hi = f(mean-half), f(mean+half)
	}
	return s
}

// Mean is a design's mean of a metric over the seeds: ok is false for a
// design or metric it does not hold; a nil value means no seed had one.
func (o *OverSeeds) Mean(design, metric string) (v *float64, ok bool) {
	for _, d := range o.Designs {
		if d.Name == design {
			s, ok := d.Metrics[metric]
			return s.Mean, ok
		}
	}
	return nil, false
}

// seedColumns are the over-seeds table's columns: a head and its metric.
var seedColumns = [][2]string{
	{"calls", "calls"}, {"failed", "calls_failed"}, {"reissued", "calls_reissued"}, {"lost", "events_lost"},
	{"lost%", "lost_fraction"}, {"replayed", "events_replayed"}, {"404s", "http_404"}, {"rate_404", "rate_404"},
	{"resumes", "resumes"}, {"reconnects", "reconnects"}, {"replay p99 ms", "replay_latency_ms_p99"},
	{"recovery s", "recovery_after_fault_s"}, {"store peak", "store_peak_bytes"},
}

// SeedTableRows is the table of designs over the seeds: each cell the mean
// and, with more than one seed, ± the half-width of its 95% interval.
func (o *OverSeeds) SeedTableRows() ([]string, [][]string) {
	head := []string{"design"}
	for _, c := range seedColumns {
		head = append(head, c[0])
	}
	var rows [][]string
	for _, d := range o.Designs {
		row := []string{d.Name}
		for _, c := range seedColumns {
			row = append(row, seedCell(c[1], d.Metrics[c[1]]))
		}
		rows = append(rows, row)
	}
	return head, rows
}

func seedCell(metric string, s SeedStats) string {
	if s.Mean == nil {
		return "n/a"
	}
	show := func(v float64) string {
		switch {
		case metric == "lost_fraction":
			return strconv.FormatFloat(100*v, 'f', 1, 64) + "%"
		case metric == "rate_404":
			return strconv.FormatFloat(v, 'f', 3, 64)
		case metric == "store_peak_bytes":
			return humanBytes(int64(math.Round(v)))
		case math.Abs(v) >= 100 || v == math.Trunc(v):
			return strconv.FormatFloat(v, 'f', 0, 64)
		}
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	out := show(*s.Mean)
	if s.CI95Hi != nil {
		if half := *s.CI95Hi - *s.Mean; half > 0 {
			out += " ±" + strings.TrimPrefix(show(half), "+")
		}
	}
	return out
}

// WriteSeedTable prints the over-seeds table for a terminal.
func (r *Report) WriteSeedTable(w io.Writer) error {
	if r.OverSeeds == nil {
		return fmt.Errorf("report: %s has no over_seeds block", r.Scenario)
	}
	o := r.OverSeeds
	fmt.Fprintf(w, "%s (seeds %s, %s engine): the mean over %d seeds ± the half-width of its 95%% interval\n",
		r.Scenario, seedRange(o.Seeds), r.Engine, len(o.Seeds))
	head, rows := o.SeedTableRows()
	return writeTab(w, head, rows)
}

// seedRange names seeds a..b when they run in a row, else lists them.
func seedRange(seeds []uint64) string {
	if len(seeds) == 0 {
		return ""
	}
	run := true
	for i := range seeds {
		run = run && seeds[i] == seeds[0]+uint64(i)
	}
	if run && len(seeds) > 1 {
		return fmt.Sprintf("%d-%d", seeds[0], seeds[len(seeds)-1])
	}
	var s []string
	for _, x := range seeds {
		s = append(s, strconv.FormatUint(x, 10))
	}
	return strings.Join(s, ",")
}

// OrderingResult is how often one design's metric was lower than
// another's over the seeds. A seed where a design has no value counts it
// as the higher (for the time to recover: it never recovered).
type OrderingResult struct {
	Metric string `json:"metric"`
	Lower  string `json:"lower"`
	Higher string `json:"higher"`
	// Holds counts the seeds where Lower's value was below Higher's, Ties
	// those where they were equal, Seeds every seed compared.
	Holds int `json:"holds"`
	Ties  int `json:"ties"`
	Seeds int `json:"seeds"`
}

func (o OrderingResult) String() string {
	s := fmt.Sprintf("%s: %s below %s in %d of %d seeds", o.Metric, o.Lower, o.Higher, o.Holds, o.Seeds)
	if o.Ties > 0 {
		s += fmt.Sprintf(" (%d equal)", o.Ties)
	}
	return s
}

// Order counts the seeds where design lower's metric was below higher's.
func (o *OverSeeds) Order(metric, lower, higher string) OrderingResult {
	res := OrderingResult{Metric: metric, Lower: lower, Higher: higher, Seeds: len(o.Seeds)}
	vals := func(name string) []*float64 {
		for _, d := range o.Designs {
			if d.Name == name {
				return d.Metrics[metric].Values
			}
		}
		return nil
	}
	lv, hv := vals(lower), vals(higher)
	at := func(vs []*float64, i int) float64 {
		if i >= len(vs) || vs[i] == nil {
			return math.Inf(1)
		}
		return *vs[i]
	}
	for i := range o.Seeds {
		a, b := at(lv, i), at(hv, i)
		switch {
		case a < b:
			res.Holds++
		case a == b:
			res.Ties++
		}
	}
	return res
}
