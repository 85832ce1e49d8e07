package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stormsim/stormsim/faults"
	"github.com/stormsim/stormsim/live/runner"
	"github.com/stormsim/stormsim/live/shard"
	"github.com/stormsim/stormsim/live/up"
	"github.com/stormsim/stormsim/orchestrate"
	"github.com/stormsim/stormsim/scenario"
)

// DefaultFile is the scenarios file commands read unless told otherwise.
const DefaultFile = "scenarios.toml"

func init() {
	register(command{name: "run", summary: "run a scenario and write its report", run: runCmd})
	register(command{name: "list", summary: "list the scenarios and designs in a file", run: listCmd})
	register(command{name: "validate", summary: "check a scenarios file and report every problem", run: validateCmd})
}

// runFlags are the flags of 'stormsim run'.
type runFlags struct {
	file     string
	designs  string
	seed     string
	set      listFlag
	simSet   listFlag
	out      string
	quiet    bool
	parallel int
	engine   string
	noCharts bool
	noThresh bool
	repeat   int
	target   string
	redisURL string
	noSat    bool
	shard    string
	shards   int
	startAt  string
	up       string
}

func runCmd(ctx context.Context, env *Env, args []string) error {
	var f runFlags
	fs := f.define(env)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	p, err := f.resolve(ctx, env, fs, pos)
	if err != nil {
		return err
	}
	if p.sh != nil {
		return runShard(ctx, env, &f, p.sh, p.sc, p.designs, p.sets, p.st)
	}
	o, done, err := f.options(env, p)
	if err != nil {
		return err
	}
	defer done()
	return inputError(orchestrate.Run(ctx, o))
}

// define makes run's flag set, with f taking the values.
func (f *runFlags) define(env *Env) *flag.FlagSet {
	fs := newFlags(env, "run", "SCENARIO [flags]",
		"Run SCENARIO from the scenarios file with every design it lists, print the table of designs,\n"+
			"and write report.json, summary.md, series.csv, the charts (PNG and SVG) and report.html\n"+
			"(live runs add results.bin, every HTTP exchange in vegeta's format, history.json.gz, and live.log:\n"+
			"the faults applied, unexpected exits, store outages and go-redis's own messages)\n"+
			"to OUT/<scenario>/<UTC time>-seed<N>/ "+
			"(OUT/<scenario>/latest points at the newest run).")
	fs.StringVar(&f.file, "file", DefaultFile, "scenarios `file`")
	fs.StringVar(&f.designs, "designs", "", "run only these designs, comma-separated (`a,b`)")
	fs.StringVar(&f.seed, "seed", "", "override the scenario's seed (`N`)")
	fs.Var(&f.set, "set", "override a scenario key, repeatable (`key=value`, e.g. workload.clients=500)")
	fs.Var(&f.simSet, "sim-set", "with --engine both: override a key for the simulator only, repeatable (`key=value`): a deliberately wrong model, to see the agreement check bite")
	fs.StringVar(&f.out, "out", "results", "results `dir`")
	fs.BoolVar(&f.quiet, "quiet", false, "print nothing but errors")
	fs.IntVar(&f.parallel, "parallel", 0, "designs run at once, at least 1 (`N`; default: one per core in the simulator, one at a time live)")
	fs.StringVar(&f.engine, "engine", "sim", "`engine`: sim (virtual time), live (real replicas, LB, Redis and SSE clients on loopback), or both: the two on the same seed, compared in agreement.md (exit 98 outside the scenario's agreement tolerances)")
	fs.BoolVar(&f.noCharts, "no-charts", false, "skip the charts and report.html")
	fs.BoolVar(&f.noThresh, "no-thresholds", false, "do not judge the scenario's expect table (it is sized for the scenario as written, not for --set changes)")
	fs.StringVar(&f.target, "target", "", "aim the live clients at this MCP `URL`, a server stormsim does not control (--set server.url=URL); faults that need its processes are refused")
	fs.StringVar(&f.redisURL, "redis-url", "", "live engine: use this Redis (`URL`: redis://host:port/db or host:port) for the Redis designs instead of a private redis-server; stormsim never stops or restarts it, so store faults are refused")
	fs.IntVar(&f.repeat, "seeds", 0, "run `N` seeds, seed..seed+N-1, on each engine: report.json holds each design's metrics at every seed with their mean and 95% interval (over_seeds), the table shows the means, seed-<S>/ holds each run; with --engine both, agreement compares the pooled counts (default: the expect table's seeds, else 1)")
	fs.IntVar(&f.repeat, "repeat", 0, "the same as --seeds (`N`)")
	fs.BoolVar(&f.noSat, "no-saturation-check", false, "live engine: give a verdict even when the host fell behind the run's schedule (report.json's host block says host_saturated; without this flag such a run exits 97)")
	fs.StringVar(&f.shard, "shard", "", "live engine: run shard `i/N` of a run split N ways: the clients whose id % N is i, into OUT/shard-<i>-of-<N>/ for stormsim merge (docs/distributed.md)")
	fs.IntVar(&f.shards, "shards", 0, "the same as --shard with i from $"+shard.EnvIndex+", as a Kubernetes Indexed Job sets it (`N`)")
	fs.StringVar(&f.startAt, "start-at", "", "live engine: start the run's clock at this `time` (RFC 3339, e.g. 2026-12-01T10:00:00Z), the barrier every shard waits for; $"+shard.EnvStartAt+" stands for it")
	fs.StringVar(&f.up, "up", "", "live engine: aim the clients at the topology of a running stormsim up, from its state `file`; the scenario's server-side faults go to up's control endpoint (by shard 0 of a sharded run), client drops stay with the clients")
	return fs
}

