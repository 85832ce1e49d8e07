package plan

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
	"github.com/stormsim/stormsim/sim"
	"github.com/stormsim/stormsim/topology"
	"github.com/stormsim/stormsim/workload"
)

// MaxPoints is the largest grid NewGrid builds without force.
const MaxPoints = 10_000

// Loader resolves the planned scenario with the given --set overrides
// ("key=value"), as scenario.Load with Options.Set does.
type Loader func(set []string) (*scenario.Scenario, error)

// Grid is a sweep resolved into points. The first axis is the load axis and
// varies fastest: point i has load Axes[0].Values[i % len] and belongs to
// group i / len, one group per combination of the other axes.
type Grid struct {
	Axes []Axis
	// Base are the --set overrides every point shares, before its own.
	Base []string
	// Designs are the designs run at every point, in the scenario's order.
	Designs []string
	Points  []Point
	// Notes are what plan.md should warn about: a design whose own table
	// overrides a swept key, clients that never arrive.
	Notes []string
}

// Point is one combination of axis values and the scenario it resolves to.
type Point struct {
	Values   []float64 // one per axis
	Set      []string  // Base, then one override per axis
	Scenario *scenario.Scenario
}

// Size is the number of points the axes make (float, so that a huge grid
// does not overflow before it is refused).
func Size(axes []Axis) float64 {
	n := 1.0
	for _, a := range axes {
		n *= float64(len(a.Values))
	}
	return n
}

// Loads is the number of load values; Groups the number of combinations of
// the other axes.
func (g *Grid) Loads() int  { return len(g.Axes[0].Values) }
func (g *Grid) Groups() int { return len(g.Points) / g.Loads() }

// GroupLabel names group k by the values of the other axes
// ("store.redis_ttl=60s, workload.event_rate=5"), "" with one axis.
func (g *Grid) GroupLabel(k int) string {
	p := g.Points[k*g.Loads()]
	var parts []string
	for i := 1; i < len(g.Axes); i++ {
		parts = append(parts, g.Axes[i].Label(p.Values[i]))
	}
	return strings.Join(parts, ", ")
}

// Goals are the goals the plan judges by: DefaultGoals under the
// scenario's goals table (the same at every point: --set cannot change
// it), then extra (--goal).
func (g *Grid) Goals(extra []scenario.Check) []scenario.Check {
	return Goals(g.Points[0].Scenario.Goals, extra)
}

// Scenario is the scenario of the first point, for its name, seed and
// description.
func (g *Grid) Scenario() *scenario.Scenario { return g.Points[0].Scenario }

// Work is the virtual time Run simulates over the whole grid, for a
// progress bar: each point's horizon once per design.
func (g *Grid) Work() time.Duration {
	var w time.Duration
	for _, p := range g.Points {
		w += scenario.Horizon(p.Scenario) * time.Duration(len(g.Designs))
	}
	return w
}

// GridOptions tunes NewGrid. A nil *GridOptions means the defaults.
type GridOptions struct {
	// Base are --set overrides every point shares; none may name a swept key.
	Base []string
	// Designs runs only these designs; nil runs the scenario's.
	Designs []string
	// Target, when set, is added to the load axis if it is not on it.
	Target *float64
	// Force allows a grid of more than MaxPoints points.
	Force bool
}

