package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stormsim/stormsim/report"
)

// guardScenario is small enough that a run of one design takes a moment.
const guardScenario = `
[scenario.g]
duration = "20s"
drain = "5s"
replicas = 2
designs = ["memory-sticky", "redis-events"]
[scenario.g.workload]
clients = 100
arrival_rate = 50
think = "1s"
events_min = 10
events_max = 20
drop_every = "3s"
`

func writeGuard(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "guard.toml")
	if err := os.WriteFile(path, []byte(guardScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// cancelOn is a writer that cancels a run once what it was written holds
// want: a test can see a warning printed before the run and stop the run
// there, whatever the run would cost.
type cancelOn struct {
	mu     sync.Mutex
	b      bytes.Buffer
	want   string
	cancel context.CancelFunc
}

func (c *cancelOn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.b.Write(p)
	if strings.Contains(c.b.String(), c.want) {
		c.cancel()
	}
	return len(p), nil
}

func (c *cancelOn) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.b.String()
}

// Issue 15, acceptance 4: every input of the issue's "nonsense accepted
// without a word" table gets its error (exit 2, naming the key) or its
// warning (printed, and kept in report.json's notes).
func TestNonsenseIsRefusedOrWarned(t *testing.T) {
	t.Parallel()
	file := writeGuard(t)
	run := func(args ...string) []string {
		return append([]string{"run", "g", "--file", file, "--no-charts", "--no-thresholds"}, args...)
	}
	errs := []struct {
		name string
		args []string
		want string
	}{
		{"step longer than duration", run("--set", "step=120s"), "--set step: 2m0s is longer than duration (20s)"},
		{"--parallel below 1", run("--parallel", "-2"), "--parallel -2: want at least 1"},
		{"--parallel 0", run("--parallel", "0"), "--parallel 0: want at least 1"},
		{"--designs empty", run("--designs", ""), `--designs "" names nothing`},
		{"--designs only commas", run("--designs", " , "), `--designs " , " names nothing`},
		{"plan --designs empty", []string{"plan", "g", "--file", file, "--designs", ""}, `--designs "" names nothing`},
		{"plan --jobs below 1", []string{"plan", "g", "--file", file, "--jobs", "-2"}, "--jobs -2: want at least 1"},
		{"nightly --scenarios empty", []string{"nightly", "--file", file, "--scenarios", ""}, `--scenarios "" names nothing`},
	}
	for _, tc := range errs {
		out := t.TempDir()
		code, _, stderr := runArgs(t, context.Background(), append(tc.args, "--out", out)...)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 and %q", tc.name, code, stderr, tc.want)
		}
		if entries, _ := os.ReadDir(out); len(entries) != 0 {
			t.Errorf("%s: a refused run wrote %d entries", tc.name, len(entries))
		}
	}

	warns := []struct {
		name string
		set  []string
		want string
	}{
		{"jitter with strategy none", []string{"client.strategy=none", "client.jitter=full"},
			`--set client.jitter: "full" does nothing with strategy = "none"`},
		{"a memory cap smaller than one event", []string{"store.memory_cap_bytes=1"},
			"--set store.memory_cap_bytes: 1 is smaller than one stored event (448 bytes at event_bytes 256)"},
		{"a call timeout shorter than the shortest call", []string{"client.call_timeout=1ns"},
			"--set client.call_timeout: 1ns is shorter than the shortest call (events_min 10 at event_rate 5/s: 2s)"},
		{"more clients than can arrive", []string{"workload.clients=10000000"},
			"--set workload.clients: 10000000 clients, but only 1000 can arrive within duration (20s) at arrival_rate 50/s"},
	}
	for _, tc := range warns {
		out := t.TempDir()
		args := run("--out", out, "--designs", "memory-sticky")
		for _, s := range tc.set {
			args = append(args, "--set", s)
		}
		code, _, stderr := runArgs(t, context.Background(), args...)
		if code != ExitOK || !strings.Contains(stderr, "stormsim: warning: "+tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 0 and the warning %q", tc.name, code, stderr, tc.want)
			continue
		}
		r, err := report.Read(filepath.Join(out, "g", "latest"))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !strings.Contains(strings.Join(r.Notes, "\n"), tc.want) {
			t.Errorf("%s: report.json notes %q lack the warning", tc.name, r.Notes)
		}
	}

	// The arrival_rate = 1e6 took 6.9 GB because every client
	// arrived at once: ten million of them, here, in ten seconds. The
	// warning comes before the run, which the test stops there.
	if machineMemory() == 0 {
		t.Fatal("the machine's memory is unknown (/proc/meminfo): the memory warning cannot be checked")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &cancelOn{want: "needs an estimated", cancel: cancel}
	code := run2(ctx, stderr, append(run("--out", t.TempDir()), "--set", "workload.clients=10000000", "--set", "workload.arrival_rate=1e6")...)
	if !strings.Contains(stderr.String(), "stormsim: warning: workload: the simulation needs an estimated ") || code != ExitInterrupted {
		t.Errorf("arrival_rate 1e6 with 10,000,000 clients: exit %d, stderr %q; want the memory warning, then the interruption", code, stderr.String())
	}
}

func run2(ctx context.Context, stderr *cancelOn, args ...string) int {
	var out bytes.Buffer
	return run(ctx, &Env{Stdout: &out, Stderr: stderr}, args)
}

// Issue 15, acceptance 5: an --out that cannot be written fails at once,
// before any simulation or live process starts, and leaves nothing behind.
func TestUnwritableOutFailsFirst(t *testing.T) {
	t.Parallel()
	file := writeGuard(t)
	dir := t.TempDir()
	regular := filepath.Join(dir, "a-file")
	if err := os.WriteFile(regular, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"run, --out a file", []string{"run", "g", "--out", regular}},
		{"run, --out under a file", []string{"run", "g", "--out", filepath.Join(regular, "sub")}},
		// The live engine would start replicas and a redis-server: the
		// probe comes before any of them.
		{"live run, --out a file", []string{"run", "g", "--engine", "live", "--out", regular}},
		{"plan, --out a file", []string{"plan", "g", "--out", regular}},
		{"nightly, --out a file", []string{"nightly", "--out", regular}},
	} {
		var progress bytes.Buffer
		code, stdout, stderr := runArgs(t, context.Background(), append(tc.args, "--file", file)...)
		progress.WriteString(stdout)
		if code != ExitError || !strings.Contains(stderr, "--out: ") || !strings.Contains(stderr, "a-file") {
			t.Errorf("%s: exit %d, stderr %q; want exit 1 naming --out and the file", tc.name, code, stderr)
		}
		if progress.Len() != 0 {
			t.Errorf("%s: printed %q before failing", tc.name, progress.String())
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the probe left %d entries in %s, want the one file", len(entries), dir)
	}
	// A writable --out that does not exist yet is created by the run, not
	// by the probe.
	fresh := filepath.Join(dir, "new", "deeper")
	if err := probeOut(fresh); err != nil {
		t.Errorf("probe of a folder to be created: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); !os.IsNotExist(err) {
		t.Errorf("the probe created %s", filepath.Join(dir, "new"))
	}
}

// validate takes --file like every other command, help spells flags with
// two dashes, and there is a version.
func TestCLIConsistency(t *testing.T) {
	t.Parallel()
	code, out, errs := runArgs(t, context.Background(), "validate", "--file", shipped)
	if code != ExitOK || !strings.Contains(out, "ok ("+strconv.Itoa(shippedCount(t))+" scenarios, ") {
		t.Errorf("validate --file: exit %d, %q %q", code, out, errs)
	}
	code, out, _ = runArgs(t, context.Background(), "validate", "--help")
	if code != ExitOK || !strings.Contains(out, "  --file file") {
		t.Errorf("validate --help lists no --file: %q", out)
	}
	for _, c := range commands {
		_, out, _ := runArgs(t, context.Background(), c.name, "--help")
		if strings.Contains(out, "\n  -") && !strings.Contains(out, "\n  --") {
			t.Errorf("%s --help spells a flag with one dash:\n%s", c.name, out)
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "  -") && !strings.HasPrefix(line, "  --") {
				t.Errorf("%s --help: %q", c.name, line)
			}
		}
	}
	for _, args := range [][]string{{"--version"}, {"version"}} {
		code, out, _ := runArgs(t, context.Background(), args...)
		if code != ExitOK || !strings.HasPrefix(out, "stormsim "+report.Version+" ") {
			t.Errorf("%v: exit %d, %q", args, code, out)
		}
	}
	code, out, _ = runArgs(t, context.Background(), "plan", "--help")
	if !strings.Contains(out, "--size-for") || strings.Contains(out, "--target") {
		t.Errorf("plan --help: --target should be --size-for:\n%s", out)
	}
	_ = code
}

// Issue 15, acceptance 2: the 10,000-level inline tables and dotted header
// that took minutes and gigabytes are refused with exit 2 by the real
// binary, within a small memory. (The time is reported, not judged: speed
// is a benchmark's business; a hang is caught by the guard.)
func TestDeepInputRefusedCheaply(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "stormsim")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/stormsim").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	inputs := map[string]string{
		"inline": "[scenario.s]\nz = " + strings.Repeat("{a = ", 10_000) + "1" + strings.Repeat("}", 10_000) + "\n",
		"header": "[scenario.s]\n[" + strings.Repeat("a.", 9_999) + "a]\nx = 1\n",
	}
	for name, src := range inputs {
		path := filepath.Join(dir, name+".toml")
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"validate", path}, {"run", "s", "--file", path, "--out", dir}} {
			argv, _ := json.Marshal(append([]string{bin}, args...))
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			cmd := exec.CommandContext(ctx, os.Args[0])
			cmd.Env = append(os.Environ(), launchEnv+"="+string(argv))
			start := time.Now()
			out, err := cmd.Output()
			took := time.Since(start)
			cancel()
			var got launched
			if err != nil || json.Unmarshal(out, &got) != nil {
				t.Fatalf("%s %v: the launcher: %v, %q", name, args[0], err, out)
			}
			if got.Exit != ExitUsage {
				t.Errorf("%s %v: exit %d, stderr %q; want exit 2", name, args[0], got.Exit, got.Stderr)
				continue
			}
			if !strings.Contains(got.Stderr, path) || !strings.Contains(got.Stderr, "64 levels") {
				t.Errorf("%s %v: stderr %q does not name the file and the limit", name, args[0], got.Stderr)
			}
			rss := got.MaxKiB
			if rss > 100<<10 {
				t.Errorf("%s %v: peak RSS %d KiB, want under 100 MiB", name, args[0], rss)
			}
			t.Logf("%s %s: exit 2 in %v, peak RSS %d KiB", name, args[0], took.Round(time.Millisecond), rss)
		}
	}
}
