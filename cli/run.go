package cli

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stormsim/stormsim/agree"
	"github.com/stormsim/stormsim/expect"
	"github.com/stormsim/stormsim/faults"
	"github.com/stormsim/stormsim/history"
	"github.com/stormsim/stormsim/live/runner"
	"github.com/stormsim/stormsim/live/shard"
	"github.com/stormsim/stormsim/plots"
	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
	"github.com/stormsim/stormsim/sim"
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
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("run: want exactly one SCENARIO, got %d (try 'stormsim list')", len(pos))
	}
	sh, err := shardFlags(fs, &f, env)
	if err != nil {
		return err
	}
	if f.engine != "sim" && f.engine != "live" && f.engine != "both" {
		return usagef("run: --engine %q is not available (valid: sim, live, both)", f.engine)
	}
	seedsGiven := visited(fs, "seeds") || visited(fs, "repeat")
	if seedsGiven && (f.repeat < 1 || f.repeat > 100) {
		return usagef("run: --seeds %d is not within 1..100", f.repeat)
	}
	if visited(fs, "parallel") && f.parallel < 1 {
		return usagef("run: --parallel %d: want at least 1 (leave it out for the default)", f.parallel)
	}
	designs, err := splitList(fs, "run", "designs", f.designs)
	if err != nil {
		return err
	}
	name := pos[0]
	if _, err := startTime(f.startAt); err != nil {
		return err
	}
	var st *upState
	if f.up != "" {
		deadline := time.Now().Add(upWait)
		if at, _ := startTime(f.startAt); at.After(deadline) {
			deadline = at
		}
		if st, err = readUp(ctx, f.up, name, deadline); err != nil {
			return err
		}
		switch {
		case designs == nil:
			designs = []string{st.Design}
		case len(designs) != 1 || designs[0] != st.Design:
			return usagef("run: --up %s serves design %s: --designs must name it alone", f.up, st.Design)
		}
	}
	sets := []string(f.set)
	if f.seed != "" {
		if _, err := strconv.ParseInt(f.seed, 10, 64); err != nil || strings.HasPrefix(f.seed, "-") {
			return usagef("run: --seed %q is not an integer in 0..9223372036854775807", f.seed)
		}
		sets = append(sets, "seed="+f.seed)
	}
	if f.target != "" {
		if f.engine == "sim" {
			return usagef("run: --target aims the live clients at a server: use --engine live or both")
		}
		sets = append(sets, targetSets(f.target)...)
	}
	file, err := scenario.LoadContext(ctx, f.file, &scenario.Options{Set: sets, Target: name})
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
	sc, err := file.Scenario(name)
	if err != nil {
		return usageError{err}
	}
	simSc := sc
	if len(f.simSet) > 0 {
		if f.engine != "both" {
			return usagef("run: --sim-set is for --engine both")
		}
		sf, err := scenario.LoadContext(ctx, f.file, &scenario.Options{Set: append(slices.Clone(sets), f.simSet...), Target: name})
		if err != nil {
			return usageError{err}
		}
		if simSc, err = sf.Scenario(name); err != nil {
			return usageError{err}
		}
	}
	if _, err := sc.Select(designs); err != nil {
		return usageError{err}
	}
	if sh != nil {
		return runShard(ctx, env, &f, sh, sc, designs, sets, st)
	}
	if !seedsGiven {
		f.repeat = max(1, sc.ExpectSeeds)
	}
	engines := []string{f.engine}
	if f.engine == "both" {
		engines = []string{"sim", "live"}
	}
	n := len(sc.Designs)
	if designs != nil {
		n = len(designs)
	}
	// The warnings that concern the designs run, and nothing else, go to
	// the terminal and into the reports' notes.
	for _, s := range []*scenario.Scenario{sc, simSc} {
		var keep []scenario.Warning
		for _, w := range s.Warnings {
			if w.Design == "" || designs == nil || slices.Contains(designs, w.Design) {
				keep = append(keep, w)
			}
		}
		s.Warnings = keep
	}
	if slices.Contains(engines, "sim") {
		if w := memoryWarning(simSc, n); w != "" {
			simSc.Warnings = append(simSc.Warnings, scenario.Warning{Text: w})
		}
	}
	if err := probeOut(filepath.Join(f.out, sc.Name)); err != nil {
		return err
	}
	if !f.quiet {
		warned := map[string]bool{}
		for _, s := range []*scenario.Scenario{sc, simSc} {
			for _, w := range s.WarningTexts(nil) {
				if !warned[w] {
					warned[w] = true
					fmt.Fprintln(env.Stderr, "stormsim: warning:", w)
				}
			}
		}
	}
	progress, doneProgress := newProgress(env, f.quiet, scenario.Horizon(sc)*time.Duration(n*len(engines)*f.repeat),
		fmt.Sprintf("%s (%s): %d designs", sc.Name, f.engine, n))
	defer doneProgress()
	all := map[string][]*report.Report{}
	files := map[string][]byte{}
	type job struct {
		engine, prefix string
		sc             *scenario.Scenario
		sets           []string
	}
	var jobs []job
	for r := range f.repeat {
		rsc, rsim, rsets := sc, simSc, sets
		if r > 0 {
			// The same scenario on the next seed, loaded afresh, so the
			// replicas load it with the same --set as the clients.
			rsets = withSeed(sets, sc.Seed+uint64(r))
			if rsc, err = loadScenario(f.file, name, rsets); err != nil {
				return usageError{err}
			}
			if rsim, err = loadScenario(f.file, name, append(slices.Clone(rsets), f.simSet...)); err != nil {
				return usageError{err}
			}
			rsc.Warnings, rsim.Warnings = sc.Warnings, simSc.Warnings // the seed changes none of them
		}
		for _, engine := range engines {
			prefix := ""
			if len(engines) > 1 {
				prefix = engine + "/" // --engine both: one folder per engine
			}
			if f.repeat > 1 {
				prefix = fmt.Sprintf("seed-%d/%s", sc.Seed+uint64(r), prefix)
			}
			esc := rsc
			if engine == "sim" {
				esc = rsim
			}
			jobs = append(jobs, job{engine, prefix, esc, rsets})
		}
	}
	for _, jb := range jobs {
		engine := jb.engine
		rep, extra, err := runEngine(ctx, engine, jb.sc, &f, designs, jb.sets, progress, st)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if strings.Contains(err.Error(), "has no design") {
				return usageError{err}
			}
			return err
		}
		ef, err := runFiles(rep, !f.noCharts)
		if err != nil {
			return err
		}
		for k, v := range extra {
			ef[k] = v
		}
		for k, v := range ef {
			files[jb.prefix+k] = v
		}
		all[engine] = append(all[engine], rep)
	}
	doneProgress()
	// Over several seeds, each engine's top report is its first seed's
	// run with every seed's metrics attached (over_seeds).
	tops := map[string]*report.Report{}
	if f.repeat > 1 {
		for _, engine := range engines {
			top := report.WithOverSeeds(all[engine])
			for _, o := range sc.Orderings {
				for _, than := range o.Than {
					if top.Design(o.Lower) != nil && top.Design(than) != nil {
						top.OverSeeds.Orderings = append(top.OverSeeds.Orderings, top.OverSeeds.Order(o.Metric, o.Lower, than))
					}
				}
			}
			for _, r := range all[engine] {
				if r.Host != nil && r.Host.Saturated {
					top.Host = r.Host // any seed saturated: the run as a whole was
					break
				}
			}
			tops[engine] = top
			prefix := ""
			if len(engines) > 1 {
				prefix = engine + "/"
			}
			ef, err := top.Files()
			if err != nil {
				return err
			}
			files[prefix+"report.json"], files[prefix+"summary.md"] = ef["report.json"], ef["summary.md"]
		}
	}
	var agreement *agree.Agreement
	if len(engines) > 1 {
		agreement = agree.CompareRepeats(all["sim"], all["live"], agree.TolerancesOf(sc))
		j, err := agreement.JSON()
		if err != nil {
			return err
		}
		files["agreement.json"], files["agreement.md"] = j, agreement.Markdown()
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	dir, err := report.WriteRun(filepath.Join(f.out, sc.Name), report.RunDir(time.Now(), sc.Seed), files)
	if err != nil {
		return err
	}
	var failed []expect.Result
	if f.repeat > 1 {
		var err error
		if failed, err = reportSeeds(env, &f, sc, engines, tops, all, dir); err != nil {
			return err
		}
	}
	for i, jb := range jobs {
		if f.repeat > 1 {
			break // reported over the seeds
		}
		engine := jb.engine
		rep := all[engine][i/len(engines)]
		var results []expect.Result
		if !f.noThresh {
			results = expect.Evaluate(rep, sc.Expect)
		}
		failed = append(failed, expect.Failed(results)...)
		if f.quiet {
			continue
		}
		sub := filepath.Join(dir, jb.prefix)
		if len(engines) > 1 {
			fmt.Fprintln(env.Stdout)
		}
		if err := rep.WriteTable(env.Stdout); err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "\nreport: %s\n", filepath.Join(sub, "report.json"))
		if !f.noCharts {
			fmt.Fprintf(env.Stdout, "charts: %s\n", filepath.Join(sub, plots.PageName))
		}
		if len(results) > 0 {
			fmt.Fprintf(env.Stdout, "thresholds: %d checked, %d failed\n", len(results), len(expect.Failed(results)))
		}
	}
	if !f.noSat {
		// A saturated live run gives no verdict: exit 97, before a
		// disagreement (98) or a threshold (99) is judged.
		if err := saturated(all["live"], len(engines) > 1); err != nil {
			return err
		}
	}
	if agreement != nil {
		if !f.quiet {
			fmt.Fprintf(env.Stdout, "\nagreement: %s: %s\n", agreement.Summary(), filepath.Join(dir, "agreement.md"))
		}
		if agreement.Failed > 0 {
			return &agree.Disagreement{A: agreement}
		}
	}
	if len(failed) > 0 {
		return &expect.Breach{Failed: failed}
	}
	return nil
}