// NewGrid builds the grid of axes (the first is the load axis) and resolves
// every point with load. It fails, naming the flag or key, on a key swept
// twice, a swept key also given with --set, a grid of more than MaxPoints
// points without Force, a design the scenario does not run, or a point the
// scenario loader rejects.
func NewGrid(load Loader, axes []Axis, opts *GridOptions) (*Grid, error) {
	if opts == nil {
		opts = &GridOptions{}
	}
	if len(axes) == 0 {
		return nil, errors.New("--sweep: no axes to sweep")
	}
	axes = slices.Clone(axes)
	for i, a := range axes {
		if len(a.Values) == 0 {
			return nil, fmt.Errorf("--sweep %s: no values", a.Key)
		}
		for _, b := range axes[:i] {
			if b.Key == a.Key {
				return nil, fmt.Errorf("--sweep %s: the key is swept twice (%s and %s)", a.Key, b.Spec, a.Spec)
			}
		}
		for _, s := range opts.Base {
			if k, _, _ := strings.Cut(s, "="); strings.TrimSpace(k) == a.Key {
				return nil, fmt.Errorf("--set %s: the key is also swept (--sweep %s); drop one of them", a.Key, a.Spec)
			}
		}
	}
	if t := opts.Target; t != nil && !slices.Contains(axes[0].Values, *t) {
		a := &axes[0]
		a.Values = append(slices.Clone(a.Values), *t)
		slices.Sort(a.Values)
	}
	if n := Size(axes); n > MaxPoints && !opts.Force {
		var dims []string
		for _, a := range axes {
			dims = append(dims, fmt.Sprintf("%d %s", len(a.Values), a.Key))
		}
		return nil, fmt.Errorf("--sweep: the grid has %.0f points (%s), more than %d: narrow it, or pass --force to run it anyway", n, strings.Join(dims, " × "), MaxPoints)
	}
	g := &Grid{Axes: axes, Base: slices.Clone(opts.Base)}
	idx := make([]int, len(axes))
	for {
		p := Point{Values: make([]float64, len(axes)), Set: slices.Clone(opts.Base)}
		for i, a := range axes {
			p.Values[i] = a.Values[idx[i]]
			p.Set = append(p.Set, a.Set(p.Values[i]))
		}
		sc, err := load(p.Set)
		if err != nil {
			return nil, fmt.Errorf("grid point %s: %w", pointLabel(axes, p.Values), err)
		}
		p.Scenario = sc
		g.Points = append(g.Points, p)
		// The load axis varies fastest, then the second axis, and so on.
		i := 0
		for ; i < len(axes); i++ {
			idx[i]++
			if idx[i] < len(axes[i].Values) {
				break
			}
			idx[i] = 0
		}
		if i == len(axes) {
			break
		}
	}
	sc := g.Scenario()
	var names []string
	for _, d := range sc.Designs {
		names = append(names, d.Name)
	}
	for _, d := range opts.Designs {
		if !slices.Contains(names, d) {
			return nil, fmt.Errorf("--designs: scenario %s has no design %q (it runs: %s)", sc.Name, d, strings.Join(names, ", "))
		}
	}
	for _, n := range names {
		if opts.Designs == nil || slices.Contains(opts.Designs, n) {
			g.Designs = append(g.Designs, n)
		}
	}
	if len(g.Designs) == 0 {
		return nil, errors.New("--designs: no designs to run")
	}
	g.Notes = g.notes()
	return g, nil
}

func pointLabel(axes []Axis, values []float64) string {
	var parts []string
	for i, a := range axes {
		parts = append(parts, a.Label(values[i]))
	}
	return strings.Join(parts, ", ")
}

