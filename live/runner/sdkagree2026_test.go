package runner

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/agree"
	"github.com/stormsim/stormsim/report"
)

// era2026AgreeScenario is era-2026 sized for the live engine, as live-smoke
// sizes a storm: 2026-07-28, a graceful rolling restart whose 1 s drain
// limit cuts the streams still open, 150 clients with 2 to 6 s calls and
// random drops every 8 s, so that streams break and calls are re-issued
// (the reference clients) or fail (go-sdk's).
const era2026AgreeScenario = `
[scenario.era-2026-agree]
description = "era-2026 sized for the live engine: a graceful rolling restart (1 s drain limit) under 2026-07-28."
era = "2026-07-28"
duration = "24s"
drain = "4s"
replicas = 3
[scenario.era-2026-agree.workload]
clients = 150
arrival_rate = 100
think = "1s"
events_min = 10
events_max = 30
drop_every = "8s"
[scenario.era-2026-agree.replica]
drain_limit = "1s"
[[scenario.era-2026-agree.faults]]
kind = "rolling-restart"
at = "6s"
interval = "5s"
downtime = "2s"
graceful = true
`

// TestGoSDK2026Agree runs --engine both on era-2026-agree with the
// reference flavour (stateless: the reference replica, native clients) and
// the go-sdk flavour (sdk-stateless-sdk-clients: the SDK's stateless server
// and go-sdk clients negotiating 2026-07-28; stateless-sdk-clients: go-sdk
// clients against the reference replica). No agreement row may disagree.
// The live run alone shows the SDK's own behaviour, whatever the host's
// load: go-sdk clients re-issue nothing and fail the calls whose streams
// broke, where the reference clients re-issue them. A saturated host gives
// no verdict (exit 97), as stormsim run says, and the test skips with the
// figures.
func TestGoSDK2026Agree(t *testing.T) {
	base, err := os.ReadFile("../../scenarios.toml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "scenarios.toml")
	if err := os.WriteFile(file, append(base, era2026AgreeScenario...), 0o644); err != nil {
		t.Fatal(err)
	}
	designs := []string{"stateless", "sdk-stateless-sdk-clients", "stateless-sdk-clients"}
	list, _ := json.Marshal(designs)
	msg, err := exec.Command(bin, "run", "era-2026-agree", "--file", file, "--engine", "both", "--parallel", "3", "--no-charts",
		"--quiet", "--no-thresholds", "--out", dir, "--set", "designs="+string(list)).CombinedOutput()
	var ee *exec.ExitError
	saturated := errors.As(err, &ee) && ee.ExitCode() == 97
	latest := filepath.Join(dir, "era-2026-agree", "latest")
	live := readReport(t, filepath.Join(latest, "live", "report.json"), msg)
	for _, d := range live.Designs {
		tt := d.Totals
		t.Logf("live %s: %d calls, %d failed, %d re-issued, %d drops", d.Name, tt.Calls, tt.CallsFailed, tt.CallsReissued, tt.Drops)
		if d.Era != "2026-07-28" || tt.Drops < 20 {
			t.Errorf("%s: era %q, %d drops: the run is not the revision's storm", d.Name, d.Era, tt.Drops)
		}
		sdkClients := strings.HasSuffix(d.Name, "-sdk-clients")
		if sdkClients && (tt.CallsReissued != 0 || tt.CallsFailed == 0) {
			t.Errorf("%s: go-sdk clients re-issued %d calls and failed %d; the SDK re-issues none and fails each broken call", d.Name, tt.CallsReissued, tt.CallsFailed)
		}
		if !sdkClients && (tt.CallsReissued == 0 || tt.CallsFailed != 0) {
			t.Errorf("%s: the reference clients re-issued %d calls and failed %d; they re-issue a broken call", d.Name, tt.CallsReissued, tt.CallsFailed)
		}
	}
	data, rerr := os.ReadFile(filepath.Join(latest, "agreement.json"))
	if rerr != nil {
		t.Fatalf("%v; the run: %v\n%s", rerr, err, msg)
	}
	var a agree.Agreement
	if err := json.Unmarshal(data, &a); err != nil {
		t.Fatal(err)
	}
	rows := map[string]int{}
	var disagree []string
	for _, r := range a.Rows {
		rows[r.Design]++
		t.Logf("%s/%s: sim %s, live %s, n %d, %s", r.Design, r.Metric, fmtp(r.Sim), fmtp(r.Live), r.N, r.Verdict)
		if r.Verdict == agree.Disagree {
			disagree = append(disagree, r.Design+"/"+r.Metric)
		}
	}
	if saturated {
		t.Skipf("no verdict: the host was saturated (rows that would disagree: %v):\n%s", disagree, msg)
	}
	for _, r := range disagree {
		t.Errorf("%s disagrees", r)
	}
	for _, d := range designs {
		if rows[d] < 6 {
			t.Errorf("%s: %d agreement rows", d, rows[d])
		}
	}
	if err != nil && !strings.Contains(string(msg), "disagree") {
		t.Errorf("the run: %v\n%s", err, msg)
	}
}

// readReport reads a report the run wrote, or fails with the run's output.
func readReport(t *testing.T, path string, msg []byte) *report.Report {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v; the run said:\n%s", err, msg)
	}
	var r report.Report
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &r
}
