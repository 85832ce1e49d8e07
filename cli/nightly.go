package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/stormsim/stormsim/expect"
	"github.com/stormsim/stormsim/orchestrate"
	"github.com/stormsim/stormsim/plots"
	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
	"github.com/stormsim/stormsim/sim"
)

func init() {
	register(command{name: "nightly", summary: "run every scenario, check thresholds and baselines, write junit.xml", run: nightlyCmd})
	register(command{name: "baseline", summary: "record results/baseline/<scenario>.json from fresh runs", run: baselineCmd})
	register(command{name: "compare", summary: "compare a run with a baseline and list what moved beyond tolerance, either way", run: compareCmd})
}

// DefaultBaselines is where committed baselines live.
const DefaultBaselines = "results/baseline"

// scenarioFlags are shared by the commands that run many scenarios.
type scenarioFlags struct {
	file      string
	scenarios string
	set       listFlag
}

// load resolves the selected scenarios with the --set overrides applied to
// each of them.
func (f *scenarioFlags) load(ctx context.Context, fs *flag.FlagSet, cmd string) ([]*scenario.Scenario, error) {
	only, err := splitList(fs, cmd, "scenarios", f.scenarios)
	if err != nil {
		return nil, err
	}
	all, err := scenario.LoadContext(ctx, f.file, nil)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, usageError{err}
	}
	names := all.Names()
	if only != nil {
		names = only
		for _, n := range names {
			if !slices.Contains(all.Names(), n) {
				return nil, usagef("no scenario %q in %s (defined: %s)", n, f.file, strings.Join(all.Names(), ", "))
			}
		}
	}
	var out []*scenario.Scenario
	for _, n := range names {
		file, err := scenario.LoadContext(ctx, f.file, &scenario.Options{Set: f.set, Target: n})
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, usageError{err}
		}
		sc, err := file.Scenario(n)
		if err != nil {
			return nil, usageError{err}
		}
		out = append(out, sc)
	}
	return out, nil
}

// runSeeds simulates sc, and when its expect table judges means over
// seeds (seeds = N), the N-1 seeds after it too: the report is the first
// seed's run with over_seeds attached, which expect.Evaluate judges on the
// means.
func (f *scenarioFlags) runSeeds(ctx context.Context, sc *scenario.Scenario) (*report.Report, error) {
	o, err := sim.Run(ctx, sc, nil)
	if err != nil || sc.ExpectSeeds < 2 {
		if err != nil {
			return nil, err
		}
		return o.Report, nil
	}
	reps := []*report.Report{o.Report}
	for i := 1; i < sc.ExpectSeeds; i++ {
		next, err := loadScenario(f.file, sc.Name, withSeed(f.set, sc.Seed+uint64(i)))
		if err != nil {
			return nil, err
		}
		o, err := sim.Run(ctx, next, nil)
		if err != nil {
			return nil, err
		}
		reps = append(reps, o.Report)
	}
	return report.WithOverSeeds(reps), nil
}

