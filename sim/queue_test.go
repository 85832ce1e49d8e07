package sim

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stormsim/stormsim/report"
)

// The queue pops events in (time, insertion) order, like container/heap.
func TestQueueOrder(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(9, 9))
	q := newQueue(math.MaxInt64)
	ref := &intHeap{}
	for i := 0; i < 200000; i++ {
		if q.Len() > 0 && rng.IntN(3) == 0 {
			popMatches(t, &q, ref, i)
			continue
		}
		at := rng.Int64N(50) << 24 // many ties, spread over many windows
		heap.Push(ref, (at>>24)<<20|int64(q.seq))
		q.push(event{at: at})
	}
}

// popMatches pops q and ref, whose entries are at>>24<<20 | seq, and fails
// the test at operation i if they disagree.
func popMatches(t *testing.T, q *queue, ref *intHeap, i int) event {
	t.Helper()
	got := q.pop()
	want := heap.Pop(ref).(int64)
	if got.at != want>>20<<24 || int64(got.seq) != want&(1<<20-1) {
		t.Fatalf("pop %d: got (%d,%d), want (%d,%d)", i, got.at, got.seq, want>>20<<24, want&(1<<20-1))
	}
	return got
}

// The same with time moving on, as in a run: events at up to 3.3 s past the
// last one popped, so that far windows keep opening, grow past one block and
// hand their blocks back for later windows to reuse.
func TestQueueOrderAdvancing(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 7))
	q := newQueue(math.MaxInt64)
	ref := &intHeap{}
	var now int64 // in units of 2^24 ns
	for i := 0; i < 600000; i++ {
		if q.Len() > 0 && rng.IntN(2) == 0 {
			now = popMatches(t, &q, ref, i).at >> 24
			continue
		}
		at := (now + rng.Int64N(200)) << 24
		heap.Push(ref, (at>>24)<<20|int64(q.seq))
		q.push(event{at: at})
	}
	if len(q.free) == 0 {
		t.Fatal("no far block was handed back: the test did not reach the reuse")
	}
}

// The same when windows fill: events as dense as at a million clients,
// so that windows narrow while far ones hold events, and an end before the
// last of them, so that some wait past the last window.
func TestQueueOrderNarrowing(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 5))
	q := newQueue(100 << 24)
	ref := &intHeap{}
	var now int64 // in units of 2^24 ns
	lates := 0
	for i := 0; i < 400000; i++ {
		if q.Len() > 100000 && rng.IntN(2) == 0 {
			now = popMatches(t, &q, ref, i).at >> 24
			continue
		}
		at := (now + rng.Int64N(60)) << 24
		heap.Push(ref, (at>>24)<<20|int64(q.seq))
		q.push(event{at: at})
		lates = max(lates, len(q.late))
	}
	for i := 0; q.Len() > 0; i++ {
		popMatches(t, &q, ref, i)
	}
	if q.shift > windowShiftMax-3 || lates == 0 {
		t.Fatalf("window width 2^%d, at most %d events past the last window: the test did not narrow three times or reach the end", q.shift, lates)
	}
}

// appendOps' O(1) path for whole steps counts exactly what the per-step
// loop counts.
func TestAppendOpsExact(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(4, 4))
	for _, priming := range []bool{true, false} {
		const n = 40
		mk := func(perStep int64) *engine {
			e := &engine{step: 1e9, priming: priming, perStep: perStep, opsDiff: make([]int64, n+1)}
			e.series = report.Series{StoreOps: make([]int64, n), Reconnects: make([]int64, n)}
			return e
		}
		fast, slow := mk(5), mk(0)
		for i := 0; i < 500; i++ {
			a := attempt{stored: true, start: rng.Int64N(30e9), iv: 200e6, e: 400}
			a.endN = int32(rng.IntN(int(a.e) + 1))
			fast.appendOps(&a)
			slow.appendOps(&a)
		}
		var run int64
		for i := range fast.series.StoreOps {
			run += fast.opsDiff[i]
			fast.series.StoreOps[i] += run
		}
		if !slices.Equal(fast.series.StoreOps, slow.series.StoreOps) {
			t.Fatalf("priming %v:\nfast %v\nslow %v", priming, fast.series.StoreOps, slow.series.StoreOps)
		}
	}
}

// The same with times at any nanosecond: on window boundaries at every
// width and one either side, 0, negative and in the past, and with ends
// that are 0, mid-window and unbounded. The load is dense enough for the
// windows to narrow and cross coarse windows while narrow, and with a
// finite end the pushes go on after every window is done (with an end
// inside the first coarse window, before any window could narrow).
func TestQueueOrderAnyTime(t *testing.T) {
	t.Parallel()
	for i, end := range []int64{0, 1<<28 - 1, 2<<28 + 12345, math.MaxInt64} {
		rng := rand.New(rand.NewPCG(uint64(i), 3))
		q := newQueue(end)
		ref := &evHeap{}
		var now int64
		narrowed, afterDone := false, 0
		for op := 0; op < 300000; op++ {
			if q.Len() > 8000 && rng.IntN(2) == 0 {
				got, want := q.pop(), heap.Pop(ref).(event)
				if got.at != want.at || got.seq != want.seq {
					t.Fatalf("end %d, op %d: got (%d,%d), want (%d,%d)", end, op, got.at, got.seq, want.at, want.seq)
				}
				now = max(now, got.at)
				narrowed = narrowed || q.shift < windowShiftMax
				continue
			}
			if q.cur == queueDone {
				afterDone++
			}
			e := event{at: anyTime(rng, now), seq: q.seq}
			heap.Push(ref, e)
			q.push(e)
		}
		for q.Len() > 0 {
			got, want := q.pop(), heap.Pop(ref).(event)
			if got.at != want.at || got.seq != want.seq {
				t.Fatalf("end %d, draining: got (%d,%d), want (%d,%d)", end, got.at, got.seq, want.at, want.seq)
			}
		}
		if (end > 1<<28 && !narrowed) || (end < 1<<40 && afterDone == 0) {
			t.Fatalf("end %d: narrowed %v, %d pushes after the last window: the test missed a path", end, narrowed, afterDone)
		}
	}
}

// anyTime is an event time near now for TestQueueOrderAnyTime.
func anyTime(rng *rand.Rand, now int64) int64 {
	switch rng.IntN(8) {
	case 0: // a window boundary at some width, or one off it
		sh := uint(windowShiftMin + rng.IntN(windowShiftMax-windowShiftMin+1))
		return (now+rng.Int64N(1<<29))>>sh<<sh + rng.Int64N(3) - 1
	case 1: // 0, negative, or the past
		return []int64{0, -rng.Int64N(1 << 30), now - rng.Int64N(1<<22)}[rng.IntN(3)]
	case 2:
		return now + rng.Int64N(1<<20)
	}
	return now + rng.Int64N(1<<28)
}

// evHeap is a container/heap of events by (at, seq), the reference.
type evHeap []event

func (h evHeap) Len() int           { return len(h) }
func (h evHeap) Less(i, j int) bool { return h[i].less(&h[j]) }
func (h evHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *evHeap) Push(x any)        { *h = append(*h, x.(event)) }
func (h *evHeap) Pop() any {
	o := *h
	x := o[len(o)-1]
	*h = o[:len(o)-1]
	return x
}
