package runner

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stormsim/stormsim/faults"
	"github.com/stormsim/stormsim/live/internal/testbin"
	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
)

// reconciled runs sc live and returns its rows; every reference-replica
// design must reconcile.
func reconciled(t *testing.T, b string, sc *scenario.Scenario, sets, designs []string) []report.Design {
	t.Helper()
	abs, _ := filepath.Abs("../../scenarios.toml")
	out, err := Run(context.Background(), sc, &Options{Bin: b, File: abs, Set: sets, Designs: designs, Parallel: len(designs)})
	if err != nil {
		t.Fatal(err)
	}
	if h := out.Report.Host; h != nil && h.Saturated {
		t.Skipf("the host was saturated, no verdict: %v", h.Reasons)
	}
	return out.Report.Designs
}

// holdsReconciled fails for a row whose reconciliation is not ok, or that
// checked nothing.
func holdsReconciled(t *testing.T, rows []report.Design) {
	t.Helper()
	for _, d := range rows {
		r := d.Reconciliation
		if r == nil || d.EventsProduced == nil {
			t.Errorf("%s: no reconciliation, or no events_produced, in the report", d.Name)
			continue
		}
		if !r.OK || r.EventsReceived == 0 || r.CallsChecked == 0 || r.Unreconciled != 0 {
			t.Errorf("%s: reconciliation %+v", d.Name, *r)
			continue
		}
		t.Logf("%s: ok: %d calls, %d events received, %d produced (counters), %d streams in Redis, %d lost as purged checked, %d purge answers checked, %d calls with unproduced events; sources %v",
			d.Name, r.CallsChecked, r.EventsReceived, *d.EventsProduced, r.StreamsInRedis, r.PurgedChecked, r.PurgeAnswers, r.UnproducedCalls, r.Sources)
	}
}

// TestReconciliation holds live runs of live-smoke, crash and a shortened
// long-outage-eviction to the replicas' own counters and to XINFO STREAM:
// nothing received that was not produced, the counters and the production
// log agree, every result received was sent, unproduced and purged events
// agree with what the servers saw.
func TestReconciliation(t *testing.T) {
	t.Run("live-smoke", func(t *testing.T) {
		sets := slices.Clone(small)
		sc := load(t, "live-smoke", sets)
		holdsReconciled(t, reconciled(t, bin, sc, sets, []string{"nostore", "memory-sticky", "redis-shared"}))
	})
	// crash kills replica 1 at 120 s; here at 8 s, in a 20 s run of short
	// calls. The replicas load the shipped scenario; only the clients' side
	// (arrivals, calls, the fault schedule) is shortened.
	t.Run("crash", func(t *testing.T) {
		sc := load(t, "crash", nil)
		sc.Duration, sc.Drain = 20*time.Second, 5*time.Second
		sc.Workload.Clients, sc.Workload.ArrivalRate = 60, 30
		sc.Workload.EventsMin, sc.Workload.EventsMax = 10, 40
		c := sc.Faults[0].(*faults.Crash)
		c.At, c.RestartAfter = 8*time.Second, 3*time.Second
		rows := reconciled(t, bin, sc, nil, []string{"memory-sticky", "redis-events", "redis-shared"})
		holdsReconciled(t, rows)
		for _, d := range rows {
			if r := d.Reconciliation; r != nil && r.UnproducedCalls == 0 {
				t.Errorf("%s: no call with unproduced events was held to the counters: the crash killed nothing running", d.Name)
			}
		}
	})
	// long-outage-eviction sends half the go-sdk clients away past
	// retention at 150 s for 90 s; here at 8 s for 25 s, with the same
	// Redis cap (100 events) and a memory store small enough to evict.
	t.Run("long-outage-eviction", func(t *testing.T) {
		sets := []string{"store.memory_cap_bytes=150000"}
		sc := load(t, "long-outage-eviction", sets)
		sc.Duration, sc.Drain = 40*time.Second, 5*time.Second
		sc.Workload.Clients, sc.Workload.ArrivalRate = 60, 30
		sc.Workload.EventsMin, sc.Workload.EventsMax = 100, 180
		c := sc.Faults[0].(*faults.ClientDrop)
		c.At, c.Away = 8*time.Second, 25*time.Second
		rows := reconciled(t, bin, sc, sets, []string{"memory-sticky", "redis-events"})
		holdsReconciled(t, rows)
		var purged, answers int64
		for _, d := range rows {
			if d.Reconciliation != nil {
				purged += d.Reconciliation.PurgedChecked
				answers += d.Reconciliation.PurgeAnswers
			}
		}
		if purged == 0 || answers == 0 {
			t.Errorf("%d events lost as purged, %d resumes answered purged: the run did not exercise the purge checks", purged, answers)
		}
	})
}

// TestReconciliationCatchesUnderReport runs a replica built with the
// stormsim_test_underreport tag, which reports one event fewer than it
// produced for the call attempt STORMSIM_UNDERREPORT_TOKEN names: the
// reconciliation must name that attempt.
func TestReconciliationCatchesUnderReport(t *testing.T) {
	t.Parallel() // make test: see the Makefile's note on the live stage
	mutant := filepath.Join(testbin.Dir(), "stormsim-underreport")
	build := exec.Command("go", "build", "-tags", "stormsim_test_underreport", "-o", mutant, "./cmd/stormsim")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the under-reporting replica: %v\n%s", err, out)
	}
	const tok = "c3.k0.a0" // client 3's first call: it runs in every design
	// The replicas read the token from their environment: a script that
	// sets it and execs the mutant (the same process, so the same pid) is
	// their binary, and this test's own environment stays as it is.
	wrapper := filepath.Join(t.TempDir(), "stormsim-underreport.sh")
	script := "#!/bin/sh\nSTORMSIM_UNDERREPORT_TOKEN=" + tok + " exec '" + mutant + `' "$@"` + "\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	sets := slices.Clone(small)
	sc := load(t, "live-smoke", sets)
	rows := reconciled(t, wrapper, sc, sets, []string{"memory-sticky"})
	r := rows[0].Reconciliation
	if r == nil {
		t.Fatal("no reconciliation in the report")
	}
	i := slices.IndexFunc(r.Mismatches, func(m report.Mismatch) bool { return m.Call == tok })
	if r.OK || i < 0 {
		t.Fatalf("the replica under-reported %s by one event and the reconciliation did not name it: %+v", tok, *r)
	}
	for _, m := range r.Mismatches {
		if !strings.HasPrefix(m.Call, "c3.k0") {
			t.Errorf("a mismatch of a call the replica reported truly: %+v", m)
		}
	}
	t.Logf("caught: %+v", r.Mismatches[i])
}