func nightlyCmd(ctx context.Context, env *Env, args []string) error {
	var f scenarioFlags
	var out, baselines, engine string
	var quiet, acceptBetter bool
	var seeds int
	fs := newFlags(env, "nightly", "[flags]",
		"Run every scenario of the file, each on the engine its [nightly] table names (the simulator by default;\n"+
			"live with seeds = N runs N seeds), check each one's thresholds and compare it with its baseline in\n"+
			"BASELINES/<scenario>.json (a live run: <scenario>.live.json, over the seeds). Write OUT/<UTC date>/:\n"+
			"junit.xml (one test case per scenario × design × check, and per design for the baseline), summary.md,\n"+
			"and each scenario's run folder with report.json and report.html. Everything runs before anything is\n"+
			"reported. Exit 0 when all passed, 99 when a threshold failed, 1 when only baselines moved beyond\n"+
			"tolerance (either way) or are missing, 97 when nothing failed but a live scenario gave no verdict\n"+
			"(its host was saturated; skipped in junit.xml).")
	fs.StringVar(&f.file, "file", DefaultFile, "scenarios `file`")
	fs.StringVar(&f.scenarios, "scenarios", "", "run only these scenarios, comma-separated")
	fs.Var(&f.set, "set", "override a key in every scenario, repeatable (`key=value`)")
	fs.StringVar(&out, "out", "results/nightly", "output `dir`")
	fs.StringVar(&baselines, "baselines", DefaultBaselines, "baselines `dir`")
	fs.BoolVar(&quiet, "quiet", false, "print only the final summary")
	fs.StringVar(&engine, "engine", "", "run every scenario on this `engine` (sim or live) instead of its [nightly] table's")
	fs.IntVar(&seeds, "seeds", 0, "live runs: `N` seeds each instead of the [nightly] table's")
	fs.BoolVar(&acceptBetter, "accept-better", false, "let every change that is not for the worse pass (it still prints); without it such a change fails as \"changed: refresh the baseline\"")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("nightly: takes no arguments, got %q", pos)
	}
	if engine != "" && engine != "sim" && engine != "live" {
		return usagef("nightly: --engine %q is not available (valid: sim, live)", engine)
	}
	if seeds < 0 || seeds > 100 {
		return usagef("nightly: --seeds %d is not in 1..100", seeds)
	}
	scs, err := f.load(ctx, fs, "nightly")
	if err != nil {
		return err
	}
	if err := probeOut(out); err != nil {
		return err
	}
	date := time.Now().UTC().Format("2006-01-02")
	nt := &night{engine: engine, seeds: seeds, quiet: quiet, acceptBetter: acceptBetter, baselines: baselines,
		files: map[string][]byte{}, junit: &expect.JUnit{Name: "stormsim nightly " + date, AcceptBetter: acceptBetter}}
	fmt.Fprintf(&nt.sum, "# stormsim nightly %s\n\n| scenario | checks | failed | baseline changes | report |\n|---|---|---|---|---|\n", date)
	for _, sc := range scs {
		if err := nt.scenario(ctx, env, &f, sc); err != nil {
			return err
		}
	}
	return nt.finish(ctx, env, out, date, len(scs))
}

// finish writes the run's summary.md and junit.xml into OUT/<date>/,
// prints the outcome, and gives the verdict.
func (nt *night) finish(ctx context.Context, env *Env, out, date string, scenarios int) error {
	if len(nt.failLines) > 0 {
		nt.sum.WriteString("\n## Failures\n\n")
		for _, l := range nt.failLines {
			nt.sum.WriteString("- " + l + "\n")
		}
	}
	if len(nt.noteLines) > 0 {
		nt.sum.WriteString("\n## Notes\n\n")
		for _, l := range nt.noteLines {
			nt.sum.WriteString("- " + l + "\n")
		}
	}
	ju, err := nt.junit.Marshal()
	if err != nil {
		return err
	}
	nt.files["junit.xml"] = ju
	nt.files["summary.md"] = []byte(nt.sum.String())
	if ctx.Err() != nil {
		return ctx.Err()
	}
	dir, err := replaceDir(out, date, nt.files)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "nightly: %s, %s, %d failed; %s\n", plural(scenarios, "scenario"), plural(nt.junit.Tests, "test"), nt.junit.Failures, filepath.Join(dir, "junit.xml"))
	for _, l := range nt.liveLines {
		fmt.Fprintln(env.Stdout, "  live: "+l)
	}
	for _, l := range nt.failLines {
		fmt.Fprintln(env.Stdout, "  "+l)
	}
	for _, l := range nt.noteLines {
		fmt.Fprintln(env.Stdout, "  note: "+l)
	}
	return nt.verdict(scenarios)
}

// night is a nightly run in progress: its settings, the files it writes
// and what it found so far.
type night struct {
	engine, baselines                 string
	seeds                             int
	quiet, acceptBetter               bool
	files                             map[string][]byte
	junit                             *expect.JUnit
	sum                               strings.Builder
	thresholdsFailed, baselinesFailed int
	noVerdict                         int
	failLines, noteLines, liveLines   []string
}

