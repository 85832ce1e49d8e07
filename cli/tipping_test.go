package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/plan"
)

// Bad tipping flags exit 2 with a message naming the flag and the problem,
// and write nothing.
func TestPlanTippingBadFlags(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	for _, c := range []struct {
		scenario string
		args     []string
		want     string
	}{
		{"bronson-hotos21", []string{"--tipping", "workload.arrival_rate=100"}, `--tipping workload.arrival_rate: "100" is not a range`},
		{"bronson-hotos21", []string{"--tipping", "workload.arrival_rate=200..100"}, "empty range: LO 200 is not below HI 100"},
		{"bronson-hotos21", []string{"--tipping", "workload.rate=1..2"}, `--tipping workload.rate: unknown key "workload.rate"`},
		{"bronson-hotos21", []string{"--tipping", "workload.arrival_rate=100..200", "--seeds", "0"}, "--seeds 0: want at least 1 seed per probe"},
		{"bronson-hotos21", []string{"--tipping", "workload.arrival_rate=100..200", "--recover-frequency", "0"}, "--recover-frequency 0: want a share of the seeds in (0, 1]"},
		{"bronson-hotos21", []string{"--tipping", "workload.arrival_rate=100..200", "--recover-frequency", "1.2"}, "--recover-frequency 1.2: want a share"},
		{"bronson-hotos21", []string{"--tipping", "workload.arrival_rate=100..200", "--resolution", "wide"}, `--resolution wide: "wide" is not a number`},
		{"bronson-hotos21", []string{"--tipping", "workload.arrival_rate=100..200", "--resolution", "-1"}, "--resolution -1: want a width above 0"},
		{"bronson-hotos21", []string{"--tipping", "workload.arrival_rate=100..200", "--resolution", "150"}, "--resolution 150: not below the range's width 100"},
		{"bronson-hotos21", []string{"--tipping", "workload.arrival_rate=100..200", "--sweep", "workload.arrival_rate=1,2"}, "--sweep and --tipping do not go together"},
		{"bronson-hotos21", []string{"--tipping", "workload.arrival_rate=100..200", "--size-for", "workload.arrival_rate=150"}, "--size-for and --tipping do not go together"},
		{"bronson-hotos21", []string{"--seeds", "3"}, "--seeds applies to --tipping only"},
		{"bronson-hotos21", []string{"--tipping", "workload.arrival_rate=100..200", "--goal", "goodput_recovered_s_max=x"}, `--goal "goodput_recovered_s_max=x": want metric_max=N`},
		{"deploy-restart", []string{"--tipping", "workload.arrival_rate=50..200"}, "scenario deploy-restart runs the session workload"},
	} {
		args := append([]string{"plan", c.scenario, "--file", shipped, "--out", out, "--quiet"}, c.args...)
		code, _, errs := runArgs(t, context.Background(), args...)
		if code != ExitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", c.args, code, errs, c.want)
		}
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("failed searches wrote %d entries", len(entries))
	}
}

// A tipping search writes tipping.json, tipping.csv, tipping.md and the
// chart, and --jobs 2 gives the same bytes as --jobs 1.
func TestPlanTippingJobsSameBytes(t *testing.T) {
	t.Parallel()
	names := []string{plan.TippingJSONName, plan.TippingCSVName, plan.TippingMarkdownName, "tipping.png", "tipping.svg"}
	var got [][]byte
	for _, jobs := range []string{"1", "2"} {
		out := t.TempDir()
		code, stdout, stderr := runArgs(t, context.Background(), "plan", "bronson-hotos21", "--file", shipped, "--out", out, "--quiet", "--jobs", jobs,
			"--tipping", "workload.arrival_rate=100..200", "--seeds", "2", "--resolution", "10")
		if code != ExitOK {
			t.Fatalf("--jobs %s: exit %d\n%s\n%s", jobs, code, stdout, stderr)
		}
		dir := planDir(t, out, "bronson-hotos21")
		var all []byte
		for _, n := range names {
			b, err := os.ReadFile(filepath.Join(dir, n))
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, b...)
		}
		got = append(got, all)
		f, err := os.Open(filepath.Join(dir, "tipping.png"))
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := png.DecodeConfig(f)
		f.Close()
		if err != nil || cfg.Width != 1200 || cfg.Height != 700 {
			t.Errorf("tipping.png: %v, %dx%d; want 1200x700", err, cfg.Width, cfg.Height)
		}
		var doc plan.TippingDoc
		if b, _ := os.ReadFile(filepath.Join(dir, plan.TippingJSONName)); json.Unmarshal(b, &doc) != nil || len(doc.Designs) != 1 || len(doc.Seeds) != 2 {
			t.Errorf("tipping.json: %d designs, seeds %v", len(doc.Designs), doc.Seeds)
		}
	}
	if !bytes.Equal(got[0], got[1]) {
		t.Errorf("the tipping files differ between --jobs 1 and --jobs 2")
	}
}

// docs/planning.md's tipping examples are what the commands print: each
// `bin/stormsim plan ... --tipping ...` block is followed by its output,
// which this test runs the command for and compares.
func TestPlanningTippingExamples(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/planning.md")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)```sh\n(bin/stormsim plan [^\n]*--tipping[^\n]*)\n```\n\n```text\n(.*?)```")
	ex := re.FindAllSubmatch(doc, -1)
	if len(ex) < 2 {
		t.Fatalf("docs/planning.md has %d tipping examples with their output, want 2 (metastable and bronson-hotos21)", len(ex))
	}
	for _, m := range ex {
		args := strings.Fields(string(m[1]))[1:]
		out := t.TempDir()
		code, stdout, stderr := runArgs(t, context.Background(), append(args, "--file", shipped, "--out", out)...)
		if code != ExitOK {
			t.Fatalf("%s: exit %d\n%s", m[1], code, stderr)
		}
		got, _, _ := strings.Cut(stdout, "\nplan: ")
		if want := string(m[2]); strings.TrimSpace(got) != strings.TrimSpace(want) {
			t.Errorf("%s prints\n%s\ndocs/planning.md shows\n%s", m[1], got, want)
		}
	}
}
