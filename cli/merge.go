package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/stormsim/stormsim/expect"
	"github.com/stormsim/stormsim/history"
	"github.com/stormsim/stormsim/live/runner"
	"github.com/stormsim/stormsim/live/shard"
	"github.com/stormsim/stormsim/orchestrate"
	"github.com/stormsim/stormsim/plots"
	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
)

func init() {
	register(command{name: "merge", summary: "join the shards of a sharded live run into one report", run: mergeCmd})
}

// mergePoll is how often merge --wait looks for done markers.
const mergePoll = time.Second

// mergeFlags are the flags of 'stormsim merge'.
type mergeFlags struct {
	out         string
	expect      int
	expectGiven bool
	wait        time.Duration
	allowRerun  bool
	upLogs      string
	tolerance   time.Duration
	noCharts    bool
	noThresh    bool
	noSat       bool
	quiet       bool
}

func mergeCmd(ctx context.Context, env *Env, args []string) error {
	f, pos, err := parseMerge(env, args)
	if err != nil {
		return err
	}
	if err := f.waitFor(ctx, env, pos); err != nil {
		return err
	}
	picked, notes, err := f.checkSet(pos)
	if err != nil {
		return err
	}
	first := picked[0].Meta
	sc, err := mergeScenario(ctx, picked[0])
	if err != nil {
		return err
	}
	parts := make([]runner.Part, 0, len(picked))
	for _, p := range picked {
		part, err := readPart(p)
		if err != nil {
			return usageError{fmt.Errorf("merge: %w", err)}
		}
		parts = append(parts, part)
	}
	if !f.quiet {
		for _, n := range notes {
			fmt.Fprintln(env.Stderr, "stormsim: note:", n)
		}
	}
	if err := probeOut(filepath.Join(f.out, sc.Name)); err != nil {
		return err
	}
	var results bytes.Buffer
	out, err := runner.Merge(ctx, sc, parts, &runner.MergeOptions{UpLogs: f.upLogs, StartTolerance: f.tolerance, Results: &results})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("merge: %w", err)
	}
	rep := out.Report
	for _, n := range notes {
		rep.Notes = append(rep.Notes, "merge: "+n)
	}
	dir, err := f.write(ctx, sc, out, results.Bytes(), first.StartAt)
	if err != nil {
		return err
	}
	return f.verdict(env, sc, rep, dir, len(parts))
}

// write writes the merged run's folder: its report files, results and
// histories. The merged run is named after the start time every shard
// shared, not the moment it was merged: merging the same set again names
// the same run (WriteRun adds -2).
func (f *mergeFlags) write(ctx context.Context, sc *scenario.Scenario, out *runner.Output, results []byte, startAt time.Time) (string, error) {
	files, err := runFiles(out.Report, !f.noCharts)
	if err != nil {
		return "", err
	}
	hist, err := history.EncodeHistories(out.Histories)
	if err != nil {
		return "", err
	}
	files["results.bin"], files[history.HistoryFile] = results, hist
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	return report.WriteRun(filepath.Join(f.out, sc.Name), report.RunDir(startAt, sc.Seed), files)
}

