package cli

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/stormsim/stormsim/expect"
	"github.com/stormsim/stormsim/live/check"
	"github.com/stormsim/stormsim/live/runner"
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
	out      string
	quiet    bool
	parallel int
	engine   string
	noCharts bool
}

func runCmd(ctx context.Context, env *Env, args []string) error {
	var f runFlags
	fs := newFlags(env, "run", "SCENARIO [flags]",
		"Run SCENARIO from the scenarios file with every design it lists, print the table of designs,\n"+
			"and write report.json, summary.md, series.csv, the charts (PNG and SVG) and report.html\n"+
			"(live runs add results.bin, every HTTP exchange in vegeta's format, and history.json.gz)\n"+
			"to OUT/<scenario>/<UTC time>-seed<N>/ "+
			"(OUT/<scenario>/latest points at the newest run).")
	fs.StringVar(&f.file, "file", DefaultFile, "scenarios `file`")
	fs.StringVar(&f.designs, "designs", "", "run only these designs, comma-separated (`a,b`)")
	fs.StringVar(&f.seed, "seed", "", "override the scenario's seed (`N`)")
	fs.Var(&f.set, "set", "override a scenario key, repeatable (`key=value`, e.g. workload.clients=500)")
	fs.StringVar(&f.out, "out", "results", "results `dir`")
	fs.BoolVar(&f.quiet, "quiet", false, "print nothing but errors")
	fs.IntVar(&f.parallel, "parallel", 0, "designs run at once (0 = one per core in the simulator, one at a time live)")
	fs.StringVar(&f.engine, "engine", "sim", "`engine`: sim (virtual time) or live (real replicas, LB, Redis and SSE clients on loopback)")
	fs.BoolVar(&f.noCharts, "no-charts", false, "skip the charts and report.html")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("run: want exactly one SCENARIO, got %d (try 'stormsim list')", len(pos))
	}
	if f.engine != "sim" && f.engine != "live" {
		return usagef("run: --engine %q is not available (valid: sim, live)", f.engine)
	}
	name := pos[0]
	sets := []string(f.set)
	if f.seed != "" {
		if _, err := strconv.ParseInt(f.seed, 10, 64); err != nil || strings.HasPrefix(f.seed, "-") {
			return usagef("run: --seed %q is not an integer in 0..9223372036854775807", f.seed)
		}
		sets = append(sets, "seed="+f.seed)
	}
	file, err := scenario.Load(f.file, &scenario.Options{Set: sets, Target: name})
	if err != nil {
		return usageError{err}
	}
	sc, err := file.Scenario(name)
	if err != nil {
		return usageError{err}
	}
	var designs []string
	if f.designs != "" {
		for _, d := range strings.Split(f.designs, ",") {
			if d = strings.TrimSpace(d); d != "" {
				designs = append(designs, d)
			}
		}
	}
	var bar *progressbar.ProgressBar
	var progress func(time.Duration)
	if !f.quiet && env.Interactive {
		n := len(sc.Designs)
		if designs != nil {
			n = len(designs)
		}
		total := int64(sim.Horizon(sc)/time.Millisecond) * int64(n)
		bar = progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(env.Stderr),
			progressbar.OptionSetDescription(fmt.Sprintf("%s (%s): %d designs", sc.Name, f.engine, n)),
			progressbar.OptionShowElapsedTimeOnFinish(),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionThrottle(100*time.Millisecond),
		)
		var mu sync.Mutex
		progress = func(d time.Duration) {
			mu.Lock()
			bar.Add64(int64(d / time.Millisecond))
			mu.Unlock()
		}
	}
	var rep *report.Report
	var resultsBin, histories []byte
	if f.engine == "live" {
		abs, aerr := filepath.Abs(f.file)
		if aerr != nil {
			return aerr
		}
		var buf bytes.Buffer
		var out *runner.Output
		out, err = runner.Run(ctx, sc, &runner.Options{File: abs, Designs: designs, Parallel: f.parallel,
			Progress: progress, Results: &buf, Set: sets})
		if err == nil {
			rep, resultsBin = out.Report, buf.Bytes()
			histories, err = check.EncodeHistories(out.Histories)
		}
	} else {
		var out *sim.Output
		out, err = sim.Run(ctx, sc, &sim.Options{Parallel: f.parallel, Designs: designs, Progress: progress})
		if err == nil {
			rep = out.Report
		}
	}
	if bar != nil {
		bar.Finish()
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if strings.Contains(err.Error(), "has no design") {
			return usageError{err}
		}
		return err
	}
	files, err := rep.Files()
	if err != nil {
		return err
	}
	if resultsBin != nil {
		files["results.bin"] = resultsBin
		files[check.HistoryFile] = histories
	}
	if !f.noCharts {
		charts, err := plots.Render(rep)
		if err != nil {
			return err
		}
		for name, data := range charts {
			files[name] = data
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	dir, err := report.WriteRun(filepath.Join(f.out, sc.Name), report.RunDir(time.Now(), sc.Seed), files)
	if err != nil {
		return err
	}
	results := expect.Evaluate(rep, sc.Expect)
	failed := expect.Failed(results)
	if !f.quiet {
		if err := rep.WriteTable(env.Stdout); err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "\nreport: %s\n", filepath.Join(dir, "report.json"))
		if !f.noCharts {
			fmt.Fprintf(env.Stdout, "charts: %s\n", filepath.Join(dir, plots.PageName))
		}
		if len(results) > 0 {
			fmt.Fprintf(env.Stdout, "thresholds: %d checked, %d failed\n", len(results), len(failed))
		}
	}
	if len(failed) > 0 {
		return &expect.Breach{Failed: failed}
	}
	return nil
}

func listCmd(_ context.Context, env *Env, args []string) error {
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
	f, err := scenario.Load(file, nil)
	if err != nil {
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

func validateCmd(_ context.Context, env *Env, args []string) error {
	fs := newFlags(env, "validate", "[FILE]", "Check a scenarios file (default scenarios.toml) and print every problem, naming the file, key and problem.")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	file := DefaultFile
	switch len(pos) {
	case 0:
	case 1:
		file = pos[0]
	default:
		return usagef("validate: want at most one FILE, got %d", len(pos))
	}
	f, err := scenario.Load(file, nil)
	if err != nil {
		return usageError{err}
	}
	fmt.Fprintf(env.Stdout, "%s: ok (%d scenarios, %d designs)\n", file, len(f.Names()), len(f.DesignNames()))
	return nil
}
