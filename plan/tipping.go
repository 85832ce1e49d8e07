package plan

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
	"github.com/stormsim/stormsim/sim"
)

// RecoveryMetric is the metric a tipping search judges: seconds from the
// end of a trigger until goodput is back (+Inf when it stays stuck).
const RecoveryMetric = "goodput_recovered_s"

// Tipping search defaults: seeds per probe, the share of them that must
// meet the recovery goal, and the resolution as a fraction of the range.
const (
	DefaultTippingSeeds     = 5
	DefaultTippingFrequency = 0.8
	DefaultResolutionParts  = 20
)

// TippingRange is a --tipping KEY=LO..HI: the load key and the range the
// search bisects.
type TippingRange struct {
	Axis   Axis // Key and Kind; Values are LO and HI
	Lo, Hi float64
}

// ParseTipping reads --tipping KEY=LO..HI: a numeric scenario key and a
// range with LO < HI (durations with their unit, sizes as in ParseSweep).
// Every error names the key and what is wrong.
func ParseTipping(spec string) (TippingRange, error) {
	key, vals, found := strings.Cut(spec, "=")
	key = strings.TrimSpace(key)
	if !found || key == "" {
		return TippingRange{}, fmt.Errorf("--tipping %q: want KEY=LO..HI, for example workload.arrival_rate=40..300", spec)
	}
	kind, ok := KindOf(key)
	if !ok {
		return TippingRange{}, unknownKey("--tipping "+key, key)
	}
	where := "--tipping " + key
	lo, hi, isRange := strings.Cut(strings.TrimSpace(vals), "..")
	if !isRange {
		return TippingRange{}, fmt.Errorf("%s: %q is not a range: want LO..HI, for example 40..300", where, strings.TrimSpace(vals))
	}
	lov, err := parseValue(key, kind, lo)
	if err != nil {
		return TippingRange{}, fmt.Errorf("%s: range start: %w", where, err)
	}
	hiv, err := parseValue(key, kind, hi)
	if err != nil {
		return TippingRange{}, fmt.Errorf("%s: range end: %w", where, err)
	}
	ax := Axis{Key: key, Kind: kind, Spec: key + "=" + strings.TrimSpace(vals)}
	lov, hiv = round(kind, lov, true), round(kind, hiv, true)
	if lov >= hiv {
		return TippingRange{}, fmt.Errorf("%s: empty range: LO %s is not below HI %s", where, ax.Text(lov), ax.Text(hiv))
	}
	if lov < 0 {
		return TippingRange{}, fmt.Errorf("%s: LO %s is negative", where, ax.Text(lov))
	}
	ax.Values = []float64{lov, hiv}
	return TippingRange{Axis: ax, Lo: lov, Hi: hiv}, nil
}

// TippingOptions tunes a tipping search. A nil *TippingOptions means the
// defaults; otherwise Seeds and Frequency must be set.
type TippingOptions struct {
	// Base are --set overrides every probe shares; none may name the key.
	Base []string
	// Designs searches only these designs; nil searches the scenario's.
	Designs []string
	// Seeds is the number of seeds per probe: the scenario's seed S and
	// S+1, ..., S+Seeds-1, at least 1 (DefaultTippingSeeds).
	Seeds int
	// Frequency is the share of a probe's seeds that must meet the goal
	// for the probe to count as recovered, in (0, 1]
	// (DefaultTippingFrequency).
	Frequency float64
	// Resolution, in the key's units, stops the bisection once the
	// bracket is no wider; 0 means (HI-LO)/DefaultResolutionParts (at
	// least 1 for an integer key, 1 ms for a duration).
	Resolution float64
	// Goals are the plan's goals (Goals); the search judges only the one
	// on RecoveryMetric with op max.
	Goals []scenario.Check
	// Jobs is how many simulations run at once; 0 means GOMAXPROCS.
	Jobs int
	// Progress, if set, is called with increments of virtual time done.
	Progress func(time.Duration)
}

