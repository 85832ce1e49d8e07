package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stormsim/stormsim/plots"
)

// fixtureJSON is the plots package's hand-written report.
func fixtureJSON(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "plots", "testdata", "fixture.json"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// runFolder makes a run folder holding report.json with data.
func runFolder(t *testing.T, name string, data []byte) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// stormsim runs the command line and returns the exit code, stdout and
// stderr.
func stormsim(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(context.Background(), &Env{Stdout: &out, Stderr: &errb}, args)
	return code, out.String(), errb.String()
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

func readAll(t *testing.T, dir string, names []string) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		m[n] = data
	}
	return m
}

// 'stormsim plot DIR' writes every chart and report.html next to
// report.json, and running it again gives the same bytes.
func TestPlotRun(t *testing.T) {
	dir := runFolder(t, "20260101T000000Z-seed42", fixtureJSON(t))
	code, stdout, stderr := stormsim("plot", dir)
	if code != ExitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if !strings.Contains(stdout, dir) {
		t.Errorf("stdout %q does not name the folder", stdout)
	}
	want := []string{"report.html", "report.json"}
	for _, n := range plots.ChartNames {
		want = append(want, n+".png", n+".svg")
	}
	sort.Strings(want)
	if diff := cmp.Diff(want, listDir(t, dir)); diff != "" {
		t.Fatalf("files (-want +got):\n%s", diff)
	}
	first := readAll(t, dir, want)
	if code, _, stderr := stormsim("plot", dir); code != ExitOK {
		t.Fatalf("second run: exit %d, stderr %q", code, stderr)
	}
	second := readAll(t, dir, listDir(t, dir))
	for _, n := range want {
		if !bytes.Equal(first[n], second[n]) {
			t.Errorf("%s changed between two runs of stormsim plot", n)
		}
	}
	if len(second) != len(first) {
		t.Errorf("second run left %d files, first %d (temporary files?)", len(second), len(first))
	}
}

// 'stormsim plot DIR_A DIR_B' writes the overlay into DIR_B/overlay-<A>, or
// into --out.
func TestPlotOverlay(t *testing.T) {
	a := runFolder(t, "run-a", fixtureJSON(t))
	b := runFolder(t, "run-b", fixtureJSON(t))
	var want []string
	for _, n := range plots.OverlayChartNames {
		want = append(want, n+".png", n+".svg")
	}
	sort.Strings(want)

	code, _, stderr := stormsim("plot", a, b)
	if code != ExitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if diff := cmp.Diff(want, listDir(t, filepath.Join(b, "overlay-run-a"))); diff != "" {
		t.Errorf("default --out: files (-want +got):\n%s", diff)
	}

	out := filepath.Join(t.TempDir(), "cmp")
	code, _, stderr = stormsim("plot", a, b, "--out", out)
	if code != ExitOK {
		t.Fatalf("--out: exit %d, stderr %q", code, stderr)
	}
	if diff := cmp.Diff(want, listDir(t, out)); diff != "" {
		t.Errorf("--out: files (-want +got):\n%s", diff)
	}

	// A "latest" link is named after the run it points at.
	latest := filepath.Join(filepath.Dir(a), "latest")
	if err := os.Symlink("run-a", latest); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := stormsim("plot", latest, b); code != ExitOK {
		t.Fatalf("latest: exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(b, "overlay-run-a", "store.svg")); err != nil {
		t.Error(err)
	}
}

func TestPlotHelp(t *testing.T) {
	code, stdout, _ := stormsim("plot", "--help")
	if code != ExitOK || !strings.Contains(stdout, "Usage: stormsim plot") || !strings.Contains(stdout, "-out") {
		t.Errorf("exit %d, stdout %q", code, stdout)
	}
}

// Bad input exits 2 with a message naming the file and the problem.
func TestPlotBadInput(t *testing.T) {
	good := fixtureJSON(t)
	write := func(data string) string { return runFolder(t, "run", []byte(data)) }
	empty := t.TempDir()
	file := filepath.Join(t.TempDir(), "report.json")
	if err := os.WriteFile(file, good, 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "nope")
	for _, tc := range []struct {
		name string
		args []string
		want []string // in stderr
	}{
		// The folder does not exist.
		{"missing folder", []string{missing}, []string{missing, "no such folder"}},
		// The folder has no report.json.
		{"missing report.json", []string{empty}, []string{filepath.Join(empty, "report.json"), "no such file"}},
		// A file, not a folder.
		{"not a folder", []string{file}, []string{file, "not a folder"}},
		// report.json is not JSON.
		{"bad JSON", []string{write(`{"schema": 1, "designs": [`)}, []string{"report.json", "not a report.json"}},
		// report.json from a future stormsim.
		{"schema 2", []string{write(strings.Replace(string(good), `"schema": 1`, `"schema": 2`, 1))}, []string{"report.json", "schema 2 is not supported"}},
		// One series shorter than the others.
		{"unequal series", []string{write(strings.Replace(string(good), `"reconnects": [1, 1, `, `"reconnects": [`, 1))}, []string{"report.json", "designs[stateless].series.reconnects has 28 points"}},
		// A step of 0 s cannot be turned into rates.
		{"zero step", []string{write(strings.Replace(string(good), `"step_s": 2`, `"step_s": 0`, 1))}, []string{"report.json", "step_s is 0"}},
		// The overlay checks both runs.
		{"overlay, bad B", []string{write(string(good)), missing}, []string{missing, "no such folder"}},
		// No folder at all.
		{"no arguments", nil, []string{"want RESULT_DIR or DIR_A DIR_B, got 0"}},
		// Three folders.
		{"three arguments", []string{empty, empty, empty}, []string{"got 3 arguments"}},
		// --out with one run.
		{"--out with one run", []string{empty, "--out", empty}, []string{"--out is for two runs"}},
	} {
		code, _, stderr := stormsim(append([]string{"plot"}, tc.args...)...)
		if code != ExitUsage {
			t.Errorf("%s: exit %d, want %d (stderr %q)", tc.name, code, ExitUsage, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%s: stderr %q lacks %q", tc.name, stderr, w)
			}
		}
	}
}