func parseMerge(env *Env, args []string) (*mergeFlags, []string, error) {
	f := &mergeFlags{}
	fs := newFlags(env, "merge", "DIR... [flags]",
		"Join the shards of a live run split N ways (run --shard i/N, a Kubernetes Indexed Job's pods) into one run:\n"+
			"each DIR is a shard folder (shard-<i>-of-<N>/) or a folder holding them. The set must be complete:\n"+
			"every index 0..N-1 once, the same count, scenario, scenario hash, seed, design, target and start time\n"+
			"in each, and each done (its done marker written); otherwise merge names every problem and exits 2.\n"+
			"The scenario is the one the shards ran (the first shard's scenarios.toml with its --set overrides).\n"+
			"One checker judges the union of the shards' histories as if one machine had run every client, and\n"+
			"merge writes report.json (with a shards block), summary.md, series.csv, the charts, report.html,\n"+
			"results.bin and history.json.gz to OUT/<scenario>/<start time>-seed<N>/, then judges the thresholds\n"+
			"and the host saturation as run does. With --up-logs, the histories are reconciled with the\n"+
			"counters stormsim up writes to counts.json when it stops: --wait waits for that file too (stop up\n"+
			"once the shards are done); without it, or when up is still running, merge says on one line that\n"+
			"the reconciliation was not possible and why.")
	fs.StringVar(&f.out, "out", "results", "results `dir`")
	fs.IntVar(&f.expect, "expect", 0, "the run was split `N` ways: fewer or more is a problem (default: the count the shards say)")
	fs.DurationVar(&f.wait, "wait", 0, "wait up to `D` for every shard's done marker before merging, and with --up-logs for up's counts.json, looking once a second (the merge Job's wait: Kubernetes has no Job-to-Job dependency)")
	fs.BoolVar(&f.allowRerun, "allow-rerun", false, "an index run twice (a rescheduled pod; its folder is shard-<i>-of-<N>.runK): merge the run that finished last, and say which was left out, instead of exiting 2")
	fs.StringVar(&f.upLogs, "up-logs", "", "the logs `dir` of the stormsim up the shards ran against: its production logs and counters judge the server's side too")
	fs.DurationVar(&f.tolerance, "start-tolerance", time.Second, "a shard that started more than `D` after the start time is reported late")
	fs.BoolVar(&f.noCharts, "no-charts", false, "skip the charts and report.html")
	fs.BoolVar(&f.noThresh, "no-thresholds", false, "do not judge the scenario's expect table")
	fs.BoolVar(&f.noSat, "no-saturation-check", false, "give a verdict even when a shard's host fell behind the run's schedule (without this flag such a run exits 97)")
	fs.BoolVar(&f.quiet, "quiet", false, "print nothing but errors")
	pos, err := parse(fs, args)
	if err != nil {
		return nil, nil, err
	}
	if len(pos) == 0 {
		return nil, nil, usagef("merge: want at least one DIR: a shard folder (shard-<i>-of-<N>/) or the folder that holds them")
	}
	f.expectGiven = visited(fs, "expect")
	switch {
	case f.expectGiven && f.expect < 1:
		return nil, nil, usagef("merge: --expect %d: want at least 1 (leave it out for the count the shards say)", f.expect)
	case f.wait < 0:
		return nil, nil, usagef("merge: --wait %s: want 0 (no waiting) or more", f.wait)
	case f.tolerance < 0:
		return nil, nil, usagef("merge: --start-tolerance %s: want 0 or more", f.tolerance)
	}
	return f, pos, nil
}

// waitFor waits, within --wait, for every shard's done marker, then for
// up's counts.json, and checks up's logs folder.
func (f *mergeFlags) waitFor(ctx context.Context, env *Env, pos []string) error {
	deadline := time.Now().Add(f.wait)
	if f.wait > 0 {
		if err := shard.Wait(ctx, pos, f.expect, f.wait, mergePoll); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("merge: %w", err)
		}
	}
	// up's logs folder is looked at once the shards are done: a merge Job
	// starts beside up, which may not have made it yet.
	if f.upLogs == "" {
		return nil
	}
	st, err := os.Stat(f.upLogs)
	if err != nil {
		return usagef("merge: --up-logs: %w", err)
	}
	if !st.IsDir() {
		return usagef("merge: --up-logs %s is not a folder (give the logs folder stormsim up named at start)", f.upLogs)
	}
	counts := filepath.Join(f.upLogs, runner.UpCountsFile)
	if _, err := os.Stat(counts); err == nil || f.wait <= 0 || time.Until(deadline) <= 0 {
		return nil
	}
	if !f.quiet {
		fmt.Fprintf(env.Stderr, "stormsim: the shards are done; waiting up to %s for %s, which stormsim up writes when it stops: stop up (Ctrl-C) to reconcile the run with its counters\n",
			time.Until(deadline).Round(time.Second), counts)
	}
	return waitFile(ctx, counts, deadline, mergePoll)
}

// waitFile waits until path exists or the deadline passes (then the merge
// goes on without it, and says so); only ctx ending is an error.
func waitFile(ctx context.Context, path string, deadline time.Time, poll time.Duration) error {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			return nil
		case <-tick.C:
		}
	}
}

