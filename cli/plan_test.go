package cli

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/plan"
	"github.com/stormsim/stormsim/plots"
)

// planTOML is a small scenario for the plan tests: three designs, a
// memory cap that binds at a few hundred clients, random drops, and goals
// (the defaults, with failed calls and recovery loosened for clients that
// fail on an error) that memory-sticky stops meeting as the load grows. The
// expect table is a fact about the simulation, which the plan ignores.
const planTOML = `
[scenario.s]
description = "plan test"
duration = "300s"
drain = "5s"
designs = ["stateless", "memory-sticky", "redis-shared"]
[scenario.s.workload]
clients = 200
arrival_rate = 50
think = "1s"
events_min = 20
events_max = 40
drop_every = "10s"
[scenario.s.client]
on_error = "fail"
[scenario.s.store]
memory_cap_bytes = 8388608
[scenario.s.expect.memory-sticky]
events_lost_max = 0
[scenario.s.goals]
calls_failed_max = 100000
recovery_latency_ms_p99_max = 60000
`

func planFile(t *testing.T) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "plan.toml")
	if err := os.WriteFile(f, []byte(planTOML), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// planDir is the one plan folder under out.
func planDir(t *testing.T, out, scenario string) string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(out, "plan", scenario, "2*"))
	if len(dirs) != 1 {
		t.Fatalf("plan folders under %s: %v", out, dirs)
	}
	return dirs[0]
}

