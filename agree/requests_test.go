package agree

import (
	"testing"

	"github.com/stormsim/stormsim/report"
)

// reqRep is a report of one request-workload design "d": 60 one-second
// steps of goodput at pre a second until an outage from 20 s to 30 s and
// at after a second from then on; the requests block holds wasted of 100
// service seconds.
func reqRep(engine string, pre, after int64, wasted float64) *report.Report {
	s := report.Series{StepS: 1, Goodput: make([]int64, 60), Attempts: make([]int64, 60), Reconnects: make([]int64, 60), HTTP404: make([]int64, 60), JudgeUntilS: 60}
	for i := range s.Goodput {
		switch {
		case i < 20:
			s.Goodput[i] = pre
		case i >= 30:
			s.Goodput[i] = after
		}
	}
	fs := []report.Fault{{Kind: "outage", AtS: 20, UntilS: 30}}
	t := &report.RequestTotals{Requests: 50 * 60, Completed: 20*pre + 30*after, ServiceS: 100, WastedS: wasted}
	d := report.Design{Name: "d", Series: s, Requests: t}
	d.RecoveryAfterFaultS = report.RecoveryAfterFaults(&d.Series, fs, 0)
	return &report.Report{Scenario: "s", Engine: engine, Faults: fs, Designs: []report.Design{d}}
}

func TestRequestRows(t *testing.T) {
	t.Parallel()
	tol := map[string]float64{}
	for k, v := range Defaults {
		tol[k] = v
	}
	for _, c := range []struct {
		name      string
		sim, live *report.Report
		metric    string
		verdict   string
	}{
		// Stuck in both engines: the recovery row agrees, and so does the
		// goodput ratio, near 0 in each.
		{"stuck both", reqRep("sim", 50, 0, 80), reqRep("live", 50, 1, 80), "goodput_recovered_s", Agree},
		{"stuck both ratio", reqRep("sim", 50, 0, 80), reqRep("live", 50, 1, 80), "goodput_after_ratio", Agree},
		// Stuck in one, recovered in the other: both rows disagree.
		{"stuck one", reqRep("sim", 50, 0, 80), reqRep("live", 50, 50, 80), "goodput_recovered_s", Disagree},
		{"stuck one ratio", reqRep("sim", 50, 0, 80), reqRep("live", 50, 50, 80), "goodput_after_ratio", Disagree},
		// Recovered in both at once.
		{"recovered both", reqRep("sim", 50, 50, 0), reqRep("live", 50, 50, 0), "goodput_recovered_s", Agree},
		// Wasted work 0.8 against 0.2 of the same service: disagree.
		{"wasted apart", reqRep("sim", 50, 0, 80), reqRep("live", 50, 0, 20), "wasted_work_fraction", Disagree},
		{"wasted close", reqRep("sim", 50, 0, 80), reqRep("live", 50, 0, 80), "wasted_work_fraction", Agree},
	} {
		a := Compare(c.sim, c.live, tol)
		r := rowOf(a, c.metric)
		if r.Verdict != c.verdict {
			t.Errorf("%s: %s is %s (%s), want %s: %+v", c.name, c.metric, r.Verdict, r.Note, c.verdict, r)
		}
		if got := rowOf(a, "lost_fraction"); got.Metric != "" {
			t.Errorf("%s: a request design got the session row lost_fraction", c.name)
		}
	}
	// Over two seeds, stuck at one of them in the simulator and at none
	// live: the recovery row disagrees, whatever the means.
	a := CompareRepeats([]*report.Report{reqRep("sim", 50, 0, 80), reqRep("sim", 50, 50, 0)},
		[]*report.Report{reqRep("live", 50, 50, 0), reqRep("live", 50, 50, 0)}, tol)
	if r := rowOf(a, "goodput_recovered_s"); r.Verdict != Disagree {
		t.Errorf("repeats, stuck at 1 of 2 seeds in one engine only: %s (%s), want disagree", r.Verdict, r.Note)
	}
}
