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
		got := RecoveryAfterFaults(&s, c.faults)
		for i, w := range c.want {
			g := got[i].Seconds
			if (g == nil) != (w == nil) || (g != nil && *g != *w) {
				t.Errorf("%s fault %d: got %v, want %v", c.name, i, deref(g), deref(w))
			}
		}
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