// Acceptance 1: the plan command writes plan.json, plan.csv, plan.md and
// the four charts (PNG and SVG, 1200×700) into results/plan/<scenario>/<time>/.
func TestPlanWritesFiles(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	code, stdout, stderr := runArgs(t, context.Background(), "plan", "s", "--file", planFile(t), "--out", out,
		"--set", "duration=60s", "--sweep", "workload.clients=200..800@3", "--sweep", "store.redis_ttl=30s,60s")
	if code != ExitOK {
		t.Fatalf("plan: exit %d\n%s\n%s", code, stdout, stderr)
	}
	dir := planDir(t, out, "s")
	if target, err := os.Readlink(filepath.Join(out, "plan", "s", "latest")); err != nil || target != filepath.Base(dir) {
		t.Errorf("latest → %q, %v; want %s", target, err, filepath.Base(dir))
	}
	for _, want := range []string{"s plan (seed 42): 6 points × 3 designs", "memory-sticky", "plan: " + filepath.Join(dir, "plan.md")} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	// plan.json: every row, with the swept values and the verdicts.
	data, err := os.ReadFile(filepath.Join(dir, plan.JSONName))
	if err != nil {
		t.Fatal(err)
	}
	var doc plan.Doc
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("plan.json: %v", err)
	}
	if len(doc.Rows) != 6*3 || len(doc.Axes) != 2 || doc.Axes[0].Key != "workload.clients" || doc.Recommendation.Target.Value != 800 {
		t.Errorf("plan.json: %d rows, axes %+v, target %+v", len(doc.Rows), doc.Axes, doc.Recommendation.Target)
	}
	if r := doc.Rows[1]; r.Design != "memory-sticky" || !slices.Equal(r.Set, []string{"workload.clients=200", "store.redis_ttl=30s"}) || r.StorePeakBytes <= 0 {
		t.Errorf("plan.json row 1: %+v", r)
	}
	if len(doc.Recommendation.Candidates) != 2*3 || doc.HeadroomPercent != 30 {
		t.Errorf("plan.json: %d candidates, headroom %d", len(doc.Recommendation.Candidates), doc.HeadroomPercent)
	}
	// memory-sticky's cap binds between 200 and 400 clients: purged events
	// break its goal there.
	if c := doc.Recommendation.Candidates[1]; c.Design != "memory-sticky" || c.MaxLoad == nil || *c.MaxLoad != 200 ||
		c.FirstFailure == nil || c.FirstFailure.Load != 400 || !strings.HasPrefix(c.FirstFailure.Check, "lost_fraction: got ") || c.MeetsTarget {
		t.Errorf("memory-sticky: %+v", c)
	}
	if c := doc.Recommendation.Cheapest; c == nil || c.Design != "stateless" {
		t.Errorf("cheapest: %+v, want stateless (it keeps no store)", c)
	}
	// plan.csv: a header naming the swept keys and the columns, one row per
	// point and design.
	f, err := os.Open(filepath.Join(dir, plan.CSVName))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	wantHead := append([]string{"workload.clients", "store.redis_ttl"}, plan.CSVHeader...)
	if len(recs) != 1+18 || !slices.Equal(recs[0], wantHead) {
		t.Errorf("plan.csv: %d records, header %v", len(recs), recs[0])
	}
	for _, col := range []string{"store_peak_bytes", "store_peak_ops_per_s", "replay_p99_ms", "lost_fraction", "rate_404", "pass", "first_failed"} {
		if !slices.Contains(recs[0], col) {
			t.Errorf("plan.csv lacks %s", col)
		}
	}
	// plan.md: the recommendation and the headroom, stated.
	md, err := os.ReadFile(filepath.Join(dir, plan.MarkdownName))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# Capacity plan: s", "## Recommendation", "Headroom: **+30%**", "| design | at | replicas | max load |", "store.redis_ttl=30s"} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("plan.md lacks %q", want)
		}
	}
	// The four charts.
	for _, c := range plots.PlanChartNames {
		if st, err := os.Stat(filepath.Join(dir, c+".svg")); err != nil || st.Size() == 0 {
			t.Errorf("%s.svg missing or empty: %v", c, err)
		}
		pf, err := os.Open(filepath.Join(dir, c+".png"))
		if err != nil {
			t.Errorf("%s.png: %v", c, err)
			continue
		}
		cfg, err := png.DecodeConfig(pf)
		pf.Close()
		if err != nil || cfg.Width != 1200 || cfg.Height != 700 {
			t.Errorf("%s.png: %dx%d, %v; want 1200x700", c, cfg.Width, cfg.Height, err)
		}
	}
	// redis-shared keeps its events in Redis: store-ops draws the default
	// model's append ceiling, 1 / (12 µs + 0.5 µs).
	if svg, err := os.ReadFile(filepath.Join(dir, "store-ops.svg")); err != nil || !bytes.Contains(svg, []byte("ceiling on appends alone = 80000 ops/s")) {
		t.Errorf("store-ops.svg lacks the Redis model's append ceiling (%v)", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 3+2*len(plots.PlanChartNames) {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("plan folder holds %v", names)
	}
}

// Acceptance 4, at the command line: bad sweeps exit 2 with a message that
// names the key and the problem, and write nothing.
func TestPlanBadArguments(t *testing.T) {
	t.Parallel()
	file := planFile(t)
	out := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		// Unknown key.
		{[]string{"--sweep", "workload.clientz=1,2"}, `--sweep workload.clientz: unknown key "workload.clientz"`},
		// Not a number.
		{[]string{"--sweep", "workload.clients=lots"}, `--sweep workload.clients: "lots" is not a number`},
		{[]string{"--sweep", "store.redis_ttl=60"}, "--sweep store.redis_ttl: \"60\" is a bare number"},
		// Empty ranges and lists.
		{[]string{"--sweep", "workload.clients=800..200@3"}, "--sweep workload.clients: empty range: lo 800 is above hi 200"},
		{[]string{"--sweep", "workload.clients=200..800@0"}, "--sweep workload.clients: empty range: @0"},
		{[]string{"--sweep", "workload.clients="}, "--sweep workload.clients: no values"},
		// More than 10,000 points without --force.
		{[]string{"--sweep", "workload.clients=100..1000000@200", "--sweep", "workload.event_rate=1..100@51"}, "more than 10000: narrow it, or pass --force"},
		// A value the scenario refuses names the point and the key.
		{[]string{"--sweep", "workload.clients=0,5"}, "grid point workload.clients=0: --set workload.clients: 0 is not in 1..10000000"},
		// The target is on the load axis.
		{[]string{"--sweep", "workload.clients=200,400", "--size-for", "workload.event_rate=5"}, "--size-for workload.event_rate: the load to plan for is on the load axis workload.clients"},
		{[]string{"--sweep", "workload.clients=200,400", "--size-for", "workload.clients=many"}, `--size-for workload.clients: "many" is not a number`},
		{[]string{"--sweep", "workload.clients=200,400", "--size-for", "400"}, "--size-for \"400\": want KEY=VALUE"},
		// Swept and set at once.
		{[]string{"--sweep", "workload.clients=200,400", "--set", "workload.clients=5"}, "--set workload.clients: the key is also swept"},
		// Other flags.
		{[]string{"--jobs", "-1"}, "--jobs -1: want at least 1"},
		{[]string{"--designs", "nope"}, `--designs: scenario s has no design "nope"`},
		// Goals.
		{[]string{"--goal", "lost_fraction_max"}, `--goal "lost_fraction_max": want metric_max=N`},
		{[]string{"--goal", "lost_fraction_max=few"}, `--goal "lost_fraction_max=few": want metric_max=N`},
		{[]string{"--goal", "lost_fractions_max=0"}, `--goal "lost_fractions_max=0": "lost_fractions" is not a metric`},
		{[]string{"--goal", "lost_fraction=0"}, `--goal "lost_fraction=0": "lost_fraction" is not a threshold`},
	} {
		args := append([]string{"plan", "s", "--file", file, "--out", out, "--quiet"}, c.args...)
		code, _, errs := runArgs(t, context.Background(), args...)
		if code != ExitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", c.args, code, errs, c.want)
		}
	}
	if code, _, errs := runArgs(t, context.Background(), "plan", "--file", file); code != ExitUsage || !strings.Contains(errs, "want exactly one SCENARIO") {
		t.Errorf("no scenario: exit %d, %q", code, errs)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("failed plans wrote %d entries", len(entries))
	}
}

