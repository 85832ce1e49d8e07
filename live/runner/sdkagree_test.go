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
)

// sdkAgreeScenario is a client-drop scenario for TestSDKClientsAgree: half
// the clients with an open stream drop at 30 s for 2 s, with random drops
// every 3 s for the sample.
const sdkAgreeScenario = `
[scenario.sdk-agree-client-drop]
description = "Half the clients with an open stream drop at 30 s and stay away 2 s."
duration = "60s"
drain = "5s"
[scenario.sdk-agree-client-drop.workload]
clients = 200
arrival_rate = 50
think = "1s"
events_min = 10
events_max = 30
drop_every = "3s"
[[scenario.sdk-agree-client-drop.faults]]
kind = "client-drop"
at = "30s"
fraction = 0.5
away = "2s"
`

// TestSDKClientsAgree runs --engine both with the official SDKs' clients in
// the live engine and their profiles in the simulator: go-sdk clients
// (memory-sticky-sdk-clients) and ts-sdk clients (memory-sticky-ts-clients),
// on crash (shortened as make agree shortens it) and on a client drop. No
// agreement row may disagree. A saturated host gives no verdict (exit 97),
// as stormsim run says, and the test skips with the figures.
func TestSDKClientsAgree(t *testing.T) {
	needTS(t)
	base, err := os.ReadFile("../../scenarios.toml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "scenarios.toml")
	if err := os.WriteFile(file, append(base, sdkAgreeScenario...), 0o644); err != nil {
		t.Fatal(err)
	}
	designs := `designs=["memory-sticky-sdk-clients","memory-sticky-ts-clients"]`
	runs := map[string][]string{
		"crash": {"--set", "workload.think=1s", "--set", "workload.events_min=10", "--set", "workload.events_max=30",
			"--set", "workload.drop_every=1500ms", "--set", "duration=135s", "--set", "drain=5s",
			"--set", "workload.clients=200", "--set", "workload.arrival_rate=50"},
		"sdk-agree-client-drop": nil,
	}
	for sc, sets := range runs {
		t.Run(sc, func(t *testing.T) {
			args := append([]string{"run", sc, "--file", file, "--engine", "both", "--parallel", "2", "--no-charts", "--quiet",
				"--no-thresholds", "--out", dir, "--set", designs}, sets...)
			msg, err := exec.Command(bin, args...).CombinedOutput()
			var ee *exec.ExitError
			if errors.As(err, &ee) && ee.ExitCode() == 97 {
				t.Skipf("no verdict: the host was saturated:\n%s", msg)
			}
			data, rerr := os.ReadFile(filepath.Join(dir, sc, "latest", "agreement.json"))
			if rerr != nil {
				t.Fatalf("%v; the run: %v\n%s", rerr, err, msg)
			}
			var a agree.Agreement
			if err := json.Unmarshal(data, &a); err != nil {
				t.Fatal(err)
			}
			rows := map[string]int{}
			for _, r := range a.Rows {
				rows[r.Design]++
				t.Logf("%s/%s: sim %s, live %s, n %d, %s", r.Design, r.Metric, fmtp(r.Sim), fmtp(r.Live), r.N, r.Verdict)
				if r.Verdict == agree.Disagree {
					t.Errorf("%s/%s disagrees: sim %s, live %s, tolerance %g", r.Design, r.Metric, fmtp(r.Sim), fmtp(r.Live), r.Tolerance)
				}
			}
			for _, d := range []string{"memory-sticky-sdk-clients", "memory-sticky-ts-clients"} {
				if rows[d] < 6 {
					t.Errorf("%s: %d agreement rows", d, rows[d])
				}
			}
			if err != nil && !strings.Contains(string(msg), "disagree") {
				t.Errorf("the run: %v\n%s", err, msg)
			}
		})
	}
}
