package sim

// evKind says what a queued event does.
type evKind uint8

const (
	evArrive      evKind = iota // a client arrives and starts its first call
	evResponse                  // the answer to a client's request in flight (tok)
	evTimer                     // a client's wait is over (tok)
	evThink                     // a client's think time is over (tok)
	evCallTimeout               // a call's timeout (ctok)
	evDropTick                  // a random drop instant of a client
	evStreamEnd                 // a resumed stream ends after its replay (tok): result or orphan error
	evAttemptDone               // an attempt produced its last event (id = attempt)
	evProcExit                  // a draining process hits its drain limit (id = proc)
	evStep                      // a fault step (id = step index)
	evSample                    // a series boundary (id = step number)
	evLBNotice                  // the LB's health check notices a slot is bad (id = slot)
	evStoreDrop                 // a stream read from Redis fails in an outage (tok)
)

// Where a request is when its evResponse event fires (event.aux).
const (
	atLB      uint8 = iota // it reaches the load balancer
	atHandler              // it leaves a replica's accept queue
	atClient               // its answer reaches the client
)

// event is one scheduled state change. Events are plain 24-byte values in a
// slice, so the queue allocates nothing per event.
type event struct {
	at   int64 // virtual time, ns
	seq  uint32
	id   int32
	tok  uint32
	kind evKind
	aux  uint8
}

func (a *event) less(b *event) bool {
	return a.at < b.at || (a.at == b.at && a.seq < b.seq)
}

// queue is a 4-ary min-heap of events ordered by (at, seq): half the depth
// of a binary heap, and a node's children share a cache line or two. seq is
// the insertion order, so ties break the same way on every run.
type queue struct {
	h   []event
	seq uint32
}

func (q *queue) Len() int { return len(q.h) }

func (q *queue) push(e event) {
	e.seq = q.seq
	q.seq++
	q.h = append(q.h, e)
	h := q.h
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 4
		if !h[i].less(&h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (q *queue) pop() event {
	h := q.h
	top := h[0]
	n := len(h) - 1
	last := h[n]
	q.h = h[:n]
	h = q.h
	if n == 0 {
		return top
	}
	i := 0
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		m := c
		end := min(c+4, n)
		for j := c + 1; j < end; j++ {
			if h[j].less(&h[m]) {
				m = j
			}
		}
		if !h[m].less(&last) {
			break
		}
		h[i] = h[m]
		i = m
	}
	h[i] = last
	return top
}
