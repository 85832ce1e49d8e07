// Package fluid is an analytical model of metastable failure: one server
// of capacity Mu requests a second, an open stream of Lambda requests a
// second whose clients give up on an attempt after Timeout and make up to
// Retries retries at once, and an outage of Outage seconds during which
// requests still arrive and queue. Requests are fluid (no randomness) and
// served in arrival order from an unbounded queue.
//
// It is computed from these numbers alone and imports nothing of
// stormsim, so that the simulator's boundaries can be checked against it
// (sim/fluid_test.go): agreement is evidence only because neither was
// derived from the other.
//
//	lo, hi := fluid.Vulnerable(300, 1)   // 150, 300: Bronson et al.'s region
//	s := fluid.Recovery(fluid.Params{Lambda: 140, Mu: 300, Retries: 1, Timeout: 1, Outage: 10})
package fluid

import "math"

// Params are one server, its load and one outage. Times are in seconds.
type Params struct {
	Lambda  float64 // first attempts a second
	Mu      float64 // requests the server serves a second
	Retries int     // retries after a timed-out attempt
	Timeout float64 // a client abandons an attempt this long after sending it
	Outage  float64 // the server serves nothing for this long
}

// Vulnerable is the vulnerable region of a server of capacity mu whose
// clients retry k times: below lo, even a queue whose every attempt times
// out drains, since (k+1)·λ < mu; above hi the server is overloaded
// without any trigger. In between, a large enough trigger tips it into a
// state the retries sustain.
func Vulnerable(mu float64, k int) (lo, hi float64) {
	return mu / float64(k+1), mu
}

// Backlog is the queue at the end of the outage: every attempt sent during
// it. A request that arrives s seconds before the end has sent 1 +
// floor(s / Timeout) of its Retries+1 attempts by then.
func Backlog(p Params) float64 {
	var q float64
	// Integrate the step function over the pieces where it is constant.
	for n := 0; n <= p.Retries; n++ {
		lo := float64(n) * p.Timeout
		if lo >= p.Outage {
			break
		}
		hi := p.Outage
		if n < p.Retries {
			hi = math.Min(hi, float64(n+1)*p.Timeout)
		}
		q += p.Lambda * float64(n+1) * (hi - lo)
	}
	return q
}

// Recovery is the seconds from the end of the outage until the queue's
// wait falls below the timeout, from when answers reach clients that
// still wait and goodput returns: 0 when the backlog is within a
// timeout's worth of work; +Inf when the retries hold the offered load,
// (Retries+1)·Lambda, at or above Mu. While the wait exceeds the timeout
// every attempt times out, so each request makes all Retries+1 attempts
// and the queue shrinks at Mu − (Retries+1)·Lambda.
func Recovery(p Params) float64 {
	excess := Backlog(p) - p.Mu*p.Timeout
	if excess <= 0 {
		return 0
	}
	drain := p.Mu - float64(p.Retries+1)*p.Lambda
	if drain <= 0 {
		return math.Inf(1)
	}
	return excess / drain
}