// runPlan is what run's flags resolve to before anything runs.
type runPlan struct {
	name       string
	sets       []string // --set, with --seed and --target as sets
	designs    []string // nil: every design
	sc, simSc  *scenario.Scenario
	st         *up.State  // --up: the topology to aim at
	sh         *shardPlan // --shard: run one shard instead
	seedsGiven bool
}

// resolve checks run's arguments and loads the scenario they name.
func (f *runFlags) resolve(ctx context.Context, env *Env, fs *flag.FlagSet, pos []string) (*runPlan, error) {
	if len(pos) != 1 {
		return nil, usagef("run: want exactly one SCENARIO, got %d (try 'stormsim list')", len(pos))
	}
	p := &runPlan{name: pos[0]}
	var err error
	if p.sh, err = shardFlags(fs, f, env); err != nil {
		return nil, err
	}
	if f.engine != "sim" && f.engine != "live" && f.engine != "both" {
		return nil, usagef("run: --engine %q is not available (valid: sim, live, both)", f.engine)
	}
	p.seedsGiven = visited(fs, "seeds") || visited(fs, "repeat")
	if p.seedsGiven && (f.repeat < 1 || f.repeat > 100) {
		return nil, usagef("run: --seeds %d is not within 1..100", f.repeat)
	}
	if visited(fs, "parallel") && f.parallel < 1 {
		return nil, usagef("run: --parallel %d: want at least 1 (leave it out for the default)", f.parallel)
	}
	if p.designs, err = splitList(fs, "run", "designs", f.designs); err != nil {
		return nil, err
	}
	if _, err := startTime(f.startAt); err != nil {
		return nil, err
	}
	if f.up != "" {
		deadline := time.Now().Add(up.Wait)
		if at, _ := startTime(f.startAt); at.After(deadline) {
			deadline = at
		}
		if p.st, err = up.Await(ctx, f.up, p.name, deadline); err != nil {
			return nil, err
		}
		switch {
		case p.designs == nil:
			p.designs = []string{p.st.Design}
		case len(p.designs) != 1 || p.designs[0] != p.st.Design:
			return nil, usagef("run: --up %s serves design %s: --designs must name it alone", f.up, p.st.Design)
		}
	}
	p.sets = []string(f.set)
	if f.seed != "" {
		if _, err := strconv.ParseInt(f.seed, 10, 64); err != nil || strings.HasPrefix(f.seed, "-") {
			return nil, usagef("run: --seed %q is not an integer in 0..9223372036854775807", f.seed)
		}
		p.sets = append(p.sets, "seed="+f.seed)
	}
	if f.target != "" {
		if f.engine == "sim" {
			return nil, usagef("run: --target aims the live clients at a server: use --engine live or both")
		}
		p.sets = append(p.sets, targetSets(f.target)...)
	}
	return p, f.load(ctx, p)
}