// scenario runs one scenario on its engine, judges its thresholds and
// compares it with its baseline, and records what it found.
func (nt *night) scenario(ctx context.Context, env *Env, f *scenarioFlags, sc *scenario.Scenario) error {
	eng, n := nightlyEngine(sc, nt.engine, nt.seeds)
	if eng == "live" {
		nt.liveLines = append(nt.liveLines, fmt.Sprintf("%s, %s", sc.Name, plural(n, "seed")))
	}
	if !nt.quiet && eng == "live" {
		fmt.Fprintf(env.Stderr, "%s: live, %s\n", sc.Name, plural(n, "seed"))
	}
	r, err := f.runOn(ctx, sc, eng, n)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("nightly: %s: %w", sc.Name, err)
	}
	runFiles, err := r.Files()
	if err != nil {
		return err
	}
	charts, err := plots.Render(r)
	if err != nil {
		return err
	}
	nt.files[sc.Name+"/report.json"] = runFiles["report.json"]
	nt.files[sc.Name+"/summary.md"] = runFiles["summary.md"]
	nt.files[sc.Name+"/"+plots.PageName] = charts[plots.PageName]

	if h := r.Host; h != nil && h.Saturated {
		// A live run on a saturated host gives no verdict: skipped in
		// JUnit with the reason, exit 97 if nothing else failed.
		var designs []string
		for _, d := range r.Designs {
			designs = append(designs, d.Name)
		}
		reason := "host saturated: " + strings.Join(h.Reasons, "; ")
		nt.junit.AddNoVerdict(sc.Name, designs, reason)
		nt.noVerdict++
		nt.noteLines = append(nt.noteLines, sc.Name+": no verdict: "+reason)
		fmt.Fprintf(&nt.sum, "| %s | 0 | 0 | no verdict: host saturated | [report.html](%s/report.html) |\n", sc.Name, sc.Name)
		return nil
	}
	nt.judge(env, sc, r, eng)
	return nil
}

// judge checks a scenario's thresholds and its baseline, and records the
// outcome in the summary, junit.xml and the failure and note lines.
func (nt *night) judge(env *Env, sc *scenario.Scenario, r *report.Report, eng string) {
	results := expect.Evaluate(r, sc.Expect)
	failed := expect.Failed(results)
	var designs []string
	for _, d := range r.Designs {
		designs = append(designs, d.Name)
	}
	cmp, berr := compareWithBaseline(baselinePath(nt.baselines, sc.Name, eng), r)
	nt.junit.AddScenario(sc.Name, designs, results, cmp, berr)
	nreg := 0
	if cmp != nil {
		nreg = len(cmp.Failing(nt.acceptBetter)) + len(cmp.Missing)
	}
	nt.thresholdsFailed += len(failed)
	if berr != nil || nreg > 0 {
		nt.baselinesFailed++
	}
	for _, fr := range failed {
		nt.failLines = append(nt.failLines, fr.String())
	}
	regs := fmt.Sprint(nreg)
	switch {
	case cmp != nil && cmp.Skipped != "":
		regs = "skipped: other seed"
		nt.noteLines = append(nt.noteLines, sc.Name+": baseline not compared: "+cmp.Skipped)
	case errors.Is(berr, errNoBaseline):
		regs = "no baseline"
	case berr != nil:
		regs = "baseline unusable"
	}
	fmt.Fprintf(&nt.sum, "| %s | %d | %d | %s | [report.html](%s/report.html) |\n", sc.Name, len(results), len(failed), regs, sc.Name)
	if !nt.quiet {
		fmt.Fprintf(env.Stderr, "%s: %d checks, %d failed, baseline changes: %s\n", sc.Name, len(results), len(failed), regs)
	}
	if cmp != nil {
		for _, c := range cmp.Failing(nt.acceptBetter) {
			nt.failLines = append(nt.failLines, sc.Name+"/"+c.String())
		}
		if nt.acceptBetter {
			for _, c := range cmp.Changed {
				nt.noteLines = append(nt.noteLines, sc.Name+"/"+c.String()+" (accepted: --accept-better)")
			}
		}
		for _, d := range cmp.Missing {
			nt.failLines = append(nt.failLines, sc.Name+"/"+d+": no baseline for this design")
		}
	}
	if berr != nil {
		nt.failLines = append(nt.failLines, sc.Name+": "+berr.Error())
	}
}

