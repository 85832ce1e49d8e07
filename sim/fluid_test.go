package sim

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stormsim/stormsim/faults"
	"github.com/stormsim/stormsim/fluid"
	"github.com/stormsim/stormsim/scenario"
	"github.com/stormsim/stormsim/topology"
)

// fluidPoint is one parameter set of the cross-check: the load as a
// multiple of the vulnerable region's floor mu/(k+1).
type fluidPoint struct {
	retries int
	timeout time.Duration
	outage  time.Duration
	ratio   float64
}

// fluidMu is the server of every point: 30 workers of 100 ms, 300/s.
const fluidMu = 300

func (p fluidPoint) params() fluid.Params {
	lo, _ := fluid.Vulnerable(fluidMu, p.retries)
	return fluid.Params{Lambda: p.ratio * lo, Mu: fluidMu, Retries: p.retries, Timeout: p.timeout.Seconds(), Outage: p.outage.Seconds()}
}

// scenario is the point as a request-workload scenario: Poisson arrivals,
// exponential service, an unbounded queue, immediate retries and the
// outage at 30 s, for 300 s.
func (p fluidPoint) scenario() *scenario.Scenario {
	fp := p.params()
	sc := reqScenario(fp.Lambda, 300*time.Second, 30, 100*time.Millisecond, p.timeout, p.retries)
	sc.Name, sc.Seed = fmt.Sprintf("fluid-%+v", p), 7
	sc.Workload.Arrivals = "poisson"
	sc.Designs[0].Replica.ServiceDist = topology.ServiceExp
	sc.Faults = []faults.Fault{&faults.Outage{At: 30 * time.Second, Duration: p.outage}}
	return sc
}

// checkFluid holds the simulator's recovery to the fluid model's: stuck
// exactly where the model says the retries hold the load over capacity,
// and otherwise recovered within 25% + 5 s of the model's time.
func checkFluid(t *testing.T, points []fluidPoint) {
	t.Helper()
	for _, p := range points {
		want := fluid.Recovery(p.params())
		d := reqRow(t, p.scenario())
		got, _ := d.Metric("goodput_recovered_s")
		switch {
		case got == nil:
			t.Errorf("%+v: no goodput recovery", p)
		case math.IsInf(want, 1) != math.IsInf(*got, 1):
			t.Errorf("%+v: the simulator recovers after %v s, the fluid model after %v s", p, *got, want)
		case !math.IsInf(want, 1) && math.Abs(*got-want) > 0.25*want+5:
			t.Errorf("%+v: the simulator recovers after %v s, the fluid model after %.1f s: outside 25%% + 5 s", p, *got, want)
		default:
			t.Logf("%+v: simulator %v s, fluid %.1f s", p, *got, want)
		}
	}
}

// The fluid grid: 24 parameter sets (retries 1 and 3, timeouts 1 s and
// 2 s, outages 5 s and 10 s, load at 0.7, 0.85 and 1.15 of mu/(k+1)). A
// long test (make test-long, nightly); TestFluidPoints is its make test
// subset.
func TestFluidGrid(t *testing.T) {
	t.Parallel()
	var points []fluidPoint
	for _, k := range []int{1, 3} {
		for _, to := range []time.Duration{time.Second, 2 * time.Second} {
			for _, out := range []time.Duration{5 * time.Second, 10 * time.Second} {
				for _, r := range []float64{0.7, 0.85, 1.15} {
					points = append(points, fluidPoint{k, to, out, r})
				}
			}
		}
	}
	checkFluid(t, points)
}

// Three points of the grid, on both sides of the boundary.
func TestFluidPoints(t *testing.T) {
	t.Parallel()
	checkFluid(t, []fluidPoint{
		{1, time.Second, 10 * time.Second, 0.7},
		{1, time.Second, 10 * time.Second, 1.15},
		{3, time.Second, 10 * time.Second, 0.85},
	})
}