// load loads the scenario, and the simulator's copy with --sim-set.
func (f *runFlags) load(ctx context.Context, p *runPlan) error {
	file, err := scenario.LoadContext(ctx, f.file, &scenario.Options{Set: p.sets, Target: p.name})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if f.target != "" {
			// The pair --target stands for is the user's --target.
			return usagef("%s", strings.ReplaceAll(err.Error(), "--set server.url", "--target "+f.target))
		}
		return usageError{err}
	}
	if p.sc, err = file.Scenario(p.name); err != nil {
		return usageError{err}
	}
	p.simSc = p.sc
	if len(f.simSet) > 0 {
		if f.engine != "both" {
			return usagef("run: --sim-set is for --engine both")
		}
		sf, err := scenario.LoadContext(ctx, f.file, &scenario.Options{Set: append(slices.Clone(p.sets), f.simSet...), Target: p.name})
		if err != nil {
			return usageError{err}
		}
		if p.simSc, err = sf.Scenario(p.name); err != nil {
			return usageError{err}
		}
	}
	if _, err := p.sc.Select(p.designs); err != nil {
		return usageError{err}
	}
	return nil
}

// options makes the run's options: it keeps the warnings that concern the
// designs run and prints them, checks that the results can be written, and
// starts the progress bar, which done clears.
func (f *runFlags) options(env *Env, p *runPlan) (o *orchestrate.Options, done func(), err error) {
	if !p.seedsGiven {
		f.repeat = max(1, p.sc.ExpectSeeds)
	}
	o = &orchestrate.Options{
		File: f.file, Scenario: p.sc, SimScenario: p.simSc, Sets: p.sets, SimSets: f.simSet,
		Designs: p.designs, Engine: f.engine, Seeds: f.repeat, Parallel: f.parallel, Out: f.out,
		Charts: !f.noCharts, Thresholds: !f.noThresh, SaturationCheck: !f.noSat,
	}
	if !f.quiet {
		o.Stdout = env.Stdout
	}
	engines := orchestrate.Engines(f.engine)
	n := len(p.sc.Designs)
	if p.designs != nil {
		n = len(p.designs)
	}
	orchestrate.KeepWarnings(p.designs, p.sc, p.simSc)
	if slices.Contains(engines, "sim") {
		if w := memoryWarning(p.simSc, n); w != "" {
			p.simSc.Warnings = append(p.simSc.Warnings, scenario.Warning{Text: w})
		}
	}
	if err := probeOut(filepath.Join(f.out, p.sc.Name)); err != nil {
		return nil, nil, err
	}
	if !f.quiet {
		warned := map[string]bool{}
		for _, s := range []*scenario.Scenario{p.sc, p.simSc} {
			for _, w := range s.WarningTexts(nil) {
				if !warned[w] {
					warned[w] = true
					fmt.Fprintln(env.Stderr, "stormsim: warning:", w)
				}
			}
		}
	}
	if o.Live, err = f.liveOptions(engines, p.st); err != nil {
		return nil, nil, err
	}
	if o.InterruptWithin, err = interruptWithin(); err != nil {
		return nil, nil, usageError{err}
	}
	if !f.quiet {
		o.Live.Judging = func(design string, receipts int) {
			fmt.Fprintf(env.Stderr, "stormsim: %s (live): design %s: judging %d receipts\n", p.sc.Name, design, receipts)
		}
	}
	o.Progress, o.ProgressDone = newProgress(env, f.quiet, scenario.Horizon(p.sc)*time.Duration(n*len(engines)*f.repeat),
		fmt.Sprintf("%s (%s): %d designs", p.sc.Name, f.engine, n))
	return o, o.ProgressDone, nil
}

