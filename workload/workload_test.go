package workload

import (
	"testing"
	"time"

	"github.com/stormsim/stormsim/scenario"
)

// TestArrivable checks scenario.Arrivable, the count the loader's warning
// quotes, against the clients the pacer actually lets in.
func TestArrivable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		clients  int
		rate     float64
		slope    float64
		duration time.Duration
	}{
		{2000, 100, 0, 60 * time.Second},      // all arrive
		{100000, 100, 0, 60 * time.Second},    // 6,000 of 100,000
		{100000, 33.3, 0, 60 * time.Second},   // a rate that does not divide the duration
		{100000, 0.7, 0, 10 * time.Second},    // fewer than one a second
		{100000, 10, 2, 30 * time.Second},     // a rising rate
		{100000, 50, -1, 120 * time.Second},   // a rate that falls to zero within the run
		{5000, 1e6, 0, 60 * time.Second},      // all at once
		{1_000_000, 1e4, 0, 30 * time.Second}, // capped by the duration
	} {
		sc := &scenario.Scenario{Duration: tc.duration, Workload: scenario.Workload{Clients: tc.clients, ArrivalRate: tc.rate, ArrivalSlope: tc.slope}}
		got, want := scenario.Arrivable(sc), int64(len(Arrivals(sc)))
		// The closed form and the pacer may round the last arrival apart.
		if d := got - want; d < -1 || d > 1 {
			t.Errorf("%+v: Arrivable = %d, the pacer lets in %d", tc, got, want)
		}
	}
}
