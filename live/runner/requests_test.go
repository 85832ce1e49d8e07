package runner

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
)

// TestLiveRequests runs the request workload live, for real: a server of
// ten 100 ms workers on loopback, clients that abandon at 1 s and retry
// three times, at 1.5 times the tipping load, and an 8 s outage
// (testdata/requests.toml, a short metastable-live). The unmitigated
// design stays stuck after the outage, its workers spending most of their
// time on requests whose clients had left; the design that sheds old
// requests recovers. A server that dropped abandoned requests instead of
// serving them would waste nothing and recover: it fails here.
func TestLiveRequests(t *testing.T) {
	t.Parallel()
	f, err := scenario.Load("testdata/requests.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := f.Scenario("metastable-short")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := Run(ctx, sc, &Options{Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	r := out.Report
	skipSaturated(t, r)
	if r.Engine != "live" || len(r.Designs) != 2 {
		t.Fatalf("engine %q, %d designs", r.Engine, len(r.Designs))
	}
	for _, d := range r.Designs {
		q := d.Requests
		if q == nil {
			t.Fatalf("%s: no requests block", d.Name)
		}
		if q.Requests < 1000 || q.Requests != q.Completed+q.Failed+q.Pending {
			t.Errorf("%s: requests %d != completed %d + failed %d + pending %d", d.Name, q.Requests, q.Completed, q.Failed, q.Pending)
		}
		var good int64
		for _, g := range d.Series.Goodput {
			good += g
		}
		if good != q.Completed {
			t.Errorf("%s: the goodput series sums to %d, completed %d", d.Name, good, q.Completed)
		}
	}
	plain, shed := r.Design("req-plain"), r.Design("req-shed")
	g := goodputOf(t, plain)
	if g.RecoveredS != nil || g.AfterPeakRatio > 0.1 {
		t.Errorf("req-plain recovered (%s s, after-peak ratio %v): want stuck below 10%% of its pre-outage goodput", seconds(g.RecoveredS), g.AfterPeakRatio)
	}
	if w := plain.Requests.WastedFraction(); w < 0.5 {
		t.Errorf("req-plain: wasted_work_fraction %.3f, want ≥ 0.5: the abandoned requests are served as wasted work", w)
	}
	if plain.Requests.Timeouts == 0 || plain.Requests.Retries == 0 {
		t.Errorf("req-plain: %d timeouts, %d retries: the clients did not abandon and retry", plain.Requests.Timeouts, plain.Requests.Retries)
	}
	if g := goodputOf(t, shed); g.RecoveredS == nil || *g.RecoveredS > 10 {
		t.Errorf("req-shed: recovered after %s s, want within 10 s of the outage's end", seconds(g.RecoveredS))
	}
	if shed.Requests.Shed == 0 || shed.Requests.WastedFraction() > 0.1 {
		t.Errorf("req-shed: shed %d, wasted_work_fraction %.3f: want requests shed and little waste", shed.Requests.Shed, shed.Requests.WastedFraction())
	}
}

// goodputOf is d's goodput recovery after the scenario's one fault.
func goodputOf(t *testing.T, d *report.Design) *report.GoodputRecovery {
	t.Helper()
	if len(d.RecoveryAfterFaultS) != 1 || d.RecoveryAfterFaultS[0].Goodput == nil {
		t.Fatalf("%s: recovery %+v: want the goodput after one fault", d.Name, d.RecoveryAfterFaultS)
	}
	return d.RecoveryAfterFaultS[0].Goodput
}

// seconds prints a recovery: "never" for nil.
func seconds(v *float64) string {
	if v == nil {
		return "never"
	}
	return strconv.FormatFloat(*v, 'f', -1, 64)
}

// The request workload runs on stormsim's own request server only: not in
// shards, not against a stormsim up; and its closed-loop clients run in
// the simulator only. Each is refused before anything starts, naming what
// is refused.
func TestLiveRequestsRefused(t *testing.T) {
	t.Parallel()
	f, err := scenario.Load("testdata/requests.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := f.Scenario("metastable-short")
	for _, o := range []*Options{
		{Endpoint: "http://127.0.0.1:1/mcp"}, // a stormsim up's
		{ShardIndex: 0, ShardCount: 2},       // a shard
	} {
		_, err := Run(context.Background(), sc, o)
		var refused *RefusedError
		if !errors.As(err, &refused) || !strings.Contains(err.Error(), `workload.kind = "requests"`) {
			t.Errorf("options %+v: %v, want a RefusedError naming the workload", o, err)
		}
	}
	f, err = scenario.Load("testdata/requests.toml", &scenario.Options{Set: []string{"workload.arrivals=closed"}, Target: "metastable-short"})
	if err != nil {
		t.Fatal(err)
	}
	sc, _ = f.Scenario("metastable-short")
	_, err = Run(context.Background(), sc, nil)
	var refused *RefusedError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), `workload.arrivals = "closed"`) {
		t.Errorf("closed-loop clients: %v, want a RefusedError naming them", err)
	}
}