// notes finds what a reader of the plan must know: designs whose own
// settings hide a swept key, and points where fewer clients arrive than
// workload.clients asks for.
func (g *Grid) notes() []string {
	var out []string
	for i, a := range g.Axes {
		prefix, field, _ := strings.Cut(a.Key, ".")
		if prefix != "client" && prefix != "store" && prefix != "replica" {
			continue
		}
		for _, dn := range g.Designs {
			for _, p := range g.Points {
				d := design(p.Scenario, dn)
				got, ok := designValue(d, prefix, field)
				if ok && !near(got, p.Values[i]) {
					out = append(out, fmt.Sprintf("design %s sets %s = %s in its own table, which wins over the sweep: its rows do not vary with %s.", dn, a.Key, a.Text(got), a.Key))
					break
				}
			}
		}
	}
	short, late := 0, 0
	var shortEx, lateEx string
	for _, p := range g.Points {
		sc := p.Scenario
		arrivals := workload.Arrivals(sc)
		if n := len(arrivals); n < sc.Workload.Clients {
			if short == 0 {
				shortEx = fmt.Sprintf("at %s only %d of %d clients arrive within duration %v (arrival_rate %g/s)", pointLabel(g.Axes, p.Values), n, sc.Workload.Clients, sc.Duration, sc.Workload.ArrivalRate)
			}
			short++
		}
		if at, ok := FirstFault(sc); ok && len(arrivals) > 0 && time.Duration(arrivals[len(arrivals)-1]) >= at {
			if late == 0 {
				in, _ := slices.BinarySearch(arrivals, int64(at))
				lateEx = fmt.Sprintf("at %s, %d of %d clients are in when the first fault strikes at %v", pointLabel(g.Axes, p.Values), in, len(arrivals), at)
			}
			late++
		}
	}
	if short > 0 {
		out = append(out, fmt.Sprintf("At %d grid point(s) fewer clients arrive than workload.clients asks for: %s. Raise workload.arrival_rate or duration for those loads to mean what they say.", short, shortEx))
	}
	if late > 0 {
		out = append(out, fmt.Sprintf("At %d grid point(s) clients are still arriving when the first fault strikes: %s. The fault meets less load than the axis says; raise workload.arrival_rate to have every client in first.", late, lateEx))
	}
	return out
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func design(sc *scenario.Scenario, name string) *scenario.Design {
	for i := range sc.Designs {
		if sc.Designs[i].Name == name {
			return &sc.Designs[i]
		}
	}
	return nil
}

// designValue reads a design's resolved client, store or replica key, as
// an axis holds it (durations in seconds).
func designValue(d *scenario.Design, prefix, field string) (float64, bool) {
	if d == nil {
		return 0, false
	}
	var v reflect.Value
	switch prefix {
	case "client":
		v = reflect.ValueOf(d.Client)
	case "store":
		v = reflect.ValueOf(d.Store)
	case "replica":
		v = reflect.ValueOf(d.Replica)
	default:
		return 0, false
	}
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("toml"), ","); tag != field {
			continue
		}
		f := v.Field(i)
		if f.Type() == reflect.TypeOf(time.Duration(0)) {
			return time.Duration(f.Int()).Seconds(), true
		}
		switch f.Kind() {
		case reflect.Int, reflect.Int64, reflect.Int32:
			return float64(f.Int()), true
		case reflect.Float64:
			return f.Float(), true
		}
	}
	return 0, false
}

// Options tunes Run. A nil *Options means the defaults.
type Options struct {
	// Jobs is how many simulations run at once; 0 means GOMAXPROCS.
	Jobs int
	// Progress, if set, is called with increments of virtual time done;
	// the total is Grid.Work. It may be called from several goroutines.
	Progress func(time.Duration)
}

// Result is a simulated grid: one row per point and design.
type Result struct {
	Grid *Grid
	// Rows are point-major (in Grid.Points order), then in Grid.Designs order.
	Rows []Row
}

// Row is one design at one grid point.
type Row struct {
	Point    int // index into Grid.Points
	Design   string
	Replicas int
	// Report is the design's row of the simulated report, with its series
	// dropped except reconnects (which storm_height reads), so that any
	// threshold can be judged again.
	Report report.Design
}

