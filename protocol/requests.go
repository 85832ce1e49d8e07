package protocol

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/topology"
)

// The open-loop request workload's server rules: what a server of c
// workers and a request queue answers one attempt of a single request,
// and what a worker does with the request it reaches. The simulator's
// request engine (sim/requests.go) carries them out; docs/model.md
// ("Requests and metastability") says what the model holds.

// BudgetWindowS is the retry budget's window, in seconds: Finagle's
// RetryBudget keeps deposits for 10 s.
const BudgetWindowS = 10

// retryBudget is a retry budget as Finagle's RetryBudget: over the last
// BudgetWindowS seconds, at most ratio × first attempts + BudgetWindowS ×
// min retries get in. It counts by whole seconds.
type retryBudget struct {
	at      [BudgetWindowS]int64 // the second each slot counts, +1 (0: never used)
	firsts  [BudgetWindowS]int64
	retries [BudgetWindowS]int64
}

// slot is the slot of now's second, cleared when it last counted another.
func (b *retryBudget) slot(now int64) int {
	sec := now / 1e9
	i := int(sec % BudgetWindowS)
	if b.at[i] != sec+1 {
		b.at[i], b.firsts[i], b.retries[i] = sec+1, 0, 0
	}
	return i
}

// allow counts an attempt at now and says whether it gets in.
func (b *retryBudget) allow(rc *topology.ReplicaConfig, now int64, retry bool) bool {
	i := b.slot(now)
	if !retry {
		b.firsts[i]++
		return true
	}
	sec := now / 1e9
	var firsts, retries int64
	for k := range b.at {
		if b.at[k] > sec+1-BudgetWindowS {
			firsts += b.firsts[k]
			retries += b.retries[k]
		}
	}
	if float64(retries)+1 > rc.RetryBudget*float64(firsts)+BudgetWindowS*rc.RetryBudgetMin {
		return false
	}
	b.retries[i]++
	return true
}

// AdmitRequest answers an attempt of a single request arriving at now
// (nanoseconds since the run's start), in this order: a retry over the
// design's retry budget gets 503 "retry budget" (its client then gives the
// request up, as a Finagle client does); then the admission bucket and
// the connection rate (Admit), for an attempt that opens a connection
// (conn: every open-loop request, a closed-loop client's handshake; a
// request on a connection the server already accepted passes them); then
// a bounded request queue that already holds queued requests gets 503
// "request queue full". Every refusal costs the server no service. rnd
// jitters a hint, as Admit's.
func (s *Admission) AdmitRequest(rc *topology.ReplicaConfig, now int64, retry, conn bool, queued int, rnd func() float64) Answer {
	if rc.RetryBudget > 0 && !s.budget.allow(rc, now, retry) {
		return Answer{Status: 503, Why: WhyBudget}
	}
	if conn {
		if a := s.Admit(rc, now, clients.ReqCall, rnd); a.Status != 200 {
			return a
		}
	}
	if rc.RequestQueue > 0 && queued >= rc.RequestQueue {
		full := Answer{Status: 503, Why: WhyQueueFull}
		if rc.HintOn503 {
			full.RetryHint = RetryAfter(Hint(rc.RetryHint, rc.RetryHintSpread, rnd))
		}
		return full
	}
	return Answer{Status: 200}
}

// WhyQueueFull is the Why of an attempt a full request queue refused.
const WhyQueueFull = "request queue full"

// WhyBudget is the Why of a retry the retry budget refused: the client
// does not retry it again.
const WhyBudget = "retry budget exhausted"

// Shed reports whether a worker that reaches, at now, a request that
// entered the queue at queued drops it unserved: the design sheds
// requests that waited longer than shed_after (one age-based policy; its
// client, if still waiting, gets 503 at once). Without shed_after the
// server serves every request it queued, whether or not its client is
// still there: it cannot know.
func Shed(rc *topology.ReplicaConfig, now, queued int64) bool {
	return rc.ShedAfter > 0 && now-queued > int64(rc.ShedAfter)
}

// RequestCost is the mean service an attempt costs a worker: the
// handshake's (replica.handshake_time) for a closed-loop client's first
// request on a new connection, the request's (replica.service_time)
// otherwise.
func RequestCost(rc *topology.ReplicaConfig, handshake bool) time.Duration {
	if handshake {
		return rc.HandshakeTime
	}
	return rc.ServiceTime
}

// ServiceTime is how long a worker is held by the attempt it starts
// serving: its RequestCost (a handshake's, or the request's service_time),
// or an exponential draw from rng of that mean under service_dist "exp",
// times factor, the slowdown trigger's factor in force (1 without one).
func ServiceTime(rc *topology.ReplicaConfig, handshake bool, factor float64, rng *rand.Rand) time.Duration {
	svc := float64(RequestCost(rc, handshake))
	if rc.ServiceDist == topology.ServiceExp {
		svc *= rng.ExpFloat64()
	}
	return time.Duration(int64(svc * factor))
}

// Workers is how many of the replica's workers serve while a capacity cut
// (or an outage, keep 0) leaves keep of them: the nearest whole number. A
// worker over the count finishes the request it serves first.
func Workers(rc *topology.ReplicaConfig, keep float64) int {
	return int(math.Round(float64(rc.Workers) * keep))
}

// WhyShed is the Why of an attempt the server shed for its age.
const WhyShed = "shed: waited longer than shed_after"

// ShedAnswer is what a shed attempt's client, if it still waits, gets at
// once: 503, so that it retries (or gives up) without waiting out its
// timeout.
func ShedAnswer() Answer { return Answer{Status: 503, Why: WhyShed} }

// ServedAnswer is what the client of an attempt a worker served gets.
func ServedAnswer() Answer { return Answer{Status: 200} }
