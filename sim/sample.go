package sim

import (
	"github.com/stormsim/stormsim/topology"
)

// sample closes series step i: gauges and store size.
func (e *engine) sample(i int) {
	e.series.ActiveStreams[i] = e.open
	var bytes int64
	switch e.events {
	case topology.EventsMemory:
		for p := range e.procs {
			if e.procs[p].state != procDead {
				e.memSettle(int32(p))
				bytes += e.procs[p].store.held
			}
		}
	case topology.EventsRedis:
		// Ended streams are summed incrementally and leave the sum when
		// they expire, in the order they ended; running ones are counted.
		if ttl := int64(e.d.Store.RedisTTL); ttl > 0 {
			for e.redisHead < len(e.redisEnded) {
				a := &e.attempts[e.redisEnded[e.redisHead]]
				if a.end+ttl > e.now {
					break
				}
				e.redisFixed -= a.fixedB
				a.fixedB, a.gone = 0, true
				e.redisHead++
			}
			if e.redisHead > 4096 && e.redisHead*2 > len(e.redisEnded) {
				e.redisEnded = append(e.redisEnded[:0], e.redisEnded[e.redisHead:]...)
				e.redisHead = 0
			}
		}
		bytes = e.redisFixed
		first := e.first()
		maxlen := int64(e.d.Store.RedisMaxLen)
		for p := range e.procs {
			pr := &e.procs[p]
			for _, r := range pr.running {
				hi := min((e.now-r.start)/e.iv, int64(r.e))
				lo := int64(max(first, r.lo))
				if maxlen > 0 && hi-lo+1 > maxlen {
					lo = hi - maxlen + 1
				}
				bytes += e.streamBytes(lo, hi, int64(r.e))
			}
		}
	}
	e.series.StoreBytes[i] = bytes
}

// streamBytes is what a Redis stream holding indices lo to hi of a call of
// last index final takes: index 0 is the priming event, final the result.
func (e *engine) streamBytes(lo, hi, final int64) int64 {
	if hi < lo {
		return 0
	}
	priming, result := lo == 0, hi == final
	n := hi - lo + 1
	if priming {
		n--
	}
	if result {
		n--
	}
	k := 0
	if priming {
		k = 2
	}
	if result {
		k++
	}
	if t := e.redisMemo[k]; n >= 0 && n < int64(len(t)) {
		return t[n]
	}
	return e.redisCost.Stream(n, priming, result)
}

// redisStreamMemo tabulates c.Stream for 0 to n-1 progress events, by
// priming×2 + result: a step's sum over the running streams then looks
// each one's bytes up instead of working them out again.
func redisStreamMemo(c *topology.RedisStreamCost, n int) (t [4][]int64) {
	for k := range t {
		t[k] = make([]int64, n)
		for i := range t[k] {
			t[k][i] = c.Stream(int64(i), k >= 2, k%2 == 1)
		}
	}
	return t
}

// first is the index of a stream's first stored event: 0, the priming
// event, when there is one.
func (e *engine) first() int32 {
	if e.priming {
		return 0
	}
	return 1
}

// finish closes the run at the horizon: what is still open is pending.
func (e *engine) finish() {
	for id := range e.clients {
		c := &e.clients[id]
		if !c.call.active {
			continue
		}
		e.settle(c)
		cl := &c.call
		e.t.CallsPending++
		e.t.EventsPending += int64(cl.e - cl.hw)
		if cl.dropped {
			e.audit.DroppedCalls++
			e.audit.DroppedPending++
		}
		if cl.waitResume {
			e.audit.DropsWithIDPending++
		}
		if cl.unprodMark < cl.e {
			maxP := cl.maxProduced
			if cl.attempt >= 0 {
				maxP = max(maxP, e.produced(&e.attempts[cl.attempt], e.now), e.chainMax(e.attempts[cl.attempt].prev))
			}
			e.audit.UnproducedRecovered += int64(maxP - cl.unprodMark)
			e.audit.UnproducedPending += int64(cl.e - maxP)
		}
	}
	for ai := range e.attempts {
		a := &e.attempts[ai]
		if !a.ended {
			a.endN = e.produced(a, e.now)
			e.appendOps(a)
			// An attempt still running re-did what earlier ones had
			// produced as much as one that ended (endAttempt).
			if earlier := max(a.prevMax, e.chainMax(a.prev)); earlier > 0 {
				e.t.EventsRedone += int64(min(a.endN, earlier))
			}
		}
	}
	var run int64
	for i := range e.series.StoreOps {
		run += e.opsDiff[i]
		e.series.StoreOps[i] += run
	}
	if e.t.SessionRequests > 0 {
		e.t.Rate404 = float64(e.t.HTTP404) / float64(e.t.SessionRequests)
	}
	for i := range e.series.StoreBytes {
		e.t.StorePeakBytes = max(e.t.StorePeakBytes, e.series.StoreBytes[i])
		e.t.StorePeakOpsPerS = max(e.t.StorePeakOpsPerS, float64(e.series.StoreOps[i])/e.series.StepS)
	}
}
