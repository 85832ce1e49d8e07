package sim

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/stormsim/stormsim/report"
	"github.com/stormsim/stormsim/scenario"
	"github.com/stormsim/stormsim/topology"
)

// reqScenario is a request-workload scenario of one design with the given
// server and client settings, no faults: for counts that can be worked
// out by hand.
func reqScenario(rate float64, dur time.Duration, workers int, svc, timeout time.Duration, retries int) *scenario.Scenario {
	sc := &scenario.Scenario{
		Name: "requests", Seed: 1, Duration: dur, Step: time.Second, Replicas: 1,
		Workload: scenario.Workload{Kind: scenario.KindRequests, ArrivalRate: rate, Clients: int(rate*dur.Seconds()) + 1},
	}
	d := scenario.Design{Name: "plain"}
	d.Replica = topology.DefaultReplica
	d.Replica.Workers, d.Replica.ServiceTime = workers, svc
	d.Client.RequestTimeout, d.Client.RequestRetries = timeout, retries
	sc.Designs = []scenario.Design{d}
	return sc
}

func reqRow(t *testing.T, sc *scenario.Scenario) *report.Design {
	t.Helper()
	return &run(t, sc).Report.Designs[0]
}

// Counts worked out by hand: even arrivals and fixed service times make
// every attempt's fate certain.
func TestRequestsByHand(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		sc   *scenario.Scenario
		want report.RequestTotals
	}{
		// 5 requests a second on one worker of 100 ms for 10 s: each is
		// served at once, 50 in all, nothing wasted.
		{"under capacity", reqScenario(5, 10*time.Second, 1, 100*time.Millisecond, time.Second, 1),
			report.RequestTotals{Requests: 50, Attempts: 50, Completed: 50, ServiceS: 5}},
		// A 50 ms timeout on 100 ms of service, one retry: every attempt is
		// abandoned before its answer, and still served: all of it wasted.
		// Arrivals every 200 ms, attempts 50 ms apart: the worker keeps up,
		// and the last retry's service ends at 10 s, the horizon, unfinished.
		{"every attempt too slow", reqScenario(5, 10*time.Second, 1, 100*time.Millisecond, 50*time.Millisecond, 1),
			report.RequestTotals{Requests: 50, Attempts: 100, Retries: 50, Failed: 50, Timeouts: 100, ServiceS: 9.9, WastedS: 9.9}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := *reqRow(t, c.sc).Requests
			if got != c.want {
				t.Errorf("got  %+v\nwant %+v", got, c.want)
			}
		})
	}
}

// Over capacity with no timeout, the queue only grows: arrivals 20/s on
// a server of 10/s for 10 s complete 10 a second (9 in the first, whose
// first answer comes at 100 ms; the hundredth would end at the horizon),
// and the rest wait.
func TestRequestsQueueGrows(t *testing.T) {
	t.Parallel()
	d := reqRow(t, reqScenario(20, 10*time.Second, 1, 100*time.Millisecond, 0, 0))
	r := d.Requests
	if r.Completed != 99 || r.Pending != 101 || r.Timeouts != 0 || r.WastedS != 0 {
		t.Errorf("got %+v, want 99 completed, 101 pending, nothing timed out or wasted", *r)
	}
	for i, g := range d.Series.Goodput {
		if want := int64(min(i+9, 10)); g != want {
			t.Errorf("goodput at %d s = %d, want %d", i, g, want)
		}
	}
}

// Acceptance 1 and 2 of metastability, on the shipped scenario at seeds 1
// to 3: after the outage ends, the unmitigated server's goodput stays below
// 10% of its level before it until arrivals stop, and most of its work is
// wasted; each mitigation (shedding, the retry budget, admission) recovers
// and wastes little; at half the load the unmitigated server recovers too.
func TestMetastable(t *testing.T) {
	t.Parallel()
	for _, seed := range []string{"seed=1", "seed=2", "seed=3"} {
		full := run(t, load(t, "metastable", seed)).Report
		for _, d := range full.Designs {
			where := seed + "/" + d.Name
			checkConservation(t, where, &d)
			pre := d.RecoveryAfterFaultS[0].Goodput.PrePerS
			if pre < 120 {
				t.Errorf("%s: goodput before the outage %.1f/s, want about 140", where, pre)
			}
			rec, _ := d.Metric("goodput_recovered_s")
			peak, _ := d.Metric("goodput_after_peak_ratio")
			waste, _ := d.Metric("wasted_work_fraction")
			if d.Name == "req-plain" {
				if !math.IsInf(*rec, 1) || *peak >= 0.1 || *waste < 0.5 {
					t.Errorf("%s: recovered after %v s, peak ratio %v, wasted %v: want stuck (+Inf, < 0.1) with most work wasted", where, *rec, *peak, *waste)
				}
				continue
			}
			if *rec > 60 || *waste > 0.1 {
				t.Errorf("%s: recovered after %v s with %v of the work wasted, want within 60 s and under 0.1", where, *rec, *waste)
			}
		}
		half := run(t, load(t, "metastable", seed, "workload.arrival_rate=70"), "req-plain").Report.Designs[0]
		if rec, _ := half.Metric("goodput_recovered_s"); *rec > 60 {
			t.Errorf("%s: at half the load the unmitigated server recovers after %v s, want within 60 s", seed, *rec)
		}
	}
}

func checkConservation(t *testing.T, where string, d *report.Design) {
	t.Helper()
	r := d.Requests
	if got := r.Completed + r.Failed + r.Pending; got != r.Requests {
		t.Errorf("%s: completed %d + failed %d + pending %d = %d, want requests %d", where, r.Completed, r.Failed, r.Pending, got, r.Requests)
	}
	var good, att, re int64
	for i := range d.Series.Goodput {
		good, att, re = good+d.Series.Goodput[i], att+d.Series.Attempts[i], re+d.Series.Reconnects[i]
	}
	if good != r.Completed || att != r.Attempts || re != r.Retries {
		t.Errorf("%s: series sum to goodput %d attempts %d retries %d, totals say %d %d %d", where, good, att, re, r.Completed, r.Attempts, r.Retries)
	}
	if r.WastedS > r.ServiceS {
		t.Errorf("%s: wasted %v s of %v s served", where, r.WastedS, r.ServiceS)
	}
}

// The request scenarios give the same bytes for the same seed, other
// numbers for another seed, and the same row for a design run alone: the
// two that run in well under a second (the huang-osdi22 ones take
// seconds, on the same engine).
func TestRequestsDeterminism(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"metastable", "bronson-hotos21", "incident-zed-deploy"} {
		a, _ := run(t, load(t, name)).Report.JSON()
		b, _ := run(t, load(t, name)).Report.JSON()
		if !bytes.Equal(a, b) {
			t.Errorf("%s: two runs with seed 42 differ", name)
		}
		full := run(t, load(t, name)).Report
		other := run(t, load(t, name, "seed=43")).Report
		for i, d := range full.Designs {
			alone := run(t, load(t, name), d.Name).Report.Designs[0]
			x, _ := (&report.Report{Designs: []report.Design{d}}).JSON()
			y, _ := (&report.Report{Designs: []report.Design{alone}}).JSON()
			if !bytes.Equal(x, y) {
				t.Errorf("%s/%s: the row alone differs from the full run's", name, d.Name)
			}
			if *d.Requests == *other.Designs[i].Requests {
				t.Errorf("%s/%s: seed 43 gives the same totals as seed 42", name, d.Name)
			}
		}
	}
}
