package cli

import (
	"bytes"
	"context"
	"github.com/stormsim/stormsim/scenario"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/report"
)

const shipped = "../scenarios.toml"

func runArgs(t *testing.T, ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(ctx, &Env{Stdout: &out, Stderr: &errb}, args)
	return code, out.String(), errb.String()
}

// Acceptance 1: `make sim SCENARIO=deploy-restart` prints the table and
// writes the report, on the real Makefile and binary.
func TestMakeSimDeployRestart(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatal("make is not installed: the README's commands need it")
	}
	out := t.TempDir()
	cmd := exec.Command("make", "-s", "sim", "SCENARIO=deploy-restart", "OUT="+out)
	cmd.Dir = ".."
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("make sim: %v\n%s", err, stderr.String())
	}
	for _, want := range []string{"deploy-restart (seed 42, sim engine)", "design", "rate_404", "redis-shared", "memory-sticky", "report: "} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
		}
	}
	latest := filepath.Join(out, "deploy-restart", "latest")
	r, err := report.Read(latest)
	if err != nil {
		t.Fatalf("reading the report through %s: %v", latest, err)
	}
	if r.Scenario != "deploy-restart" || len(r.Designs) != 6 || r.Engine != "sim" {
		t.Errorf("report: scenario %s, %d designs, engine %s", r.Scenario, len(r.Designs), r.Engine)
	}
	for _, f := range []string{"report.json", "summary.md", "series.csv", "report.html"} {
		if st, err := os.Stat(filepath.Join(latest, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s missing or empty: %v", f, err)
		}
	}
	// Issue 4, acceptance 1: all six charts as PNG and SVG, each PNG 1200×700.
	for _, c := range []string{"replay-latency", "lost-events", "rate-404", "reconnect-storm", "designs", "store"} {
		if st, err := os.Stat(filepath.Join(latest, c+".svg")); err != nil || st.Size() == 0 {
			t.Errorf("%s.svg missing or empty: %v", c, err)
		}
		f, err := os.Open(filepath.Join(latest, c+".png"))
		if err != nil {
			t.Errorf("%s.png: %v", c, err)
			continue
		}
		cfg, err := png.DecodeConfig(f)
		f.Close()
		if err != nil || cfg.Width != 1200 || cfg.Height != 700 {
			t.Errorf("%s.png: %dx%d, %v; want 1200x700", c, cfg.Width, cfg.Height, err)
		}
	}
	if !strings.Contains(stdout.String(), "charts: ") || !strings.Contains(stdout.String(), "report.html") {
		t.Errorf("stdout does not give the path of report.html")
	}
}

// Every command answers --help with its usage, and exits 0.
func TestHelpEverywhere(t *testing.T) {
	t.Parallel()
	for _, c := range commands {
		code, out, _ := runArgs(t, context.Background(), c.name, "--help")
		if code != ExitOK || !strings.Contains(out, "Usage: stormsim "+c.name) {
			t.Errorf("%s --help: exit %d, output %q", c.name, code, out)
		}
	}
	code, out, _ := runArgs(t, context.Background(), "--help")
	if code != ExitOK || !strings.Contains(out, "Commands:") {
		t.Errorf("--help: exit %d, %q", code, out)
	}
}

// Bad flags and arguments exit 2 with a message that names the problem.
func TestBadArguments(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"nosuchcommand"}, `unknown command "nosuchcommand"`},
		{[]string{"run"}, "want exactly one SCENARIO"},
		{[]string{"run", "a", "b", "--file", shipped}, "want exactly one SCENARIO, got 2"},
		{[]string{"run", "nope", "--file", shipped}, `no scenario "nope"`},
		{[]string{"run", "steady", "--file", "missing.toml"}, "missing.toml"},
		{[]string{"run", "steady", "--file", shipped, "--seed", "-1"}, `--seed "-1"`},
		{[]string{"run", "steady", "--file", shipped, "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"run", "steady", "--file", shipped, "--designs", "nope", "--out", dir}, `no design "nope"`},
		{[]string{"run", "steady", "--file", shipped, "--set", "workload.clients=-4", "--out", dir}, "--set workload.clients: -4 is not in 1..10000000"},
		{[]string{"run", "steady", "--file", shipped, "--engine", "warp"}, `--engine "warp"`},
		{[]string{"run", "steady", "--file", shipped, "--engine", "both", "--repeat", "0"}, "--seeds 0 is not within 1..100"},
		{[]string{"run", "steady", "--file", shipped, "--seeds", "101"}, "--seeds 101 is not within 1..100"},
		{[]string{"validate", "a.toml", "b.toml"}, "want at most one FILE"},
	}
	for _, c := range cases {
		code, _, errs := runArgs(t, context.Background(), c.args...)
		if code != ExitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", c.args, code, errs, c.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("failed runs wrote %d entries into the results dir", len(entries))
	}
}

func TestValidateAndList(t *testing.T) {
	t.Parallel()
	code, out, errs := runArgs(t, context.Background(), "validate", shipped)
	if code != ExitOK || !strings.Contains(out, "ok ("+strconv.Itoa(shippedCount(t))+" scenarios") {
		t.Errorf("validate: %d %q %q", code, out, errs)
	}
	bad := filepath.Join(t.TempDir(), "bad.toml")
	os.WriteFile(bad, []byte("[scenario.x]\nreplicas = 0\n"), 0o644)
	code, _, errs = runArgs(t, context.Background(), "validate", bad)
	if code != ExitUsage || !strings.Contains(errs, "bad.toml: scenario.x.replicas: 0 is not in 1..1000") {
		t.Errorf("validate bad: %d %q", code, errs)
	}
	code, out, _ = runArgs(t, context.Background(), "list", "--file", shipped)
	if code != ExitOK || !strings.Contains(out, "deploy-restart") || !strings.Contains(out, "memory-random") {
		t.Errorf("list: %d %q", code, out)
	}
}

// A run writes one folder; an interrupted run writes nothing at all.
func TestRunWritesAtomically(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"run", "steady", "--file", shipped, "--out", dir, "--set", "workload.clients=200", "--quiet"}
	if code, out, errs := runArgs(t, context.Background(), args...); code != ExitOK || out != "" {
		t.Fatalf("run: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "steady"))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(entries) != 2 || !strings.Contains(strings.Join(names, " "), "latest") {
		t.Errorf("results: %v, want one run folder and latest", names)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir2 := t.TempDir()
	code, _, errs := runArgs(t, ctx, "run", "steady", "--file", shipped, "--out", dir2)
	if code != ExitInterrupted || !strings.Contains(errs, "interrupted") {
		t.Errorf("interrupted run: exit %d, stderr %q", code, errs)
	}
	if entries, _ := os.ReadDir(dir2); len(entries) != 0 {
		t.Errorf("an interrupted run left %d entries behind", len(entries))
	}
}

// shippedCount is how many scenarios scenarios.toml holds, as the loader
// counts them.
func shippedCount(t *testing.T) int {
	t.Helper()
	f, err := scenario.Load(shipped, nil)
	if err != nil {
		t.Fatal(err)
	}
	return len(f.Names())
}
