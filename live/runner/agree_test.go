package runner

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stormsim/stormsim/agree"
)

// TestAgreementBites is the negative control of --engine both: the
// simulator is given the wrong client profile (go-sdk, which does not
// re-initialise after a 404) while the live clients stay compliant, and the
// run must exit 98 on the rows that depend on the profile (lost fraction and
// re-issues), and not on replay latency, which does not.
func TestAgreementBites(t *testing.T) {
	out := t.TempDir()
	abs, _ := filepath.Abs("../../scenarios.toml")
	cmd := exec.Command(bin, "run", "live-smoke", "--file", abs, "--engine", "both", "--designs", "memory-sticky",
		"--sim-set", "client.profile=go-sdk", "--no-charts", "--quiet", "--out", out)
	msg, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != agree.ExitCode {
		t.Fatalf("exit %v, want %d:\n%s", err, agree.ExitCode, msg)
	}
	data, err := os.ReadFile(filepath.Join(out, "live-smoke", "latest", "agreement.json"))
	if err != nil {
		t.Fatal(err)
	}
	var a agree.Agreement
	if err := json.Unmarshal(data, &a); err != nil {
		t.Fatal(err)
	}
	failed := map[string]bool{}
	for _, r := range a.Rows {
		if r.Verdict == agree.Disagree {
			failed[r.Metric] = true
		}
	}
	if !failed["lost_fraction"] || !failed["reissued_per_100"] {
		t.Errorf("the profile-dependent rows did not fail: %v\n%s", failed, data)
	}
	for _, m := range []string{"replay_p50_ms", "replay_p90_ms"} {
		if failed[m] {
			t.Errorf("row %s failed, though replay latency does not depend on the profile\n%s", m, data)
		}
	}
	for _, f := range []string{"sim/report.json", "live/report.json", "live/results.bin", "agreement.md"} {
		if _, err := os.Stat(filepath.Join(out, "live-smoke", "latest", f)); err != nil {
			t.Error(err)
		}
	}
}