// Acceptance 5: --jobs 2 gives the same plan.json bytes as --jobs 1 (and
// the same plan.csv and plan.md).
func TestPlanJobsSameBytes(t *testing.T) {
	t.Parallel()
	file := planFile(t)
	var got [][]byte
	for _, jobs := range []string{"1", "2"} {
		out := t.TempDir()
		code, stdout, stderr := runArgs(t, context.Background(), "plan", "s", "--file", file, "--out", out, "--quiet", "--jobs", jobs,
			"--set", "duration=60s", "--sweep", "workload.clients=200..800@3", "--sweep", "workload.event_rate=5,10")
		if code != ExitOK {
			t.Fatalf("--jobs %s: exit %d\n%s\n%s", jobs, code, stdout, stderr)
		}
		dir := planDir(t, out, "s")
		var all []byte
		for _, n := range []string{plan.JSONName, plan.CSVName, plan.MarkdownName} {
			b, err := os.ReadFile(filepath.Join(dir, n))
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, b...)
			if n == plan.JSONName {
				got = append(got, b)
			}
		}
		got = append(got, all)
	}
	if !bytes.Equal(got[0], got[2]) {
		t.Errorf("plan.json differs between --jobs 1 and --jobs 2")
	}
	if !bytes.Equal(got[1], got[3]) {
		t.Errorf("plan.json, plan.csv or plan.md differs between --jobs 1 and --jobs 2")
	}
}

// `make plan SCENARIO=deploy-restart` runs the default sweep: workload.clients
// at 1/2 to 4 times the scenario's 2000 (8× would still be arriving when the
// first restart strikes at 90 s).
func TestPlanDefaultSweep(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	code, stdout, stderr := runArgs(t, context.Background(), "plan", "deploy-restart", "--file", shipped, "--out", out, "--quiet")
	if code != ExitOK {
		t.Fatalf("plan deploy-restart: exit %d\n%s\n%s", code, stdout, stderr)
	}
	data, err := os.ReadFile(filepath.Join(planDir(t, out, "deploy-restart"), plan.JSONName))
	if err != nil {
		t.Fatal(err)
	}
	var doc plan.Doc
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Axes) != 1 || doc.Axes[0].Spec != "workload.clients=1000..8000@4" || !slices.Equal(doc.Axes[0].Values, []float64{1000, 2000, 4000, 8000}) {
		t.Errorf("default sweep: %+v", doc.Axes)
	}
	if len(doc.Rows) != 4*len(doc.Designs) || doc.Recommendation.Target.Value != 8000 {
		t.Errorf("%d rows for %d designs, target %v", len(doc.Rows), len(doc.Designs), doc.Recommendation.Target)
	}
}