// liveOptions are the settings every live run of the command shares.
func (f *runFlags) liveOptions(engines []string, st *up.State) (runner.Options, error) {
	if !slices.Contains(engines, "live") {
		return runner.Options{}, nil
	}
	abs, err := filepath.Abs(f.file)
	if err != nil {
		return runner.Options{}, err
	}
	inject, err := injectedLateness()
	if err != nil {
		return runner.Options{}, usageError{err}
	}
	opts := runner.Options{File: abs, RedisAddr: f.redisURL, InjectLateness: inject}
	if opts.StartAt, err = startTime(f.startAt); err != nil {
		return runner.Options{}, err
	}
	if st != nil {
		opts.Endpoint = st.Endpoint
		opts.ServerFault = func(ctx context.Context, fl faults.Fault) ([]string, error) { return up.Fault(ctx, st, fl) }
	}
	return opts, nil
}

// inputError turns a problem with the scenario or the arguments that a run
// met into a usage error: exit 2.
func inputError(err error) error {
	var ie *orchestrate.InputError
	if errors.As(err, &ie) {
		return usageError{ie.Err}
	}
	return err
}

// The run's helpers that other commands share.
var (
	runFiles     = orchestrate.RunFiles
	withSeed     = orchestrate.WithSeed
	loadScenario = orchestrate.LoadScenario
)

func listCmd(ctx context.Context, env *Env, args []string) error {
	var file string
	fs := newFlags(env, "list", "[FILE] [flags]", "List the scenarios (with their descriptions) and the designs defined in the scenarios file.")
	fs.StringVar(&file, "file", DefaultFile, "scenarios `file`")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	switch len(pos) {
	case 0:
	case 1:
		file = pos[0]
	default:
		return usagef("list: want at most one FILE, got %d", len(pos))
	}
	f, err := scenario.LoadContext(ctx, file, nil)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return usageError{err}
	}
	fmt.Fprintln(env.Stdout, "scenarios:")
	for _, n := range f.Names() {
		sc, _ := f.Scenario(n)
		fmt.Fprintf(env.Stdout, "  %-20s %s\n", n, sc.Description)
	}
	fmt.Fprintln(env.Stdout, "designs:")
	for _, n := range f.DesignNames() {
		fmt.Fprintf(env.Stdout, "  %s\n", n)
	}
	return nil
}

func validateCmd(ctx context.Context, env *Env, args []string) error {
	var file string
	fs := newFlags(env, "validate", "[FILE] [flags]", "Check a scenarios file (default scenarios.toml) and print every problem, naming the file, key and problem,\n"+
		"then every warning: a setting that loads but probably does not mean what it says.")
	fs.StringVar(&file, "file", DefaultFile, "scenarios `file` (or give it as FILE)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	switch len(pos) {
	case 0:
	case 1:
		file = pos[0]
	default:
		return usagef("validate: want at most one FILE, got %d", len(pos))
	}
	if len(pos) == 1 && visited(fs, "file") {
		return usagef("validate: give the file as FILE or --file, not both")
	}
	f, err := scenario.LoadContext(ctx, file, nil)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return usageError{err}
	}
	for _, n := range f.Names() {
		sc, _ := f.Scenario(n)
		for _, w := range sc.WarningTexts(nil) {
			fmt.Fprintf(env.Stdout, "warning: %s\n", w)
		}
	}
	fmt.Fprintf(env.Stdout, "%s: ok (%s, %s)\n", file, plural(len(f.Names()), "scenario"), plural(len(f.DesignNames()), "design"))
	return nil
}