// Tipping is a finished search: per design, every probe and the bracket.
type Tipping struct {
	// Scenario is the scenario at LO, for its name, seed and description.
	Scenario *scenario.Scenario
	Range    TippingRange
	// Base are the --set overrides every probe shared.
	Base []string
	// Seeds are the seeds every probe ran.
	Seeds      []uint64
	Frequency  float64
	Resolution float64
	// Goal is the recovery goal each seed was judged by.
	Goal    scenario.Check
	Designs []TippingDesign
	// Notes are what a reader must know about the probes: arrivals that
	// workload.clients ends before duration.
	Notes []string
}

// Outcome says where a design's boundary lies against the range.
type Outcome string

// The outcomes of a design's search.
const (
	Bracketed Outcome = "bracketed" // recovered at Recovered, not at Stuck
	PastHi    Outcome = "past-hi"   // recovered at HI: it never tips in the range
	BelowLo   Outcome = "below-lo"  // not recovered even at LO
)

// TippingDesign is one design's search.
type TippingDesign struct {
	Design  string
	Outcome Outcome
	// Probes are every load probed, ascending.
	Probes []Probe
	// Recovered indexes the highest recovered probe, Stuck the lowest one
	// that was not; -1 when there is none.
	Recovered, Stuck int
	// Inversions say where a probe's frequency contradicts monotonicity:
	// a higher load met the goal on more seeds than a lower one.
	Inversions []string
}

// TippingLoad is the highest load the design recovered at; ok is false
// when it recovered at none (BelowLo).
func (d *TippingDesign) TippingLoad() (float64, bool) {
	if d.Recovered < 0 {
		return 0, false
	}
	return d.Probes[d.Recovered].Load, true
}

// Probe is one load, run at every seed.
type Probe struct {
	Load float64
	// Round is the bisection step that probed it: 0 for LO and HI.
	Round int
	// RecoveredS are the seeds' goodput_recovered_s in seed order (+Inf
	// stuck, nil when the run had no value).
	RecoveredS []*float64
	// Met counts the seeds that met the goal, Stuck those that never
	// recovered.
	Met, Stuck int
	// Frequency is Met / seeds; Recovered says it is at least the
	// search's frequency threshold.
	Frequency float64
	Recovered bool
}

// MedianS is the median of the seeds' recovery times (+Inf when at least
// half stuck; NaN when no seed had a value).
func (p *Probe) MedianS() float64 {
	var xs []float64
	for _, v := range p.RecoveredS {
		if v != nil {
			xs = append(xs, *v)
		}
	}
	if len(xs) == 0 {
		return math.NaN()
	}
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2 // +Inf when either is
}

// recoveryGoal is the goal on RecoveryMetric among goals.
func recoveryGoal(goals []scenario.Check) (scenario.Check, error) {
	for _, c := range goals {
		if c.Metric == RecoveryMetric && c.Op == "max" {
			return c, nil
		}
	}
	return scenario.Check{}, fmt.Errorf("--tipping: no %s_max goal to judge recovery by (set one with --goal %s_max=60)", RecoveryMetric, RecoveryMetric)
}

// TippingSearch is a search ready to run: its scenario loader, options
// and designs.
type TippingSearch struct {
	t    *Tipping
	load Loader
	opts TippingOptions
}

// FindTipping bisects, per design, the largest load in r at which the
// scenario's trigger leaves the design recovered: a probe is recovered
// when at least opts.Frequency of its seeds meet the recovery goal
// (goodput_recovered_s ≤ the goal). It probes LO and HI first; a design
// recovered at HI is PastHi, one not recovered at LO BelowLo; else it
// halves the bracket (highest recovered, lowest not) until it is no wider
// than the resolution. Every design's probes of a round run together,
// opts.Jobs at a time; the result does not depend on Jobs. Bisection
// assumes recovery falls with load, and Inversions say where a probe's
// frequency contradicts that.
func FindTipping(ctx context.Context, load Loader, r TippingRange, opts *TippingOptions) (*Tipping, error) {
	s, err := NewTippingSearch(load, r, opts)
	if err != nil {
		return nil, err
	}
	return s.Run(ctx)
}

// Run runs the search (FindTipping).
func (s *TippingSearch) Run(ctx context.Context) (*Tipping, error) {
	if err := s.run(ctx); err != nil {
		return nil, err
	}
	for i := range s.t.Designs {
		s.t.Designs[i].finish(&s.t.Range.Axis)
	}
	return s.t, nil
}

