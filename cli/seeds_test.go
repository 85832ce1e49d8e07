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