var errNoBaseline = errors.New("no baseline")

// exitErr carries its own exit code.
type exitErr struct {
	code int
	msg  string
}

func (e exitErr) Error() string { return e.msg }
func (e exitErr) ExitCode() int { return e.code }

func compareWithBaseline(path string, r *report.Report) (*expect.Comparison, error) {
	base, err := expect.ReadRun(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w at %s: record one with make baseline", errNoBaseline, path)
		}
		return nil, err
	}
	cur := expect.FromReport(r)
	return expect.Compare(base, cur, expect.DefaultTolerances(r.Engine))
}

// replaceDir writes files into parent/name atomically, replacing what was
// there: the new folder is complete before the old one goes.
func replaceDir(parent, name string, files map[string][]byte) (string, error) {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", err
	}
	tmp, err := report.StageDir(parent, files)
	if err != nil {
		return "", err
	}
	final := filepath.Join(parent, name)
	old := final + ".old"
	os.RemoveAll(old)
	if _, err := os.Stat(final); err == nil {
		if err := os.Rename(final, old); err != nil {
			os.RemoveAll(tmp)
			return "", err
		}
	}
	if err := os.Rename(tmp, final); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	os.RemoveAll(old)
	return final, nil
}

func baselineCmd(ctx context.Context, env *Env, args []string) error {
	var f scenarioFlags
	var dir, engine string
	var seeds int
	fs := newFlags(env, "baseline", "[flags]",
		"Run the scenarios, each on the engine its [nightly] table names (as stormsim nightly does), and write\n"+
			"DIR/<scenario>.json (a live run: <scenario>.live.json, every seed's values): every metric of every\n"+
			"design, the scenario hash and the machine architecture. Print every value that changes, old and new,\n"+
			"per scenario and design, and write the list to DIR/CHANGES.md. Commit both on purpose.")
	fs.StringVar(&f.file, "file", DefaultFile, "scenarios `file`")
	fs.StringVar(&f.scenarios, "scenarios", "", "record only these scenarios, comma-separated")
	fs.Var(&f.set, "set", "override a key in every scenario, repeatable (`key=value`)")
	fs.StringVar(&dir, "dir", DefaultBaselines, "baselines `dir`")
	fs.StringVar(&engine, "engine", "", "record every scenario on this `engine` (sim or live) instead of its [nightly] table's")
	fs.IntVar(&seeds, "seeds", 0, "live runs: `N` seeds each instead of the [nightly] table's")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("baseline: takes no arguments, got %q", pos)
	}
	if engine != "" && engine != "sim" && engine != "live" {
		return usagef("baseline: --engine %q is not available (valid: sim, live)", engine)
	}
	if seeds < 0 || seeds > 100 {
		return usagef("baseline: --seeds %d is not in 1..100", seeds)
	}
	scs, err := f.load(ctx, fs, "baseline")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// Run everything first: an interrupted or failed refresh writes nothing.
	b := &baselines{data: map[string][]byte{}, paths: map[string]string{}, moved: map[string][]expect.Moved{}}
	for _, sc := range scs {
		if err := b.record(ctx, env, &f, sc, dir, engine, seeds); err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return b.write(env, dir)
}

// baselines is a baseline refresh in progress: each scenario's new
// baseline, its path, and what moved, by scenario (and engine).
type baselines struct {
	data  map[string][]byte
	paths map[string]string
	moved map[string][]expect.Moved
	names []string
}