// reportSeeds prints each engine's table over the seeds and judges the
// thresholds: on the means when the scenario's expect table asks for
// seeds, else at every seed. It returns the failed checks.
func reportSeeds(env *Env, f *runFlags, sc *scenario.Scenario, engines []string, tops map[string]*report.Report, all map[string][]*report.Report, dir string) ([]expect.Result, error) {
	var failed []expect.Result
	for _, engine := range engines {
		top := tops[engine]
		var results []expect.Result
		how := fmt.Sprintf("at each of the %d seeds", f.repeat)
		if !f.noThresh {
			if sc.ExpectSeeds > 1 {
				results = expect.Evaluate(top, sc.Expect)
				how = fmt.Sprintf("on the means over %d seeds", f.repeat)
				if f.repeat != sc.ExpectSeeds {
					how += fmt.Sprintf(" (the scenario's expect table asks for %d)", sc.ExpectSeeds)
				}
			} else {
				for _, r := range all[engine] {
					results = append(results, expect.Evaluate(r, sc.Expect)...)
				}
			}
		}
		failed = append(failed, expect.Failed(results)...)
		if f.quiet {
			continue
		}
		if len(engines) > 1 {
			fmt.Fprintln(env.Stdout)
		}
		if err := top.WriteSeedTable(env.Stdout); err != nil {
			return nil, err
		}
		if ors := top.OverSeeds.Orderings; len(ors) > 0 {
			fmt.Fprintf(env.Stdout, "\norderings over %s:\n", plural(len(top.OverSeeds.Seeds), "seed"))
			for _, o := range ors {
				fmt.Fprintf(env.Stdout, "  %s\n", o)
			}
		}
		sub := dir
		if len(engines) > 1 {
			sub = filepath.Join(dir, engine)
		}
		fmt.Fprintf(env.Stdout, "\nreport: %s (each seed's run in %s)\n", filepath.Join(sub, "report.json"), filepath.Join(dir, "seed-<S>"))
		if len(results) > 0 {
			fmt.Fprintf(env.Stdout, "thresholds: %d checked %s, %d failed\n", len(results), how, len(expect.Failed(results)))
		}
	}
	return failed, nil
}

