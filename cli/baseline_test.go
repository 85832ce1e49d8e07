package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Issue 24, acceptance 2: compare flags an improvement beyond tolerance
// (exit 1, "changed: refresh the baseline") and accepts it with
// --accept-better; a regression still fails with --accept-better.
func TestCompareImprovement(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []struct{ out, set string }{{"big", "store.memory_cap_bytes=10485760"}, {"small", "store.memory_cap_bytes=262144"}} {
		args := []string{"run", "network-blip", "--file", shipped, "--out", filepath.Join(dir, c.out), "--no-charts", "--quiet",
			"--designs", "memory-sticky", "--set", "client.profile=go-sdk", "--set", c.set}
		if code, _, stderr := runArgs(t, context.Background(), args...); code != ExitOK && code != ExitThreshold {
			t.Fatalf("%s: exit %d %s", c.out, code, stderr)
		}
	}
	run := func(n string) string { return filepath.Join(dir, n, "network-blip", "latest") }
	// The small store as the baseline, the big one as the run: fewer
	// events lost, a change for the better. The bigger store also resumes
	// later streams, whose recovery takes longer: a generous tolerance on
	// every metric but the exact lost events and 404s keeps this to them.
	loose := "--tolerance=*=1000"
	code, stdout, stderr := runArgs(t, context.Background(), "compare", loose, run("small"), run("big"))
	if code != ExitError || !strings.Contains(stdout, "memory-sticky/events_lost: ") || !strings.Contains(stdout, "changed: refresh the baseline") ||
		!strings.Contains(stdout, "no regressions") || !strings.Contains(stderr, "refresh the baseline") {
		t.Errorf("improvement: exit %d, want 1 and the change\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = runArgs(t, context.Background(), "compare", loose, "--accept-better", run("small"), run("big"))
	if code != ExitOK || !strings.Contains(stdout, "(accepted: --accept-better)") {
		t.Errorf("improvement with --accept-better: exit %d, want 0\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, _ = runArgs(t, context.Background(), "compare", loose, "--accept-better", run("big"), run("small"))
	if code != ExitError || !strings.Contains(stdout, "regression") {
		t.Errorf("regression with --accept-better: exit %d, want 1\n%s", code, stdout)
	}
}

// Issue 24, acceptance 3: baseline prints every value it changes, old and
// new, and writes them to CHANGES.md; a refresh that changes nothing says
// so.
func TestBaselineWritesChanges(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := []string{"baseline", "--file", shipped, "--scenarios", "network-blip,steady", "--dir", dir}
	if code, stdout, stderr := runArgs(t, context.Background(), base...); code != ExitOK || !strings.Contains(stdout, "new baseline, nothing before it") {
		t.Fatalf("first baseline: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if code, stdout, stderr := runArgs(t, context.Background(), base...); code != ExitOK || !strings.Contains(stdout, "network-blip.json: 0 changes") {
		t.Fatalf("same baseline again: exit %d\n%s\n%s", code, stdout, stderr)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "CHANGES.md"))
	if strings.Count(string(md), "No value changed.") != 2 {
		t.Errorf("CHANGES.md after a refresh that changed nothing:\n%s", md)
	}
	old, err := os.ReadFile(filepath.Join(dir, "network-blip.json"))
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runArgs(t, context.Background(), "baseline", "--file", shipped, "--scenarios", "network-blip", "--dir", dir, "--set", "store.memory_cap_bytes=262144")
	if code != ExitOK {
		t.Fatalf("changed baseline: exit %d\n%s\n%s", code, stdout, stderr)
	}
	md, _ = os.ReadFile(filepath.Join(dir, "CHANGES.md"))
	// Every value that differs between the two files is listed, with both
	// values, and nothing else.
	oldB, _ := readBaselineFile(old)
	newData, _ := os.ReadFile(filepath.Join(dir, "network-blip.json"))
	newB, _ := readBaselineFile(newData)
	n := 0
	for d, ms := range newB {
		for m, v := range ms {
			o := oldB[d][m]
			if o == v {
				continue
			}
			n++
			line := "- network-blip/" + d + "/" + m + ": " + o + " -> " + v
			if !strings.Contains(string(md), line+"\n") {
				t.Errorf("CHANGES.md lacks %q", line)
			}
			if !strings.Contains(stdout, strings.TrimPrefix(line, "- ")) {
				t.Errorf("stdout lacks %q", line)
			}
		}
	}
	if n == 0 {
		t.Fatal("a smaller memory store changed no value of network-blip")
	}
	// One line per changed value, and one saying the settings changed.
	if got := strings.Count(string(md), "\n- network-blip/"); got != n+1 || !strings.Contains(string(md), "- network-blip/*: the scenario's settings changed") {
		t.Errorf("CHANGES.md lists %d network-blip lines, want %d values and the settings' note:\n%s", got, n, md)
	}
}

// readBaselineFile is a baseline's metrics as the strings CHANGES.md
// writes, by design and metric, read independently of expect.Diff.
func readBaselineFile(data []byte) (map[string]map[string]string, error) {
	var b struct {
		Designs []struct {
			Name    string              `json:"name"`
			Metrics map[string]*float64 `json:"metrics"`
		} `json:"designs"`
	}
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, err
	}
	out := map[string]map[string]string{}
	for _, d := range b.Designs {
		out[d.Name] = map[string]string{}
		for m, v := range d.Metrics {
			s := "null"
			if v != nil {
				s = strconv.FormatFloat(*v, 'f', -1, 64)
			}
			out[d.Name][m] = s
		}
	}
	return out, nil
}

// The engine of a nightly run: the scenario's [nightly] table, unless
// --engine overrides it for every scenario; the seeds of a live run from
// the table, unless --seeds overrides them.
func TestNightlyEngineChoice(t *testing.T) {
	t.Parallel()
	sc, err := loadScenario(shipped, "live-smoke", nil)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Nightly.Engine != "live" || sc.Nightly.Seeds < 2 || len(sc.Nightly.Designs) == 0 {
		t.Fatalf("live-smoke's nightly table: %+v, want live over several seeds", sc.Nightly)
	}
	for _, c := range []struct {
		engine    string
		seeds     int
		wantE     string
		wantSeeds int
	}{
		{"", 0, "live", sc.Nightly.Seeds}, // the table
		{"", 5, "live", 5},                // --seeds
		{"sim", 0, "sim", 1},              // --engine sim: the simulator, one seed
	} {
		if e, n := nightlyEngine(sc, c.engine, c.seeds); e != c.wantE || n != c.wantSeeds {
			t.Errorf("--engine %q --seeds %d: %s, %d seeds; want %s, %d", c.engine, c.seeds, e, n, c.wantE, c.wantSeeds)
		}
	}
	steady, _ := loadScenario(shipped, "steady", nil)
	if e, _ := nightlyEngine(steady, "", 0); e != "sim" {
		t.Errorf("steady, no nightly table: %s, want sim", e)
	}
	if p := baselinePath("d", "live-smoke", "live"); p != filepath.Join("d", "live-smoke.live.json") {
		t.Errorf("live baseline path %s", p)
	}
}