// The plan judges the goals, never the expect table: --goal adds a goal
// (calls_max) over the defaults and the scenario's goals table, a goal no
// design can meet leaves none standing, and plan.md names each design's
// binding goal and by how much, rounded.
func TestPlanGoals(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	code, stdout, stderr := runArgs(t, context.Background(), "plan", "s", "--file", planFile(t), "--out", out, "--quiet",
		"--set", "duration=60s", "--sweep", "workload.clients=200,400", "--goal", "calls_max=1")
	if code != ExitOK {
		t.Fatalf("plan: exit %d\n%s\n%s", code, stdout, stderr)
	}
	dir := planDir(t, out, "s")
	md, err := os.ReadFile(filepath.Join(dir, "plan.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"`calls_max = 1`", "`calls_failed_max = 100000`", "`lost_fraction_max = 0.001`",
		"**No design meets every goal at `workload.clients=400`.**", "- memory-sticky: calls: got ", "goal ≤ 1 ("} {
		if !strings.Contains(string(md), want) {
			t.Errorf("plan.md lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(string(md), "events_lost") {
		t.Errorf("plan.md judged the expect table's events_lost:\n%s", md)
	}
	var doc plan.Doc
	data, err := os.ReadFile(filepath.Join(dir, plan.JSONName))
	if err == nil {
		err = json.Unmarshal(data, &doc)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Goals) != 6 || doc.Goals[5].Metric != "calls" || doc.Recommendation.Cheapest != nil {
		t.Errorf("plan.json: goals %+v, cheapest %+v", doc.Goals, doc.Recommendation.Cheapest)
	}
	for _, c := range doc.Recommendation.Candidates {
		if len(c.Misses) == 0 || c.Misses[0].Metric != "calls" || c.Misses[0].Factor == nil {
			t.Errorf("%s: misses at the target %+v, want calls first, with its factor", c.Design, c.Misses)
		}
	}
}

// docs/planning.md's example with its own goals recommends a design whose
// recovery latency at p99 meets the recovery goal it sets.
func TestPlanningExample(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/planning.md")
	if err != nil {
		t.Fatal(err)
	}
	const lead = `make plan SCENARIO=deploy-restart ARGS="`
	i := strings.Index(string(doc), lead)
	if i < 0 {
		t.Fatalf("docs/planning.md has no %q example", lead)
	}
	args, _, _ := strings.Cut(string(doc[i+len(lead):]), `"`)
	out := t.TempDir()
	code, stdout, stderr := runArgs(t, context.Background(), append([]string{"plan", "deploy-restart", "--file", shipped, "--out", out, "--quiet"}, strings.Fields(args)...)...)
	if code != ExitOK {
		t.Fatalf("plan %s: exit %d\n%s\n%s", args, code, stdout, stderr)
	}
	data, err := os.ReadFile(filepath.Join(planDir(t, out, "deploy-restart"), plan.JSONName))
	if err != nil {
		t.Fatal(err)
	}
	var p plan.Doc
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	goal := -1.0
	for _, g := range p.Goals {
		if g.Metric == "recovery_latency_ms_p99" && g.Op == "max" {
			goal = g.Bound
		}
	}
	best := p.Recommendation.Cheapest
	switch {
	case goal != 5000:
		t.Errorf("the example's recovery goal is %v, the prose says 5 s", goal)
	case best == nil || best.Design != "redis-shared":
		t.Errorf("the example recommends %+v; the prose says redis-shared", best)
	case best.RecoveryP99MS == nil || *best.RecoveryP99MS > goal:
		t.Errorf("%s's recovery p99 %v misses the goal %v", best.Design, best.RecoveryP99MS, goal)
	}
}
