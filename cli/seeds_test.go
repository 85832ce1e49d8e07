package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
)

// Issue 17, acceptance 5: the same seeds give the same bytes with --seeds,
// in every file of the run (seed-<S>/ folders and the report over them),
// and --repeat is an alias of --seeds.
func TestSeedsDeterministic(t *testing.T) {
	t.Parallel()
	file := writeGuard(t)
	read := func(flag string) map[string]string {
		out := t.TempDir()
		code, stdout, stderr := runArgs(t, context.Background(), "run", "g", "--file", file, "--out", out, "--no-charts", flag, "3")
		if code != ExitOK {
			t.Fatalf("%s 3: exit %d\n%s\n%s", flag, code, stdout, stderr)
		}
		if !strings.Contains(stdout, "g (seeds 42-44, sim engine): the mean over 3 seeds") {
			t.Errorf("%s 3: the table does not say it is over the seeds:\n%s", flag, stdout)
		}
		root := filepath.Join(out, "g", "latest")
		files := map[string]string{}
		filepath.WalkDir(root+"/", func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				b, _ := os.ReadFile(p)
				rel, _ := filepath.Rel(root, p)
				files[rel] = string(b)
			}
			return nil
		})
		return files
	}
	a, b := read("--seeds"), read("--repeat")
	// --seed moves the first seed; --set seed=N does too.
	for _, from := range [][]string{{"--seed", "7"}, {"--set", "seed=7"}} {
		code, stdout, stderr := runArgs(t, context.Background(), append([]string{"run", "g", "--file", file, "--out", t.TempDir(), "--no-charts", "--seeds", "3"}, from...)...)
		if code != ExitOK || !strings.Contains(stdout, "g (seeds 7-9, sim engine)") {
			t.Errorf("--seeds 3 %v: exit %d\n%s\n%s", from, code, stdout, stderr)
		}
	}
	for _, want := range []string{"report.json", "summary.md", "seed-42/report.json", "seed-43/report.json", "seed-44/report.json", "seed-44/series.csv"} {
		if a[want] == "" {
			t.Errorf("--seeds 3 wrote no %s (wrote %d files)", want, len(a))
		}
	}
	if len(a) != len(b) {
		t.Errorf("--seeds wrote %d files, --repeat %d", len(a), len(b))
	}
	for name, data := range a {
		if b[name] != data {
			t.Errorf("%s differs between two runs of the same seeds", name)
		}
	}
	var r report.Report
	if err := jsonUnmarshal([]byte(a["report.json"]), &r); err != nil {
		t.Fatal(err)
	}
	if r.OverSeeds == nil || fmt.Sprint(r.OverSeeds.Seeds) != "[42 43 44]" || len(r.OverSeeds.Designs) != 2 {
		t.Fatalf("over_seeds: %+v", r.OverSeeds)
	}
	s := r.OverSeeds.Designs[0].Metrics["calls"]
	if s.N != 3 || *s.Min > *s.Mean || *s.Mean > *s.Max || *s.CI95Lo > *s.Mean || *s.CI95Hi < *s.Mean {
		t.Errorf("calls over the seeds: %+v", s)
	}
}

