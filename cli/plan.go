package cli

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/stormsim/stormsim/plan"
	"github.com/stormsim/stormsim/plots"
	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
	"github.com/stormsim/stormsim/topology"
)

func init() {
	register(command{name: "plan", summary: "sweep the load and size the store: the largest load each design meets the service goals at", run: planCmd})
}

// planFlags are the flags of 'stormsim plan'.
type planFlags struct {
	file    string
	sweeps  listFlag
	sizeFor string
	designs string
	jobs    int
	set     listFlag
	seed    string
	out     string
	force   bool
	quiet   bool
	goals   listFlag
	tip     tippingFlags
}

const planAbout = `Run SCENARIO in the simulator over a grid of scenario keys and recommend, per design, the
largest load that still meets the service goals and the store to provision for it.

The goals, for every design: lost_fraction_max=0.001 (at most 0.1% of events lost), rate_404_max=0.01,
calls_failed_max=0, recovery_latency_ms_p99_max=10000 (met by a design with nothing to recover) and
goodput_recovered_s_max=60 (the request workload: goodput back within 60 s of each trigger's end; met by
the session workload, which has no goodput).
A [scenario.NAME.goals] table, then --goal, replaces the default of the same metric and direction or
adds a goal on any metric. The scenario's expect table (facts about the shipped simulation) is not used.

--sweep KEY=VALUES names a numeric scenario key (any of the key table in docs/reference.md: workload.clients,
workload.event_rate, store.redis_ttl, store.memory_cap_bytes, replicas, ...) and its values:
  a,b,c         a list, e.g. workload.event_rate=1,5,20 or store.redis_ttl=60s,10m
  lo..hi@N      N points spaced evenly on a log scale, e.g. workload.clients=1000..100000@5
                (integer keys are rounded and duplicates dropped)
Durations take a unit (60s); keys ending in _bytes take KiB, MiB or GiB. The first --sweep is the
load axis of the charts and of the recommendation; each further --sweep gives one chart panel per
value, and the designs are sized at every combination. Without --sweep the plan sweeps
workload.clients at 1/2, 1, 2, 4 and 8 times the scenario's clients, keeping the loads that are all
in before the first fault (1000..8000@4 for deploy-restart). A grid of more than 10000 points needs
--force.

A design's max load is the largest grid load L such that it meets every goal at every grid load up
to L (failing at a load counts as failing at every larger one). At --size-for (default: the largest
load; a load off the grid is added to it) the cheapest design that meets the goals is named: least
store memory to provision, then fewest replicas, then fewest store ops/s, a tie going to the lower
recovery latency at p99. When none meets them, each design's binding goal is named: the goal it
missed by most at the target, and by how many times. Store memory and ops/s come from the simulated
store's peaks (store_peak_bytes, store_peak_ops_per_s), plus 30%.

It writes plan.json, plan.csv (one row per grid point and design), plan.md (the recommendation) and
the charts store-memory, store-ops, replay-p99 and lost-fraction (PNG and SVG) to
OUT/plan/<scenario>/<UTC time>/ (OUT/plan/<scenario>/latest points at the newest). The same seed
gives the same plan.json, plan.csv and plan.md, whatever --jobs. It exits 0 when the plan is
written, whether or not a design meets the goals; plan.md says which.` + tippingAbout

func planCmd(ctx context.Context, env *Env, args []string) error {
	var f planFlags
	fs := newFlags(env, "plan", "SCENARIO [--sweep KEY=VALUES ...] [--size-for KEY=VALUE] [flags]\n       stormsim plan SCENARIO --tipping KEY=LO..HI [--seeds N] [--recover-frequency F] [--resolution W] [flags]", planAbout)
	f.define(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("plan: want exactly one SCENARIO, got %d (try 'stormsim list')", len(pos))
	}
	if visited(fs, "jobs") && f.jobs < 1 {
		return usagef("plan: --jobs %d: want at least 1 (leave it out for one per core)", f.jobs)
	}
	designs, err := splitList(fs, "plan", "designs", f.designs)
	if err != nil {
		return err
	}
	if err := f.tip.check(fs); err != nil {
		return err
	}
	if f.tip.spec != "" {
		return f.runTipping(ctx, env, pos[0], designs)
	}
	g, goals, target, err := f.grid(pos[0], designs)
	if err != nil {
		return err
	}
	return f.run(ctx, env, g, goals, target)
}

