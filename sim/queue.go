package sim

import "math"

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
// break the same way on every run. It has three tiers: a 4-ary min-heap
// holds the events of the current window of virtual time, the later
// windows of the current coarse window (2^28 ns, about a quarter of a
// second) wait unsorted in one list each, and later events wait unsorted in
// one list per coarse window until it comes. Most events are scheduled
// seconds ahead (a call's last event, a think time, a timeout), so the heap
// stays small and cache-resident while a far insertion is an append.
//
// A window starts as wide as a coarse window. When one opens with more than
// windowLoad events, the windows after it are halved (down to 2^20 ns, a
// millisecond), so that the windows a run opens hold a bounded number of
// events however many clients it has: at a fixed width a window held ten
// times as many at ten times the clients, and the heap's extra levels were
// most of the growth in the engine's instructions per event (make
// bench-1m-work). Only the current coarse window is split into windows: a
// far insertion appends to one of the coarse windows' lists, whose number
// is fixed by the run's horizon, and not to one of the narrow windows',
// whose number grew with the clients (at a million clients, 50,000 lists
// whose tails no cache held). A coarse window's events are spread over its
// windows when it comes, in one pass. The widths change only the cost: the
// order is (at, seq) whatever they are.
//
// Events past the last coarse window (at > end) wait in one unsorted list,
// taken into the heap once every window is done, so that the far tier's
// index is bounded by the run's horizon and not by its latest timeout.
//
// A list is made of blocks of events, taken from and given back to a free
// list, so that the far tiers stop allocating once they have held their
// largest load. A list that grew by appending left the slices it outgrew
// to the collector, the largest share of what a large run allocated, and
// with them the heap's growth (and peak RSS) toward twice what the run
// holds (make bench-1m measures the peak RSS per client).
type queue struct {
	h     []event     // the heap of the current window
	fine  []farWindow // fine[w mod len(fine)] holds the events of window w, for cur < w in the coarse window curC
	far   []farWindow // far[c] holds the events of coarse window c, for curC < c ≤ lastC
	late  []event     // the events of no coarse window: after lastC
	cur   int64       // the current window: every event with at < (cur+1)·2^shift is in h
	curC  int64       // the coarse window that holds cur
	lastC int64       // the last coarse window, the one that holds end
	shift uint8       // log2 of a window's width in ns
	n     int
	seq   uint32
	free  [][]event // emptied blocks, reused
}

// farWindow is a window's events: the block being filled, held here so
// that an append reads one header and not a list's last, and the blocks
// filled before it.
type farWindow struct {
	tail []event
	full [][]event
}

const (
	windowShiftMax = 28 // a coarse window's width
	windowShiftMin = 20
	// a window that opens with more than windowLoad events halves the
	// windows after it
	windowLoad = 4096
	// a list's first block holds farBlockMin events and each next one
	// twice the last, up to farBlock (48 KiB), so that a small run's
	// lists stay small
	farBlockMin = 64
	farBlock    = 2048
	queueDone   = math.MaxInt64 >> 1 // cur and curC once every window is done
)

// newQueue is an empty queue whose windows reach to end: later events are
// popped in order too, after a slower path.
func newQueue(end int64) queue {
	return queue{shift: windowShiftMax, fine: make([]farWindow, 1), lastC: max(end, 0) >> windowShiftMax}
}

func (q *queue) Len() int { return q.n }

func (q *queue) push(e event) {
	e.seq = q.seq
	q.seq++
	q.n++
	if w := e.at >> q.shift; w > q.cur {
		q.farPush(e, w)
		return
	}
	q.heapPush(e)
}

// farPush adds e, of window w after the current one, to the list it waits
// in.
func (q *queue) farPush(e event, w int64) {
	c := e.at >> windowShiftMax
	if c == q.curC {
		q.add(&q.fine[w&int64(len(q.fine)-1)], e)
		return
	}
	if c > q.lastC {
		q.late = append(q.late, e)
		return
	}
	for int64(len(q.far)) <= c {
		q.far = append(q.far, farWindow{})
	}
	q.add(&q.far[c], e)
}

// add appends e to fw's list.
func (q *queue) add(fw *farWindow, e event) {
	if len(fw.tail) == cap(fw.tail) {
		want := farBlockMin
		if c := cap(fw.tail); c > 0 {
			fw.full = append(fw.full, fw.tail)
			want = min(2*c, farBlock)
		}
		fw.tail = q.block(want)
	}
	fw.tail = append(fw.tail, e)
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
		q.open()
	}
	q.n--
	return q.heapPop()
}

// open moves on to the next window and takes its events into the heap,
// after spreading its coarse window's events over the windows when it is
// the coarse window's first; past the last coarse window, it takes every
// event left, and every later push goes to the heap.
func (q *queue) open() {
	q.cur++
	k := windowShiftMax - q.shift
	if c := q.cur >> k; c != q.curC {
		q.curC = c
		if c > q.lastC {
			for _, e := range q.late {
				q.heapPush(e)
			}
			q.late, q.cur, q.curC = nil, queueDone, queueDone
			return
		}
		if c < int64(len(q.far)) {
			q.drain(&q.far[c], k > 0) // k = 0: one window, straight to the heap
		}
	}
	if k > 0 {
		q.drain(&q.fine[q.cur&int64(len(q.fine)-1)], false)
	}
	if len(q.h) > windowLoad && q.shift > windowShiftMin {
		q.narrow()
	}
}

// drain empties fw: its events go to the heap, or with spread to the
// windows they fall in now (fw is then the current coarse window's, or one
// of its windows' before they halved).
func (q *queue) drain(fw *farWindow, spread bool) {
	if fw.tail == nil {
		return
	}
	for _, b := range fw.full {
		q.move(b, spread)
	}
	q.move(fw.tail, spread)
	*fw = farWindow{}
}

// narrow halves the windows after the current one. The current window's
// events are in the heap; its end is that of the first half-window after
// it, so cur becomes 2·cur+1, still in the same coarse window, and each of
// the coarse window's later windows' events go to the half-window they fall
// in. The coarse windows after it keep their events as they are.
func (q *queue) narrow() {
	q.shift--
	q.cur = 2*q.cur + 1
	old := q.fine
	q.fine = make([]farWindow, 2*len(old))
	for i := range old {
		q.drain(&old[i], true)
	}
}

// move moves a far block's events as drain says and hands the block back.
func (q *queue) move(b []event, spread bool) {
	if spread {
		for _, e := range b {
			q.farPush(e, e.at>>q.shift)
		}
	} else {
		for _, e := range b {
			q.heapPush(e)
		}
	}
	q.free = append(q.free, b[:0])
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
