package runner

import (
	"context"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stormsim/stormsim/agree"
	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/faults"
	"github.com/stormsim/stormsim/history"
	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
	"github.com/stormsim/stormsim/sim"
)

// TestGoSDKFlavours runs live-smoke with the official go-sdk on either side:
//   - sdk-memory-sticky: the SDK's StreamableHTTPHandler and
//     MemoryEventStore as the replicas, native clients;
//   - memory-sticky: the reference replica, the same clients;
//   - memory-sticky-sdk-clients: the reference replica, every client the
//     SDK's StreamableClientTransport.
//
// The go-sdk server 404s every session of the hard-killed replica, as the
// reference memory design does. The go-sdk clients resume their own drops
// with Last-Event-ID and lose nothing, and after the hard restart they fail
// with the SDK's session-missing error, counted as failed calls.
func TestGoSDKFlavours(t *testing.T) {
	sets := []string{`designs=["sdk-memory-sticky","memory-sticky","memory-sticky-sdk-clients"]`}
	sc := load(t, "live-smoke", sets)
	abs, _ := filepath.Abs("../../scenarios.toml")
	out, err := Run(context.Background(), sc, &Options{Bin: bin, File: abs, Parallel: 3, Set: sets})
	if err != nil {
		t.Fatal(err)
	}
	steps := faults.Timeline(sc.Faults, sc.FaultContext())
	kill := func(h *history.History) (int, int64) {
		for _, a := range h.Faults {
			if s := steps[a.Step]; s.Kind == faults.StepStop && !s.Graceful {
				return a.Replica, a.At
			}
		}
		t.Fatal("no hard restart in the applied faults")
		return 0, 0
	}
	rows := map[string]int{}
	for i, d := range out.Report.Designs {
		rows[d.Name] = i
		tt := d.Totals
		if tt.EventsExpected != tt.EventsDelivered+tt.EventsLost+tt.EventsPending {
			t.Errorf("%s: conservation: %+v", d.Name, tt)
		}
	}

	t.Run("ServerHardRestart404", func(t *testing.T) {
		for _, name := range []string{"sdk-memory-sticky", "memory-sticky"} {
			h := out.Histories[name]
			slot, at := kill(h)
			n, bad := sessionsAfterKill(h, slot, at)
			if n < 5 {
				t.Errorf("%s: %d sessions of replica %d made a request after the kill, want at least 5", name, n, slot)
			}
			for _, q := range bad {
				t.Errorf("%s: session of killed replica %d: next request %v got %d, want 404", name, slot, q.Kind, q.Status)
			}
		}
		sdk, ref := out.Report.Designs[rows["sdk-memory-sticky"]], out.Report.Designs[rows["memory-sticky"]]
		if d := math.Abs(sdk.Totals.Rate404 - ref.Totals.Rate404); d > 0.05 {
			t.Errorf("rate_404: go-sdk server %.3f, reference %.3f", sdk.Totals.Rate404, ref.Totals.Rate404)
		}
		if sdk.Server != "go-sdk" || len(sdk.Notes) == 0 || ref.Server != "" {
			t.Errorf("server flavour in the report: %q %v, reference %q", sdk.Server, sdk.Notes, ref.Server)
		}
		// The SDK's MemoryEventStore does not report its size: n/a, not 0.
		if !sdk.IsUnknown("store_peak_bytes") || ref.IsUnknown("store_peak_bytes") || ref.Totals.StorePeakBytes == 0 {
			t.Errorf("store size: go-sdk server unknown %v, reference unknown %v with peak %d", sdk.Unknown, ref.Unknown, ref.Totals.StorePeakBytes)
		}
	})

	t.Run("ClientsResumeTheirDrops", func(t *testing.T) {
		h := out.Histories["memory-sticky-sdk-clients"]
		if n := memoryStickyDrops(t, h, steps); n < 10 {
			t.Errorf("%d client-side drops checked, want at least 10", n)
		}
		resumed := 0
		for _, q := range h.Requests {
			if q.Kind == clients.ReqResume && q.Status == 200 {
				resumed++
			}
		}
		d := out.Report.Designs[rows["memory-sticky-sdk-clients"]]
		if resumed == 0 || d.Totals.Resumes != int64(resumed) || d.Totals.EventsReplayed == 0 {
			t.Errorf("%d resumes in the history, %d in the report, %d replayed", resumed, d.Totals.Resumes, d.Totals.EventsReplayed)
		}
	})

	t.Run("ModelAgrees", func(t *testing.T) { testModelAgrees(t, sc, out.Report) })

	t.Run("ClientsFailOnSessionMissing", func(t *testing.T) {
		h := out.Histories["memory-sticky-sdk-clients"]
		slot, at := kill(h)
		// Each session of the killed replica whose first request after the
		// kill got 404: its call must fail with the SDK's session-missing
		// error.
		next := map[string]history.Call{}
		for s, q := range firstAfterKill(h, slot, at) {
			if q.Status != 404 || q.Seq < 0 {
				continue
			}
			for _, c := range h.Calls {
				if c.Client == q.Client && c.Seq == q.Seq {
					next[s] = c
				}
			}
		}
		if len(next) < 5 {
			t.Fatalf("%d sessions of replica %d got a 404 in a call after the kill, want at least 5", len(next), slot)
		}
		failed := int64(0)
		for _, c := range h.Calls {
			if c.Outcome == clients.Failed {
				failed++
			}
		}
		for s, c := range next {
			if c.Outcome != clients.Failed || !strings.Contains(c.Err, mcp.ErrSessionMissing.Error()) {
				t.Errorf("session %s: call %d/%d ended %v (%q), want failed with %q", s, c.Client, c.Seq, c.Outcome, c.Err, mcp.ErrSessionMissing)
			}
		}
		if got := out.Report.Designs[rows["memory-sticky-sdk-clients"]].Totals.CallsFailed; got != failed || got < int64(len(next)) {
			t.Errorf("report counts %d failed calls; the history has %d, of which %d after the kill", got, failed, len(next))
		}
	})
}

