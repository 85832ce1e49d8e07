package report

import (
	"testing"
)

func ptr(v float64) *float64 { return &v }

func TestRecoveryAfterFaults(t *testing.T) {
	t.Parallel()
	flat := func(n int, v int64) []int64 {
		x := make([]int64, n)
		for i := range x {
			x[i] = v
		}
		return x
	}
	cases := []struct {
		name   string
		re     []int64
		f404   []int64
		faults []Fault
		want   []*float64
	}{
		// No excursion: recovered at once.
		{"quiet", flat(60, 0), flat(60, 0), []Fault{{AtS: 40}}, []*float64{ptr(0)}},
		// A storm from 40 to 44 s: back for good from 45 s.
		{"storm", append(append(flat(40, 0), 100, 80, 50, 20, 5), flat(15, 0)...), flat(60, 0), []Fault{{AtS: 40}}, []*float64{ptr(5)}},
		// Waves with quiet gaps count until the last one.
		{"waves", append(append(flat(40, 0), 100, 0, 0, 50, 0, 0, 0, 10), flat(12, 0)...), flat(60, 0), []Fault{{AtS: 40}}, []*float64{ptr(8)}},
		// A noisy baseline of ~100/s does not read as a storm.
		{"noisy", append(flat(50, 100), 120, 95, 118, 101, 87, 105, 111, 99, 100, 100), flat(60, 0), []Fault{{AtS: 50}}, []*float64{ptr(0)}},
		// 404s alone count too.
		{"404s", flat(60, 0), append(append(flat(40, 0), 7, 7), flat(18, 0)...), []Fault{{AtS: 40}}, []*float64{ptr(2)}},
		// Still storming at the end of the run: never recovered.
		{"never", append(flat(40, 0), flat(20, 9)...), flat(60, 0), []Fault{{AtS: 40}}, []*float64{nil}},
		// A storm that runs into the next fault is not recovered before it.
		{"next fault", append(flat(40, 0), flat(20, 9)...), flat(60, 0), []Fault{{AtS: 40}, {AtS: 50}}, []*float64{nil, nil}},
	}
	for _, c := range cases {
		s := Series{StepS: 1, Reconnects: c.re, HTTP404: c.f404}
		got := RecoveryAfterFaults(&s, c.faults, 0)
		for i, w := range c.want {
			g := got[i].Seconds
			if (g == nil) != (w == nil) || (g != nil && *g != *w) {
				t.Errorf("%s fault %d: got %v, want %v", c.name, i, deref(g), deref(w))
			}
		}
	}
}

// A fault soon after the clients' ramp is read against the rates once the
// load has arrived: a flat 55 reconnects a second from 3 s on, after a ramp
// of 0, 6 and 35, is no storm after a fault at 8 s. Read against the ramp
// too (steadyS 0, the rule before), its baseline of 39.5 puts the flat
// level out of the band until the shortened means near the window's end
// widen it: a "recovery" 6 s after a fault that changed nothing.
func TestRecoverySteadyBaseline(t *testing.T) {
	t.Parallel()
	re := []int64{0, 6, 35}
	for len(re) < 40 {
		re = append(re, 55)
	}
	s := Series{StepS: 1, Reconnects: re, HTTP404: make([]int64, 40)}
	faults := []Fault{{AtS: 8}, {AtS: 16}}
	if got := RecoveryAfterFaults(&s, faults, 2.9); got[0].Seconds == nil || *got[0].Seconds != 0 || got[1].Seconds == nil || *got[1].Seconds != 0 {
		t.Errorf("baseline from the ramp's end: got %v, %v, want 0, 0", deref(got[0].Seconds), deref(got[1].Seconds))
	}
	if got := RecoveryAfterFaults(&s, faults, 0); got[0].Seconds == nil || *got[0].Seconds != 6 {
		t.Errorf("baseline with the ramp: got %v, want 6 (55 above 1.1 × 39.5 + 3σ)", deref(got[0].Seconds))
	}
	// A fault inside the ramp has no steady level before it: its baseline
	// is what there is, as before.
	if a, b := RecoveryAfterFaults(&s, faults, 12), RecoveryAfterFaults(&s, faults, 0); deref(a[0].Seconds) != deref(b[0].Seconds) {
		t.Errorf("fault in the ramp: got %v, want %v", deref(a[0].Seconds), deref(b[0].Seconds))
	}
	// Each fault's window: to the next fault, then to the end of the series.
	if w := RecoveryWindowS(&s, faults); len(w) != 2 || w[0] != 8 || w[1] != 24 {
		t.Errorf("windows: %v, want [8 24]", w)
	}
	if w := RecoveryWindowS(&s, []Fault{{AtS: 50}}); len(w) != 1 || w[0] != 0 {
		t.Errorf("a fault after the series: %v, want [0]", w)
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestSummariseEmpty(t *testing.T) {
	t.Parallel()
	l := Summarise(nil)
	if l.Count != 0 || l.P50 != nil || l.P99 != nil || l.Max != nil || len(l.Histogram.Counts) != len(LatencyBoundsMS) {
		t.Errorf("empty summary: %+v", l)
	}
	l = Summarise([]float64{5, 1, 3, 2, 4})
	if *l.P50 != 3 || *l.Max != 5 || l.Count != 5 {
		t.Errorf("summary: p50 %v max %v", *l.P50, *l.Max)
	}
}