// Issue 17, build 1: [scenario.NAME.expect] seeds = N makes a plain run
// run N seeds and judges the thresholds on the means. A bound between the
// mean and the largest seed's value passes on the mean and fails when each
// seed is judged alone, so the test can tell the two apart.
func TestExpectSeedsJudgesTheMean(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := writeGuard(t)
	out := t.TempDir()
	if code, stdout, stderr := runArgs(t, context.Background(), "run", "g", "--file", file, "--out", out, "--no-charts", "--seeds", "3", "--designs", "memory-sticky"); code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	r, err := report.Read(filepath.Join(out, "g", "latest"))
	if err != nil {
		t.Fatal(err)
	}
	calls := r.OverSeeds.Designs[0].Metrics["calls"]
	bound := math.Ceil(*calls.Mean)
	if bound >= *calls.Max {
		t.Fatalf("the seeds give calls %v: no bound lies between their mean and their largest value", calls.Values)
	}
	withSeeds := filepath.Join(dir, "seeds.toml")
	src := guardScenario + fmt.Sprintf("[scenario.g.expect]\nseeds = 3\ncalls_max = %g\n", bound)
	if err := os.WriteFile(withSeeds, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runArgs(t, context.Background(), "run", "g", "--file", withSeeds, "--out", t.TempDir(), "--no-charts", "--designs", "memory-sticky")
	if code != ExitOK || !strings.Contains(stdout, "the mean over 3 seeds") || !strings.Contains(stdout, "on the means over 3 seeds, 0 failed") {
		t.Errorf("seeds = 3, calls_max = %g (mean %g): exit %d\n%s\n%s", bound, *calls.Mean, code, stdout, stderr)
	}
	// The same bound judged on one seed alone fails at the seed with the
	// most calls.
	top := 0
	for i, v := range calls.Values {
		if *v > *calls.Values[top] {
			top = i
		}
	}
	seed := fmt.Sprint(r.OverSeeds.Seeds[top])
	code, stdout, stderr = runArgs(t, context.Background(), "run", "g", "--file", withSeeds, "--out", t.TempDir(), "--no-charts", "--designs", "memory-sticky", "--seeds", "1", "--seed", seed)
	if code != ExitThreshold {
		t.Errorf("seed %s alone, calls %g against calls_max %g: exit %d, want 99\n%s\n%s", seed, *calls.Values[top], bound, code, stdout, stderr)
	}
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte(guardScenario+"[scenario.g.expect]\nseeds = 0\n"), 0o644)
	if code, _, stderr := runArgs(t, context.Background(), "validate", bad); code != ExitUsage || !strings.Contains(stderr, "scenario.g.expect.seeds: 0 is not a whole number of seeds in 1..100") {
		t.Errorf("seeds = 0: exit %d, %q", code, stderr)
	}
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// Issue 17, acceptance 2: every ordering docs/measurements.md states for
// thundering-herd over 20 seeds is what a run over those seeds prints now.
// (A long test: make test-long.)
func TestOrderingsAsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/measurements.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, found := strings.Cut(string(doc), "<!-- begin orderings ")
	sec, _, _ = strings.Cut(sec, "<!-- end orderings -->")
	var claims []string
	for line := range strings.Lines(sec) {
		if c, ok := strings.CutPrefix(strings.TrimSpace(line), "- "); ok && strings.Contains(c, " seeds") && !strings.HasPrefix(c, "date:") {
			claims = append(claims, c)
		}
	}
	if !found || len(claims) == 0 {
		t.Fatal("docs/measurements.md has no orderings section: run make orderings")
	}
	if !strings.Contains(sec, "--seeds 20") {
		t.Fatalf("the orderings section was not measured over 20 seeds:\n%s", sec)
	}
	out := t.TempDir()
	code, stdout, stderr := runArgs(t, context.Background(), "run", "thundering-herd", "--file", shipped, "--seeds", "20", "--no-charts", "--no-thresholds", "--out", out)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, c := range claims {
		if !strings.Contains(stdout, "  "+c+"\n") {
			t.Errorf("docs/measurements.md says %q; the run printed:\n%s", c, stdout[strings.Index(stdout, "orderings over"):])
		}
	}
	r, err := report.Read(filepath.Join(out, "thundering-herd", "latest"))
	if err != nil {
		t.Fatal(err)
	}
	if got := len(r.OverSeeds.Orderings); got != len(claims) {
		t.Errorf("report.json holds %d orderings, the docs %d", got, len(claims))
	}
}

// sweepSeeds runs nightly at each seed over the scenarios named (every
// shipped one when none), and fails on any threshold that does not hold.
// At the baselines' seed the baselines are compared too; at the others
// nightly skips them and judges thresholds only (exit 0 when they hold).
func sweepSeeds(t *testing.T, seeds []int, scenarios string) {
	t.Helper()
	for _, s := range seeds {
		args := []string{"nightly", "--file", shipped, "--baselines", shippedBaselines, "--out", t.TempDir(), "--quiet", "--engine", "sim", "--set", fmt.Sprintf("seed=%d", s)}
		if scenarios != "" {
			args = append(args, "--scenarios", scenarios)
		}
		code, stdout, stderr := runArgs(t, context.Background(), args...)
		if code != ExitOK {
			var lines []string
			for line := range strings.Lines(stdout) {
				if strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "  note: ") {
					lines = append(lines, strings.TrimSpace(line))
				}
			}
			t.Errorf("nightly --set seed=%d: exit %d\n  %s\n%s", s, code, strings.Join(lines, "\n  "), stderr)
		}
	}
}

// Issue 17, acceptance 1: every threshold of every shipped scenario holds
// at every seed from 1 to 30 and at 42, and nightly --set seed=S exits 0
// for each. (A long test: make test-long.)
func TestThresholdsAtEverySeed(t *testing.T) {
	var seeds []int
	for s := 1; s <= 30; s++ {
		seeds = append(seeds, s)
	}
	sweepSeeds(t, append(seeds, 42), "")
}

// The reduced sweep (make test-long, beside the full one; make test judges
// the thresholds at seed 42 through TestNightlyPasses): seeds 1 to 3 of every shipped scenario
// but thundering-herd, which costs more than all the others together, and
// the huang-osdi22 scenarios (6,200 requests/s, seconds a run), which are
// swept in make test-long.
func TestThresholdsAtFewSeeds(t *testing.T) {
	t.Parallel()
	f, err := scenario.Load(shipped, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range f.Names() {
		if n != "thundering-herd" && !strings.HasPrefix(n, "huang-osdi22") {
			names = append(names, n)
		}
	}
	sweepSeeds(t, []int{1, 2, 3}, strings.Join(names, ","))
}