// checkSet finds the shard folders under pos and checks that they are one
// complete run; a set that is not is a usage error naming every problem.
func (f *mergeFlags) checkSet(pos []string) ([]*shard.Found, []string, error) {
	found, err := shard.Discover(pos)
	if err != nil {
		return nil, nil, usageError{fmt.Errorf("merge: %w", err)}
	}
	picked, notes, err := shard.Check(found, f.allowRerun)
	var problems []string
	var se *shard.SetError
	if errors.As(err, &se) {
		problems = se.Problems
	} else if err != nil {
		return nil, nil, usageError{fmt.Errorf("merge: %w", err)}
	}
	if f.expectGiven {
		for _, fd := range found {
			if fd.Meta != nil && fd.Meta.Count != f.expect {
				problems = append(problems, fmt.Sprintf("--expect %d, but %s is a shard of a run split %d ways", f.expect, fd.Dir, fd.Meta.Count))
				break
			}
		}
	}
	if len(problems) > 0 {
		return nil, nil, usagef("merge: the shards are not one complete run:\n  %s", strings.Join(problems, "\n  "))
	}
	return picked, notes, nil
}

// verdict prints the merged run (its table, where it is, and one line on
// its reconciliation) and judges the saturation and the thresholds.
func (f *mergeFlags) verdict(env *Env, sc *scenario.Scenario, rep *report.Report, dir string, parts int) error {
	var checks []expect.Result
	if !f.noThresh {
		checks = expect.Evaluate(rep, sc.Expect)
	}
	if !f.quiet {
		if err := rep.WriteTable(env.Stdout); err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "\nmerged %s into one run\n", plural(parts, "shard"))
		fmt.Fprintf(env.Stdout, "report: %s\n", filepath.Join(dir, "report.json"))
		if !f.noCharts {
			fmt.Fprintf(env.Stdout, "charts: %s\n", filepath.Join(dir, plots.PageName))
		}
		if line := reconciliationLine(rep); line != "" {
			fmt.Fprintln(env.Stdout, line)
		}
		if len(checks) > 0 {
			fmt.Fprintf(env.Stdout, "thresholds: %d checked, %d failed\n", len(checks), len(expect.Failed(checks)))
		}
	}
	var verdict orchestrate.Findings
	if !f.noSat {
		// A saturated shard host gives the merged run no verdict: exit
		// 97, before the thresholds (99).
		verdict.Saturated = orchestrate.Saturated([]*report.Report{rep}, false)
	}
	if failed := expect.Failed(checks); len(failed) > 0 {
		verdict.Breach = &expect.Breach{Failed: failed}
	}
	return verdict.Verdict(orchestrate.OneRun)
}

// reconciliationLine is the merged run's reconciliation in one line, ""
// when it has none.
func reconciliationLine(rep *report.Report) string {
	if len(rep.Designs) == 0 || rep.Designs[0].Reconciliation == nil {
		return ""
	}
	return rep.Designs[0].Reconciliation.Line()
}

// mergeScenario loads the scenario the shards ran: the copy of the
// scenarios file in the first shard's folder, with its --set overrides.
// Its hash must be the one the shards recorded, else the copy was edited.
func mergeScenario(ctx context.Context, p *shard.Found) (*scenario.Scenario, error) {
	m := p.Meta
	path := filepath.Join(p.Dir, shard.ScenarioFile)
	file, err := scenario.LoadContext(ctx, path, &scenario.Options{Set: m.Set, Target: m.Scenario})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, usageError{fmt.Errorf("merge: the scenario the shards ran: %w", err)}
	}
	sc, err := file.Scenario(m.Scenario)
	if err != nil {
		return nil, usageError{fmt.Errorf("merge: %s: %w", path, err)}
	}
	if h := scenario.Hash(sc); h != m.ScenarioHash {
		with := ""
		if len(m.Set) > 0 {
			with = " with --set " + strings.Join(m.Set, " --set ")
		}
		return nil, usagef("merge: %s: scenario %s%s hashes to %s, but the shards ran %s: the copy was edited after they ran",
			path, m.Scenario, with, h, m.ScenarioHash)
	}
	return sc, nil
}

// readPart reads what a done shard left for the merge: its histories and
// its own report.
func readPart(p *shard.Found) (runner.Part, error) {
	path := filepath.Join(p.Dir, history.HistoryFile)
	fh, err := os.Open(path)
	if err != nil {
		return runner.Part{}, err
	}
	defer fh.Close()
	h, err := history.ReadHistories(fh)
	if err != nil {
		return runner.Part{}, fmt.Errorf("%s: %w", path, err)
	}
	rep, err := report.Read(filepath.Join(p.Dir, "report.json"))
	if err != nil {
		return runner.Part{}, err
	}
	return runner.Part{Dir: p.Dir, Meta: p.Meta, Histories: h, Report: rep}, nil
}