// define declares plan's flags on fs.
func (f *planFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&f.file, "file", DefaultFile, "scenarios `file`")
	fs.Var(&f.sweeps, "sweep", "sweep a numeric key, repeatable; the first is the load (`KEY=VALUES`: a,b,c or lo..hi@N)")
	fs.StringVar(&f.sizeFor, "size-for", "", "the load to plan for (`KEY=VALUE`, KEY the first --sweep's; default its largest value)")
	fs.StringVar(&f.designs, "designs", "", "plan only these designs, comma-separated (`a,b`)")
	fs.IntVar(&f.jobs, "jobs", 0, "simulations run at once (`N`; 0 = one per core)")
	fs.Var(&f.set, "set", "override a scenario key at every grid point, repeatable (`key=value`)")
	fs.StringVar(&f.seed, "seed", "", "override the scenario's seed (`N`)")
	fs.StringVar(&f.out, "out", "results", "results `dir`; the plan goes to DIR/plan/<scenario>/<UTC time>/")
	fs.BoolVar(&f.force, "force", false, "run a grid of more than 10000 points")
	fs.Var(&f.goals, "goal", "set a service goal over the defaults and the scenario's goals table, repeatable (`metric_max=N` or metric_min=N, every design; e.g. recovery_latency_ms_p99_max=5000)")
	fs.BoolVar(&f.quiet, "quiet", false, "print nothing but errors")
	f.tip.define(fs)
}

// grid reads scenario name, the --goal flags, the sweeps and --size-for
// into the plan's grid, its goals and the load to plan for.
func (f *planFlags) grid(name string, designs []string) (*plan.Grid, []scenario.Check, float64, error) {
	load, base, err := f.loader(name)
	if err != nil {
		return nil, nil, 0, err
	}
	goals, err := f.goalChecks()
	if err != nil {
		return nil, nil, 0, err
	}
	baseSc, err := load(base)
	if err != nil {
		return nil, nil, 0, usageError{err}
	}
	specs := []string(f.sweeps)
	if len(specs) == 0 {
		specs = []string{plan.DefaultSweep(baseSc)}
	}
	var axes []plan.Axis
	for _, s := range specs {
		ax, err := plan.ParseSweep(s)
		if err != nil {
			return nil, nil, 0, usageError{err}
		}
		axes = append(axes, ax)
	}
	gopts := &plan.GridOptions{Base: base, Force: f.force, Designs: designs}
	if gopts.Target, err = f.target(axes[0]); err != nil {
		return nil, nil, 0, err
	}
	g, err := plan.NewGrid(load, axes, gopts)
	if err != nil {
		return nil, nil, 0, usageError{err}
	}
	target := g.Axes[0].Max()
	if gopts.Target != nil {
		target = *gopts.Target
	}
	return g, goals, target, nil
}

// goalChecks reads the --goal flags.
func (f *planFlags) goalChecks() ([]scenario.Check, error) {
	var goals []scenario.Check
	for _, g := range f.goals {
		k, v, found := strings.Cut(g, "=")
		n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if !found || err != nil {
			return nil, usagef("plan: --goal %q: want metric_max=N or metric_min=N with a number N", g)
		}
		c, err := scenario.ParseCheck(strings.TrimSpace(k), n)
		if err != nil {
			return nil, usagef("plan: --goal %q: %v", g, err)
		}
		goals = append(goals, c)
	}
	return goals, nil
}

// target reads --size-for, a value on the load axis; nil when not given.
func (f *planFlags) target(load plan.Axis) (*float64, error) {
	if f.sizeFor == "" {
		return nil, nil
	}
	key, val, found := strings.Cut(f.sizeFor, "=")
	key = strings.TrimSpace(key)
	switch {
	case !found || key == "":
		return nil, usagef("--size-for %q: want KEY=VALUE, for example %s=%s", f.sizeFor, load.Key, load.Text(load.Max()))
	case key != load.Key:
		return nil, usagef("--size-for %s: the load to plan for is on the load axis %s (the first --sweep)", key, load.Key)
	}
	v, err := plan.ParseValue(key, val)
	if err != nil {
		return nil, usagef("--size-for %s: %v", key, err)
	}
	return &v, nil
}