// SetProgress sets the function Run calls with increments of virtual
// time done (TippingOptions.Progress); the total is at most Work.
func (s *TippingSearch) SetProgress(p func(time.Duration)) { s.opts.Progress = p }

// Work bounds the virtual time the search simulates, for a progress bar:
// the horizon once per design, seed and probe, with every bisection step
// taken.
func (s *TippingSearch) Work() time.Duration {
	t := s.t
	probes := 2 + bisectSteps(t.Range.Hi-t.Range.Lo, t.Resolution)
	return scenario.Horizon(t.Scenario) * time.Duration(len(t.Designs)*len(t.Seeds)*probes)
}

// Runs bounds the number of simulations, as Work does.
func (s *TippingSearch) Runs() int {
	t := s.t
	return len(t.Designs) * len(t.Seeds) * (2 + bisectSteps(t.Range.Hi-t.Range.Lo, t.Resolution))
}

// NewTippingSearch checks the range, the options and the scenario (a
// request workload with a trigger, a recovery goal), and sets the
// defaults. Every error names the flag or key.
func NewTippingSearch(load Loader, r TippingRange, opts *TippingOptions) (*TippingSearch, error) {
	o := TippingOptions{Seeds: DefaultTippingSeeds, Frequency: DefaultTippingFrequency}
	if opts != nil {
		o = *opts
	}
	if err := checkTippingOptions(r, &o); err != nil {
		return nil, err
	}
	for _, s := range o.Base {
		if k, _, _ := strings.Cut(s, "="); strings.TrimSpace(k) == r.Axis.Key {
			return nil, fmt.Errorf("--set %s: the key is also the tipping load (--tipping %s); drop one of them", r.Axis.Key, r.Axis.Spec)
		}
	}
	sc, err := load(append(slices.Clone(o.Base), r.Axis.Set(r.Lo)))
	if err != nil {
		return nil, fmt.Errorf("tipping load %s: %w", r.Axis.Label(r.Lo), err)
	}
	if !sc.Requests() {
		return nil, fmt.Errorf("--tipping: scenario %s runs the session workload: the tipping load judges goodput recovery, which only the request workload has (workload.kind = \"requests\")", sc.Name)
	}
	if len(sc.Faults) == 0 {
		return nil, fmt.Errorf("--tipping: scenario %s has no trigger (faults): there is nothing to recover from", sc.Name)
	}
	goal, err := recoveryGoal(Goals(sc.Goals, o.Goals))
	if err != nil {
		return nil, err
	}
	names, err := designNames(sc, o.Designs)
	if err != nil {
		return nil, err
	}
	t := &Tipping{Scenario: sc, Range: r, Base: slices.Clone(o.Base), Frequency: o.Frequency, Resolution: o.Resolution,
		Goal: goal}
	if hi, err := load(append(slices.Clone(o.Base), r.Axis.Set(r.Hi))); err == nil {
		t.Notes = clientsNote(&r, hi)
	}
	for i := range o.Seeds {
		t.Seeds = append(t.Seeds, sc.Seed+uint64(i))
	}
	for _, n := range names {
		t.Designs = append(t.Designs, TippingDesign{Design: n, Recovered: -1, Stuck: -1})
	}
	return &TippingSearch{t: t, load: load, opts: o}, nil
}

// checkTippingOptions checks the seeds, frequency and resolution, and
// fills in the default resolution.
func checkTippingOptions(r TippingRange, o *TippingOptions) error {
	switch {
	case o.Seeds < 1:
		return fmt.Errorf("--seeds %d: want at least 1 seed per probe", o.Seeds)
	case o.Seeds > 1000:
		return fmt.Errorf("--seeds %d: more than 1000 seeds per probe", o.Seeds)
	case !(o.Frequency > 0 && o.Frequency <= 1):
		return fmt.Errorf("--recover-frequency %g: want a share of the seeds in (0, 1], for example 0.8", o.Frequency)
	case o.Resolution < 0 || math.IsNaN(o.Resolution) || math.IsInf(o.Resolution, 0):
		return fmt.Errorf("--resolution %g: want a positive width in %s's units", o.Resolution, r.Axis.Key)
	}
	if o.Resolution == 0 {
		o.Resolution = (r.Hi - r.Lo) / DefaultResolutionParts
		switch r.Axis.Kind {
		case Int:
			o.Resolution = math.Max(1, math.Round(o.Resolution))
		case Duration:
			o.Resolution = math.Max(0.001, math.Round(o.Resolution*1000)/1000)
		default:
			o.Resolution = round(Float, o.Resolution, false)
		}
	}
	if o.Resolution >= r.Hi-r.Lo {
		return fmt.Errorf("--resolution %s: not below the range's width %s (%s): nothing to bisect", r.Axis.Text(o.Resolution), r.Axis.Text(r.Hi-r.Lo), r.Axis.Spec)
	}
	return nil
}