// Run simulates every point and design of g, Jobs at a time. Each
// simulation runs one design on one core; the rows do not depend on Jobs.
func Run(ctx context.Context, g *Grid, opts *Options) (*Result, error) {
	if opts == nil {
		opts = &Options{}
	}
	res := &Result{Grid: g, Rows: make([]Row, len(g.Points)*len(g.Designs))}
	err := parallel(ctx, opts.Jobs, g.feedOrder(), func(ctx context.Context, i int) error {
		return res.run(ctx, i, opts.Progress)
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// parallel calls run for every index of order, jobs at a time (0 means
// GOMAXPROCS), handing them out in that order. The first error cancels
// the rest; it returns the error of the lowest index that failed other
// than by cancellation, else the context's cause.
func parallel(ctx context.Context, jobs int, order []int, run func(ctx context.Context, i int) error) error {
	if jobs <= 0 {
		jobs = runtime.GOMAXPROCS(0)
	}
	errs := make([]error, len(order))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(jobs, len(order)) {
		wg.Go(func() {
			for i := range next {
				errs[i] = run(ctx, i)
				if errs[i] != nil {
					cancel()
				}
			}
		})
	}
feed:
	for _, i := range order {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("plan: %w", context.Cause(ctx))
	}
	return nil
}

// feedOrder is the order Run hands rows to its workers: the heaviest
// points first (clients × horizon, the point's order on a tie), so that the
// last simulations to start are short ones and no core waits alone on a
// long one at the end. Each row is written to its own index, so the order
// changes nothing in the result.
func (g *Grid) feedOrder() []int {
	nd := len(g.Designs)
	order := make([]int, len(g.Points)*nd)
	for i := range order {
		order[i] = i
	}
	weight := func(i int) float64 {
		sc := g.Points[i/nd].Scenario
		return float64(sc.Workload.Clients) * scenario.Horizon(sc).Seconds()
	}
	slices.SortStableFunc(order, func(a, b int) int {
		wa, wb := weight(a), weight(b)
		switch {
		case wa > wb:
			return -1
		case wa < wb:
			return 1
		}
		return 0
	})
	return order
}

// Notes are the grid's notes and what the rows add: a memory store whose
// peak went above its cap × replicas (more processes than replicas held a
// store at once: a draining process and its replacement, or a scale-out).
func (res *Result) Notes() []string {
	g := res.Grid
	out := slices.Clone(g.Notes)
	for _, dn := range g.Designs {
		worst, at := 0.0, -1
		for i := range res.Rows {
			r := &res.Rows[i]
			if r.Design != dn {
				continue
			}
			p := g.Points[r.Point]
			d := design(p.Scenario, dn)
			if d == nil || d.Events != topology.EventsMemory || d.Store.MemoryCapBytes <= 0 {
				continue
			}
			limit := float64(d.Store.MemoryCapBytes) * float64(p.Scenario.Replicas)
			if x := float64(r.Report.Totals.StorePeakBytes) / limit; x > 1 && x > worst {
				worst, at = x, i
			}
		}
		if at >= 0 {
			r := &res.Rows[at]
			p := g.Points[r.Point]
			out = append(out, fmt.Sprintf("%s's store peak (%s at %s) is %.2f× its memory cap × %d replicas: more processes than replicas held a store at once (a draining process and its replacement during a restart, or a scale-out). Provision for the peak, not the cap.",
				dn, Bytes(r.Report.Totals.StorePeakBytes), pointLabel(g.Axes, p.Values), worst, p.Scenario.Replicas))
		}
	}
	return out
}

// run simulates row i.
func (res *Result) run(ctx context.Context, i int, progress func(time.Duration)) error {
	g := res.Grid
	pi, dn := i/len(g.Designs), g.Designs[i%len(g.Designs)]
	p := g.Points[pi]
	out, err := sim.Run(ctx, p.Scenario, &sim.Options{Designs: []string{dn}, Parallel: 1, Progress: progress})
	if err != nil {
		return fmt.Errorf("plan: grid point %s, design %s: %w", pointLabel(g.Axes, p.Values), dn, err)
	}
	d := out.Report.Designs[0]
	d.Series = report.Series{StepS: d.Series.StepS, Reconnects: d.Series.Reconnects}
	res.Rows[i] = Row{Point: pi, Design: dn, Replicas: p.Scenario.Replicas, Report: d}
	return nil
}