// run runs the grid, recommends, and writes the plan's folder.
func (f *planFlags) run(ctx context.Context, env *Env, g *plan.Grid, goals []scenario.Check, target float64) error {
	sc := g.Scenario()
	if err := probeOut(filepath.Join(f.out, "plan", sc.Name)); err != nil {
		return err
	}
	progress, doneProgress := newProgress(env, f.quiet, g.Work(),
		fmt.Sprintf("plan %s: %d points × %d designs", sc.Name, len(g.Points), len(g.Designs)))
	defer doneProgress()
	res, err := plan.Run(ctx, g, &plan.Options{Jobs: f.jobs, Progress: progress})
	doneProgress()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	rec := plan.Recommend(res, g.Goals(goals), target)
	files, err := plan.Files(res, rec)
	if err != nil {
		return err
	}
	charts, err := plots.RenderPlan(planChartData(res))
	if err != nil {
		return err
	}
	for n, b := range charts {
		files[n] = b
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	dir, err := report.WriteRun(filepath.Join(f.out, "plan", sc.Name), time.Now().UTC().Format("20060102T150405Z"), files)
	if err != nil {
		return err
	}
	if !f.quiet {
		writePlanSummary(env, g, rec)
		fmt.Fprintf(env.Stdout, "\nplan: %s\n", filepath.Join(dir, plan.MarkdownName))
	}
	return nil
}

// writePlanSummary prints what the plan judged by, each candidate's max
// load and binding goal, and the recommendation.
func writePlanSummary(env *Env, g *plan.Grid, rec *plan.Recommendation) {
	load := &g.Axes[0]
	fmt.Fprintf(env.Stdout, "%s plan (seed %d): %d points × %d designs, load %s, target %s, headroom +%d%%\n",
		g.Scenario().Name, g.Scenario().Seed, len(g.Points), len(g.Designs), load.Key, load.Text(rec.Target), rec.HeadroomPercent)
	fmt.Fprintf(env.Stdout, "goals: %s\n", plan.GoalsText(rec.Goals))
	tw := tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"design"}
	if len(g.Axes) > 1 {
		head = append(head, "at")
	}
	head = append(head, "max load", "meets target", "store memory at target", "store ops/s at target", "recovery p99 ms", "binds at target")
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, c := range rec.Candidates {
		row := []string{c.Design}
		if len(g.Axes) > 1 {
			row = append(row, c.Group)
		}
		maxLoad, meets, mem, ops := "none", "no", "-", "-"
		if c.MaxLoad != nil {
			maxLoad = load.Text(*c.MaxLoad)
		}
		if c.MeetsTarget {
			meets = "yes"
		}
		if c.AtTarget != nil {
			mem, ops = plan.Bytes(c.AtTarget.Bytes), strconv.FormatFloat(c.AtTarget.OpsPerS, 'f', -1, 64)
		}
		bind := c.Binding(load.Text)
		if bind == "" {
			bind = "none"
		}
		fmt.Fprintln(tw, strings.Join(append(row, maxLoad, meets, mem, ops, plan.RecoveryText(c.RecoveryP99MS), bind), "\t")+"\t")
	}
	tw.Flush()
	if best := rec.Best(); best != nil {
		at := ""
		if best.Group != "" {
			at = " at " + best.Group
		}
		fmt.Fprintf(env.Stdout, "\ncheapest at %s that meets every goal: %s%s, store %s and %s ops/s provisioned (+%d%%), %d replicas\n",
			load.Label(rec.Target), best.Design, at, plan.Bytes(best.AtTarget.Bytes), strconv.FormatFloat(best.AtTarget.OpsPerS, 'f', -1, 64), rec.HeadroomPercent, best.Replicas)
	} else {
		fmt.Fprintf(env.Stdout, "\nno design meets every goal at %s; the binding goal of each is in the last column\n", load.Label(rec.Target))
	}
}

