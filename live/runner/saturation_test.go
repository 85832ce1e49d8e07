package runner

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/live/child"
	"github.com/stormsim/stormsim/report"
)

// tinyScenario is a small agreement for the saturation tests: two designs
// for 6 s, random drops and one client-drop, so client timers, drops, a
// fault step and producers are all measured.
const tinyScenario = `[scenario.tiny]
description = "A small agreement for the saturation tests: 2 replicas, 40 clients, random drops and one client-drop."
duration = "6s"
drain = "3s"
replicas = 2
designs = ["memory-sticky", "redis-shared"]
[scenario.tiny.workload]
clients = 40
arrival_rate = 40
think = "500ms"
events_min = 5
events_max = 15
drop_every = "2s"
[[scenario.tiny.faults]]
kind = "client-drop"
at = "3s"
fraction = 0.3
away = "500ms"
`

// runTiny runs the tiny agreement (--engine both unless args say
// otherwise) with env added, and returns its exit code, its output and the
// live report.
func runTiny(t *testing.T, env []string, args ...string) (int, string, *report.Report) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "scenarios.toml")
	if err := os.WriteFile(file, []byte(tinyScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	argv := append([]string{"run", "tiny", "--file", file, "--parallel", "2", "--no-charts", "--quiet", "--out", out}, args...)
	if !strings.Contains(strings.Join(args, " "), "--engine") {
		argv = append(argv, "--engine", "both")
	}
	cmd := exec.Command(bin, argv...)
	cmd.Env = append(os.Environ(), env...)
	msg, err := cmd.CombinedOutput()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	rp := filepath.Join(out, "tiny", "latest", "live", "report.json")
	if _, err := os.Stat(rp); err != nil {
		rp = filepath.Join(out, "tiny", "latest", "report.json") // --engine live
	}
	r, err := report.Read(rp)
	if err != nil {
		t.Fatalf("exit %d, no live report: %v\n%s", code, err, msg)
	}
	return code, string(msg), r
}

// TestSaturationInjected: lateness injected into every sample the live
// engine measures makes the run host_saturated on any machine: exit 97,
// the figures and the verdict in report.json, the banner in summary.md;
// --no-saturation-check gives the run its verdict anyway.
func TestSaturationInjected(t *testing.T) {
	code, msg, r := runTiny(t, []string{"STORMSIM_INJECT_LATENESS=2s"})
	if code != 97 {
		t.Fatalf("exit %d, want 97:\n%s", code, msg)
	}
	h := r.Host
	if h == nil || !h.Saturated || h.Verdict != report.VerdictSaturated || h.InjectedLatenessMS != 2000 {
		t.Fatalf("host block: %+v", h)
	}
	for _, l := range []report.Lateness{h.TimerLatenessMS, h.ProducerLatenessMS} {
		if l.Count == 0 || l.P50 < 2000 || l.P99 < l.P50 || l.Max < l.P99 {
			t.Errorf("lateness figures: %+v", l)
		}
	}
	if h.SchedLatencyMS.Count == 0 || h.Cores != runtime.NumCPU() || h.LoadgenCPUCores <= 0 || h.BoundsMS.TimerP99 <= 0 {
		t.Errorf("host block: %+v", h)
	}
	if len(h.Reasons) < 2 || !strings.Contains(msg, "host saturated") || !strings.Contains(msg, "fewer clients") || strings.Contains(msg, "agreement:") {
		t.Errorf("reasons %q; output:\n%s", h.Reasons, msg)
	}
	data, err := json.Marshal(r)
	if err != nil || !strings.Contains(string(data), `"host_saturated":true`) {
		t.Errorf("report.json: %v %s", err, data)
	}
	if !strings.HasPrefix(string(r.Markdown()), "# tiny\n\n> **HOST SATURATED") {
		t.Errorf("summary.md does not open with the saturation:\n%s", r.Markdown())
	}

	code, msg, r = runTiny(t, []string{"STORMSIM_INJECT_LATENESS=2s"}, "--engine", "live", "--no-saturation-check", "--no-thresholds")
	if code != 0 || r.Host == nil || !r.Host.Saturated {
		t.Errorf("--no-saturation-check: exit %d, host %+v:\n%s", code, r.Host, msg)
	}
}

// TestSaturationQuiet: the same small agreement on a machine with nothing
// else to do is not saturated and exits 0 (make test-long: it runs alone).
func TestSaturationQuiet(t *testing.T) {
	code, msg, r := runTiny(t, nil)
	if code != 0 || r.Host == nil || r.Host.Saturated || r.Host.InjectedLatenessMS != 0 {
		t.Errorf("exit %d, want 0; host %+v\n%s", code, r.Host, msg)
	}
	t.Logf("host: timers %+v, producers %+v, scheduler %+v, load average %g", r.Host.TimerLatenessMS, r.Host.ProducerLatenessMS, r.Host.SchedLatencyMS, r.Host.LoadAverage)
}

// TestSaturationCPUBurn: the same small agreement while processes of the
// test's own burn every core falls behind its schedule and exits 97 (make
// test-long: it runs alone). 128 busy loops per core: with fewer, the
// run's light processes only wait their turn (32 per core left an idle
// machine at 131 ms, under the bounds); with these it gets less CPU than
// it needs.
func TestSaturationCPUBurn(t *testing.T) {
	var burners []*exec.Cmd
	defer func() {
		for _, c := range burners {
			c.Process.Kill()
			c.Wait()
		}
	}()
	for range 128 * runtime.NumCPU() {
		c := exec.Command("sh", "-c", "while :; do :; done")
		if err := child.Start(c); err != nil {
			t.Fatal(err)
		}
		burners = append(burners, c)
	}
	code, msg, r := runTiny(t, nil)
	if code != 97 || r.Host == nil || !r.Host.Saturated || r.Host.InjectedLatenessMS != 0 {
		t.Errorf("exit %d, want 97; host %+v\n%s", code, r.Host, msg)
	}
	if r.Host != nil {
		t.Logf("host: timers %+v, producers %+v, scheduler %+v, load average %g", r.Host.TimerLatenessMS, r.Host.ProducerLatenessMS, r.Host.SchedLatencyMS, r.Host.LoadAverage)
	}
}