// record runs scenario sc on its nightly engine and keeps its baseline and
// what moved from the one in dir.
func (b *baselines) record(ctx context.Context, env *Env, f *scenarioFlags, sc *scenario.Scenario, dir, engine string, seeds int) error {
	eng, n := nightlyEngine(sc, engine, seeds)
	r, err := f.runOn(ctx, sc, eng, n)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	if r.Host != nil && r.Host.Saturated {
		return exitErr{code: ExitSaturated, msg: fmt.Sprintf("stormsim: baseline: %s: the host was saturated (%s), so the live run is no baseline; nothing was written",
			sc.Name, strings.Join(r.Host.Reasons, "; "))}
	}
	key := sc.Name
	if eng == "live" {
		key += " (live)"
	}
	b.names = append(b.names, key)
	cur := expect.FromReport(r)
	if b.data[key], err = cur.JSON(); err != nil {
		return err
	}
	b.paths[key] = baselinePath(dir, sc.Name, eng)
	var old *expect.Baseline
	if _, err := os.Stat(b.paths[key]); err == nil {
		if old, err = expect.ReadRun(b.paths[key]); err != nil {
			fmt.Fprintf(env.Stderr, "stormsim: baseline: %v: replaced whole\n", err)
			old = nil
		}
	}
	b.moved[key] = expect.Diff(old, cur)
	return nil
}

// write writes every baseline recorded, each whole through a rename, and
// DIR/CHANGES.md, and prints what moved.
func (b *baselines) write(env *Env, dir string) error {
	for _, key := range b.names {
		path := b.paths[key]
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, b.data[key], 0o644); err != nil {
			return err
		}
		if err := os.Rename(tmp, path); err != nil {
			os.Remove(tmp)
			return err
		}
		fmt.Fprintf(env.Stdout, "baseline: %s: %s\n", path, plural(len(b.moved[key]), "change"))
		for _, m := range b.moved[key] {
			fmt.Fprintln(env.Stdout, "  "+m.String())
		}
	}
	changes := filepath.Join(dir, "CHANGES.md")
	if err := os.WriteFile(changes, expect.ChangesMarkdown(b.names, b.moved), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "baseline: the list of changes is in %s\n", changes)
	return nil
}

func compareCmd(_ context.Context, env *Env, args []string) error {
	var tol string
	var acceptBetter bool
	fs := newFlags(env, "compare", "BASELINE CURRENT [--tolerance metric=rel,...] [--accept-better]",
		"Compare CURRENT with BASELINE (each a report.json, a run folder or a baseline file) and print, per design\n"+
			"and metric, what moved beyond tolerance and by how much, either way: a regression, or a change for the\n"+
			"better (\"changed: refresh the baseline\"); resumes, events_replayed and drops count either way.\n"+
			"Simulator runs are deterministic: lost events and 404s may not move at all by default, other metrics 5%;\n"+
			"live runs get 10%, and over several seeds a change must clear it by more than the 95% interval of the\n"+
			"difference of the means. A null (unknown) value is not compared. Exit 1 on any change, unless none is\n"+
			"for the worse and --accept-better is given.")
	fs.StringVar(&tol, "tolerance", "", "relative tolerances, `metric=rel,...` (\"*\" for every metric)")
	fs.BoolVar(&acceptBetter, "accept-better", false, "let every change that is not for the worse pass (it still prints): only regressions fail")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef("compare: want BASELINE and CURRENT, got %d arguments", len(pos))
	}
	base, err := expect.ReadRun(pos[0])
	if err != nil {
		return usageError{err}
	}
	cur, err := expect.ReadRun(pos[1])
	if err != nil {
		return usageError{err}
	}
	tols, err := expect.ParseTolerances(tol, expect.DefaultTolerances(cur.Engine))
	if err != nil {
		return usageError{err}
	}
	cmp, err := expect.Compare(base, cur, tols)
	if err != nil {
		return usageError{err}
	}
	printComparison(env, cmp, tols, pos[0], pos[1], cur.Engine, acceptBetter)
	return compareVerdict(cmp, acceptBetter)
}