// planChartData reduces a simulated grid to what the plan charts draw:
// one panel per combination of the other axes, the memory store's cap ×
// replicas as its limit wherever a memory design has a cap, and the Redis
// model's append ceiling wherever a design keeps its events in Redis.
func planChartData(res *plan.Result) *plots.PlanData {
	g := res.Grid
	sc := g.Scenario()
	load := &g.Axes[0]
	d := &plots.PlanData{
		Title:     fmt.Sprintf("%s (seed %d)", sc.Name, sc.Seed),
		LoadLabel: load.Key, Designs: g.Designs,
		LoadLog: load.Log || (load.Values[0] > 0 && load.Max()/load.Values[0] >= 10),
	}
	if len(load.Values) <= 12 {
		for _, v := range load.Values {
			d.LoadTicks = append(d.LoadTicks, plots.Tick{Value: v, Label: load.Text(v)})
		}
	}
	nl := g.Loads()
	for k := range g.Groups() {
		p := plots.PlanPanel{Title: g.GroupLabel(k)}
		pt0 := g.Points[k*nl]
		p.MemoryLimits = designLimits(g, k, "memory store cap × replicas",
			func(lim float64) string {
				return fmt.Sprintf("memory store cap × %d replicas = %s", pt0.Scenario.Replicas, plan.Bytes(int64(lim)))
			},
			func(pt *plan.Point, des *scenario.Design) (float64, bool) {
				if des.Events != topology.EventsMemory || des.Store.MemoryCapBytes <= 0 {
					return 0, false
				}
				return float64(des.Store.MemoryCapBytes) * float64(pt.Scenario.Replicas), true
			})
		p.OpsLimits = designLimits(g, k, "Redis model's ceiling on appends alone",
			func(lim float64) string {
				return fmt.Sprintf("Redis model's ceiling on appends alone = %.0f ops/s", lim)
			},
			func(_ *plan.Point, des *scenario.Design) (float64, bool) {
				c := des.Store.AppendCeiling()
				return c, des.Events == topology.EventsRedis && c > 0
			})
		for li := range nl {
			for di := range g.Designs {
				r := &res.Rows[(k*nl+li)*len(g.Designs)+di]
				t := &r.Report.Totals
				p.Points = append(p.Points, plots.PlanPoint{
					Design: r.Design, Load: g.Points[r.Point].Values[0],
					StoreBytes: float64(t.StorePeakBytes), StoreOpsPerS: t.StorePeakOpsPerS,
					ReplayP99MS: r.Report.ReplayLatencyMS.P99, LostFraction: plan.LostFraction(t),
				})
			}
		}
		d.Panels = append(d.Panels, p)
	}
	return d
}

// designLimits collects, for panel k, each design's limit along the load
// axis (limit gives it at a point, false where the design has none). The
// designs that share one are drawn as one line, named after them when there
// is more than one; a limit the same at every load is a horizontal line
// labelled by flat(value), any other is labelled label.
func designLimits(g *plan.Grid, k int, label string, flat func(float64) string,
	limit func(*plan.Point, *scenario.Design) (float64, bool)) []plots.PlanLimit {
	nl := g.Loads()
	var limits [][]plots.Point
	var owners [][]string
	for _, dn := range g.Designs {
		var pts []plots.Point
		for li := range nl {
			pt := &g.Points[k*nl+li]
			for i := range pt.Scenario.Designs {
				if des := &pt.Scenario.Designs[i]; des.Name == dn {
					if v, ok := limit(pt, des); ok {
						pts = append(pts, plots.Point{X: pt.Values[0], Y: v})
					}
				}
			}
		}
		if len(pts) == 0 {
			continue
		}
		if i := slices.IndexFunc(limits, func(l []plots.Point) bool { return slices.Equal(l, pts) }); i >= 0 {
			owners[i] = append(owners[i], dn)
			continue
		}
		limits, owners = append(limits, pts), append(owners, []string{dn})
	}
	var out []plots.PlanLimit
	for i, pts := range limits {
		lim := plots.PlanLimit{Label: label, Points: pts}
		if slices.IndexFunc(pts, func(q plots.Point) bool { return q.Y != pts[0].Y }) < 0 {
			lim = plots.PlanLimit{Value: pts[0].Y, Label: flat(pts[0].Y)}
		}
		if len(limits) > 1 {
			lim.Label += " (" + strings.Join(owners[i], ", ") + ")"
		}
		out = append(out, lim)
	}
	return out
}
