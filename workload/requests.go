package workload

import (
	"math/rand/v2"

	"github.com/stormsim/stormsim/scenario"
)

// The open-loop request workload's arrivals (workload.kind = "requests"),
// which both engines draw the same way: the simulator's request engine
// and the live request generator.

// requestArrivalStream keys the request workload's arrival stream: drawn
// from the run's seed alone, so that every design sees the same arrivals.
const requestArrivalStream = 0x6a09e667f3bcc909

// RequestArrivals is the stream the request workload's arrival gaps are
// drawn from, for the run's seed.
func RequestArrivals(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed^requestArrivalStream, requestArrivalStream))
}

// RequestGap is the time, in nanoseconds, from one arrival of w's requests
// to the next while a load spike multiplies the arrival rate by factor (1
// without one): evenly spaced, or exponential with that mean when w's
// arrivals are Poisson, one draw from arr each.
func RequestGap(w *scenario.Workload, factor float64, arr *rand.Rand) int64 {
	gap := 1e9 / (w.ArrivalRate * factor)
	if w.Arrivals == "poisson" {
		gap *= arr.ExpFloat64()
	}
	return int64(gap)
}

// requestDesignStream keys a design's own stream of the request workload.
const requestDesignStream = 0xbb67ae8584caa73b

// RequestDesign is design's own stream of the request workload, for the
// run's seed: its service times, backoff jitter and hint spread.
func RequestDesign(seed uint64, design string) *rand.Rand {
	s1, s2 := scenario.DesignSeed(seed, design)
	return rand.New(rand.NewPCG(s1^requestDesignStream, s2))
}