// runEngine runs sc on one engine and returns its report and the extra
// files it writes (a live run: results.bin and the histories).
func runEngine(ctx context.Context, engine string, sc *scenario.Scenario, f *runFlags, designs, sets []string, progress func(time.Duration), st *upState) (*report.Report, map[string][]byte, error) {
	if engine == "sim" {
		out, err := sim.Run(ctx, sc, &sim.Options{Parallel: f.parallel, Designs: designs, Progress: progress})
		if err != nil {
			return nil, nil, err
		}
		return out.Report, nil, nil
	}
	abs, err := filepath.Abs(f.file)
	if err != nil {
		return nil, nil, err
	}
	var buf, logBuf bytes.Buffer
	inject, err := injectedLateness()
	if err != nil {
		return nil, nil, usageError{err}
	}
	opts := &runner.Options{File: abs, Designs: designs, Parallel: f.parallel,
		Progress: progress, Results: &buf, Set: sets, RedisAddr: f.redisURL, Log: &logBuf, InjectLateness: inject}
	if opts.StartAt, err = startTime(f.startAt); err != nil {
		return nil, nil, err
	}
	if st != nil {
		opts.Endpoint = st.Endpoint
		opts.ServerFault = func(ctx context.Context, fl faults.Fault) ([]string, error) { return upFault(ctx, st, fl) }
	}
	out, err := runner.Run(ctx, sc, opts)
	if err != nil {
		return nil, nil, err
	}
	hist, err := history.EncodeHistories(out.Histories)
	if err != nil {
		return nil, nil, err
	}
	return out.Report, map[string][]byte{"results.bin": buf.Bytes(), history.HistoryFile: hist, "live.log": logBuf.Bytes()}, nil
}

// runFiles are the files of a run's folder that its report makes:
// report.json, summary.md, series.csv and, with charts, the charts and
// report.html. A merged run's folder holds the same.
func runFiles(rep *report.Report, charts bool) (map[string][]byte, error) {
	files, err := rep.Files()
	if err != nil || !charts {
		return files, err
	}
	c, err := plots.Render(rep)
	if err != nil {
		return nil, err
	}
	for name, data := range c {
		files[name] = data
	}
	return files, nil
}

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

// withSeed is sets with seed=N in place of any seed they set (--seed, or
// --set seed=N): the override for one of the runs of --seeds.
func withSeed(sets []string, seed uint64) []string {
	out := slices.DeleteFunc(slices.Clone(sets), func(s string) bool {
		k, _, _ := strings.Cut(s, "=")
		return strings.TrimSpace(k) == "seed"
	})
	return append(out, "seed="+strconv.FormatUint(seed, 10))
}

// loadScenario loads scenario name from file with the --set overrides.
func loadScenario(file, name string, sets []string) (*scenario.Scenario, error) {
	f, err := scenario.Load(file, &scenario.Options{Set: sets, Target: name})
	if err != nil {
		return nil, err
	}
	return f.Scenario(name)
}
