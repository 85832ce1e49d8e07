package runner

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSignalWhileJudging is acceptance 5 of issue 34: SIGTERM while a
// live run's history is judged stops the judging within a second. The
// built stormsim, as a child process, runs against testdata/hostile's
// endless mode with the events-per-call limit out of the way, so that its
// 20 calls are sent hundreds of thousands of events: a history that takes
// seconds to judge. When the child says it is judging, the test waits
// 200 ms, sends SIGTERM and times the exit: 130, within a second, the
// message naming the judging as where the run stopped, and no run folder
// written.
func TestSignalWhileJudging(t *testing.T) {
	cmd, pipe, out := startEndlessRun(t)
	var stderr strings.Builder
	var sent time.Time
	sc := bufio.NewScanner(pipe)
	for sc.Scan() {
		stderr.WriteString(sc.Text() + "\n")
		if sent.IsZero() && strings.Contains(sc.Text(), ": judging ") {
			time.Sleep(200 * time.Millisecond)
			sent = time.Now()
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
		}
	}
	err := cmd.Wait()
	took := time.Since(sent)
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	t.Logf("exit %d, %v after SIGTERM\n%s", code, took.Round(time.Millisecond), stderr.String())
	if sent.IsZero() {
		t.Fatalf("the run never said it was judging:\n%s", stderr.String())
	}
	if code != 130 || !strings.Contains(stderr.String(), "judging its history") || !strings.Contains(stderr.String(), "stopped: context canceled") {
		t.Fatalf("exit %d: want 130, interrupted while judging", code)
	}
	if took > time.Second {
		t.Errorf("the judging stopped %v after SIGTERM: want within 1 s", took)
	}
	if entries, err := os.ReadDir(filepath.Join(out, "hostile")); err == nil && len(entries) > 0 {
		t.Errorf("%d entries in the results folder (%s, …): want no run written", len(entries), entries[0].Name())
	}
}

// startEndlessRun starts stormsim run on testdata/hostile's endless mode,
// whose calls never end (so its history takes a while to judge), with its
// stderr piped: the signal tests' run.
func startEndlessRun(t *testing.T) (cmd *exec.Cmd, stderr io.ReadCloser, out string) {
	t.Helper()
	endpoint, kill, err := startHostile(hostileBin(t), "endless", "http://127.0.0.2:9/mcp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kill)
	out = t.TempDir()
	cmd = exec.Command(bin, "run", "hostile", "--file", "testdata/hostile.toml", "--engine", "live", "--out", out, "--no-charts",
		"--no-saturation-check", "--set", "server.url=\""+endpoint+"\"", "--set", "limits.events_per_call=10000000", "--set", "client.call_timeout=30s")
	stderr, err = cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, stderr, out
}