// printComparison prints what moved between two runs, by how much.
func printComparison(env *Env, cmp *expect.Comparison, tols expect.Tolerances, basePath, curPath, engine string, acceptBetter bool) {
	fmt.Fprintf(env.Stdout, "compare %s: %s -> %s (%s engine)\n", cmp.Scenario, basePath, curPath, engine)
	fmt.Fprintf(env.Stdout, "tolerances: %s\n", describeTolerances(tols))
	for _, n := range cmp.Notes {
		fmt.Fprintln(env.Stdout, "note: "+n)
	}
	for _, d := range cmp.Missing {
		fmt.Fprintf(env.Stdout, "design %s has no baseline: nothing holds it\n", d)
	}
	if len(cmp.Regressions) == 0 {
		fmt.Fprintln(env.Stdout, "no regressions")
	} else {
		fmt.Fprintf(env.Stdout, "%s:\n", plural(len(cmp.Regressions), "regression"))
		for _, c := range cmp.Regressions {
			fmt.Fprintln(env.Stdout, "  "+c.String())
		}
	}
	if len(cmp.Changed) > 0 {
		fmt.Fprintf(env.Stdout, "%s beyond tolerance, not for the worse:\n", plural(len(cmp.Changed), "change"))
		for _, c := range cmp.Changed {
			line := "  " + c.String()
			if acceptBetter {
				line += " (accepted: --accept-better)"
			}
			fmt.Fprintln(env.Stdout, line)
		}
	}
}

// compareVerdict is compare's exit: 1 on a regression, on a change not
// accepted, or on a design without a baseline.
func compareVerdict(cmp *expect.Comparison, acceptBetter bool) error {
	failing := cmp.Failing(acceptBetter)
	changed := len(failing) - len(cmp.Regressions)
	switch {
	case len(cmp.Regressions) > 0:
		msg := fmt.Sprintf("stormsim: compare: %s", plural(len(cmp.Regressions), "regression"))
		if changed > 0 {
			msg += fmt.Sprintf(", %s: refresh the baseline", plural(changed, "other change"))
		}
		return exitErr{code: ExitError, msg: msg}
	case changed > 0:
		return exitErr{code: ExitError, msg: fmt.Sprintf("stormsim: compare: %s beyond tolerance, none for the worse: changed: refresh the baseline (make baseline), or pass --accept-better", plural(changed, "change"))}
	case len(cmp.Missing) > 0:
		return exitErr{code: ExitError, msg: fmt.Sprintf("stormsim: compare: %s without a baseline", plural(len(cmp.Missing), "design"))}
	}
	return nil
}

func describeTolerances(t expect.Tolerances) string {
	var exact, other []string
	for k, v := range t {
		switch {
		case k == "*":
		case v == 0:
			exact = append(exact, k)
		default:
			other = append(other, fmt.Sprintf("%s %g%%", k, 100*v))
		}
	}
	slices.Sort(exact)
	slices.Sort(other)
	s := fmt.Sprintf("every other metric %g%%", 100*t["*"])
	if len(other) > 0 {
		s = strings.Join(other, ", ") + "; " + s
	}
	if len(exact) > 0 {
		s = strings.Join(exact, ", ") + " exact; " + s
	}
	return s
}

// verdict is the night's exit: a failed threshold anywhere, then a moved
// baseline, then a scenario with no verdict (orchestrate.Nightly).
func (nt *night) verdict(scenarios int) error {
	var found orchestrate.Findings
	if nt.thresholdsFailed > 0 {
		found.Breach = exitErr{code: ExitThreshold, msg: fmt.Sprintf("stormsim: nightly: %s failed", plural(nt.thresholdsFailed, "threshold"))}
	}
	if nt.baselinesFailed > 0 {
		found.Baselines = exitErr{code: ExitError, msg: fmt.Sprintf("stormsim: nightly: %d of %s moved from their baseline or have none", nt.baselinesFailed, plural(scenarios, "scenario"))}
	}
	if nt.noVerdict > 0 {
		found.Saturated = exitErr{code: ExitSaturated, msg: fmt.Sprintf("stormsim: nightly: %s gave no verdict (host saturated)", plural(nt.noVerdict, "scenario"))}
	}
	return found.Verdict(orchestrate.Nightly)
}
