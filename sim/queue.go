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
	evListen                    // a listen stream's request moves on (listen.go; aux: the phase)
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

// queue orders events by (at, seq); seq is the insertion order, so ties
// break the same way on every run. It has two tiers: a 4-ary min-heap holds
// the events of the current window of virtual time (2^28 ns, about a quarter
// of a second), and later events wait unsorted in one list per window until
// their window comes. Most events are scheduled seconds ahead (a call's last
// event, a think time, a timeout), so the heap stays small and cache-resident
// while a far insertion is an append.
//
// A far window is a list of blocks of events, taken from and given back to
// a free list, so that the far tier stops allocating once it has held its
// largest load. A window that grew by appending left the slices it outgrew
// to the collector, the largest share of what a large run allocated, and
// with them the heap's growth (and peak RSS) toward twice what the run
// holds (make bench-1m measures the peak RSS per client).
type queue struct {
	h    []event     // the heap of the current window
	far  [][][]event // far[w] holds the events of window w, for w > cur, in blocks
	cur  int64       // the current window: every event with at < (cur+1)·2^28 is in h
	n    int
	seq  uint32
	free [][]event // emptied blocks, reused
}

const (
	windowShift = 28
	// a window's first block holds farBlockMin events and each next one
	// twice the last, up to farBlock (48 KiB), so that a small run's
	// windows stay small
	farBlockMin = 64
	farBlock    = 2048
)

func (q *queue) Len() int { return q.n }

func (q *queue) push(e event) {
	e.seq = q.seq
	q.seq++
	q.n++
	if w := e.at >> windowShift; w > q.cur {
		for int64(len(q.far)) <= w {
			q.far = append(q.far, nil)
		}
		bs := q.far[w]
		if n := len(bs); n == 0 || len(bs[n-1]) == cap(bs[n-1]) {
			want := farBlockMin
			if n > 0 {
				want = min(2*cap(bs[n-1]), farBlock)
			}
			bs = append(bs, q.block(want))
			q.far[w] = bs
		}
		last := &bs[len(bs)-1]
		*last = append(*last, e)
		return
	}
	q.heapPush(e)
}

// block is an empty far block: from the free list when it has one,
// whatever its size, else a new one of want events.
func (q *queue) block(want int) []event {
	if n := len(q.free); n > 0 {
		b := q.free[n-1]
		q.free = q.free[:n-1]
		return b
	}
	return make([]event, 0, want)
}

func (q *queue) pop() event {
	for len(q.h) == 0 {
		q.cur++
		if q.cur < int64(len(q.far)) && q.far[q.cur] != nil {
			for _, b := range q.far[q.cur] {
				for _, e := range b {
					q.heapPush(e)
				}
				q.free = append(q.free, b[:0])
			}
			q.far[q.cur] = nil
		}
	}
	q.n--
	return q.heapPop()
}

func (q *queue) heapPush(e event) {
	q.h = append(q.h, e)
	h := q.h
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 4
		if !e.less(&h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = e
}

func (q *queue) heapPop() event {
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