// TestGoSDKFlavours' run, compared with the simulator on the same scenario
// and seed: the model's go-sdk profile must agree with the real go-sdk
// clients, and the reference memory design with the go-sdk server, within
// the default agreement tolerances.
func testModelAgrees(t *testing.T, sc *scenario.Scenario, live *report.Report) {
	simOut, err := sim.Run(context.Background(), sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A live run that fell behind its own schedule says nothing about the
	// model (docs/live.md, "A saturated host"): like stormsim run, the test
	// gives no verdict then, and says why. The other subtests judge the run
	// all the same; make agree and make test-long judge the model on a
	// quiet machine.
	if h := live.Host; h != nil && h.Saturated {
		t.Skipf("no verdict: the live run's host was saturated (%s); the model is judged on a quiet machine by make agree", strings.Join(h.Reasons, "; "))
	}
	tol := agree.TolerancesOf(sc)
	// Two known gaps, measured, not hidden (docs/model.md, "The model
	// against the official SDK"): the go-sdk clients lose 20 to 30% more
	// events than the model says (0.113 and 0.122 live against 0.094), and
	// one small run's store peak moves with the machine's load (0.72× the
	// model's under make test, within 1.25× on a quiet machine). This run
	// holds them to those widths; make agree keeps the defaults.
	tol["lost_fraction_rel"] = 0.4
	tol["store_peak_factor"] = 1.5
	a := agree.Compare(simOut.Report, live, tol)
	rows := 0
	for _, r := range a.Rows {
		if r.Design != "memory-sticky-sdk-clients" && r.Design != "sdk-memory-sticky" {
			continue
		}
		rows++
		t.Logf("%s/%s: sim %s, live %s, n %d, %s", r.Design, r.Metric, fmtp(r.Sim), fmtp(r.Live), r.N, r.Verdict)
		if r.Verdict == agree.Disagree {
			t.Errorf("%s/%s: sim %s, live %s, tolerance %g (n %d)", r.Design, r.Metric, fmtp(r.Sim), fmtp(r.Live), r.Tolerance, r.N)
		}
	}
	if rows < 10 {
		t.Errorf("%d agreement rows for the go-sdk designs", rows)
	}
}

func fmtp(v *float64) string {
	if v == nil {
		return "n/a"
	}
	return strconv.FormatFloat(*v, 'g', 4, 64)
}
