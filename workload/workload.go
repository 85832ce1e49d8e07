// Package workload holds what both engines draw for the virtual clients, so
// that for one seed the simulator and the live engine see the same clients:
// arrival times paced by a vegeta Pacer, each client's call lengths and think
// times, its random drop instants, and which clients a client-drop fault
// picks.
//
//	work, drops := workload.Streams(sc.Seed, id)
//	n, think := workload.Draw(&sc.Workload, &work)
//	next := workload.Exp(&drops, int64(sc.Workload.DropEvery))
package workload

import (
	"math"
	"math/rand/v2"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/stormsim/stormsim/scenario"
)

const (
	workStream = 0x9e3779b97f4a7c15
	dropStream = 0xd1b54a32d192ed03
)

// Arrivals paces the clients' arrival times with a vegeta Pacer: constant
// at workload.arrival_rate, or linear when arrival_slope is set. Clients
// that would arrive after the scenario ends never arrive. Times are
// nanoseconds from the start of the run.
func Arrivals(sc *scenario.Scenario) []int64 {
	w := sc.Workload
	rate := vegeta.Rate{Freq: int(math.Round(w.ArrivalRate * 1000)), Per: 1000 * time.Second}
	var p vegeta.Pacer = vegeta.ConstantPacer(rate)
	if w.ArrivalSlope != 0 {
		p = vegeta.LinearPacer{StartAt: rate, Slope: w.ArrivalSlope}
	}
	out := make([]int64, 0, w.Clients)
	var t time.Duration
	for hits := uint64(0); hits < uint64(w.Clients); hits++ {
		wait, stop := p.Pace(t, hits)
		if stop {
			break
		}
		t += wait
		if t >= sc.Duration {
			break
		}
		out = append(out, int64(t))
	}
	return out
}

// SteadyFromS is when the stream workload's load has reached its level,
// in seconds from the start of the run: the last client's arrival
// (Arrivals), 0 when none arrives or when sc runs the request workload,
// whose arrivals are a steady stream from the start. Both engines read a
// fault's recovery against rates from here on (report.RecoveryAfterFaults),
// not against the clients' ramp before it.
func SteadyFromS(sc *scenario.Scenario) float64 {
	if sc.Requests() {
		return 0
	}
	a := Arrivals(sc)
	if len(a) == 0 {
		return 0
	}
	return float64(a[len(a)-1]) / 1e9
}

// Seed seeds client id's two streams in place: work (call lengths and think
// times) and drops (random drop instants).
func Seed(work, drops *rand.PCG, seed uint64, id int) {
	work.Seed(seed, workStream^uint64(id))
	drops.Seed(seed^dropStream, uint64(id))
}

// Streams returns client id's two streams, freshly seeded.
func Streams(seed uint64, id int) (work, drops rand.PCG) {
	Seed(&work, &drops, seed, id)
	return work, drops
}

// Unit is a uniform number in [0,1) from p.
func Unit(p *rand.PCG) float64 { return float64(p.Uint64()>>11) / (1 << 53) }

// Exp draws an exponential duration with the given mean, in nanoseconds.
func Exp(p *rand.PCG, mean int64) int64 {
	return int64(-math.Log(1-Unit(p)) * float64(mean))
}

// Draw takes the next call's length and the think time after it. Each call
// consumes exactly two draws, so call i gets the same values in every
// design and in both engines.
func Draw(w *scenario.Workload, p *rand.PCG) (int32, int64) {
	u1, u2 := Unit(p), Unit(p)
	n := int32(w.EventsMin)
	if w.EventsDist == "uniform" {
		n += int32(u1 * float64(w.EventsMax-w.EventsMin+1))
		if n > int32(w.EventsMax) {
			n = int32(w.EventsMax)
		}
	}
	return n, Think(w, u2)
}

// Think is the think time a uniform draw u in [0,1) gives: workload.think,
// or an exponential with that mean under think_dist "exp".
func Think(w *scenario.Workload, u float64) int64 {
	if w.ThinkDist == "exp" {
		return int64(-math.Log(1-u) * float64(w.Think))
	}
	return int64(w.Think)
}

// Pick is a uniform number in [0,1) from (seed, fault, client): a
// client-drop fault with fraction f takes the streaming clients whose Pick
// is below f, the same clients in every design and in both engines.
func Pick(seed, fault, id uint64) float64 {
	x := seed ^ (fault+1)*0x9e3779b97f4a7c15 ^ id*0xbf58476d1ce4e5b9
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11) / (1 << 53)
}