// clientsNote warns when workload.clients, which caps the open-loop
// request workload's arrivals, ends them before duration at HI (sc): the
// probes near HI then meet less load after the trigger than their key
// says. Closed-loop clients keep sending once in, so it does not apply.
func clientsNote(r *TippingRange, sc *scenario.Scenario) []string {
	w := sc.Workload
	if r.Axis.Key != "workload.arrival_rate" || w.ArrivalRate <= 0 || sc.Closed() {
		return nil
	}
	end := float64(w.Clients) / w.ArrivalRate
	if end >= sc.Duration.Seconds() {
		return nil
	}
	need := int64(math.Ceil(r.Hi * sc.Duration.Seconds()))
	return []string{fmt.Sprintf("workload.clients = %d caps the arrivals: above %s requests/s they end before duration (%v), at HI after %.0f s, so those probes meet less load after the trigger than their rate says. --set workload.clients=%d keeps them arriving to the end.",
		w.Clients, trim(float64(w.Clients)/sc.Duration.Seconds()), sc.Duration, end, need)}
}

// bisectSteps is how many halvings take a bracket of width w to res.
func bisectSteps(w, res float64) int {
	n := 0
	for ; w > res && n < 64; n++ {
		w /= 2
	}
	return n
}

// designNames are the designs to search, in the scenario's order.
func designNames(sc *scenario.Scenario, only []string) ([]string, error) {
	var names, out []string
	for _, d := range sc.Designs {
		names = append(names, d.Name)
	}
	for _, d := range only {
		if !slices.Contains(names, d) {
			return nil, fmt.Errorf("--designs: scenario %s has no design %q (it runs: %s)", sc.Name, d, strings.Join(names, ", "))
		}
	}
	for _, n := range names {
		if only == nil || slices.Contains(only, n) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("--designs: no designs to run")
	}
	return out, nil
}

// probeJob is one design at one load of a round.
type probeJob struct {
	design int
	load   float64
}

// run probes LO and HI, then halves every open bracket, round by round.
func (s *TippingSearch) run(ctx context.Context) error {
	t := s.t
	var jobs []probeJob
	for di := range t.Designs {
		jobs = append(jobs, probeJob{di, t.Range.Lo}, probeJob{di, t.Range.Hi})
	}
	for round := 0; len(jobs) > 0; round++ {
		probes, err := s.probe(ctx, jobs, round)
		if err != nil {
			return err
		}
		for i, j := range jobs {
			d := &t.Designs[j.design]
			d.Probes = append(d.Probes, probes[i])
		}
		jobs = jobs[:0]
		for di := range t.Designs {
			if mid, ok := t.Designs[di].next(&t.Range, s.opts.Resolution); ok {
				jobs = append(jobs, probeJob{di, mid})
			}
		}
	}
	return nil
}

// next is the design's next load to probe: the middle of its bracket
// (highest recovered, lowest not recovered), false once the bracket is no
// wider than res or there is none.
func (d *TippingDesign) next(r *TippingRange, res float64) (float64, bool) {
	lo, hi := math.Inf(-1), math.Inf(1)
	for _, p := range d.Probes {
		if p.Recovered && p.Load > lo {
			lo = p.Load
		}
		if !p.Recovered && p.Load < hi {
			hi = p.Load
		}
	}
	if math.IsInf(lo, 0) || math.IsInf(hi, 0) || hi-lo <= res || lo > hi {
		return 0, false
	}
	mid := round(r.Axis.Kind, (lo+hi)/2, false)
	if mid <= lo || mid >= hi {
		return 0, false // the key's rounding leaves nothing between them
	}
	return mid, true
}

