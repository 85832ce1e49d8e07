package runner

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stormsim/stormsim/history"
	"github.com/stormsim/stormsim/report"
)

// interruptRun runs the built stormsim, as a child process, against
// testdata/hostile's ok mode into out, with env added, sends it SIGINT 2 s
// in (the run lasts 4 s and a 3 s drain), and returns its exit code, how
// long it took to exit after the signal, and its stderr.
func interruptRun(t *testing.T, out string, env ...string) (int, time.Duration, string) {
	endpoint, kill, err := startHostile(hostileBin(t), "ok", "http://127.0.0.2:9/mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer kill()
	cmd := exec.Command(bin, "run", "hostile", "--file", "testdata/hostile.toml", "--engine", "live", "--out", out, "--no-charts",
		"--no-saturation-check", "--set", "server.url=\""+endpoint+"\"")
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	sent := time.Now()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	took := time.Since(sent)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), took, stderr.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, took, stderr.String()
}

// TestInterruptedRunKept is issue 34's Build 5: SIGINT while a live run's
// clients run stops the load, and the histories recorded until then are
// judged and written, marked interrupted, within 10 s: exit 130, a run
// folder whose report.json parses and says how far the run got, whose
// summary says it was interrupted, and whose history says when.
func TestInterruptedRunKept(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	code, took, stderr := interruptRun(t, out)
	if code != 130 || !strings.Contains(stderr, "marked interrupted") {
		t.Fatalf("exit %d: want 130, the run written marked interrupted\n%s", code, stderr)
	}
	if took > 10*time.Second {
		t.Errorf("exited %v after SIGINT: want within 10 s", took)
	}
	dir := filepath.Join(out, "hostile", "latest")
	rep, err := report.Read(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	in := rep.Interrupted
	if in == nil || in.Design != "memory-sticky" || in.AtS <= 0 || in.AtS >= 7 || len(rep.Designs) != 1 || rep.Designs[0].Totals.Calls == 0 {
		t.Fatalf("report.json: interrupted %+v, %d designs: want memory-sticky interrupted within its 7 s, with its calls", in, len(rep.Designs))
	}
	if md, err := os.ReadFile(filepath.Join(dir, "summary.md")); err != nil || !strings.Contains(string(md), "INTERRUPTED") {
		t.Errorf("summary.md does not say the run was interrupted (%v)", err)
	}
	f, err := os.Open(filepath.Join(dir, history.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	hs, err := history.ReadHistories(f)
	if err != nil {
		t.Fatal(err)
	}
	if h := hs["memory-sticky"]; h == nil || h.Interrupted <= 0 || time.Duration(h.Interrupted).Seconds() != in.AtS {
		t.Errorf("the history is not marked interrupted at %g s", in.AtS)
	}
	t.Logf("exit %d, %v after SIGINT, interrupted at %.2f s, %d calls", code, took.Round(time.Millisecond), in.AtS, rep.Designs[0].Totals.Calls)
}

// TestInterruptedRunNotKept: when the histories cannot be kept within the
// bound (STORMSIM_INTERRUPT_WITHIN, here 1 ms), the run writes nothing,
// not even a hidden partial folder, and says so and why: exit 130.
func TestInterruptedRunNotKept(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	code, took, stderr := interruptRun(t, out, "STORMSIM_INTERRUPT_WITHIN=1ms")
	if code != 130 || !strings.Contains(stderr, "no results were written") || !strings.Contains(stderr, "took more than 1ms") {
		t.Fatalf("exit %d: want 130, nothing written because keeping the run took more than 1ms\n%s", code, stderr)
	}
	if entries, err := os.ReadDir(filepath.Join(out, "hostile")); err == nil && len(entries) > 0 {
		t.Errorf("%d entries in the results folder (%s, …): want none", len(entries), entries[0].Name())
	}
	t.Logf("exit %d, %v after SIGINT: %s", code, took.Round(time.Millisecond), strings.TrimSpace(stderr))
}

// TestInterruptedTwice: a second SIGINT while the first's histories are
// being kept ends the process at once, by the signal's default action,
// with no run folder written. The run is against testdata/hostile's
// endless mode with the events-per-call limit out of the way (as in
// TestSignalWhileJudging), so that its history takes a while to judge:
// the first SIGINT comes 2 s in, the second once the run says it is
// judging.
func TestInterruptedTwice(t *testing.T) {
	t.Parallel()
	cmd, pipe, out := startEndlessRun(t)
	time.AfterFunc(2*time.Second, func() { cmd.Process.Signal(syscall.SIGINT) }) //nolint:errcheck // Wait says how it ended
	var stderr strings.Builder
	var second time.Time
	sc := bufio.NewScanner(pipe)
	for sc.Scan() {
		stderr.WriteString(sc.Text() + "\n")
		if second.IsZero() && strings.Contains(sc.Text(), ": judging ") {
			second = time.Now()
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
		}
	}
	err := cmd.Wait()
	took := time.Since(second)
	var ee *exec.ExitError
	if second.IsZero() || !errors.As(err, &ee) || ee.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGINT {
		t.Fatalf("want the process killed by the second SIGINT, sent once it judged: %v\n%s", err, stderr.String())
	}
	if took > time.Second {
		t.Errorf("exited %v after the second SIGINT: want at once", took)
	}
	entries, _ := os.ReadDir(filepath.Join(out, "hostile"))
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") { // a folder being written is hidden
			t.Errorf("results folder holds %s: want no run written", e.Name())
		}
	}
	t.Logf("killed by SIGINT %v after the second one, %d hidden entries", took.Round(time.Millisecond), len(entries))
}
