package fluid

import (
	"math"
	"testing"
)

// Figures worked out by hand.
func TestFluid(t *testing.T) {
	t.Parallel()
	if lo, hi := Vulnerable(300, 1); lo != 150 || hi != 300 {
		t.Errorf("Vulnerable(300, 1) = %v, %v; want Bronson et al.'s 150, 300", lo, hi)
	}
	for _, c := range []struct {
		p        Params
		backlog  float64
		recovery float64
	}{
		// 9 s of requests with both attempts sent, 1 s with one: 140 × 19.
		{Params{Lambda: 140, Mu: 300, Retries: 1, Timeout: 1, Outage: 10}, 2660, (2660 - 300) / 20.0},
		// Above the region's floor: the retries hold 560/s on 300.
		{Params{Lambda: 280, Mu: 300, Retries: 1, Timeout: 1, Outage: 10}, 5320, math.Inf(1)},
		// An outage shorter than the timeout: no retry yet, and the
		// backlog is within a timeout's work.
		{Params{Lambda: 280, Mu: 300, Retries: 1, Timeout: 1, Outage: 0.5}, 140, 0},
		// Three retries, 2 s timeout, 5 s outage: 2 s × 1 + 2 s × 2 + 1 s × 3 = 9 s of λ.
		{Params{Lambda: 50, Mu: 300, Retries: 3, Timeout: 2, Outage: 5}, 450, 0},
		{Params{Lambda: 70, Mu: 300, Retries: 3, Timeout: 1, Outage: 10}, 70 * 34, (70*34 - 300) / 20.0},
	} {
		if got := Backlog(c.p); math.Abs(got-c.backlog) > 1e-9 {
			t.Errorf("Backlog(%+v) = %v, want %v", c.p, got, c.backlog)
		}
		if got := Recovery(c.p); got != c.recovery && math.Abs(got-c.recovery) > 1e-9 {
			t.Errorf("Recovery(%+v) = %v, want %v", c.p, got, c.recovery)
		}
	}
}