// probe runs every job at every seed and judges each job's seeds.
func (s *TippingSearch) probe(ctx context.Context, jobs []probeJob, round int) ([]Probe, error) {
	t := s.t
	ns := len(t.Seeds)
	scs := make([]*scenario.Scenario, len(jobs)*ns)
	for i, j := range jobs {
		for k, seed := range t.Seeds {
			sc, err := s.load(append(slices.Clone(t.Base), t.Range.Axis.Set(j.load)))
			if err != nil {
				return nil, fmt.Errorf("tipping load %s: %w", t.Range.Axis.Label(j.load), err)
			}
			sc.Seed = seed
			scs[i*ns+k] = sc
		}
	}
	designs := make([]report.Design, len(scs))
	order := make([]int, len(scs))
	for i := range order {
		order[i] = i
	}
	err := parallel(ctx, s.opts.Jobs, order, func(ctx context.Context, i int) error {
		j := jobs[i/ns]
		dn := t.Designs[j.design].Design
		out, err := sim.Run(ctx, scs[i], &sim.Options{Designs: []string{dn}, Parallel: 1, Progress: s.opts.Progress})
		if err != nil {
			return fmt.Errorf("plan: tipping load %s, design %s, seed %d: %w", t.Range.Axis.Label(j.load), dn, scs[i].Seed, err)
		}
		designs[i] = out.Report.Designs[0]
		return nil
	})
	if err != nil {
		return nil, err
	}
	probes := make([]Probe, len(jobs))
	for i, j := range jobs {
		probes[i] = s.judge(j, round, designs[i*ns:(i+1)*ns])
	}
	return probes, nil
}

// judge counts the seeds of one probe that met the recovery goal, by the
// same rule as the plan's other goals (Judge).
func (s *TippingSearch) judge(j probeJob, round int, runs []report.Design) Probe {
	t := s.t
	p := Probe{Load: j.load, Round: round}
	for i := range runs {
		d := &runs[i]
		v, _ := d.Metric(RecoveryMetric)
		p.RecoveredS = append(p.RecoveredS, v)
		if v != nil && math.IsInf(*v, 1) {
			p.Stuck++
		}
		row := Row{Design: t.Designs[j.design].Design, Report: *d}
		if Judge(&row, t.Scenario.Name, []scenario.Check{t.Goal}).Pass {
			p.Met++
		}
	}
	p.Frequency = float64(p.Met) / float64(len(runs))
	p.Recovered = p.Frequency >= t.Frequency
	return p
}

// finish sorts the probes, finds the bracket and the outcome, and notes
// every contradiction of monotonicity.
func (d *TippingDesign) finish(ax *Axis) {
	slices.SortStableFunc(d.Probes, func(a, b Probe) int { return cmpF(a.Load, b.Load) })
	d.Recovered, d.Stuck = -1, -1
	for i := range d.Probes {
		p := &d.Probes[i]
		if p.Recovered && (d.Recovered < 0 || p.Load > d.Probes[d.Recovered].Load) {
			d.Recovered = i
		}
		if !p.Recovered && d.Stuck < 0 {
			d.Stuck = i
		}
	}
	switch {
	case d.Stuck < 0:
		d.Outcome = PastHi
	case d.Recovered < 0:
		d.Outcome = BelowLo
	default:
		d.Outcome = Bracketed
	}
	d.Inversions = nil
	for i := 1; i < len(d.Probes); i++ {
		a, b := &d.Probes[i-1], &d.Probes[i]
		if b.Frequency > a.Frequency {
			d.Inversions = append(d.Inversions, fmt.Sprintf("%s met the goal on %d of %d seeds at %s but on %d of %d at the higher load %s",
				d.Design, a.Met, len(a.RecoveredS), ax.Text(a.Load), b.Met, len(b.RecoveredS), ax.Text(b.Load)))
		}
	}
	if d.Recovered >= 0 && d.Stuck >= 0 && d.Probes[d.Recovered].Load > d.Probes[d.Stuck].Load {
		d.Inversions = append(d.Inversions, fmt.Sprintf("%s recovered at %s above a load it did not recover at, %s: the boundary is not a single load",
			d.Design, ax.Text(d.Probes[d.Recovered].Load), ax.Text(d.Probes[d.Stuck].Load)))
	}
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Reference is the design the others are measured against: the first
// searched, in the scenario's order (metastable's req-plain).
func (t *Tipping) Reference() *TippingDesign { return &t.Designs[0] }

// rank orders outcomes for "moves the boundary furthest": past HI above
// any load, below LO under any.
func (d *TippingDesign) rank() float64 {
	switch d.Outcome {
	case PastHi:
		return math.Inf(1)
	case BelowLo:
		return math.Inf(-1)
	}
	return d.Probes[d.Recovered].Load
}

// Furthest are the designs other than the reference with the highest
// tipping load (several on a tie), nil with one design.
func (t *Tipping) Furthest() []*TippingDesign {
	var best []*TippingDesign
	for i := 1; i < len(t.Designs); i++ {
		d := &t.Designs[i]
		switch {
		case len(best) == 0 || d.rank() > best[0].rank():
			best = []*TippingDesign{d}
		case d.rank() == best[0].rank():
			best = append(best, d)
		}
	}
	return best
}

// TippingText is the design's tipping load for people: "130 (5/5 seeds
// met the goal; not at 132.5, 2/5)", "past 300", "below 40".
func (t *Tipping) TippingText(d *TippingDesign) string {
	ax := &t.Range.Axis
	switch d.Outcome {
	case PastHi:
		p := &d.Probes[len(d.Probes)-1]
		return fmt.Sprintf("past %s (recovered at HI, %d/%d seeds)", ax.Text(t.Range.Hi), p.Met, len(p.RecoveredS))
	case BelowLo:
		p := &d.Probes[0]
		return fmt.Sprintf("below %s (not recovered at LO, %d/%d seeds)", ax.Text(t.Range.Lo), p.Met, len(p.RecoveredS))
	}
	r, s := &d.Probes[d.Recovered], &d.Probes[d.Stuck]
	return fmt.Sprintf("%s (%d/%d seeds met the goal; not at %s, %d/%d)", ax.Text(r.Load), r.Met, len(r.RecoveredS), ax.Text(s.Load), s.Met, len(s.RecoveredS))
}

// FurthestText names the design that moves the boundary furthest above
// the reference, ties stated; "" with one design.
func (t *Tipping) FurthestText() string {
	best := t.Furthest()
	if len(best) == 0 {
		return ""
	}
	ax := &t.Range.Axis
	ref := t.Reference()
	var names []string
	for _, d := range best {
		names = append(names, d.Design)
	}
	who := names[0]
	if len(names) > 1 {
		who = strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1] + " (a tie)"
	}
	b := best[0]
	refText := "below " + ax.Text(t.Range.Lo)
	if l, ok := ref.TippingLoad(); ok {
		refText = ax.Text(l)
	}
	if ref.Outcome == PastHi {
		refText = "past " + ax.Text(t.Range.Hi)
	}
	switch {
	case b.Outcome == PastHi && ref.Outcome == PastHi:
		return fmt.Sprintf("%s and the reference %s never tip within the range (past %s): widen HI to tell them apart", who, ref.Design, ax.Text(t.Range.Hi))
	case b.rank() <= ref.rank():
		return fmt.Sprintf("no design moves the boundary above the reference %s (%s); the highest of the others is %s", ref.Design, refText, who)
	case b.Outcome == PastHi:
		return fmt.Sprintf("%s: past %s, against %s for %s: the boundary moves up by more than %s", who, ax.Text(t.Range.Hi), refText, ref.Design, moveText(ax, t.Range.Hi, ref, t.Range.Lo))
	}
	l, _ := b.TippingLoad()
	return fmt.Sprintf("%s: %s, against %s for %s: the boundary moves up by %s", who, ax.Text(l), refText, ref.Design, moveText(ax, l, ref, t.Range.Lo))
}

// moveText is how far load is above the reference's tipping load ("at
// least" when the reference is below LO).
func moveText(ax *Axis, load float64, ref *TippingDesign, lo float64) string {
	if l, ok := ref.TippingLoad(); ok {
		return ax.Text(load - l)
	}
	return "at least " + ax.Text(load-lo)
}

// FrequencyText is a probe's "3/5".
func (p *Probe) FrequencyText() string {
	return strconv.Itoa(p.Met) + "/" + strconv.Itoa(len(p.RecoveredS))
}
